// Mainloop pieces of the Hopper family: 128-byte-swizzled shared-memory tiles, their wgmma
// matrix descriptors, and the two warpgroup GEMMs (SS for Q.K^T, RS for P.V) on CuTe's
// SM90 GMMA atoms. Accumulators are flat FP32 arrays in the per-warp mma.sync C layout.
#pragma once

#include <cstdint>
#include <utility>

#include <cute/arch/mma_sm90_desc.hpp>
#include <cute/arch/mma_sm90_gmma.hpp>

#include "kernels/common/elem.cuh"

namespace fmha::sm90 {

namespace gmma = cute::SM90::GMMA;

// Byte offset of chunk c (8 elements) of row r in a tile of kRows rows stored as 64-column
// blocks of kRows x 128 B, each row's eight 16-byte chunks XOR-swizzled by (row % 8): the
// canonical SWIZZLE_128B layout wgmma reads, free of bank conflicts for 8-row accesses.
template <int kRows>
__device__ inline int swizzledOffset(int r, int c) {
    return (c / 8) * (kRows * 128) + r * 128 + (((c % 8) ^ (r % 8)) << 4);
}

// Descriptor of a SWIZZLE_128B tile at smem address addr (1024-byte aligned atoms):
// 8-row groups 1024 B apart (SBO). lbo is the byte distance between 64-column blocks, used
// by MN-major operands (K-major swizzled operands ignore it).
__device__ inline uint64_t sw128Desc(uint32_t addr, uint32_t lbo) {
    cute::GmmaDescriptor d;
    d.bitfield.start_address_ = static_cast<uint16_t>((addr & 0x3FFFF) >> 4);
    d.bitfield.leading_byte_offset_ = static_cast<uint16_t>(lbo >> 4);
    d.bitfield.stride_byte_offset_ = 1024 >> 4;
    d.bitfield.base_offset_ = 0;
    d.bitfield.layout_type_ = 1;  // SWIZZLE_128B
    return d.desc_;
}

template <class T, int N>
struct GmmaOps;

#define FMHA_GMMA_OPS(T, TT, N)                                                                        \
    template <>                                                                                        \
    struct GmmaOps<T, N> {                                                                             \
        using SS = gmma::MMA_64x##N##x16_F32##TT##TT##_SS<gmma::Major::K, gmma::Major::K>;             \
        using RS = gmma::MMA_64x##N##x16_F32##TT##TT##_RS<gmma::Major::K, gmma::Major::MN>;            \
    };
FMHA_GMMA_OPS(__half, F16, 64)
FMHA_GMMA_OPS(__half, F16, 128)
FMHA_GMMA_OPS(__half, F16, 256)
FMHA_GMMA_OPS(__nv_bfloat16, BF16, 64)
FMHA_GMMA_OPS(__nv_bfloat16, BF16, 128)
FMHA_GMMA_OPS(__nv_bfloat16, BF16, 256)
#undef FMHA_GMMA_OPS

template <class Op, int N, size_t... I>
__device__ inline void ss(uint64_t da, uint64_t db, float (&d)[N], gmma::ScaleOut scale, std::index_sequence<I...>) {
    Op::fma(da, db, d[I]..., scale);
}
template <class Op, int N, size_t... I>
__device__ inline void rs(uint32_t const (&a)[4], uint64_t db, float (&d)[N], std::index_sequence<I...>) {
    Op::fma(a[0], a[1], a[2], a[3], db, d[I]..., gmma::ScaleOut::One);
}

template <int N>
__device__ inline void fenceOperands(float (&d)[N]) {
#pragma unroll
    for (int i = 0; i < N; ++i) cute::warpgroup_fence_operand(d[i]);
}

// S[64 x kBlockN] = Q[warpgroup's 64 rows] . K^T. sQ: this warpgroup's first Q row inside
// a kRowsQ-row swizzled tile; sK: a kBlockN-row swizzled tile. Waits for completion.
template <class T, int kHeadDim, int kBlockN, int kRowsQ>
__device__ inline void gemmQK(uint32_t sQ, uint32_t sK, float (&s)[kBlockN / 2]) {
    using Op = typename GmmaOps<T, kBlockN>::SS;
    fenceOperands(s);
    cute::warpgroup_arrive();
#pragma unroll
    for (int kk = 0; kk < kHeadDim / 16; ++kk) {
        // k-step kk: column block kk/4, 32 bytes further per step inside the 128-byte row.
        uint32_t const colOffQ = (kk / 4) * (kRowsQ * 128) + (kk % 4) * 32;
        uint32_t const colOffK = (kk / 4) * (kBlockN * 128) + (kk % 4) * 32;
        ss<Op>(sw128Desc(sQ + colOffQ, 0), sw128Desc(sK + colOffK, 0), s,
               kk == 0 ? gmma::ScaleOut::Zero : gmma::ScaleOut::One, std::make_index_sequence<kBlockN / 2>{});
    }
    cute::warpgroup_commit_batch();
    cute::warpgroup_wait<0>();
    fenceOperands(s);
}

// O[64 x kHeadDim] += P[64 x kBlockN] . V with P in registers (A fragments) and V an
// MN-major operand: its kBlockN-row swizzled tile read transposed. Waits for completion.
template <class T, int kHeadDim, int kBlockN>
__device__ inline void gemmPV(uint32_t const (&p)[kBlockN / 16][4], uint32_t sV, float (&o)[kHeadDim / 2]) {
    using Op = typename GmmaOps<T, kHeadDim>::RS;
#pragma unroll
    for (int kk = 0; kk < kBlockN / 16; ++kk)
#pragma unroll
        for (int i = 0; i < 4; ++i) cute::warpgroup_fence_operand(const_cast<uint32_t&>(p[kk][i]));
    fenceOperands(o);
    cute::warpgroup_arrive();
#pragma unroll
    for (int kk = 0; kk < kBlockN / 16; ++kk)  // 16 keys = two 8-row groups, 2 KB further
        rs<Op>(p[kk], sw128Desc(sV + kk * 2048, kBlockN * 128), o, std::make_index_sequence<kHeadDim / 2>{});
    cute::warpgroup_commit_batch();
    cute::warpgroup_wait<0>();
    fenceOperands(o);
}

}  // namespace fmha::sm90
