// Hopper forward kernel (sm_90a): one CTA per (128-row query tile, head, sequence), two
// consumer warpgroups of 64 rows. Orchestration only: sequence bookkeeping, the two-stage
// K/V load schedule (tile n-1 loads while tile n computes), wgmma steps, the epilogue.
#pragma once

#include <climits>
#include <cstdint>

#include <cutlass/arch/barrier.h>

#include "kernels/common/kv_address.cuh"
#include "kernels/common/mask.cuh"
#include "kernels/common/seqlen.cuh"
#include "kernels/common/softmax.cuh"
#include "kernels/common/store_output.cuh"
#include "kernels/common/tile_load.cuh"
#include "kernels/sm90/mainloop_sm90.cuh"
#include "kernels/sm90/tile_sm90.h"
#include "params.h"

namespace fmha::sm90 {

template <ElementKind kElem, int kHeadDim, KvAddressing kKv>
__global__ void __launch_bounds__(TileSm90<kHeadDim>::kNThreads, 1) fwdKernelSm90(FmhaParams const p) {
    using Tile = TileSm90<kHeadDim>;
    using Elem = typename ElemOf<kElem>::type;
    using ET = ElemTraits<Elem>;
    using Out = typename ET::Out;
    constexpr int kBlockM = Tile::kBlockM, kBlockN = Tile::kBlockN, kNT = kBlockN / 8;
    constexpr int kChunks = kHeadDim / 8;

    extern __shared__ __align__(16) unsigned char smemRaw[];
    // wgmma's 128-byte swizzle repeats every 1024 bytes: align the tiles to that.
    unsigned char* smem = reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(smemRaw) + 1023) & ~uintptr_t{1023});
    unsigned char* sQ = smem;
    unsigned char* sK = sQ + Tile::kBytesQ;                       // kStages tiles
    unsigned char* sV = sK + Tile::kStages * Tile::kBytesKV;      // kStages tiles
    __shared__ int sBidir[2];

    int const tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
    int const wg = warp / 4;
    int const mBlock = gridDim.x - 1 - blockIdx.x;  // highest query tiles (most keys) first
    int const hq = blockIdx.y, b = blockIdx.z;
    int const hkv = hq / p.headGroup;
    int const D = p.headDim;

    SeqInfo const seq(p, b);
    int const m0 = mBlock * kBlockM;
    if (m0 >= seq.lq) return;
    int const m1 = min(m0 + kBlockM, seq.lq);

    int64_t bidirLo, bidirHi;
    bidirUnion(p, b, m0, m1, sBidir, &bidirLo, &bidirHi);
    MaskPolicy<kBlockN> const mask(p, seq, b, m0, m1, bidirLo, bidirHi);

    int64_t const rowStride = static_cast<int64_t>(p.numQHeads) * D;
    int const warpRow0 = m0 + warp * 16;  // warpgroup wg owns rows 64 wg .. 64 wg + 63
    int const warpRows = max(0, min(16, m1 - warpRow0));
    float* gLse = p.lse == nullptr ? nullptr
                                   : p.lse + static_cast<int64_t>(b) * p.lseBatchStride +
                                         static_cast<int64_t>(hq) * p.lseHeadStride + (p.lsePacked ? seq.qBegin : 0);

    float o[kHeadDim / 2];
#pragma unroll
    for (int i = 0; i < kHeadDim / 2; ++i) o[i] = 0.0F;
    OnlineSoftmax<2> softmax;
    softmax.init();

    if (!mask.empty()) {
        constexpr int kElemBytes = ET::kBytes;
        char const* qBase = static_cast<char const*>(p.q) +
                            ((seq.qBegin + m0) * rowStride + static_cast<int64_t>(hq) * D) * kElemBytes;
        auto qRow = [&](int r) -> char const* {
            return m0 + r < seq.lq ? qBase + r * rowStride * kElemBytes : nullptr;
        };
        KvAddress<kKv, kElemBytes> const kv(p, seq, b, hkv);
        auto loadKV = [&](int n, int stage) {
            for (int which = 0; which < 2; ++which) {
                auto row = [&](int r) -> char const* {
                    int const j = n * kBlockN + r;
                    return j < seq.lk ? kv.row(which == 1, j) : nullptr;
                };
                unsigned char* base = (which ? sV : sK) + stage * Tile::kBytesKV;
                auto dst = [&](int r, int c) { return base + swizzledOffset<kBlockN>(r, c); };
                loadTile<Elem, kBlockN, kChunks, Tile::kNThreads>(row, dst, 0, D / 8, p.k, tid);
            }
            cute::cp_async_fence();
        };
        auto dstQ = [&](int r, int c) { return sQ + swizzledOffset<kBlockM>(r, c); };
        loadTile<Elem, kBlockM, kChunks, Tile::kNThreads>(qRow, dstQ, 0, D / 8, p.q, tid);
        loadKV(mask.nBlockMax - 1, 0);

        uint32_t const sQAddr = static_cast<uint32_t>(__cvta_generic_to_shared(sQ)) + wg * 64 * 128;
        uint32_t const sKAddr = static_cast<uint32_t>(__cvta_generic_to_shared(sK));
        uint32_t const sVAddr = static_cast<uint32_t>(__cvta_generic_to_shared(sV));
        auto rowIndex = [&](int r) { return warpRow0 + g + 8 * r; };

        int stage = 0;
        for (int n = mask.nBlockMax - 1; n >= mask.nBlockMin; --n, stage ^= 1) {
            if (n > mask.nBlockMin) {
                loadKV(n - 1, stage ^ 1);  // the other stage was released at the end of the last step
                cute::cp_async_wait<1>();
            } else {
                cute::cp_async_wait<0>();
            }
            cutlass::arch::fence_view_async_shared();  // cp.async writes -> wgmma (async proxy) reads
            __syncthreads();

            float s[kBlockN / 2];
            gemmQK<typename ET::Compute, kHeadDim, kBlockN, kBlockM>(sQAddr, sKAddr + stage * Tile::kBytesKV, s);
            if (mask.tileNeedsMask(n)) {
#pragma unroll
                for (int r = 0; r < 2; ++r) {
                    int const i = rowIndex(r);
                    auto const rm = i < seq.lq ? mask.row(i) : MaskPolicy<kBlockN>::none();
#pragma unroll
                    for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
                        for (int e = 0; e < 2; ++e) {
                            int32_t const j = n * kBlockN + nt * 8 + 2 * t + e;
                            if (!MaskPolicy<kBlockN>::allowed(rm, j)) s[nt * 4 + 2 * r + e] = -INFINITY;
                        }
                }
            }
            float sr[2][kNT * 2];
#pragma unroll
            for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
                for (int e = 0; e < 4; ++e) sr[e / 2][nt * 2 + (e & 1)] = s[nt * 4 + e];
            float tileMax[2], rescale[2];
            OnlineSoftmax<2>::tileMax(sr, tileMax);
            softmax.update(sr, tileMax, p.scaleLog2, rescale);
            uint32_t pa[kBlockN / 16][4];
#pragma unroll
            for (int kk = 0; kk < kBlockN / 16; ++kk) {
                pa[kk][0] = ET::pack(sr[0][4 * kk + 0], sr[0][4 * kk + 1]);
                pa[kk][1] = ET::pack(sr[1][4 * kk + 0], sr[1][4 * kk + 1]);
                pa[kk][2] = ET::pack(sr[0][4 * kk + 2], sr[0][4 * kk + 3]);
                pa[kk][3] = ET::pack(sr[1][4 * kk + 2], sr[1][4 * kk + 3]);
            }
#pragma unroll
            for (int nt = 0; nt < kHeadDim / 8; ++nt) {
                o[nt * 4 + 0] *= rescale[0];
                o[nt * 4 + 1] *= rescale[0];
                o[nt * 4 + 2] *= rescale[1];
                o[nt * 4 + 3] *= rescale[1];
            }
            gemmPV<typename ET::Compute, kHeadDim, kBlockN>(pa, sVAddr + stage * Tile::kBytesKV, o);
            __syncthreads();  // every warpgroup is done with this stage before it is reloaded
        }
    }

    float invSum[2], lse[2], scaleOut[2];
    softmax.finalize(p.scale, invSum, lse);
#pragma unroll
    for (int r = 0; r < 2; ++r) scaleOut[r] = invSum[r] * p.outScale;
    // Stage the output row-major in the (now idle) K/V space: each warp its own 16 rows.
    Out* sStage = reinterpret_cast<Out*>(sK) + warp * 16 * Tile::kStrideO;
    Out* gO = static_cast<Out*>(p.o) + (seq.qBegin + warpRow0) * rowStride + static_cast<int64_t>(hq) * D;
    auto const& o3 = *reinterpret_cast<float const(*)[1][kHeadDim / 8][4]>(&o);
    storeOutput<ET, 1, kHeadDim, Tile::kStrideO>(o3, scaleOut, sStage, lane, gO, rowStride, warpRows, D);
    if (gLse != nullptr && t == 0) {
#pragma unroll
        for (int r = 0; r < 2; ++r)
            if (g + 8 * r < warpRows) gLse[warpRow0 + g + 8 * r] = lse[r];
    }
}

}  // namespace fmha::sm90
