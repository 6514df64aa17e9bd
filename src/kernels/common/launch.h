// Kernel launches, plain or as a programmatic dependent of the kernel before them on the stream.
#pragma once

#include <cuda_runtime_api.h>

namespace fmha {

// dependent: launched with programmatic stream serialization (sm_90), so that the kernel's
// blocks may be scheduled before the kernel ahead of it on the stream has finished (once that
// kernel's blocks have all signalled griddepcontrol.launch_dependents, or ended). Such a
// kernel must execute griddepcontrol.wait, which returns once the kernel ahead has completed
// and its memory is visible, before it reads or writes global memory. Returns the launch's
// own error. clusterY > 1 (sm_90): thread-block clusters of clusterY blocks along grid.y.
inline cudaError_t launchKernel(void const* kernel, dim3 grid, dim3 block, size_t smemBytes, cudaStream_t stream,
                                void** args, bool dependent, unsigned clusterY = 1) {
    if (!dependent && clusterY <= 1) return cudaLaunchKernel(kernel, grid, block, args, smemBytes, stream);
    cudaLaunchAttribute attrs[2]{};
    unsigned n = 0;
    if (dependent) {
        attrs[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attrs[n++].val.programmaticStreamSerializationAllowed = 1;
    }
    if (clusterY > 1) {
        attrs[n].id = cudaLaunchAttributeClusterDimension;
        attrs[n].val.clusterDim.x = 1;
        attrs[n].val.clusterDim.y = clusterY;
        attrs[n++].val.clusterDim.z = 1;
    }
    cudaLaunchConfig_t config{};
    config.gridDim = grid;
    config.blockDim = block;
    config.dynamicSmemBytes = smemBytes;
    config.stream = stream;
    config.attrs = attrs;
    config.numAttrs = n;
    return cudaLaunchKernelExC(&config, kernel, args);
}

}  // namespace fmha
