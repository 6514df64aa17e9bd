// The portable family's tile scheduler: which tile of rows, head, sequence, V half and
// split-KV part a CTA computes, from its grid coordinates.
#pragma once

#include <cstdint>

#include "kernels/common/split_kv.cuh"
#include "params.h"

namespace fmha::sm80 {

struct TileCoordsSm80 {
    int split;   // split-KV part (0 unsplit)
    int mBlock;  // row tile of the sequence
    int hq;      // query head
    int b;       // sequence
    int vSplit;  // output half (D=512), else 0
};

// Highest query tiles first: under a causal mask they see the most keys. CTAs start in grid
// order (x fastest); grid.x holds the row tiles of each split-KV part in turn, grid.z the
// sequences times the V halves. The walking kernel (never split) reads its linear index in
// sections of p.walkUnits units (a unit: one head of one sequence), each section's top tiles
// first.
template <class Tile, KvAddressing kKv, bool kWalk>
__device__ __forceinline__ TileCoordsSm80 scheduleTileSm80(FmhaParams const& p) {
    constexpr bool kSplits = kSplitsKv<kKv>;
    int const split = kSplits ? splitOfCta(p.numSplits) : 0;
    int const rowTiles = kSplits ? gridDim.x / p.numSplits : gridDim.x;
    int mBlock = rowTiles - 1 - (blockIdx.x - split * rowTiles);
    int hq = blockIdx.y;
    int bz = blockIdx.z;
    if constexpr (kWalk) {
        int64_t const numM = gridDim.x, units = static_cast<int64_t>(gridDim.y) * gridDim.z;
        int64_t const linear = blockIdx.x + numM * (blockIdx.y + static_cast<int64_t>(gridDim.y) * blockIdx.z);
        int64_t const first = linear / (numM * p.walkUnits) * p.walkUnits;  // the section's first unit
        int64_t const here = min(static_cast<int64_t>(p.walkUnits), units - first);
        int64_t const idx = linear - first * numM;
        int64_t const unit = first + idx % here;
        mBlock = static_cast<int>(numM - 1 - idx / here);
        hq = static_cast<int>(unit % gridDim.y);
        bz = static_cast<int>(unit / gridDim.y);
    }
    return TileCoordsSm80{split, mBlock, hq, bz / Tile::kVSplits, bz % Tile::kVSplits};
}

}  // namespace fmha::sm80
