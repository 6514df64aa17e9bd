// Persistent tile scheduler of the Hopper family: a grid of at most one CTA per SM walks
// the (query tile, head, sequence) work list with a stride of the grid size. The list is cut
// into sections of (head, sequence) pairs whose K/V fit in the L2 cache together; inside a
// section the highest query tiles come first (under a causal mask they see the most keys,
// so the longest work starts first) and the pairs of one query tile next to each other
// (heads of one KV head adjacent). Every K/V tile is then read from memory about once.
#pragma once

#include <cstdint>

#include "params.h"

namespace fmha::sm90 {

// Built on the host and passed as a kernel argument, so that the work loop reads it from the
// parameter space instead of holding it in registers.
struct TileScheduler {
    int32_t mBlocks;   // query tiles of the longest sequence
    int32_t heads;
    int64_t pairs;     // heads * batch
    int64_t section;   // pairs per section
    int64_t total;     // work tiles; can pass 2^31

    static TileScheduler make(FmhaParams const& p, int blockM) {
        TileScheduler s;
        s.mBlocks = (p.maxSeqLenQ + blockM - 1) / blockM;
        s.heads = p.numQHeads;
        s.pairs = static_cast<int64_t>(p.numQHeads) * p.batch;
        s.total = s.mBlocks * s.pairs;
        // K and V bytes of one pair (query heads of a KV head share them), against 3/4 of L2.
        // Packed varlen (self-attention) keys are at most the longest sequence.
        int64_t const keys = p.kvRowsFromCu ? p.maxSeqLenQ : p.maxKvLen;
        int64_t const kvBytes = keys * p.headDim * 2 * 2 / (p.headGroup > 0 ? p.headGroup : 1);
        int64_t const budget = static_cast<int64_t>(p.l2Bytes) * 3 / 4;
        s.section = kvBytes > 0 ? budget / kvBytes : s.pairs;
        if (s.section < 1) s.section = 1;
        if (s.section > s.pairs) s.section = s.pairs;
        return s;
    }

    __device__ void decode(int64_t work, int32_t* mBlock, int32_t* head, int32_t* seq) const {
        int64_t const perSection = section * mBlocks;
        int64_t const sec = work / perSection, r = work - sec * perSection;
        int64_t const first = sec * section;
        int64_t const here = pairs - first < section ? pairs - first : section;  // the last section may be short
        int64_t const mIdx = r / here, pair = first + (r - mIdx * here);
        *mBlock = mBlocks - 1 - static_cast<int32_t>(mIdx);
        *seq = static_cast<int32_t>(pair / heads);
        *head = static_cast<int32_t>(pair - static_cast<int64_t>(*seq) * heads);
    }

    // CTAs to launch: one per SM, fewer when there is less work (persistent); or one per
    // work tile, left to the hardware's block scheduler in the same order.
    int64_t gridSize(int smCount, bool persistent) const {
        int64_t const sms = smCount > 0 ? smCount : 1;
        return persistent && total > sms ? sms : total;
    }
};

}  // namespace fmha::sm90
