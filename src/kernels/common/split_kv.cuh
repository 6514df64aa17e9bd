// Split-KV (FmhaParams::numSplits > 1) pieces shared by both families: where a part's rows go
// in the workspace and the epilogue that writes them (combine.cu merges the parts).
#pragma once

#include <cstdint>

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

}  // namespace fmha
