// One row of the split-KV combine, shared by the combine kernel (combine.cu) and the Hopper
// forward kernel's own combine (the last part of a row tile to finish merges them).
#pragma once

#include <cstdint>

#include "kernels/common/elem.cuh"
#include "kernels/common/seqlen.cuh"
#include "kernels/common/split_kv.cuh"
#include "params.h"

namespace fmha {

// Merges the parts of query row i (< seq.rows) of sequence b, query head h, a warp (every lane
// calls it): LSE = log sum_s exp(lse_s), O = sum_s exp(lse_s - LSE) O_s (docs/SEMANTICS.md).
// Parts that saw no key (lse_s = -inf) weigh nothing: their rows are not used (they may hold
// anything); a row no part saw gets zeros and -inf, as unsplit. Up to 64 parts. The parts' rows
// are read through L2 (ld.cg): other SMs wrote them in this kernel or the one before. ET: the
// input's traits (FP8 writes BF16 where p.outBf16), or those of the output type.
// The first kAhead parts' rows of the first 128 columns are loaded with the LSEs, before the
// weights are known: one L2 round trip for a row of up to 16 parts at D <= 128 (the weights'
// shuffles run while the loads are in flight); further parts and columns 8 parts at a time.
template <class ET>
__device__ inline void combineRow(FmhaParams const& p, SeqInfo const& seq, int b, int i, int h, int lane) {
    using Out = typename ET::Out;
    constexpr int kAhead = 16, kBatch = 8;
    int const parts = p.numSplits, D = p.headDim;
    int64_t const partStride = static_cast<int64_t>(p.batch) * p.maxSeqLenQ * p.numQHeads;  // rows between parts
    int64_t const row0 = accumRow(p, 0, b, i, h);
    auto rowAt = [&](int s, int c) {
        return __ldcg(reinterpret_cast<float4 const*>(p.oAccum + (row0 + s * partStride) * D + c));
    };
    // Lane l holds parts l and l + 32.
    float l0 = lane < parts ? __ldcg(&p.lseAccum[row0 + lane * partStride]) : -INFINITY;
    float l1 = lane + 32 < parts ? __ldcg(&p.lseAccum[row0 + (lane + 32) * partStride]) : -INFINITY;
    float4 ahead[kAhead];
#pragma unroll
    for (int k = 0; k < kAhead; ++k)
        ahead[k] = k < parts && lane * 4 < D ? rowAt(k, lane * 4) : make_float4(0.0F, 0.0F, 0.0F, 0.0F);
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
    auto add = [](float4& acc, float w, float4 const& v) {
        if (w != 0.0F) {  // (a weightless part's row may hold anything, NaN included)
            acc.x += w * v.x;
            acc.y += w * v.y;
            acc.z += w * v.z;
            acc.w += w * v.w;
        }
    };
    for (int c0 = 0; c0 < D; c0 += 128) {  // the same trip count in every lane (the shuffles)
        int const c = c0 + lane * 4;
        bool const mine = c < D;
        float4 acc = make_float4(0.0F, 0.0F, 0.0F, 0.0F);
        int s0 = 0;
        if (c0 == 0) {
#pragma unroll
            for (int k = 0; k < kAhead; ++k) add(acc, __shfl_sync(0xffffffffu, w0, k), ahead[k]);
            s0 = kAhead;
        }
        // The rest kBatch at a time, every load of a batch issued before the first is used.
        for (; s0 < parts; s0 += kBatch) {
            float w[kBatch];
            float4 v[kBatch];
#pragma unroll
            for (int k = 0; k < kBatch; ++k) {
                int const s = s0 + k;
                w[k] = __shfl_sync(0xffffffffu, s < 32 ? w0 : w1, s % 32);
                v[k] = w[k] != 0.0F && mine && s < parts ? rowAt(s, c) : make_float4(0.0F, 0.0F, 0.0F, 0.0F);
            }
#pragma unroll
            for (int k = 0; k < kBatch; ++k) add(acc, w[k], v[k]);
        }
        if (mine)
            *reinterpret_cast<uint2*>(gO + c) =
                make_uint2(packOut<ET>(acc.x, acc.y, p.outBf16), packOut<ET>(acc.z, acc.w, p.outBf16));
    }
    if (p.lse != nullptr && lane == 0)
        p.lse[static_cast<int64_t>(b) * p.lseBatchStride + static_cast<int64_t>(h) * p.lseHeadStride +
              (p.lsePacked ? seq.qBegin : 0) + i] = lse;
}

}  // namespace fmha
