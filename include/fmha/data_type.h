// Element data types of the public API: the enumerators and values of TensorRT's
// nvinfer1::DataType, or that type itself when FMHA_USE_TENSORRT_DATATYPE is defined.
#pragma once

#include <cstdint>

#include "fmha/export.h"

#if defined(FMHA_USE_TENSORRT_DATATYPE)
#include <NvInferRuntimeBase.h>
#endif

namespace fmha {

enum class DataType : int32_t {
    kFLOAT = 0,
    kHALF = 1,
    kINT8 = 2,
    kINT32 = 3,
    kBOOL = 4,
    kUINT8 = 5,
    kFP8 = 6,
    kBF16 = 7,
    kINT64 = 8,
    kINT4 = 9,
};

// The type the seed-compatible signatures take.
#if defined(FMHA_USE_TENSORRT_DATATYPE)
using ApiDataType = nvinfer1::DataType;
#else
using ApiDataType = DataType;
#endif

inline DataType toDataType(ApiDataType t) { return static_cast<DataType>(static_cast<int32_t>(t)); }

FMHA_API char const* dataTypeName(DataType t);

}  // namespace fmha

#if !defined(FMHA_USE_TENSORRT_DATATYPE) && !defined(FMHA_NO_NVINFER1_ALIAS)
// Code written against the original runner spells nvinfer1::DataType::kHALF; without
// TensorRT's headers that name refers to ours.
namespace nvinfer1 {
using DataType = ::fmha::DataType;
}
#endif
