// Tile configuration of the portable (mma.sync) family, one constexpr place for every choice.
#pragma once

namespace fmha::sm80 {

// Head dims are multiples of 16 here (the MMA K step); the support table
// (tools/generate_kernels.py) maps the caller's head dims onto them (72 runs in the 80
// instance, its last 8 columns zero).

// kCompact: the configuration for GPUs whose blocks get at most 99 KB of shared memory
// (sm_86, sm_89, sm_120) at D=128/256, and 163 KB (sm_80, sm_87) at D=512, where the default
// tiles do not fit (104,544 B at D=128, 101,440 B at D=256, 166,976 B at D=512): narrower key
// tiles, computed whole (32 keys at D=128: 69,696 B; 16 at D=256: 67,632 B and D=512:
// 116,784 B). D=512 fits no 99 KB block (Q alone takes 66,560 B): no configuration there.
template <int kHeadDim, bool kCompact = false>
struct TileSm80 {
    static_assert(kHeadDim % 16 == 0, "padded head dim");
    static_assert(!kCompact || kHeadDim >= 128, "the compact configuration exists for D >= 128");
    static constexpr int kDim = kHeadDim;
    // Output columns one CTA owns. 16 rows x 256 columns of FP32 accumulators are 128
    // registers a thread; 512 would not fit, so D=512 splits the output over two CTAs
    // (each recomputes Q.K^T, the price of staying spill-free).
    static constexpr int kHeadDimV = kHeadDim > 256 ? 256 : kHeadDim;
    static constexpr int kVSplits = kHeadDim / kHeadDimV;
    // Query rows a warp owns, in m16 tiles. Each K/V fragment read from shared memory feeds
    // kMTiles MMAs: with one m-tile a warp needs 512 B of ldmatrix per 8 KFLOP, which caps
    // mma.sync at about half its rate on Hopper's 128 B/clk shared memory; two halve that.
    // Two m-tiles hold 2 x (D/8) x 4 FP32 accumulators: 128 registers at D=128, so D=256
    // (and the 256-column halves of D=512) keep one.
    static constexpr int kMTiles = kHeadDim <= 128 ? 2 : 1;
    static constexpr int kNWarps = 4;
    static constexpr int kNThreads = kNWarps * 32;
    static constexpr int kWarpRows = 16 * kMTiles;
    static constexpr int kBlockM = kWarpRows * kNWarps;
    // Keys per loaded K/V tile (one barrier and one cp.async wait each) and keys per
    // compute chunk (one Q.K^T, softmax and P.V pass). Two m-tiles hold 2 x (D/8) x 4
    // output accumulators. D=80/96 (80-96 of them) compute their 64-key tiles whole (64
    // score registers; ptxas spills nothing at D=80 FP16), +9% at D=80 on the H200 against
    // two 32-key chunks. At D=128 (128 accumulators) 64 score registers spilled 104 bytes
    // and timed no faster, so D=128 computes each 64-key tile as two unrolled 32-key chunks
    // (loading 64 keys a tile halves the barriers: +5% on the dense rows and +7% on the paged
    // rows of the H200 against 32-key tiles; a rolled chunk loop: -3%). D=64 takes 128-key
    // tiles computed whole (64 + 128 registers), 4-7% faster than 64. D=256/512: 32-key
    // tiles keep Q + two K/V stages at two CTAs an SM (D=256) or within one SM's 227 KB (D=512).
    static constexpr int kBlockN = kCompact ? (kHeadDim <= 128 ? 32 : 16) : kHeadDim <= 64 ? 128 : kHeadDim <= 128 ? 64 : 32;
    static constexpr int kSubN = kCompact ? kBlockN : kHeadDim <= 64 ? 128 : kHeadDim <= 96 ? 64 : 32;
    static_assert(kBlockN % kSubN == 0, "whole chunks per tile");
    // K/V stages: the next tile's loads are in flight while this one computes (one barrier a tile).
    static constexpr int kStages = 2;
    // Rows padded by 16 bytes: an odd number of 16-byte chunks per row makes the 8 row
    // addresses of each ldmatrix fall in 8 different bank groups (no conflicts, no swizzle).
    static constexpr int kStrideQK = kHeadDim + 8;
    static constexpr int kStrideV = kHeadDimV + 8;
    static constexpr int kSmemQ = kBlockM * kStrideQK;  // elements
    static constexpr int kSmemK = kBlockN * kStrideQK;  // one stage
    static constexpr int kSmemV = kBlockN * kStrideV;
    // Paged KV: the page ids of a tile, one per 16 keys (pages hold 16 tokens or more), K's
    // then V's, read one tile ahead into one of two buffers.
    static constexpr int kPageIds = 2 * (kBlockN / 16);
    static constexpr int kSmemBytes =
        (kSmemQ + kStages * (kSmemK + kSmemV)) * 2 + 2 * 16 + 2 * kPageIds * 4;  // + bidir bounds, page ids
};

}  // namespace fmha::sm80
