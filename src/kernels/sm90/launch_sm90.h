// Host-side face of one Hopper kernel instance; defined in launch_sm90.cuh and explicitly
// instantiated, one instance per generated file (built for sm_90a only).
#pragma once

#include <cuda_runtime_api.h>

#include "params.h"

namespace fmha::sm90 {

// kSkip: the skip-softmax variant (FmhaParams::skipFactor > 0); kShape: the tile shape.
template <ElementKind kElem, int kHeadDim, KvAddressing kKv, bool kSkip, TileShape kShape = TileShape::kDefault>
struct KernelSm90 {
    static cudaError_t launch(FmhaParams const& params, cudaStream_t stream);  // this launch's error alone
    static cudaError_t prepare();
    static cudaError_t probe();
    static int smemBytes();
    static int blockM();
    static int blockN();
};

}  // namespace fmha::sm90
