// The portable family's mainloop: the two warp-level GEMMs on CuTe's SM80 atoms (ldmatrix +
// mma.sync m16n8k16, FP32 accumulation) over padded shared-memory rows, and the loop over a
// CTA's K/V tiles that drives them.
#pragma once

#include <climits>
#include <cstdint>
#include <type_traits>

#include <cute/arch/copy_sm75.hpp>
#include <cute/arch/mma_sm80.hpp>

#include "kernels/common/elem.cuh"
#include "kernels/common/kv_address.cuh"
#include "kernels/common/mask.cuh"
#include "kernels/common/seqlen.cuh"
#include "kernels/common/softmax.cuh"
#include "kernels/common/tile_load.cuh"
#include "params.h"

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

// The mainloop of one CTA over rows [m0, m1): o and the softmax state start empty; where the
// rows see a tile, Q and the visited K/V tiles go into shared memory (cp.async, two stages,
// page ids one tile ahead) and every tile, from the last to the first, through its chunks:
// Q.K^T, the mask, skip-softmax, the online softmax and P.V into o. CTA-wide (barriers); ends
// with Q's shared memory free for the epilogue.
template <class Tile, class Elem, KvAddressing kKv>
__device__ __forceinline__ void mainloopSm80(FmhaParams const& p, SeqInfo const& seq,
                                             MaskPolicy<Tile::kBlockN> const& mask,
                                             typename ElemTraits<Elem>::Compute* sQ,
                                             typename ElemTraits<Elem>::Compute* sK,
                                             typename ElemTraits<Elem>::Compute* sV, int* sBidir, int tid, int warp,
                                             int lane, int g, int t, int D, int b, int hq, int hkv, int vSplit,
                                             int m0, int m1,
                                             int warpRow0, int warpRows, int64_t rowStride,
                                             float (&o)[Tile::kMTiles][Tile::kHeadDimV / 8][4],
                                             OnlineSoftmax<2 * Tile::kMTiles>& softmax) {
    using ET = ElemTraits<Elem>;
    using Compute = typename ET::Compute;
    using Mma = typename MmaOf<Elem>::type;
    constexpr int kHeadDim = Tile::kDim;
    constexpr int kBlockM = Tile::kBlockM, kBlockN = Tile::kBlockN, kDv = Tile::kHeadDimV;
    constexpr int kMT = Tile::kMTiles, kRows = 2 * kMT;  // m16 tiles per warp; rows per thread
    constexpr int kSubN = Tile::kSubN;                   // keys per compute chunk
    constexpr int kNT = kSubN / 8;                       // n-tiles of 8 keys in a chunk
    // The 64-key tiles of D=80..128 take the warp-level chunk skip and the causal-only element
    // mask; at D=64 (128-key chunks) they raised ptxas's spills from 72 to 132 bytes, at D=256
    // (one 32-key chunk a tile) they cost 9% on the H200. D=64..128 take a softmax reference
    // max that lags the running max by up to 8 (base 2), which spares most output rescales
    // (at D=64 +0.4-4.6% on the H200; spill-neutral since its test reads each lane's own maxima).
    constexpr bool kLean = kBlockN == 64;
    constexpr int kSlackLog2 = kHeadDim <= 128 ? 8 : 0;
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
        for (int nt = 0; nt < kDv / 8; ++nt) o[mt][nt][0] = o[mt][nt][1] = o[mt][nt][2] = o[mt][nt][3] = 0.0F;
    softmax.init();
    if (mask.empty()) return;

    constexpr int kElemBytes = ET::kBytes;
    char const* qBase = static_cast<char const*>(p.q) +
                        ((seq.qBegin + m0) * rowStride + static_cast<int64_t>(hq) * D) * kElemBytes;
    KvAddress<kKv, kElemBytes> const kv(p, seq, b, hkv);
    constexpr bool kPagedKv = kKv == KvAddressing::kPaged;
    constexpr int kIds = Tile::kPageIds / 2;  // page ids of a tile's K; as many of its V follow
    // Paged KV: tile n's page ids, copied into shared memory with tile n + 1's K/V (one
    // tile ahead), so that issuing tile n's copies waits on no page-table read.
    int* const sIds = sBidir + 8;
    auto copyIds = [&](int n) {
        if constexpr (kPagedKv) {
            if (tid < Tile::kPageIds) {
                int const isV = tid / kIds, q = tid % kIds;
                int32_t const* src = kv.pages + kv.pageSlot(isV, min(n * kBlockN + 16 * q, seq.lk - 1));
                cute::SM80_CP_ASYNC_CACHEALWAYS<uint32_t>::copy(
                    *reinterpret_cast<uint32_t const*>(src),
                    *reinterpret_cast<uint32_t*>(sIds + (n & 1) * Tile::kPageIds + tid));
            }
        }
    };
    // Tile n's K/V row address: key j0 + r of run q (16 keys). Past Lk, anything in bounds.
    auto runRow = [&](bool isV, int n, int q, int j) -> char const* {
        if constexpr (kPagedKv)
            return kv.pageRow(sIds[(n & 1) * Tile::kPageIds + (isV ? kIds : 0) + q], j);
        else
            return kv.row(isV, j);
    };
    // Tile n's K and/or V (parts: 1 K, 2 V, 3 both) into stage st; the V part closes the
    // tile's cp.async group (with tile n - 1's page ids).
    // Rows past Lk read as zeros. Only the first tile loaded (the last one, which holds
    // the end of the visible keys) can be partial: the loop's loads pass full = true.
    auto loadKV = [&](int n, int st, auto full, auto parts) {
        constexpr bool kK = decltype(parts)::value & 1, kV = decltype(parts)::value & 2;
        Compute* k = sK + st * Tile::kSmemK;
        Compute* v = sV + st * Tile::kSmemV;
        auto copy = [&](auto const& kRow, auto const& vRow) {
            if constexpr (kK)
                loadTile<Elem, kBlockN, kHeadDim / 8, Tile::kNThreads, true>(
                    kRow, [&](int r, int c) { return k + r * Tile::kStrideQK + c * 8; }, 0, D / 8, p.k, tid);
            if constexpr (kV)
                loadTile<Elem, kBlockN, kDv / 8, Tile::kNThreads, true>(
                    vRow, [&](int r, int c) { return v + r * Tile::kStrideV + c * 8; }, vSplit * kDv / 8, D / 8,
                    p.k, tid);
        };
        if constexpr (kV)
            if (n > mask.nBlockMin) copyIds(n - 1);
        int const j0 = n * kBlockN;
        int const rows = decltype(full)::value ? kBlockN : seq.lk - j0;
        int64_t const stride = kv.runStride();
        if (kv.runCovers(kBlockN)) {  // the tile is one run (strided, or pages >= the tile)
            if constexpr (kK)
                loadRun<Elem, kBlockN, kHeadDim / 8, Tile::kNThreads>(
                    runRow(false, n, 0, j0), stride, rows,
                    [&](int r, int c) { return k + r * Tile::kStrideQK + c * 8; }, 0, D / 8, p.k, tid);
            if constexpr (kV)
                loadRun<Elem, kBlockN, kDv / 8, Tile::kNThreads>(
                    runRow(true, n, 0, j0), stride, rows,
                    [&](int r, int c) { return v + r * Tile::kStrideV + c * 8; }, vSplit * kDv / 8, D / 8, p.k,
                    tid);
        } else if constexpr (kElemBytes == 2 && kBlockN / 16 <= 4 && Tile::kNThreads % (kHeadDim / 8) == 0 &&
                             Tile::kNThreads % (kDv / 8) == 0) {
            // Pages of 16 tokens or more: the tile is runs of 16 rows, each in one page,
            // each run copied by a warp of its own (one page id and one address a thread).
            // A run's start is clamped to the last key (an address in bounds); its rows
            // past Lk read as zeros. 128-key tiles, rows whose chunks do not divide the CTA
            // and FP8 (dequantised through registers) keep one address a row. (On the
            // H200 at page 16: every thread forming every run's address, 8% slower; one
            // loadRun() per run, -6%.)
            constexpr int kRuns = kBlockN / 16;
            auto runBase = [&](bool isV) {
                return [&, isV](int q) { return runRow(isV, n, q, min(j0 + 16 * q, seq.lk - 1)); };
            };
            if constexpr (kK)
                loadRuns<Elem, kBlockN, kRuns, kHeadDim / 8, Tile::kNThreads>(
                    runBase(false), stride, rows, [&](int r, int c) { return k + r * Tile::kStrideQK + c * 8; },
                    0, D / 8, p.k, tid);
            if constexpr (kV)
                loadRuns<Elem, kBlockN, kRuns, kDv / 8, Tile::kNThreads>(
                    runBase(true), stride, rows, [&](int r, int c) { return v + r * Tile::kStrideV + c * 8; },
                    vSplit * kDv / 8, D / 8, p.k, tid);
        } else {
            // A row's address is formed even past Lk (from the last key), so that no
            // branch sits in the unrolled copies.
            auto rowsOf = [&](bool isV) {
                return [&, isV](int r) -> char const* {
                    char const* a = runRow(isV, n, r / 16, min(j0 + r, seq.lk - 1));
                    return j0 + r < seq.lk ? a : nullptr;
                };
            };
            copy(rowsOf(false), rowsOf(true));
        }
        if constexpr (kV) cute::cp_async_fence();
    };
    using OnlyK = std::integral_constant<int, 1>;
    using OnlyV = std::integral_constant<int, 2>;
    using Both = std::integral_constant<int, 3>;

    // The Q tile is one run of m1 - m0 rows; rows past Lq read as zeros. 16-bit Q goes
    // through loadRun (loadTile's per-row addresses held 4% of the samples of a 16-tile
    // CTA at D=128, ncu on the H200; the same copies in a rolled loop ran 1-2% slower);
    // FP8 Q, dequantised through registers, keeps loadTile's rolled loop.
    auto loadQ = [&] {
        auto dstQ = [&](int r, int c) { return sQ + r * Tile::kStrideQK + c * 8; };
        int64_t const qStride = rowStride * kElemBytes;
        if constexpr (kElemBytes == 2)
            loadRun<Elem, kBlockM, kHeadDim / 8, Tile::kNThreads>(qBase, qStride, m1 - m0, dstQ, 0, D / 8, p.q,
                                                                  tid);
        else
            loadTile<Elem, kBlockM, kHeadDim / 8, Tile::kNThreads>(
                [&](int r) -> char const* { return r < m1 - m0 ? qBase + r * qStride : nullptr; }, dstQ, 0,
                D / 8, p.q, tid);
    };
    if constexpr (kPagedKv) {  // the first tile's page ids, then Q's copies while they land
        copyIds(mask.nBlockMax - 1);
        cute::cp_async_fence();
        loadQ();
        cute::cp_async_fence();
        cute::cp_async_wait<1>();
        __syncthreads();
    } else {
        loadQ();
    }
    loadKV(mask.nBlockMax - 1, 0, std::false_type{}, Both{});  // one group with Q (strided KV)

    // Per-row mask data, fixed for the whole loop; rows past Lq allow nothing.
    // Thread row r is warp row (r / 2) * 16 + g + 8 * (r % 2).
    auto rowIndex = [&](int r) { return warpRow0 + (r / 2) * 16 + g + 8 * (r % 2); };
    bool const skipOn = p.skipFactor > 0.0F && p.skipFactor < static_cast<float>(seq.lk);
    float const skipLog2 = skipOn ? log2f(p.skipFactor / static_cast<float>(seq.lk)) : 0.0F;

    // Keys outside [warpKeyBegin, warpKeyEnd) are visible to no row of this warp
    // (bidirectional blocks aside): a masked chunk entirely outside is skipped by the
    // whole warp. A warp without rows sees nothing; the end is <= 0 where none sees a key.
    int32_t warpKeyBegin = 0, warpKeyEnd = 0;
    if (warpRows > 0) {
        int64_t lo = 0, hi = seq.lk;
        if (!mask.hasBidir) mask.causalKeys(warpRow0, warpRow0 + warpRows, &lo, &hi);
        warpKeyBegin = static_cast<int32_t>(lo);
        warpKeyEnd = static_cast<int32_t>(hi);
    }
    // Keys in [warpFullBegin, warpFullEnd) are visible to every row of this warp: a masked
    // chunk inside skips the element mask (empty for a warp with rows past Lq). On the
    // causal diagonal most of a masked tile's chunks are such (+1.1% at D=128 S=512 causal
    // on the H200).
    int32_t warpFullBegin = 0, warpFullEnd = 0;
    if (kLean && warpRows == Tile::kWarpRows) {
        int64_t lo = 0, hi = 0;
        mask.commonKeys(warpRow0, warpRow0 + warpRows, &lo, &hi);
        warpFullBegin = static_cast<int32_t>(lo);
        warpFullEnd = static_cast<int32_t>(hi);
    }
    // Keys [j0, j0 + kSubN) of the tile in stage st: chunk h of tile n. The next tile's
    // loads are issued after a chunk's Q.K^T MMAs, so that their address arithmetic
    // overlaps the tensor cores (before any MMA: at D=80 -1% on the H200; after the P.V
    // MMAs: 3-10% slower at D=128). Over contiguous KV, a tile of two chunks (D=128)
    // issues its K copies after the first chunk's and its V copies after the second's:
    // one burst of 16 copies a thread stalled on the copies' address registers (+0.9% to
    // +1.5% on the H200's non-causal D=128 rows). Over pages the split cost 0.9% at page
    // 16; all copies follow the last chunk's (after the first chunk's: about 1% slower).
    auto chunk = [&](int n, int st, int h, auto maskedArg) {
        bool const masked = maskedArg;  // a constant where the caller passes a std::bool_constant
        int const j0 = n * kBlockN + h * kSubN;
        // One copy of the load code serves both paths (a second one cost ~900 instructions
        // of loop body at D=128 paged).
        bool const dead = kLean && masked && (j0 >= warpKeyEnd || j0 + kSubN <= warpKeyBegin);
        float s[kMT][kNT][4];
        if (!dead)
            gemmQK<Compute, Mma, kMT, kHeadDim, kSubN, Tile::kStrideQK>(
                sQ + warp * Tile::kWarpRows * Tile::kStrideQK,
                sK + st * Tile::kSmemK + h * kSubN * Tile::kStrideQK, lane, s);
        if (n > mask.nBlockMin) {
            constexpr int kLast = kBlockN / kSubN - 1;
            if constexpr (kLast > 0 && !kPagedKv) {  // K after the first chunk, V after the last
                if (h == 0)
                    loadKV(n - 1, st ^ 1, std::true_type{}, OnlyK{});
                else if (h == kLast)
                    loadKV(n - 1, st ^ 1, std::true_type{}, OnlyV{});
            } else if (h == kLast) {
                loadKV(n - 1, st ^ 1, std::true_type{}, Both{});
            }
        }
        if (dead) return;
        auto applyMask = [&](auto withBidir) {
#pragma unroll
            for (int r = 0; r < kRows; ++r) {
                int const i = rowIndex(r);
                auto const rm = i < seq.lq ? mask.row(i) : MaskPolicy<kBlockN>::none();
                int const mt = r / 2, half = r % 2;
                MaskPolicy<kBlockN>::template maskRow<kNT, decltype(withBidir)::value>(
                    rm, j0, t, [&](int nt, int e) { s[mt][nt][2 * half + e] = -INFINITY; });
            }
        };
        bool const full = kLean && j0 >= warpFullBegin && j0 + kSubN <= warpFullEnd;
        if (masked && !full) {  // row bounds are recomputed here rather than held across the loop
            if (!kLean || mask.hasBidir)
                applyMask(std::true_type{});
            else
                applyMask(std::false_type{});
        }
        float sr[kRows][kNT * 2];
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
            for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
                for (int e = 0; e < 4; ++e) sr[2 * mt + e / 2][nt * 2 + (e & 1)] = s[mt][nt][e];
        float laneMax[kRows];  // this lane's row maxima (the skip test and updateWarp take them)
        OnlineSoftmax<kRows>::threadMax(sr, laneMax);
        bool skip = false;
        uint32_t pa[kMT][kNT / 2][4];
        if (skipOn) {
            bool mine = true;
#pragma unroll
            for (int r = 0; r < kRows; ++r)
                mine = mine && (rowIndex(r) >= seq.lq || softmax.rowNegligible(r, laneMax[r], p.scaleLog2, skipLog2));
            skip = __all_sync(0xffffffffu, mine);  // the warp's rows decide together
        }
        if (!skip) {
            float rescale[kRows];
            bool const moved = softmax.template updateWarp<8 * kSlackLog2>(sr, laneMax, p.scaleLog2, rescale);
#pragma unroll
            for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
                for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
                    for (int e = 0; e < 4; ++e) s[mt][nt][e] = sr[2 * mt + e / 2][nt * 2 + (e & 1)];
            packP<ET, kMT, kSubN>(s, pa);
            if (moved) {  // warp-uniform; rare once the first chunks have set the reference
#pragma unroll
                for (int mt = 0; mt < kMT; ++mt) {
#pragma unroll
                    for (int nt = 0; nt < kDv / 8; ++nt) {
                        o[mt][nt][0] *= rescale[2 * mt];
                        o[mt][nt][1] *= rescale[2 * mt];
                        o[mt][nt][2] *= rescale[2 * mt + 1];
                        o[mt][nt][3] *= rescale[2 * mt + 1];
                    }
                }
            }
            gemmPV<Compute, Mma, kMT, kDv, kSubN, Tile::kStrideV>(
                pa, sV + st * Tile::kSmemV + h * kSubN * Tile::kStrideV, lane, o);
        }
    };
    // A paged tile's warps without query rows (the tile's last warps where a chunk of
    // queries is short) only load: at Lq = 64 half the CTA's MMAs would be on padding
    // (without load-only warps: 166 TFLOPS against 184 on the H200's 64-query chunk row).
    // Their branch comes after the one barrier every warp shares: __syncthreads is an
    // aligned barrier, which every thread of the CTA must reach at the same instruction
    // (load-only warps in a loop of their own ran at 192, but synccheck reports the
    // divergent barriers). Paged only: in the contiguous-KV kernels the branch cost the
    // dense D=128 rows 3%.
    constexpr bool kIdleWarps = kLean && kPagedKv;
    auto tileLanded = [] {  // tile n landed in its stage; every warp is done with the other stage
        cute::cp_async_wait<0>();
        __syncthreads();
    };
    auto step = [&](int n, int st, auto masked) {
        if constexpr (!kIdleWarps) tileLanded();
#pragma unroll
        for (int h = 0; h < kBlockN / kSubN; ++h) chunk(n, st, h, masked);
    };

    for (int n = mask.nBlockMax - 1, st = 0; n >= mask.nBlockMin; --n, st ^= 1) {
        if constexpr (kIdleWarps) {
            tileLanded();
            if (warpRows == 0) {  // (at D=64 this branch doubled ptxas's spills)
                if (n > mask.nBlockMin) loadKV(n - 1, st ^ 1, std::true_type{}, Both{});
                continue;
            }
        }
        // 64-key tiles get a body for masked tiles and one without any mask code (at
        // D=128: 3 spill reloads a tile instead of 17), +3-4% on the H200's D=128 rows
        // of 4k-8k keys, but -5% at S=512 causal, where 40% of the tiles are masked and
        // both bodies outgrow the instruction cache (ncu: warps waiting for instructions
        // rose 5x). At D=64 the second copy spilled 204 bytes.
        if constexpr (kLean) {
            if (mask.tileNeedsMask(n))
                step(n, st, std::true_type{});
            else
                step(n, st, std::false_type{});
        } else {
            step(n, st, mask.tileNeedsMask(n));
        }
    }
    __syncthreads();  // the epilogue reuses Q's shared memory
}

}  // namespace fmha::sm80
