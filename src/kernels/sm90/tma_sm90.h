// TMA descriptors of one Hopper launch: built on the host for the caller's Q and K/V
// buffers, passed to the kernel as a __grid_constant__ argument. An operand whose
// descriptor cannot be built (a layout TMA does not accept) goes through cp.async instead.
#pragma once

#include <cstdint>

#include <cuda.h>

#include "params.h"

namespace fmha::sm90 {

// TMA L2 cache hints: cute::TMA::CacheHintSm90's values, for host code (cute's header is device
// code; mainloop_sm90.cuh checks that they agree).
inline constexpr uint64_t kCacheHintEvictNormal = 0x1000000000000000ull;
inline constexpr uint64_t kCacheHintEvictFirst = 0x12F0000000000000ull;
inline constexpr uint64_t kCacheHintEvictLast = 0x14F0000000000000ull;

struct TmaDescs {
    // Boxes are one swizzle row wide: 128 bytes (64 16-bit or 128 FP8 columns), or 64 bytes
    // (FP8 at D=64) under the 64-byte swizzle: C columns below.
    // Q: (D, numQHeads, Q rows), box (C, 1, blockM).
    CUtensorMap q;
    // Strided K and V: (D, rows, numKVHeads, batches), box (C, blockN, 1, 1).
    // Paged: k is the pool (D, numKVHeads, tokens), box (C, 1, min(pageSize, blockN)); v unused.
    // kvRows (FP8 rows of D bytes that are no whole number of 16-byte units, D=72, with the KV
    // heads of a token side by side): the heads' rows as one, (numKVHeads * D, rows, batches) or
    // (numKVHeads * D, tokens), head h at column h * D, box (C, blockN, 1) or (C, boxRows). A
    // box starts at the 16-byte column at or below its head's (headShift) and so reads columns
    // of the neighbouring heads (zeros past the last), which the producer zeroes in K before the
    // consumers read it.
    CUtensorMap k;
    CUtensorMap v;
    // O (16-bit, persistent kernels): (D, numQHeads, Q rows), box (64, H, 16 / H) with
    // H = min(2^packLog2, 16): a consumer warp's 16 tile rows, under the 128-byte swizzle.
    CUtensorMap o;
    // The L2 cache hint of K/V's TMA loads, a cute::TMA::CacheHintSm90 value
    // (detail::kvCachePriority: EVICT_FIRST where each K/V tile is read by one CTA, EVICT_LAST
    // where other row tiles read it again).
    uint64_t kvHint = kCacheHintEvictLast;
    int32_t qOk = 0;
    int32_t kvOk = 0;
    int32_t kvRows = 0;  // k and v are the row views above
    int32_t oOk = 0;
};

// Fills d for a launch with the given tile sizes (16-bit or FP8 elements, p.element); O's
// descriptor only with withO. Never fails: an operand whose descriptor cannot be encoded keeps
// its flag at 0.
void makeTmaDescs(FmhaParams const& p, int blockM, int blockN, int swizzleBytes, TmaDescs* d, bool withO = false);

}  // namespace fmha::sm90
