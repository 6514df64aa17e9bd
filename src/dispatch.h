// The one dispatch point: (element, head dim, KV addressing, device, features) -> a built
// kernel instance of the Hopper family where it covers the combination, else the portable one.
#pragma once

#include <cuda_runtime_api.h>

#include "params.h"

namespace fmha::detail {

struct KernelOps {
    cudaError_t (*launch)(FmhaParams const&, cudaStream_t) = nullptr;  // the launch's own error
    cudaError_t (*prepare)() = nullptr;
    cudaError_t (*probe)() = nullptr;
    int smemBytes = 0;
    int blockM = 0, blockN = 0;  // query rows and keys of a tile
    bool compact = false;        // the portable family's small-shared-memory configuration
    char const* family = "";
    bool packsGqa = false;  // the family can pack GQA (FmhaParams::packLog2; heuristics.h)
    bool walks = false;     // the instance has a walking variant (FmhaParams::walkUnits)
    // The kernel signals programmatic dependent launch early (griddepcontrol.launch_dependents),
    // so that a split-KV combine launched after it is resident before it ends.
    bool triggersDependents = false;
    // Split-KV parts are merged by the kernel's last part of each row tile (the Hopper family,
    // FmhaParams::splitCounters) instead of the combine kernel.
    bool combinesSplits = false;
    TileShape shape = TileShape::kDefault;  // the Hopper family's tile shape
};

// Shared memory a block of an SM version can opt into (cudaDevAttrMaxSharedMemoryPerBlockOptin
// of that class): 163 KB on sm_80/87, 99 KB on sm_86/89/120/121, 227 KB on sm_90/100/101/103;
// 99 KB for versions not listed (the smallest class). canImplement answers for this budget.
int smemPerBlockOfSm(int smVersion);

// The budget the dispatcher gives a device of deviceLimit bytes: deviceLimit, or less where the
// test-only cap (FMHA_SMEM_BUDGET=bytes in the environment, or setSmemBudgetCap) is smaller,
// so that the configurations of smaller GPUs run on a large one.
int smemBudget(int deviceLimit);
// Sets the cap (0: none); returns the previous one.
int setSmemBudgetCap(int bytes);

// The kernel for (element, head dim, addressing) on SM version smVersion with smemLimit bytes
// of shared memory a block: the Hopper family where it covers the combination (sm_90, not
// forced portable; skip-softmax where the family has that variant) and fits, else the first
// portable configuration that fits (the default tiles, then the compact ones). False when
// none was built or none fits. shape: the Hopper tile shape wanted (heuristics.h:
// tileShapeFor), where that family has an instance of it; else its default tiles.
// Dispatch and canImplement both answer from here.
bool findKernel(ElementKind element, int headDim, KvAddressing kv, int smVersion, int smemLimit, bool skipSoftmax,
                KernelOps* ops, TileShape shape = TileShape::kDefault);

// Overrides FMHA_KERNEL_FAMILY (tests run one problem through both families); returns the
// previous setting.
bool setForcePortable(bool force);

}  // namespace fmha::detail
