// Element types: storage in global memory -> type in shared memory and MMA operands.
#pragma once

#include <cstdint>
#include <type_traits>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "params.h"

namespace fmha {

template <class Elem>
struct ElemTraits;

template <>
struct ElemTraits<__half> {
    using Compute = __half;
    using Out = __half;
    static constexpr int kBytes = 2;
    __device__ static uint32_t pack(float lo, float hi) {
        __half2 h = __floats2half2_rn(lo, hi);
        return *reinterpret_cast<uint32_t*>(&h);
    }
};

template <>
struct ElemTraits<__nv_bfloat16> {
    using Compute = __nv_bfloat16;
    using Out = __nv_bfloat16;
    static constexpr int kBytes = 2;
    __device__ static uint32_t pack(float lo, float hi) {
        __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
        return *reinterpret_cast<uint32_t*>(&h);
    }
};

// FP8 E4M3 is dequantised to FP16 on its way to shared memory (exact: every E4M3 value is
// an FP16 value); q/k scales live in the softmax scale and vScale in the epilogue.
template <>
struct ElemTraits<__nv_fp8_e4m3> {
    using Compute = __half;
    using Out = __half;
    static constexpr int kBytes = 1;
    __device__ static uint32_t pack(float lo, float hi) { return ElemTraits<__half>::pack(lo, hi); }
};

// Two output values packed as the output type: the traits' own, or for FP8 input BF16 where
// bf16Out (the caller's choice; 16-bit input always writes its own type).
template <class Traits>
__device__ inline uint32_t packOut(float lo, float hi, bool bf16Out) {
    if constexpr (std::is_same_v<Traits, ElemTraits<__nv_fp8_e4m3>>)
        if (bf16Out) return ElemTraits<__nv_bfloat16>::pack(lo, hi);
    return Traits::pack(lo, hi);
}

template <ElementKind kElem>
struct ElemOf;
template <>
struct ElemOf<ElementKind::kFp16> { using type = __half; };
template <>
struct ElemOf<ElementKind::kBf16> { using type = __nv_bfloat16; };
template <>
struct ElemOf<ElementKind::kFp8> { using type = __nv_fp8_e4m3; };

}  // namespace fmha
