// Epilogue of the portable family: normalise the accumulators, stage the warp's 16 rows in
// shared memory, store them with 16-byte writes; the LSE goes out per row.
#pragma once

#include <cstdint>

#include "kernels/sm80/mainloop_sm80.cuh"

namespace fmha::sm80 {

// o: the warp's accumulators; scale[r]: per-row factor (1/sum times vScale; 0 for an empty
// row, so that it writes zeros). sStage: the warp's 16 rows of shared memory (stride kStride).
// Rows >= rows and columns >= cols are not written.
template <class Traits, int kHeadDimV, int kStride>
__device__ inline void storeOutput(float const (&o)[kHeadDimV / 8][4], float const (&scale)[2],
                                   typename Traits::Out* sStage, int lane, typename Traits::Out* gOut,
                                   int64_t rowStride, int rows, int cols) {
    using Out = typename Traits::Out;
    int const g = lane / 4, t = lane % 4;
#pragma unroll
    for (int nt = 0; nt < kHeadDimV / 8; ++nt) {
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            uint32_t const v = Traits::pack(o[nt][2 * r] * scale[r], o[nt][2 * r + 1] * scale[r]);
            *reinterpret_cast<uint32_t*>(sStage + (g + 8 * r) * kStride + nt * 8 + 2 * t) = v;
        }
    }
    __syncwarp();
    int const chunks = cols / 8;
    for (int idx = lane; idx < 16 * chunks; idx += 32) {
        int const r = idx / chunks, c = idx % chunks;
        if (r < rows)
            *reinterpret_cast<uint4*>(gOut + r * rowStride + c * 8) =
                *reinterpret_cast<uint4 const*>(sStage + r * kStride + c * 8);
    }
}

}  // namespace fmha::sm80
