// Kernel launches, plain or as a programmatic dependent of the kernel before them on the stream.
#pragma once

#include <cuda_runtime_api.h>

namespace fmha {

// dependent: launched with programmatic stream serialization (sm_90), so that the kernel's
// blocks may be scheduled before the kernel ahead of it on the stream has finished (once that
// kernel's blocks have all signalled griddepcontrol.launch_dependents, or ended). Such a
// kernel must execute griddepcontrol.wait, which returns once the kernel ahead has completed
// and its memory is visible, before it reads or writes global memory. Returns the launch's
// own error.
inline cudaError_t launchKernel(void const* kernel, dim3 grid, dim3 block, size_t smemBytes, cudaStream_t stream,
                                void** args, bool dependent) {
    if (!dependent) return cudaLaunchKernel(kernel, grid, block, args, smemBytes, stream);
    cudaLaunchAttribute attr{};
    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t config{};
    config.gridDim = grid;
    config.blockDim = block;
    config.dynamicSmemBytes = smemBytes;
    config.stream = stream;
    config.attrs = &attr;
    config.numAttrs = 1;
    return cudaLaunchKernelExC(&config, kernel, args);
}

}  // namespace fmha
