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

struct TileScheduler {
    int32_t mBlocks;   // query tiles of the longest sequence
    int32_t heads;
    int64_t pairs;     // heads * batch
    int64_t section;   // pairs per section
    int64_t total;     // work tiles; can pass 2^31

    __host__ __device__ TileScheduler(FmhaParams const& p, int blockM)
        : mBlocks((p.maxSeqLenQ + blockM - 1) / blockM), heads(p.numQHeads),
          pairs(static_cast<int64_t>(p.numQHeads) * p.batch), total(mBlocks * pairs) {
        // K and V bytes of one pair (query heads of a KV head share them), against 3/4 of L2.
        // Packed varlen (self-attention) keys are at most the longest sequence.
        int64_t const keys = p.kvRowsFromCu ? p.maxSeqLenQ : p.maxKvLen;
        int64_t const kvBytes = keys * p.headDim * 2 * 2 / (p.headGroup > 0 ? p.headGroup : 1);
        int64_t const budget = static_cast<int64_t>(p.l2Bytes) * 3 / 4;
        section = kvBytes > 0 ? budget / kvBytes : pairs;
        if (section < 1) section = 1;
        if (section > pairs) section = pairs;
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
    static int64_t gridSize(FmhaParams const& p, int blockM, bool persistent) {
        TileScheduler const s(p, blockM);
        int64_t const sms = p.smCount > 0 ? p.smCount : 1;
        return persistent && s.total > sms ? sms : s.total;
    }
};

}  // namespace fmha::sm90
