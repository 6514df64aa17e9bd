// Split-KV (FmhaParams::numSplits > 1) pieces shared by both families: where a part's rows go
// in the workspace, the epilogue that writes them, and the kernel that merges the parts.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/common/elem.cuh"
#include "kernels/common/seqlen.cuh"
#include "params.h"

namespace fmha {

// Split-KV runs the paged modes only (heuristics.h): the contiguous-KV instances carry none of it.
template <KvAddressing kKv>
constexpr bool kSplitsKv = kKv == KvAddressing::kPaged;

// The CTA's part: grid.x holds rowTiles row tiles of each part in turn. blockIdx.x is read
// afresh (volatile), so that an epilogue asking again holds no register across the mainloop.
__device__ inline int splitOfCta(int numSplits) {
    unsigned x, n;
    asm volatile("mov.u32 %0, %%ctaid.x;" : "=r"(x));
    asm volatile("mov.u32 %0, %%nctaid.x;" : "=r"(n));
    return static_cast<int>(x / (n / static_cast<unsigned>(numSplits)));
}

// Workspace row of query row `query` (< maxSeqLenQ) of sequence b, query head `head`, part
// `split`: oAccum holds headDim floats a row, lseAccum one.
__device__ inline int64_t accumRow(FmhaParams const& p, int split, int b, int query, int head) {
    return ((static_cast<int64_t>(split) * p.batch + b) * p.maxSeqLenQ + query) * p.numQHeads + head;
}

// A warp's accumulators (the mma.sync and wgmma C layout: kMT m16 tiles), times scale[row],
// unrounded into float32: the warp's row r at gAcc + rowOffset(r). Rows >= rows and columns
// >= cols are not written.
template <int kMT, int kHeadDimV, class RowOffset>
__device__ inline void storePartial(float const (&o)[kMT][kHeadDimV / 8][4], float const (&scale)[2 * kMT], int lane,
                                    float* gAcc, RowOffset const& rowOffset, int rows, int cols) {
    int const g = lane / 4, t = lane % 4;
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            int const row = mt * 16 + g + 8 * r;
            if (row >= rows) continue;
            float* dst = gAcc + rowOffset(row) + 2 * t;
            float const f = scale[2 * mt + r];
#pragma unroll
            for (int nt = 0; nt < kHeadDimV / 8; ++nt)
                if (nt * 8 < cols)
                    *reinterpret_cast<float2*>(dst + nt * 8) = make_float2(o[mt][nt][2 * r] * f, o[mt][nt][2 * r + 1] * f);
        }
}

constexpr int kCombineWarps = 4;

// Merges the parts of one (sequence, query row, head) a warp: LSE = log sum_s exp(lse_s),
// O = sum_s exp(lse_s - LSE) O_s (docs/SEMANTICS.md). Parts that saw no key (lse_s = -inf)
// weigh nothing; a row no part saw gets zeros and -inf, as unsplit. Rows past a sequence's
// computed rows are left alone (the forward kernel wrote them). Up to 64 parts.
template <ElementKind kElem>
__global__ void __launch_bounds__(kCombineWarps * 32) combineSplits(FmhaParams const p) {
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
    for (int c0 = 0; c0 < D; c0 += 128) {  // the same trip count in every lane (the shuffles)
        int const c = c0 + lane * 4;
        bool const mine = c < D;
        float4 acc = make_float4(0.0F, 0.0F, 0.0F, 0.0F);
        for (int s = 0; s < parts; ++s) {
            float const w = __shfl_sync(0xffffffffu, s < 32 ? w0 : w1, s % 32);
            if (w == 0.0F || !mine) continue;
            float4 const v = *reinterpret_cast<float4 const*>(p.oAccum + (row0 + s * partStride) * D + c);
            acc.x += w * v.x;
            acc.y += w * v.y;
            acc.z += w * v.z;
            acc.w += w * v.w;
        }
        if (mine) *reinterpret_cast<uint2*>(gO + c) = make_uint2(ET::pack(acc.x, acc.y), ET::pack(acc.z, acc.w));
    }
    if (p.lse != nullptr && lane == 0)
        p.lse[static_cast<int64_t>(b) * p.lseBatchStride + static_cast<int64_t>(h) * p.lseHeadStride +
              (p.lsePacked ? seq.qBegin : 0) + i] = lse;
}

}  // namespace fmha
