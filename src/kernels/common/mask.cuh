// Mask policy shared by the kernel families: which KV tiles a block of query rows visits,
// which of them need element masking, and the per-element predicate.
//
// Causal masks are bottom-right aligned: with off = Lk - Lq, row i may see key j iff
// j <= i + off; a window W additionally requires j >= i + off - W. Bidirectional blocks
// add, per row, the keys [begin, end] on top of that (union), so those tiles are all masked.
#pragma once

#include <climits>
#include <cstdint>

#include "kernels/common/seqlen.cuh"
#include "params.h"

namespace fmha {

template <int kBlockN>
struct MaskPolicy {
    // int32 fields: this state stays live across the mainloop (Lk - Lq fits int32).
    int32_t off;
    int32_t window;  // INT32_MAX: none
    int32_t lk;
    bool causal;
    bool hasBidir;
    int32_t const* bidirBegin;  // row pointers of this sequence, or null
    int32_t const* bidirEnd;

    int32_t nBlockMin;         // first tile visited
    int32_t nBlockMax;         // one past the last tile visited
    int32_t nUnmaskedHiEnd;    // tiles >= this need masking (causal diagonal, ragged end)
    int32_t nUnmaskedLoBegin;  // tiles < this need masking (window)

    // Rows [m0, m1) of the sequence; bidirLo/bidirHi: the union of the rows' blocks
    // (lo > hi when none).
    __device__ MaskPolicy(FmhaParams const& p, SeqInfo const& s, int32_t b, int32_t m0, int32_t m1,
                          int64_t bidirLo, int64_t bidirHi) {
        off = static_cast<int32_t>(s.offset());
        window = p.window;
        lk = s.lk;
        causal = p.causal;
        hasBidir = p.bidirBegin != nullptr;
        bidirBegin = hasBidir ? p.bidirBegin + static_cast<int64_t>(b) * p.seqLenQ : nullptr;
        bidirEnd = hasBidir ? p.bidirEnd + static_cast<int64_t>(b) * p.seqLenQ : nullptr;
        int64_t lo, hi;  // keys [lo, hi) some row of the block may see
        causalKeys(m0, m1, &lo, &hi);
        // Keys [fullLo, fullHi) every row sees: commonKeys(m0, m1) written out, since calling it
        // here moved ptxas's register allocation in every portable instance.
        int64_t fullHi = lk;  // keys below this are visible to every row (causal part)
        int64_t fullLo = 0;   // keys at or above this are visible to every row (window part)
        if (causal) {
            int64_t const off64 = off, window64 = window;
            fullHi = min(fullHi, static_cast<int64_t>(m0) + off64 + 1);
            if (window != INT32_MAX) fullLo = max(fullLo, static_cast<int64_t>(m1) - 1 + off64 - window64);
        }
        if (bidirLo <= bidirHi) {
            lo = min(lo, max(bidirLo, int64_t{0}));
            hi = max(hi, min(bidirHi + 1, static_cast<int64_t>(lk)));
        }
        if (hi <= lo) {
            nBlockMin = nBlockMax = 0;
        } else {
            nBlockMin = static_cast<int32_t>(lo / kBlockN);
            nBlockMax = static_cast<int32_t>((hi + kBlockN - 1) / kBlockN);
        }
        nUnmaskedHiEnd = fullHi <= 0 ? 0 : static_cast<int32_t>(fullHi / kBlockN);
        nUnmaskedLoBegin = static_cast<int32_t>((fullLo + kBlockN - 1) / kBlockN);
        if (hasBidir) nUnmaskedHiEnd = 0;
    }

    // Keys [*lo, *hi) that some row of [i0, i1) may see through Lk and the causal/window
    // bounds (bidirectional blocks aside); i0 < i1.
    __device__ void causalKeys(int32_t i0, int32_t i1, int64_t* lo, int64_t* hi) const {
        *lo = 0;
        *hi = lk;
        if (causal) {
            *hi = min(*hi, static_cast<int64_t>(i1) - 1 + off + 1);
            if (window != INT32_MAX) *lo = max(*lo, static_cast<int64_t>(i0) + off - window);
        }
    }

    // Keys [*lo, *hi) that every row of [i0, i1) sees through Lk and the causal/window
    // bounds (empty when *hi <= *lo); i0 < i1, rows below Lq.
    __device__ void commonKeys(int32_t i0, int32_t i1, int64_t* lo, int64_t* hi) const {
        *lo = 0;
        *hi = lk;
        if (causal) {
            *hi = min(*hi, static_cast<int64_t>(i0) + off + 1);
            if (window != INT32_MAX) *lo = max(*lo, static_cast<int64_t>(i1) - 1 + off - window);
        }
    }

    __device__ bool empty() const { return nBlockMax <= nBlockMin; }

    // Split-KV: keeps part `split` of `splits` of the visited tiles, in tile order, the first
    // (tiles mod splits) parts one tile longer than the rest (empty parts where a sequence has
    // fewer tiles than parts). The masked/unmasked classification is by tile index and holds.
    __device__ void keepSplit(int32_t split, int32_t splits) {
        int32_t const tiles = nBlockMax - nBlockMin, per = tiles / splits, extra = tiles - per * splits;
        nBlockMin += split * per + min(split, extra);
        nBlockMax = nBlockMin + per + (split < extra ? 1 : 0);
    }

    __device__ bool tileNeedsMask(int32_t n) const { return n >= nUnmaskedHiEnd || n < nUnmaskedLoBegin; }

    // The same split in visit order (i = 0, 1, ... is tile nBlockMax - 1 - i): tiles i in
    // [0, *firstUnmasked) and [*endUnmasked, tiles) need masking, those between do not.
    __device__ void visitSplit(int32_t* firstUnmasked, int32_t* endUnmasked) const {
        int32_t const tiles = nBlockMax - nBlockMin;
        int32_t const a = min(max(nBlockMax - nUnmaskedHiEnd, 0), tiles);
        *firstUnmasked = a;
        *endUnmasked = min(max(nBlockMax - nUnmaskedLoBegin, a), tiles);
    }

    // Row-constant part of the predicate, computed once per row. Bounds are clamped into
    // [-1, Lk] so that they fit int32 (keys are int32: Lk < 2^31 - kBlockN is validated).
    struct Row {
        int32_t lo, hi;    // causal/window keys [lo, hi]
        int32_t bLo, bHi;  // bidirectional keys [bLo, bHi] (bLo > bHi: none)
    };
    __device__ static Row none() { return Row{1, 0, 1, 0}; }
    __device__ Row row(int32_t i) const {
        int64_t lo = 0, hi = static_cast<int64_t>(lk) - 1;
        int64_t const diag = static_cast<int64_t>(i) + off;
        if (causal) {
            hi = min(hi, diag);
            if (window != INT32_MAX) lo = max(diag - window, int64_t{-1});
        }
        Row r{static_cast<int32_t>(lo), static_cast<int32_t>(max(hi, int64_t{-1})), 1, 0};
        if (hasBidir) {
            int32_t const bb = bidirBegin[i], be = bidirEnd[i];
            if (bb >= 0) {
                r.bLo = bb;
                r.bHi = min(be, lk - 1);
            }
        }
        return r;
    }
    // Bitwise, not short-circuit: no branches in the unrolled tile loops.
    __device__ static bool allowedCausal(Row const& r, int32_t j) { return (j >= r.lo) & (j <= r.hi); }
    __device__ static bool allowed(Row const& r, int32_t j) {
        return allowedCausal(r, j) | ((j >= r.bLo) & (j <= r.bHi));
    }

    // The element mask of one row of an MMA accumulator fragment (the mma.sync and wgmma C
    // layouts alike): n-tile nt, element e of the lane at quad position t holds key
    // j0 + nt * 8 + 2 * t + e, and kill(nt, e) is called for each key the row may not see.
    // kWithBidir false: the causal/window bounds alone (a sequence without bidirectional blocks).
    template <int kNT, bool kWithBidir = true, class Kill>
    __device__ static void maskRow(Row const& rm, int32_t j0, int t, Kill const& kill) {
#pragma unroll
        for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
                int32_t const j = j0 + nt * 8 + 2 * t + e;
                bool const ok = kWithBidir ? allowed(rm, j) : allowedCausal(rm, j);
                if (!ok) kill(nt, e);
            }
    }
};

// The union [lo, hi] of the bidirectional blocks of rows [m0, m1) of sequence b (lo > hi
// when none), reduced over the CTA through two ints of shared memory. CTA-wide: every
// thread must call it.
__device__ inline void bidirUnion(FmhaParams const& p, int32_t b, int32_t m0, int32_t m1, int* sBidir,
                                  int64_t* lo, int64_t* hi) {
    *lo = 1;
    *hi = 0;
    if (p.bidirBegin == nullptr) return;
    if (threadIdx.x == 0) {
        sBidir[0] = INT_MAX;
        sBidir[1] = -1;
    }
    __syncthreads();
    int64_t const rowBase = static_cast<int64_t>(b) * p.seqLenQ;
    for (int r = threadIdx.x; r < m1 - m0; r += blockDim.x) {
        int const bb = p.bidirBegin[rowBase + m0 + r], be = p.bidirEnd[rowBase + m0 + r];
        if (bb >= 0 && be >= bb) {
            atomicMin(&sBidir[0], bb);
            atomicMax(&sBidir[1], be);
        }
    }
    __syncthreads();
    *lo = sBidir[0];
    *hi = sBidir[1];
}

}  // namespace fmha
