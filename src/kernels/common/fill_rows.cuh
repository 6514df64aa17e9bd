// The packed-Q modes' guarantee that every output row is written, whatever the device
// metadata holds: rows that no tile computes get zeros (LSE -inf), like rows with no key.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/common/seqlen.cuh"
#include "params.h"

namespace fmha {

// Rows [r0, r1) of heads [h0, h0 + heads): O zero (2-byte elements), LSE -inf.
__device__ __noinline__ inline void zeroRows(void* o, float* lse, int64_t lseHeadStride, int64_t r0, int64_t r1,
                                             int32_t h0, int32_t heads, int32_t numQHeads, int32_t headDim) {
    if (r1 <= r0) return;
    int64_t const chunks = static_cast<int64_t>(heads) * headDim / 8;  // 16-byte stores a row (heads are adjacent)
    int64_t const rowElems = static_cast<int64_t>(numQHeads) * headDim;
    char* base = static_cast<char*>(o) + (r0 * rowElems + static_cast<int64_t>(h0) * headDim) * 2;
    for (int64_t i = threadIdx.x; i < (r1 - r0) * chunks; i += blockDim.x)
        *reinterpret_cast<uint4*>(base + ((i / chunks) * rowElems) * 2 + (i % chunks) * 16) = make_uint4(0, 0, 0, 0);
    if (lse != nullptr)
        for (int64_t i = threadIdx.x; i < (r1 - r0) * heads; i += blockDim.x)
            lse[(h0 + i % heads) * lseHeadStride + r0 + i / heads] = -INFINITY;
}

// Called by one CTA per (sequence b, head group) of a packed-Q launch (cuQ set), before any
// early exit: zeros for sequence b's rows past maxSeqLenQ (no tile of the grid reaches
// them), and, from the first and the last sequence, for the rows of the packed buffer
// before the first sequence's clamped start and after the last one's end. With a prefix
// array that never decreases, that is exactly the rows no sequence computes; every row
// between the first start and the last end belongs to some sequence in any case.
__device__ inline void zeroUncomputedRows(FmhaParams const& p, SeqInfo const& seq, int32_t b, int32_t h0, int32_t heads) {
    if (p.cuQ == nullptr) return;
    int64_t lo0 = seq.qBegin + seq.rows, hi0 = seq.qBegin + seq.lq;  // past maxSeqLenQ
    float* lse = p.lsePacked ? p.lse : nullptr;
    zeroRows(p.o, lse, p.lseHeadStride, lo0, hi0, h0, heads, p.numQHeads, p.headDim);
    if (b == 0) zeroRows(p.o, lse, p.lseHeadStride, 0, seq.qBegin, h0, heads, p.numQHeads, p.headDim);
    if (b == p.batch - 1)
        zeroRows(p.o, lse, p.lseHeadStride, seq.qBegin + seq.lq, p.totalQ, h0, heads, p.numQHeads, p.headDim);
}

}  // namespace fmha
