// The one dispatch point: (element, head dim, KV addressing, device, features) -> a built
// kernel instance of the Hopper family where it covers the combination, else the portable one.
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
    // Families that can pack GQA (see FmhaParams::packLog2): the packLog2 to launch p with.
    int (*packLog2)(FmhaParams const& p) = nullptr;
};

// The portable instance for this combination, or false when none was built.
bool findPortableKernel(ElementKind element, int headDim, KvAddressing kv, KernelOps* ops);

// The kernel the runner launches on a device of smVersion. skipSoftmax variants run in the
// portable family. FMHA_KERNEL_FAMILY=portable in the environment forces the portable family.
bool findKernel(ElementKind element, int headDim, KvAddressing kv, int smVersion, bool skipSoftmax,
                KernelOps* ops);

// Overrides FMHA_KERNEL_FAMILY (tests run one problem through both families); returns the
// previous setting.
bool setForcePortable(bool force);

// Pack GQA where a family can: 1 always (head groups of a power of two up to the tile's
// rows), 0 never, -1 where it fills the row tiles clearly better (the default; short-Q
// chunks). FMHA_PACK_GQA=0/1 in the environment sets it. Tests override it; returns the
// previous setting.
int setPackGqa(int mode);

// The packLog2 for p on a family whose tiles hold blockM rows, under the setting above.
int choosePackLog2(FmhaParams const& p, int blockM);

}  // namespace fmha::detail
