// Mainloop pieces of the portable family: global->shared tile loads (cp.async for 16-bit
// input, dequantising loads for FP8) and the two warp-level GEMMs on CuTe's SM80 atoms
// (ldmatrix + mma.sync m16n8k16, FP32 accumulation).
#pragma once

#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cute/arch/copy_sm75.hpp>
#include <cute/arch/copy_sm80.hpp>
#include <cute/arch/mma_sm80.hpp>

namespace fmha::sm80 {

// Storage type in global memory -> type in shared memory / MMA operands.
template <class Elem>
struct ElemTraits;

template <>
struct ElemTraits<__half> {
    using Compute = __half;
    using Out = __half;
    using Mma = cute::SM80_16x8x16_F32F16F16F32_TN;
    static constexpr int kBytes = 2;
    __device__ static uint32_t pack(float lo, float hi) {
        __half2 h = __floats2half2_rn(lo, hi);
        return *reinterpret_cast<uint32_t*>(&h);
    }
};

template <>
struct ElemTraits<__nv_bfloat16> {
    using Compute = __nv_bfloat16;
    using Out = __nv_bfloat16;
    using Mma = cute::SM80_16x8x16_F32BF16BF16F32_TN;
    static constexpr int kBytes = 2;
    __device__ static uint32_t pack(float lo, float hi) {
        __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
        return *reinterpret_cast<uint32_t*>(&h);
    }
};

// FP8 E4M3 is dequantised to FP16 on its way to shared memory (exact: every E4M3 value is
// an FP16 value); q/k scales live in the softmax scale and vScale in the epilogue.
template <>
struct ElemTraits<__nv_fp8_e4m3> {
    using Compute = __half;
    using Out = __half;
    using Mma = cute::SM80_16x8x16_F32F16F16F32_TN;
    static constexpr int kBytes = 1;
    __device__ static uint32_t pack(float lo, float hi) { return ElemTraits<__half>::pack(lo, hi); }
};

// Loads rows [0, kRows) x chunks [0, kChunks) of 8 elements into shared memory (row
// stride kStride elements). rowPtr(r) gives the row's first byte or null (zeros);
// chunk c reads global chunk chunk0 + c and is zero past validChunks. fallback is any
// valid global address, handed to zero-filling cp.async so that no wild address is formed.
template <class Elem, int kRows, int kChunks, int kStride, int kNThreads, class RowPtr>
__device__ inline void loadTile(typename ElemTraits<Elem>::Compute* smem, RowPtr const& rowPtr, int chunk0,
                                int validChunks, void const* fallback, int tid) {
    constexpr int kTotal = kRows * kChunks;
#pragma unroll 4
    for (int idx = tid; idx < kTotal; idx += kNThreads) {
        int const r = idx / kChunks, c = idx % kChunks;
        char const* row = rowPtr(r);
        int const gc = chunk0 + c;
        bool const valid = row != nullptr && gc < validChunks;
        auto* dst = smem + r * kStride + c * 8;
        if constexpr (ElemTraits<Elem>::kBytes == 2) {
            auto const* src = reinterpret_cast<cute::uint128_t const*>(valid ? row + gc * 16 : fallback);
            cute::SM80_CP_ASYNC_CACHEGLOBAL_ZFILL<cute::uint128_t>::copy(
                *src, *reinterpret_cast<cute::uint128_t*>(dst), valid);
        } else {
            uint4 out = make_uint4(0, 0, 0, 0);
            if (valid) {
                uint2 const raw = *reinterpret_cast<uint2 const*>(row + gc * 8);
                uint32_t const words[2] = {raw.x, raw.y};
                uint32_t* o = &out.x;
#pragma unroll
                for (int w = 0; w < 2; ++w) {
                    __half2_raw lo = __nv_cvt_fp8x2_to_halfraw2(
                        static_cast<__nv_fp8x2_storage_t>(words[w] & 0xFFFFu), __NV_E4M3);
                    __half2_raw hi = __nv_cvt_fp8x2_to_halfraw2(
                        static_cast<__nv_fp8x2_storage_t>(words[w] >> 16), __NV_E4M3);
                    o[2 * w] = static_cast<uint32_t>(lo.x) | (static_cast<uint32_t>(lo.y) << 16);
                    o[2 * w + 1] = static_cast<uint32_t>(hi.x) | (static_cast<uint32_t>(hi.y) << 16);
                }
            }
            *reinterpret_cast<uint4*>(dst) = out;
        }
    }
}

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

// S[16 x kBlockN] = Q[warp's 16 rows] . K^T over kHeadDim. Accumulator s[nt] holds, for
// lane (g = lane/4, t = lane%4), rows g and g+8 at columns nt*8 + 2t, +1.
template <class Compute, class Mma, int kHeadDim, int kBlockN, int kStride>
__device__ inline void gemmQK(Compute const* sQ, Compute const* sK, int lane, float (&s)[kBlockN / 8][4]) {
#pragma unroll
    for (int nt = 0; nt < kBlockN / 8; ++nt) s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.0F;
    int const qRow = (lane % 8) + ((lane / 8) % 2) * 8, qCol = (lane / 16) * 8;
    int const kRow = (lane % 8) + (lane / 16) * 8, kCol = ((lane / 8) % 2) * 8;
#pragma unroll
    for (int kk = 0; kk < kHeadDim / 16; ++kk) {
        uint32_t a[4];
        ldsm(sQ + qRow * kStride + kk * 16 + qCol, a);
#pragma unroll
        for (int np = 0; np < kBlockN / 16; ++np) {
            uint32_t b[4];
            ldsm(sK + (np * 16 + kRow) * kStride + kk * 16 + kCol, b);
            mma<Mma>(s[2 * np], a, b[0], b[1]);
            mma<Mma>(s[2 * np + 1], a, b[2], b[3]);
        }
    }
}

// O[16 x kHeadDimV] += P[16 x kBlockN] . V; P comes straight from the S accumulators
// (the C layout of two n-tiles is the A layout of one k-step).
template <class Traits, class Mma, int kHeadDimV, int kBlockN, int kStride>
__device__ inline void gemmPV(float const (&p)[kBlockN / 8][4], typename Traits::Compute const* sV, int lane,
                              float (&o)[kHeadDimV / 8][4]) {
    int const vRow = (lane % 8) + ((lane / 8) % 2) * 8, vCol = (lane / 16) * 8;
#pragma unroll
    for (int kk = 0; kk < kBlockN / 16; ++kk) {
        uint32_t a[4];
        a[0] = Traits::pack(p[2 * kk][0], p[2 * kk][1]);
        a[1] = Traits::pack(p[2 * kk][2], p[2 * kk][3]);
        a[2] = Traits::pack(p[2 * kk + 1][0], p[2 * kk + 1][1]);
        a[3] = Traits::pack(p[2 * kk + 1][2], p[2 * kk + 1][3]);
#pragma unroll
        for (int dp = 0; dp < kHeadDimV / 16; ++dp) {
            uint32_t b[4];
            ldsmT(sV + (kk * 16 + vRow) * kStride + dp * 16 + vCol, b);
            mma<Mma>(o[2 * dp], a, b[0], b[1]);
            mma<Mma>(o[2 * dp + 1], a, b[2], b[3]);
        }
    }
}

}  // namespace fmha::sm80
