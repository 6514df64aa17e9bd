// Kernel launches, plain or as a programmatic dependent of the kernel before them on the stream.
#pragma once

#include <cuda_runtime_api.h>

namespace fmha {

// dependent: launched with programmatic stream serialization (sm_90), so that the kernel's
// blocks may be scheduled before the kernel ahead of it on the stream has finished (once that
// kernel's blocks have all signalled griddepcontrol.launch_dependents, or ended). Such a
// kernel must execute griddepcontrol.wait, which returns once the kernel ahead has completed
// and its memory is visible, before it reads or writes global memory. Returns the launch's
// own error. cluster (sm_90): thread-block clusters of that shape, where it holds more than
// one block.
inline cudaError_t launchKernel(void const* kernel, dim3 grid, dim3 block, size_t smemBytes, cudaStream_t stream,
                                void** args, bool dependent, dim3 cluster = dim3(1, 1, 1)) {
    bool const clustered = cluster.x * cluster.y * cluster.z > 1;
    if (!dependent && !clustered) return cudaLaunchKernel(kernel, grid, block, args, smemBytes, stream);
    cudaLaunchAttribute attrs[2]{};
    unsigned n = 0;
    if (dependent) {
        attrs[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attrs[n++].val.programmaticStreamSerializationAllowed = 1;
    }
    if (clustered) {
        attrs[n].id = cudaLaunchAttributeClusterDimension;
        attrs[n].val.clusterDim.x = cluster.x;
        attrs[n].val.clusterDim.y = cluster.y;
        attrs[n++].val.clusterDim.z = cluster.z;
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
