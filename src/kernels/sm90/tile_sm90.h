// Tile configuration of the Hopper (wgmma) family, one constexpr place for every choice.
#pragma once

namespace fmha::sm90 {

template <int kHeadDim>
struct TileSm90 {
    static_assert(kHeadDim == 64 || kHeadDim == 128 || kHeadDim == 256, "native wgmma head dims");
    // Two consumer warpgroups, 64 query rows each (the wgmma M).
    static constexpr int kNWarpGroups = 2;
    static constexpr int kNThreads = 128 * kNWarpGroups;
    static constexpr int kBlockM = 64 * kNWarpGroups;
    // Keys per tile: S is kBlockN/2 FP32 registers a thread and O kHeadDim/2. At D=256, O
    // takes 128, so 64-key tiles (32 for S) keep the thread under 255 without spills.
    static constexpr int kBlockN = kHeadDim <= 128 ? 128 : 64;
    // K/V stages: tile n-1 loads while tile n computes.
    static constexpr int kStages = 2;
    // Shared memory in 128-byte swizzled rows: 64 columns per block, blocks of rows x 128 B.
    static constexpr int kColBlocks = kHeadDim / 64;
    static constexpr int kBytesQ = kBlockM * kHeadDim * 2;
    static constexpr int kBytesKV = kBlockN * kHeadDim * 2;
    // Q + 2 stages of K and V: 80 KB (D=64), 160 KB (D=128), 192 KB (D=256) of 227 KB.
    static constexpr int kSmemBytes = kBytesQ + 2 * kStages * kBytesKV + 1024;  // + alignment slack
    // The epilogue stages O row-major with 16 bytes of padding per row, in the K/V space.
    static constexpr int kStrideO = kHeadDim + 8;
    static_assert(kBlockM * kStrideO * 2 <= 2 * kStages * kBytesKV, "epilogue staging fits");
};

}  // namespace fmha::sm90
