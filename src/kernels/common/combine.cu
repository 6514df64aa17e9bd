// The split-KV combine kernel and its launch (built for every target of the portable family).
#include "kernels/common/combine.h"

#include <cmath>

#include "kernels/common/combine_row.cuh"
#include "kernels/common/elem.cuh"
#include "kernels/common/launch.h"
#include "kernels/common/seqlen.cuh"

namespace fmha {

namespace {

constexpr int kCombineWarps = 4;

// Merges the parts of one (sequence, query row, head) a warp (combineRow). Rows past a
// sequence's computed rows are left alone (the forward kernel wrote them).
template <ElementKind kElem>
__global__ void __launch_bounds__(kCombineWarps * 32) combineSplits(FmhaParams const p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    // A programmatic dependent launch starts before the forward kernel ends: wait for it (and
    // its memory); without that launch attribute this returns at once.
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
    using ET = ElemTraits<typename ElemOf<kElem>::type>;
    int const lane = threadIdx.x % 32;
    int64_t const perSeq = static_cast<int64_t>(p.maxSeqLenQ) * p.numQHeads;
    int64_t const entry = static_cast<int64_t>(blockIdx.x) * kCombineWarps + threadIdx.x / 32;
    if (entry >= perSeq * p.batch) return;
    int const b = static_cast<int>(entry / perSeq);
    int const i = static_cast<int>(entry % perSeq / p.numQHeads), h = static_cast<int>(entry % p.numQHeads);
    SeqInfo const seq(p, b);
    if (i >= seq.rows) return;
    combineRow<ET>(p, seq, b, i, h, lane);
}

}  // namespace

cudaError_t launchCombine(FmhaParams const& p, cudaStream_t stream, bool dependent) {
    int64_t const entries = static_cast<int64_t>(p.batch) * p.maxSeqLenQ * p.numQHeads;
    dim3 const grid(static_cast<unsigned>((entries + kCombineWarps - 1) / kCombineWarps));
    // Instantiated by the output type: BF16 for BF16 input and for FP8 input with outBf16;
    // FP16 otherwise.
    void const* kernel = p.element == ElementKind::kBf16 || p.outBf16
                             ? reinterpret_cast<void const*>(&combineSplits<ElementKind::kBf16>)
                             : reinterpret_cast<void const*>(&combineSplits<ElementKind::kFp16>);
    void* args[] = {const_cast<FmhaParams*>(&p)};
    return launchKernel(kernel, grid, dim3(kCombineWarps * 32), 0, stream, args, dependent);
}

}  // namespace fmha
