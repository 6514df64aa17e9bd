// Host-side face of one portable kernel instance; defined in launch_sm80.cuh and explicitly
// instantiated, one instance per generated file under inst/.
#pragma once

#include <cuda_runtime_api.h>

#include "params.h"

namespace fmha::sm80 {

// kCompact: the narrow-tile configuration for small shared memories (tile_sm80.h).
template <ElementKind kElem, int kHeadDim, KvAddressing kKv, bool kCompact = false>
struct KernelSm80 {
    // The launch's own error (an earlier pending error is neither returned nor cleared).
    static cudaError_t launch(FmhaParams const& params, cudaStream_t stream);
    static cudaError_t prepare();  // raise the dynamic shared-memory limit on the current device
    static cudaError_t probe();    // cudaSuccess iff the binary holds code for the current device
    static int smemBytes();
    static int blockM();
    static int blockN();
    static bool walks();  // has a walking variant (launched where FmhaParams::walkUnits > 1)
};

}  // namespace fmha::sm80
