// The split-KV combine kernel and its launch (built for every target of the portable family).
#include "kernels/common/combine.h"

#include <cmath>

#include "kernels/common/elem.cuh"
#include "kernels/common/seqlen.cuh"
#include "kernels/common/split_kv.cuh"

namespace fmha {

namespace {

constexpr int kCombineWarps = 4;

// Merges the parts of one (sequence, query row, head) a warp: LSE = log sum_s exp(lse_s),
// O = sum_s exp(lse_s - LSE) O_s (docs/SEMANTICS.md). Parts that saw no key (lse_s = -inf)
// weigh nothing; a row no part saw gets zeros and -inf, as unsplit. Rows past a sequence's
// computed rows are left alone (the forward kernel wrote them). Up to 64 parts.
template <ElementKind kElem>
__global__ void __launch_bounds__(kCombineWarps * 32) combineSplits(FmhaParams const p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    // A programmatic dependent launch starts before the forward kernel ends: wait for it (and
    // its memory); without that launch attribute this returns at once.
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
    using ET = ElemTraits<typename ElemOf<kElem>::type>;
    using Out = typename ET::Out;
    int const lane = threadIdx.x % 32;
    int64_t const perSeq = static_cast<int64_t>(p.maxSeqLenQ) * p.numQHeads;
    int64_t const entry = static_cast<int64_t>(blockIdx.x) * kCombineWarps + threadIdx.x / 32;
    if (entry >= perSeq * p.batch) return;
    int const b = static_cast<int>(entry / perSeq);
    int const i = static_cast<int>(entry % perSeq / p.numQHeads), h = static_cast<int>(entry % p.numQHeads);
    SeqInfo const seq(p, b);
    if (i >= seq.rows) return;
    int const parts = p.numSplits, D = p.headDim;
    int64_t const partStride = static_cast<int64_t>(p.batch) * perSeq;  // workspace rows between parts
    int64_t const row0 = accumRow(p, 0, b, i, h);
    // Lane l holds parts l and l + 32.
    float l0 = lane < parts ? p.lseAccum[row0 + lane * partStride] : -INFINITY;
    float l1 = lane + 32 < parts ? p.lseAccum[row0 + (lane + 32) * partStride] : -INFINITY;
    float m = fmaxf(l0, l1);
#pragma unroll
    for (int k = 16; k > 0; k /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, k));
    float sum = m == -INFINITY ? 0.0F : expf(l0 - m) + expf(l1 - m);
#pragma unroll
    for (int k = 16; k > 0; k /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, k);
    float const lse = sum == 0.0F ? -INFINITY : m + logf(sum);
    float const w0 = lse == -INFINITY ? 0.0F : expf(l0 - lse);
    float const w1 = lse == -INFINITY ? 0.0F : expf(l1 - lse);

    Out* gO = static_cast<Out*>(p.o) + (seq.qBegin + i) * (static_cast<int64_t>(p.numQHeads) * D) +
              static_cast<int64_t>(h) * D;
    // The parts' rows are read kBatch at a time, every load of a batch issued before the first
    // is used: the parts' latencies overlap instead of adding up. A part of weight 0 (no key,
    // or past the parts) is not read, so its workspace rows may hold anything.
    constexpr int kBatch = 8;
    for (int c0 = 0; c0 < D; c0 += 128) {  // the same trip count in every lane (the shuffles)
        int const c = c0 + lane * 4;
        bool const mine = c < D;
        float4 acc = make_float4(0.0F, 0.0F, 0.0F, 0.0F);
        for (int s0 = 0; s0 < parts; s0 += kBatch) {
            float w[kBatch];
            float4 v[kBatch];
#pragma unroll
            for (int k = 0; k < kBatch; ++k) {
                int const s = s0 + k;
                w[k] = __shfl_sync(0xffffffffu, s < 32 ? w0 : w1, s % 32);
                v[k] = make_float4(0.0F, 0.0F, 0.0F, 0.0F);
                if (w[k] != 0.0F && mine && s < parts)
                    v[k] = *reinterpret_cast<float4 const*>(p.oAccum + (row0 + s * partStride) * D + c);
            }
#pragma unroll
            for (int k = 0; k < kBatch; ++k) {
                acc.x += w[k] * v[k].x;
                acc.y += w[k] * v[k].y;
                acc.z += w[k] * v[k].z;
                acc.w += w[k] * v[k].w;
            }
        }
        if (mine) *reinterpret_cast<uint2*>(gO + c) = make_uint2(ET::pack(acc.x, acc.y), ET::pack(acc.z, acc.w));
    }
    if (p.lse != nullptr && lane == 0)
        p.lse[static_cast<int64_t>(b) * p.lseBatchStride + static_cast<int64_t>(h) * p.lseHeadStride +
              (p.lsePacked ? seq.qBegin : 0) + i] = lse;
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
    if (!dependent) return cudaLaunchKernel(kernel, grid, dim3(kCombineWarps * 32), args, 0, stream);
    cudaLaunchAttribute attr{};
    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t config{};
    config.gridDim = grid;
    config.blockDim = dim3(kCombineWarps * 32);
    config.stream = stream;
    config.attrs = &attr;
    config.numAttrs = 1;
    return cudaLaunchKernelExC(&config, kernel, args);
}

}  // namespace fmha
