// Portable forward kernel (sm_80+): one CTA per (query tile, head, sequence[, V half]).
// Orchestration only: sequence bookkeeping, the K/V double-buffered load schedule, the
// masked / unmasked tile steps, skip-softmax and the epilogue call.
#pragma once

#include <climits>
#include <cstdint>

#include "kernels/common/kv_address.cuh"
#include "kernels/common/mask.cuh"
#include "kernels/common/seqlen.cuh"
#include "kernels/common/softmax.cuh"
#include "kernels/sm80/epilogue_sm80.cuh"
#include "kernels/sm80/mainloop_sm80.cuh"
#include "kernels/sm80/tile_sm80.h"
#include "params.h"

namespace fmha::sm80 {

template <ElementKind kElem>
struct ElemOf;
template <>
struct ElemOf<ElementKind::kFp16> { using type = __half; };
template <>
struct ElemOf<ElementKind::kBf16> { using type = __nv_bfloat16; };
template <>
struct ElemOf<ElementKind::kFp8> { using type = __nv_fp8_e4m3; };

template <ElementKind kElem, int kHeadDim, KvAddressing kKv>
__global__ void __launch_bounds__(TileSm80<kHeadDim>::kNThreads) fwdKernelSm80(FmhaParams const p) {
    using Tile = TileSm80<kHeadDim>;
    using Elem = typename ElemOf<kElem>::type;
    using ET = ElemTraits<Elem>;
    using Compute = typename ET::Compute;
    using Out = typename ET::Out;
    using Mma = typename ET::Mma;
    constexpr int kBlockM = Tile::kBlockM, kBlockN = Tile::kBlockN, kDv = Tile::kHeadDimV;
    constexpr int kNT = kBlockN / 8;  // n-tiles of 8 keys per warp row block

    extern __shared__ __align__(16) unsigned char smemRaw[];
    Compute* sQ = reinterpret_cast<Compute*>(smemRaw);
    Compute* sK = sQ + Tile::kSmemQ;
    Compute* sV = sK + Tile::kSmemK;
    int* sBidir = reinterpret_cast<int*>(sV + Tile::kSmemV);

    int const tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
    // Highest query tiles first: under a causal mask they see the most keys.
    int const mBlock = gridDim.x - 1 - blockIdx.x;
    int const hq = blockIdx.y;
    int const b = blockIdx.z / Tile::kVSplits, vSplit = blockIdx.z % Tile::kVSplits;
    int const hkv = hq / p.headGroup;
    int const D = p.headDim;

    SeqInfo const seq(p, b);
    int const m0 = mBlock * kBlockM;
    if (m0 >= seq.lq) return;
    int const m1 = min(m0 + kBlockM, seq.lq);

    int64_t bidirLo = 1, bidirHi = 0;
    if (p.bidirBegin != nullptr) {
        if (tid == 0) {
            sBidir[0] = INT_MAX;
            sBidir[1] = -1;
        }
        __syncthreads();
        int64_t const rowBase = static_cast<int64_t>(b) * p.seqLenQ;
        for (int r = tid; r < m1 - m0; r += Tile::kNThreads) {
            int const bb = p.bidirBegin[rowBase + m0 + r], be = p.bidirEnd[rowBase + m0 + r];
            if (bb >= 0 && be >= bb) {
                atomicMin(&sBidir[0], bb);
                atomicMax(&sBidir[1], be);
            }
        }
        __syncthreads();
        bidirLo = sBidir[0];
        bidirHi = sBidir[1];
    }
    MaskPolicy<kBlockN> const mask(p, seq, b, m0, m1, bidirLo, bidirHi);

    int64_t const rowStride = static_cast<int64_t>(p.numQHeads) * D;  // elements between Q/O rows
    int const warpRow0 = m0 + warp * 16;
    int const warpRows = max(0, min(16, m1 - warpRow0));
    Out* gO = static_cast<Out*>(p.o) + (seq.qBegin + warpRow0) * rowStride + static_cast<int64_t>(hq) * D +
              vSplit * kDv;
    int const outCols = min(kDv, D - vSplit * kDv);
    Out* sStage = reinterpret_cast<Out*>(sQ + warp * 16 * Tile::kStrideQK);
    float* gLse = p.lse == nullptr ? nullptr
                                   : p.lse + static_cast<int64_t>(b) * p.lseBatchStride +
                                         static_cast<int64_t>(hq) * p.lseHeadStride + (p.lsePacked ? seq.qBegin : 0);

    float o[kDv / 8][4];
#pragma unroll
    for (int nt = 0; nt < kDv / 8; ++nt) o[nt][0] = o[nt][1] = o[nt][2] = o[nt][3] = 0.0F;
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
        auto loadK = [&](int n) {
            auto row = [&](int r) -> char const* {
                int const j = n * kBlockN + r;
                return j < seq.lk ? kv.row(false, j) : nullptr;
            };
            loadTile<Elem, kBlockN, kHeadDim / 8, Tile::kStrideQK, Tile::kNThreads>(sK, row, 0, D / 8, p.k, tid);
            cute::cp_async_fence();
        };
        auto loadV = [&](int n) {
            auto row = [&](int r) -> char const* {
                int const j = n * kBlockN + r;
                return j < seq.lk ? kv.row(true, j) : nullptr;
            };
            loadTile<Elem, kBlockN, kDv / 8, Tile::kStrideV, Tile::kNThreads>(sV, row, vSplit * kDv / 8, D / 8,
                                                                             p.k, tid);
            cute::cp_async_fence();
        };

        loadTile<Elem, kBlockM, kHeadDim / 8, Tile::kStrideQK, Tile::kNThreads>(sQ, qRow, 0, D / 8, p.q, tid);
        loadK(mask.nBlockMax - 1);

        // Per-row mask data, fixed for the whole loop; rows past Lq allow nothing.
        typename MaskPolicy<kBlockN>::Row rowMask[2];
        bool rowLive[2];
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            int const i = warpRow0 + g + 8 * r;
            rowLive[r] = i < seq.lq;
            if (rowLive[r]) {
                rowMask[r] = mask.row(i);
            } else {
                rowMask[r].lo = rowMask[r].bLo = 1;
                rowMask[r].hi = rowMask[r].bHi = 0;
            }
        }
        bool const skipOn = p.skipFactor > 0.0F && p.skipFactor < static_cast<float>(seq.lk);
        float const skipLog2 = skipOn ? log2f(p.skipFactor / static_cast<float>(seq.lk)) : 0.0F;

        auto step = [&](int n, bool masked) {
            cute::cp_async_wait<0>();
            __syncthreads();  // K(n) landed; every warp is done with V(n+1)
            loadV(n);
            float s[kNT][4];
            gemmQK<Compute, Mma, kHeadDim, kBlockN, Tile::kStrideQK>(sQ + warp * 16 * Tile::kStrideQK, sK, lane, s);
            if (masked) {
#pragma unroll
                for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
                    for (int e = 0; e < 4; ++e) {
                        int64_t const j = static_cast<int64_t>(n) * kBlockN + nt * 8 + 2 * t + (e & 1);
                        if (!MaskPolicy<kBlockN>::allowed(rowMask[e / 2], j)) s[nt][e] = -INFINITY;
                    }
            }
            float sr[2][kNT * 2];
#pragma unroll
            for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
                for (int e = 0; e < 4; ++e) sr[e / 2][nt * 2 + (e & 1)] = s[nt][e];
            float tileMax[2];
            OnlineSoftmax<2>::tileMax(sr, tileMax);
            bool skip = false;
            if (skipOn) {
                bool mine = true;
#pragma unroll
                for (int r = 0; r < 2; ++r)
                    mine = mine && (!rowLive[r] || softmax.rowNegligible(r, tileMax[r], p.scaleLog2, skipLog2));
                skip = __all_sync(0xffffffffu, mine);  // the warp's 16 rows decide together
            }
            if (!skip) {
                float rescale[2];
                softmax.update(sr, tileMax, p.scaleLog2, rescale);
#pragma unroll
                for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
                    for (int e = 0; e < 4; ++e) s[nt][e] = sr[e / 2][nt * 2 + (e & 1)];
#pragma unroll
                for (int nt = 0; nt < kDv / 8; ++nt) {
                    o[nt][0] *= rescale[0];
                    o[nt][1] *= rescale[0];
                    o[nt][2] *= rescale[1];
                    o[nt][3] *= rescale[1];
                }
            }
            cute::cp_async_wait<0>();
            __syncthreads();  // V(n) landed; every warp is done with K(n)
            if (n > mask.nBlockMin) loadK(n - 1);
            if (!skip) gemmPV<ET, Mma, kDv, kBlockN, Tile::kStrideV>(s, sV, lane, o);
        };

        for (int n = mask.nBlockMax - 1; n >= mask.nBlockMin; --n) step(n, mask.tileNeedsMask(n));
        __syncthreads();  // the epilogue reuses Q's shared memory
    }

    float invSum[2], lse[2];
    softmax.finalize(p.scale, invSum, lse);
    float const scaleOut[2] = {invSum[0] * p.outScale, invSum[1] * p.outScale};
    storeOutput<ET, kDv, Tile::kStrideQK>(o, scaleOut, sStage, lane, gO, rowStride, warpRows, outCols);
    if (gLse != nullptr && vSplit == 0 && t == 0) {
#pragma unroll
        for (int r = 0; r < 2; ++r)
            if (g + 8 * r < warpRows) gLse[warpRow0 + g + 8 * r] = lse[r];
    }
}

}  // namespace fmha::sm80
