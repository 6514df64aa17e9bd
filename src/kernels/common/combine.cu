// The split-KV combine kernel's launch (built for every target of the portable family).
#include "kernels/common/combine.h"

#include "kernels/common/split_kv.cuh"

namespace fmha {

cudaError_t launchCombine(FmhaParams const& p, cudaStream_t stream) {
    int64_t const entries = static_cast<int64_t>(p.batch) * p.maxSeqLenQ * p.numQHeads;
    dim3 const grid(static_cast<unsigned>((entries + kCombineWarps - 1) / kCombineWarps));
    // FP16 and FP8 input both write FP16.
    void const* kernel = p.element == ElementKind::kBf16
                             ? reinterpret_cast<void const*>(&combineSplits<ElementKind::kBf16>)
                             : reinterpret_cast<void const*>(&combineSplits<ElementKind::kFp16>);
    void* args[] = {const_cast<FmhaParams*>(&p)};
    return cudaLaunchKernel(kernel, grid, dim3(kCombineWarps * 32), args, 0, stream);
}

}  // namespace fmha
