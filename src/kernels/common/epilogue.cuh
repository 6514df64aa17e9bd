// Epilogue shared by both families: normalise a warp's accumulators (mma.sync and
// wgmma share the per-warp C layout), stage its rows in shared memory, store them with
// 16-byte writes; and the rows' LSE.
#pragma once

#include <cstdint>

#include "kernels/common/elem.cuh"

namespace fmha {

// o: kMT m16 tiles of the warp's accumulators; scale[2*mt + r]: per-row factor (1/sum
// times vScale; 0 for an empty row, so that it writes zeros). sStage: the warp's kMT*16
// rows of shared memory (stride kStride). The warp's row r goes to gOut + rowOffset(r);
// rows >= rows and columns >= cols are not written. bf16Out: FP8 input's BF16 output (packOut).
template <class Traits, int kMT, int kHeadDimV, int kStride, class RowOffset>
__device__ inline void storeOutput(float const (&o)[kMT][kHeadDimV / 8][4], float const (&scale)[2 * kMT],
                                   typename Traits::Out* sStage, int lane, typename Traits::Out* gOut,
                                   RowOffset const& rowOffset, int rows, int cols, bool bf16Out) {
    int const g = lane / 4, t = lane % 4;
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
        for (int nt = 0; nt < kHeadDimV / 8; ++nt)
#pragma unroll
            for (int r = 0; r < 2; ++r) {
                float const f = scale[2 * mt + r];
                uint32_t const v = packOut<Traits>(o[mt][nt][2 * r] * f, o[mt][nt][2 * r + 1] * f, bf16Out);
                *reinterpret_cast<uint32_t*>(sStage + (mt * 16 + g + 8 * r) * kStride + nt * 8 + 2 * t) = v;
            }
    __syncwarp();
    auto copyOut = [&](int r, int c) {  // 8 elements of row r
        *reinterpret_cast<uint4*>(gOut + rowOffset(r) + c * 8) =
            *reinterpret_cast<uint4 const*>(sStage + r * kStride + c * 8);
    };
    constexpr int kChunks = kHeadDimV / 8;
    if (cols == kHeadDimV) {  // every column: a copy's row and chunk by constant divisors
        // Copy idx (lane + 32 i) is row idx / kChunks: the lane's copies of rows < rows are its
        // first n. The count is formed once: the loop then holds no bound that the mainloop's
        // register pressure spilled (a local-memory reload a copy, on the H200).
        int const limit = rows * kChunks;
        int const n = limit > lane ? (limit - lane + 31) / 32 : 0;
#pragma unroll 1
        for (int i = 0; i < n; ++i) {
            unsigned const idx = static_cast<unsigned>(lane) + 32U * i;
            copyOut(static_cast<int>(idx / kChunks), static_cast<int>(idx % kChunks));
        }
        return;
    }
    int const chunks = cols / 8;
    for (int idx = lane; idx < rows * chunks; idx += 32) copyOut(idx / chunks, idx % chunks);
}

// A warp's LSE: thread row r of the accumulator layout (kRows = 2 per m16 tile) is warp row
// (r / 2) * 16 + g + 8 * (r % 2); rows below `rows` go to *at(row). Called by the lanes that
// store (one a quad).
template <int kRows, class At>
__device__ inline void storeLse(float const (&lse)[kRows], int g, int rows, At const& at) {
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
        int const row = (r / 2) * 16 + g + 8 * (r % 2);
        if (row < rows) *at(row) = lse[r];
    }
}

}  // namespace fmha
