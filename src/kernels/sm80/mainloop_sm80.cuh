// Mainloop pieces of the portable family: the two warp-level GEMMs on CuTe's SM80 atoms
// (ldmatrix + mma.sync m16n8k16, FP32 accumulation) over padded shared-memory rows.
#pragma once

#include <cstdint>

#include <cute/arch/copy_sm75.hpp>
#include <cute/arch/mma_sm80.hpp>

#include "kernels/common/elem.cuh"

namespace fmha::sm80 {

// The MMA atom of each element type (FP8 runs on FP16 after dequantisation).
template <class Elem>
struct MmaOf {
    using type = cute::SM80_16x8x16_F32F16F16F32_TN;
};
template <>
struct MmaOf<__nv_bfloat16> {
    using type = cute::SM80_16x8x16_F32BF16BF16F32_TN;
};

__device__ inline void ldsm(void const* smem, uint32_t (&r)[4]) {
    cute::SM75_U32x4_LDSM_N::copy(*reinterpret_cast<cute::uint128_t const*>(smem), r[0], r[1], r[2], r[3]);
}
__device__ inline void ldsmT(void const* smem, uint32_t (&r)[4]) {
    cute::SM75_U16x8_LDSM_T::copy(*reinterpret_cast<cute::uint128_t const*>(smem), r[0], r[1], r[2], r[3]);
}

template <class Mma>
__device__ inline void mma(float (&d)[4], uint32_t const (&a)[4], uint32_t b0, uint32_t b1) {
    Mma::fma(d[0], d[1], d[2], d[3], a[0], a[1], a[2], a[3], b0, b1, d[0], d[1], d[2], d[3]);
}

// S[kMT*16 x kBlockN] = Q[warp's rows] . K^T over kHeadDim. Accumulator s[mt][nt] holds,
// for lane (g = lane/4, t = lane%4), rows mt*16 + g and +8 at columns nt*8 + 2t, +1.
template <class Compute, class Mma, int kMT, int kHeadDim, int kBlockN, int kStride>
__device__ inline void gemmQK(Compute const* sQ, Compute const* sK, int lane, float (&s)[kMT][kBlockN / 8][4]) {
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
        for (int nt = 0; nt < kBlockN / 8; ++nt) s[mt][nt][0] = s[mt][nt][1] = s[mt][nt][2] = s[mt][nt][3] = 0.0F;
    int const qRow = (lane % 8) + ((lane / 8) % 2) * 8, qCol = (lane / 16) * 8;
    int const kRow = (lane % 8) + (lane / 16) * 8, kCol = ((lane / 8) % 2) * 8;
#pragma unroll
    for (int kk = 0; kk < kHeadDim / 16; ++kk) {
        uint32_t a[kMT][4];
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt) ldsm(sQ + (mt * 16 + qRow) * kStride + kk * 16 + qCol, a[mt]);
#pragma unroll
        for (int np = 0; np < kBlockN / 16; ++np) {
            uint32_t b[4];
            ldsm(sK + (np * 16 + kRow) * kStride + kk * 16 + kCol, b);
#pragma unroll
            for (int mt = 0; mt < kMT; ++mt) {
                mma<Mma>(s[mt][2 * np], a[mt], b[0], b[1]);
                mma<Mma>(s[mt][2 * np + 1], a[mt], b[2], b[3]);
            }
        }
    }
}

// Packs probabilities into MMA A fragments right away (the C layout of two n-tiles is the
// A layout of one k-step), so the FP32 scores die before the P.V product.
template <class Traits, int kMT, int kBlockN>
__device__ inline void packP(float const (&p)[kMT][kBlockN / 8][4], uint32_t (&a)[kMT][kBlockN / 16][4]) {
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
        for (int kk = 0; kk < kBlockN / 16; ++kk) {
            a[mt][kk][0] = Traits::pack(p[mt][2 * kk][0], p[mt][2 * kk][1]);
            a[mt][kk][1] = Traits::pack(p[mt][2 * kk][2], p[mt][2 * kk][3]);
            a[mt][kk][2] = Traits::pack(p[mt][2 * kk + 1][0], p[mt][2 * kk + 1][1]);
            a[mt][kk][3] = Traits::pack(p[mt][2 * kk + 1][2], p[mt][2 * kk + 1][3]);
        }
}

// O[kMT*16 x kHeadDimV] += P . V with P as packed A fragments.
template <class Compute, class Mma, int kMT, int kHeadDimV, int kBlockN, int kStride>
__device__ inline void gemmPV(uint32_t const (&a)[kMT][kBlockN / 16][4], Compute const* sV, int lane,
                              float (&o)[kMT][kHeadDimV / 8][4]) {
    int const vRow = (lane % 8) + ((lane / 8) % 2) * 8, vCol = (lane / 16) * 8;
#pragma unroll
    for (int kk = 0; kk < kBlockN / 16; ++kk) {
#pragma unroll
        for (int dp = 0; dp < kHeadDimV / 16; ++dp) {
            uint32_t b[4];
            ldsmT(sV + (kk * 16 + vRow) * kStride + dp * 16 + vCol, b);
#pragma unroll
            for (int mt = 0; mt < kMT; ++mt) {
                mma<Mma>(o[mt][2 * dp], a[mt][kk], b[0], b[1]);
                mma<Mma>(o[mt][2 * dp + 1], a[mt][kk], b[2], b[3]);
            }
        }
    }
}

}  // namespace fmha::sm80
