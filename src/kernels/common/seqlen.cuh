// Where one sequence's Q rows and KV tokens start and end, computed once per tile from the
// params. Every length read from device memory is clamped, so malformed prefix arrays can
// never move an access out of the caller's buffers.
#pragma once

#include <cstdint>

#include "params.h"

namespace fmha {

struct SeqInfo {
    int64_t qBegin;   // first packed Q/O row of the sequence
    int32_t lq;       // query rows (the causal offset is lk - lq)
    int32_t rows;     // query rows computed: lq, at most maxSeqLenQ (the grid's extent)
    int64_t kvBegin;  // first KV row (strided addressing with rows from cuKV), else 0
    int32_t lk;       // keys

    __device__ static int64_t clampI64(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : (v > hi ? hi : v); }

    __device__ SeqInfo(FmhaParams const& p, int32_t b) {
        if (p.cuQ != nullptr) {
            int64_t const begin = clampI64(p.cuQ[b], 0, p.totalQ);
            int64_t const end = clampI64(p.cuQ[b + 1], begin, p.totalQ);
            qBegin = begin;
            lq = static_cast<int32_t>(end - begin);
        } else {
            qBegin = static_cast<int64_t>(b) * p.seqLenQ;
            lq = p.seqLenQ;
        }
        if (p.kvRowsFromCu) {
            int64_t const begin = clampI64(p.cuKV[b], 0, p.maxKvLen);
            int64_t const end = clampI64(p.cuKV[b + 1], begin, p.maxKvLen);
            kvBegin = begin;
            lk = static_cast<int32_t>(end - begin);
        } else {
            kvBegin = 0;
            lk = static_cast<int32_t>(clampI64(static_cast<int64_t>(p.cuKV[b + 1]) - p.cuKV[b], 0, p.maxKvLen));
        }
        // A sequence longer than the caller's maxSeqLenQ computes its first maxSeqLenQ rows in
        // every family (fill_rows.cuh zeroes the rest), whatever the family's tile height.
        rows = min(lq, p.maxSeqLenQ);
    }

    // Causal offset: query row i sits at key position i + offset() (bottom-right alignment).
    __device__ int64_t offset() const { return static_cast<int64_t>(lk) - lq; }
};

}  // namespace fmha
