// Maps runtime (element, head dim, KV addressing, device) to the generated kernel instances.
#include "dispatch.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "kernels/sm80/launch_sm80.h"
#include "kernels/sm90/launch_sm90.h"

namespace fmha::detail {

namespace {

// Head dim as the portable kernels see it (multiple of 16); 0 for a head dim no kernel takes.
int kernelHeadDim(int d) {
    switch (d) {
    case 64: return 64;
    case 72:
    case 80: return 80;
    case 96: return 96;
    case 128: return 128;
    case 256: return 256;
    case 512: return 512;
    default: return 0;
    }
}

template <class Kernel>
void fill(KernelOps* ops, char const* family) {
    ops->launch = &Kernel::launch;
    ops->prepare = &Kernel::prepare;
    ops->probe = &Kernel::probe;
    ops->smemBytes = Kernel::smemBytes();
    ops->family = family;
}

// Head dim as the Hopper kernels see it: the ViT dims 72/80/96 run padded to 128 (TMA
// zero-fills the columns past the caller's D; the epilogue stores D columns).
int hopperHeadDim(int d) {
    switch (d) {
    case 64: return 64;
    case 72:
    case 80:
    case 96:
    case 128: return 128;
    case 256: return 256;
    default: return 0;
    }
}

bool findHopperKernel(ElementKind element, int headDim, KvAddressing kv, KernelOps* ops) {
    int const d = hopperHeadDim(headDim);
    (void)element;
    (void)d;
    (void)kv;
    (void)ops;
#define FMHA_SM90_INSTANCE(E, D, K)                                                                \
    if (element == ElementKind::E && d == (D) && kv == KvAddressing::K) {                         \
        fill<sm90::KernelSm90<ElementKind::E, D, KvAddressing::K>>(ops, "sm90");                  \
        return true;                                                                               \
    }
#include "instances_sm90.inc"
#undef FMHA_SM90_INSTANCE
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

bool findPortableKernel(ElementKind element, int headDim, KvAddressing kv, KernelOps* ops) {
    int const d = kernelHeadDim(headDim);
#define FMHA_SM80_INSTANCE(E, D, K)                                                                \
    if (element == ElementKind::E && d == (D) && kv == KvAddressing::K) {                         \
        fill<sm80::KernelSm80<ElementKind::E, D, KvAddressing::K>>(ops, "sm80");                  \
        return true;                                                                               \
    }
#include "instances_sm80.inc"
#undef FMHA_SM80_INSTANCE
    return false;
}

bool findKernel(ElementKind element, int headDim, KvAddressing kv, int smVersion, bool skipSoftmax,
                KernelOps* ops) {
    if (smVersion == 90 && !skipSoftmax && !forcePortable() && findHopperKernel(element, headDim, kv, ops))
        return true;
    return findPortableKernel(element, headDim, kv, ops);
}

}  // namespace fmha::detail
