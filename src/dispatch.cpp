// Maps runtime (element, head dim, KV addressing) to the generated kernel instances.
#include "dispatch.h"

#include "kernels/sm80/launch_sm80.h"

namespace fmha::detail {

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

bool findPortableKernel(ElementKind element, int headDim, KvAddressing kv, KernelOps* ops) {
    int const d = kernelHeadDim(headDim);
#define FMHA_SM80_INSTANCE(E, D, K)                                                        \
    if (element == ElementKind::E && d == (D) && kv == KvAddressing::K) {                  \
        using Kernel = sm80::KernelSm80<ElementKind::E, D, KvAddressing::K>;               \
        ops->launch = &Kernel::launch;                                                     \
        ops->prepare = &Kernel::prepare;                                                   \
        ops->probe = &Kernel::probe;                                                       \
        ops->smemBytes = Kernel::smemBytes();                                              \
        ops->family = "sm80";                                                              \
        return true;                                                                       \
    }
#include "instances_sm80.inc"
#undef FMHA_SM80_INSTANCE
    return false;
}

}  // namespace fmha::detail
