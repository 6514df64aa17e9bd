// The one dispatch point: (element, head dim, KV addressing) -> a built kernel instance.
#pragma once

#include <cuda_runtime_api.h>

#include "params.h"

namespace fmha::detail {

struct KernelOps {
    cudaError_t (*launch)(FmhaParams const&, cudaStream_t) = nullptr;
    cudaError_t (*prepare)() = nullptr;
    cudaError_t (*probe)() = nullptr;
    int smemBytes = 0;
    char const* family = "";
};

// Head dim as the kernels see it (multiple of 16); 0 for a head dim no kernel takes.
int kernelHeadDim(int headDim);

// The portable instance for this combination, or false when none was built.
bool findPortableKernel(ElementKind element, int headDim, KvAddressing kv, KernelOps* ops);

}  // namespace fmha::detail
