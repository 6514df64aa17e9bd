// Maps runtime (element, head dim, KV addressing, device) to the generated kernel instances.
#include "dispatch.h"

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "kernels/sm80/launch_sm80.h"
#include "kernels/sm90/launch_sm90.h"
#include "kernels/sm90/tile_sm90.h"
#include "support_table.h"

namespace fmha::detail {

namespace {

// The kernel head dim of an API head dim in each family (the support table); 0: none.
int kernelHeadDim(int d) {
    support::HeadDim const* h = support::find(d);
    return h != nullptr ? h->portable : 0;
}
int hopperHeadDim(int d) {
    support::HeadDim const* h = support::find(d);
    return h != nullptr ? h->hopper : 0;
}

template <class Kernel>
void fill(KernelOps* ops, char const* family, bool compact) {
    ops->launch = &Kernel::launch;
    ops->prepare = &Kernel::prepare;
    ops->probe = &Kernel::probe;
    ops->smemBytes = Kernel::smemBytes();
    ops->blockM = Kernel::blockM();
    ops->blockN = Kernel::blockN();
    ops->compact = compact;
    ops->family = family;
    ops->packsGqa = false;
    ops->walks = false;
    ops->triggersDependents = false;
    ops->combinesSplits = false;
    ops->shape = TileShape::kDefault;
}

bool findHopperKernel(ElementKind element, int headDim, KvAddressing kv, int smemLimit, bool skipSoftmax,
                      TileShape shape, KernelOps* ops) {
    int const padded = hopperHeadDim(headDim);
    if (padded == 0) return false;
    // Head dims 72, 80 and 96 have instances of their own for some tile shapes (the D=128 tiles
    // whose Q.K^T reads the head's columns only); the rest run in the D=128 instances, except FP8
    // at D=72, whose 72-byte rows only its own instances take.
    bool const ownRows = element == ElementKind::kFp8 && headDim % 16 != 0;
    int const candidates[2] = {headDim, ownRows || headDim == padded ? 0 : padded};
    for (int const d : candidates) {
        (void)d;  // (no instance reads it in a build without sm_90a)
#define FMHA_SM90_INSTANCE(E, D, K, S, SHAPE)                                                                  \
    if (element == ElementKind::E && d == (D) && kv == KvAddressing::K && skipSoftmax == (S) &&               \
        shape == TileShape::SHAPE &&                                                                           \
        sm90::KernelSm90<ElementKind::E, D, KvAddressing::K, S, TileShape::SHAPE>::smemBytes() <= smemLimit) { \
        fill<sm90::KernelSm90<ElementKind::E, D, KvAddressing::K, S, TileShape::SHAPE>>(ops, "sm90", false);  \
        ops->packsGqa = true;                                                                                  \
        ops->triggersDependents = true;                                                                        \
        ops->combinesSplits = true;                                                                            \
        ops->shape = TileShape::SHAPE;                                                                         \
        return true;                                                                                           \
    }
#include "instances_sm90.inc"
#undef FMHA_SM90_INSTANCE
    }
    (void)kv;  // (these too)
    (void)smemLimit;
    (void)skipSoftmax;
    (void)shape;
    (void)ops;
    return false;
}

std::atomic<int> gForcePortable{-1};  // -1: not decided yet (read the environment once)

bool forcePortable() {
    int v = gForcePortable.load(std::memory_order_relaxed);
    if (v < 0) {
        char const* env = std::getenv("FMHA_KERNEL_FAMILY");
        v = env != nullptr && std::strcmp(env, "portable") == 0 ? 1 : 0;
        gForcePortable.store(v, std::memory_order_relaxed);
    }
    return v == 1;
}

}  // namespace

bool setForcePortable(bool force) {
    bool const previous = forcePortable();
    gForcePortable.store(force ? 1 : 0, std::memory_order_relaxed);
    return previous;
}

namespace {

// The first portable configuration of (element, head dim, addressing) that fits: the default
// tiles, then the compact ones (the instance list holds the default first).
bool findPortableKernel(ElementKind element, int headDim, KvAddressing kv, int smemLimit, KernelOps* ops) {
    int const d = kernelHeadDim(headDim);
#define FMHA_SM80_INSTANCE(E, D, K, C)                                                             \
    if (element == ElementKind::E && d == (D) && kv == KvAddressing::K &&                         \
        sm80::KernelSm80<ElementKind::E, D, KvAddressing::K, C>::smemBytes() <= smemLimit) {       \
        fill<sm80::KernelSm80<ElementKind::E, D, KvAddressing::K, C>>(ops, "sm80", C);            \
        ops->walks = sm80::KernelSm80<ElementKind::E, D, KvAddressing::K, C>::walks();            \
        return true;                                                                               \
    }
#include "instances_sm80.inc"
#undef FMHA_SM80_INSTANCE
    return false;
}

std::atomic<int> gSmemCap{-1};  // -1: not decided yet (read the environment once); 0: none

int smemCap() {
    int v = gSmemCap.load(std::memory_order_relaxed);
    if (v < 0) {
        char const* env = std::getenv("FMHA_SMEM_BUDGET");
        v = env == nullptr ? 0 : std::max(0, std::atoi(env));
        gSmemCap.store(v, std::memory_order_relaxed);
    }
    return v;
}

}  // namespace

int smemPerBlockOfSm(int sm) {
    switch (sm) {
    case 80:
    case 87: return 163 * 1024;
    case 90:
    case 100:
    case 101:
    case 103: return 227 * 1024;
    default: return 99 * 1024;  // sm_86, sm_89, sm_120, sm_121, and unknown versions
    }
}

int smemBudget(int deviceLimit) {
    int const cap = smemCap();
    return cap > 0 && cap < deviceLimit ? cap : deviceLimit;
}

int setSmemBudgetCap(int bytes) {
    int const previous = smemCap();
    gSmemCap.store(std::max(0, bytes), std::memory_order_relaxed);
    return previous;
}

bool findKernel(ElementKind element, int headDim, KvAddressing kv, int smVersion, int smemLimit, bool skipSoftmax,
                KernelOps* ops, TileShape shape) {
    if (smVersion == 90 && !forcePortable()) {
        if (shape != TileShape::kDefault &&
            findHopperKernel(element, headDim, kv, smemLimit, skipSoftmax, shape, ops))
            return true;
        if (findHopperKernel(element, headDim, kv, smemLimit, skipSoftmax, TileShape::kDefault, ops)) return true;
    }
    return findPortableKernel(element, headDim, kv, smemLimit, ops);
}

}  // namespace fmha::detail
