// Portable forward kernel (sm_80+): one CTA per (query tile, head, sequence[, V half][, split-KV
// part]). Orchestration only: the tile scheduler (scheduler_sm80.cuh), the sequence and its
// mask policy, where the rows go, the mainloop (mainloop_sm80.cuh) and the epilogue shared
// with the Hopper family (common/epilogue.cuh, common/split_kv.cuh).
#pragma once

#include <cstdint>

#include "kernels/common/epilogue.cuh"
#include "kernels/common/fill_rows.cuh"
#include "kernels/common/mask.cuh"
#include "kernels/common/seqlen.cuh"
#include "kernels/common/softmax.cuh"
#include "kernels/common/split_kv.cuh"
#include "kernels/sm80/mainloop_sm80.cuh"
#include "kernels/sm80/scheduler_sm80.cuh"
#include "kernels/sm80/tile_sm80.h"
#include "params.h"

namespace fmha::sm80 {

template <ElementKind kElem, int kHeadDim, KvAddressing kKv, bool kWalk, bool kCompact>
__global__ void __launch_bounds__(TileSm80<kHeadDim, kCompact>::kNThreads) fwdKernelSm80(FmhaParams const p) {
    using Tile = TileSm80<kHeadDim, kCompact>;
    using Elem = typename ElemOf<kElem>::type;
    using ET = ElemTraits<Elem>;
    using Compute = typename ET::Compute;
    using Out = typename ET::Out;
    constexpr int kBlockM = Tile::kBlockM, kBlockN = Tile::kBlockN, kDv = Tile::kHeadDimV;
    constexpr int kMT = Tile::kMTiles, kRows = 2 * kMT;  // m16 tiles per warp; rows per thread

    extern __shared__ __align__(16) unsigned char smemRaw[];
    Compute* sQ = reinterpret_cast<Compute*>(smemRaw);
    Compute* sK = sQ + Tile::kSmemQ;  // kStages K tiles, then kStages V tiles
    Compute* sV = sK + Tile::kStages * Tile::kSmemK;
    int* sBidir = reinterpret_cast<int*>(sV + Tile::kStages * Tile::kSmemV);

    int const tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
    constexpr bool kSplits = kSplitsKv<kKv>;
    TileCoordsSm80 const tile = scheduleTileSm80<Tile, kKv, kWalk>(p);
    int const split = tile.split, mBlock = tile.mBlock, hq = tile.hq, b = tile.b, vSplit = tile.vSplit;
    int const hkv = hq / p.headGroup;
    int const D = p.headDim;

    SeqInfo const seq(p, b);
    if (mBlock == 0 && vSplit == 0 && split == 0) zeroUncomputedRows(p, seq, b, hq, 1);
    int const m0 = mBlock * kBlockM;
    if (m0 >= seq.rows) return;
    int const m1 = min(m0 + kBlockM, seq.rows);

    int64_t bidirLo, bidirHi;
    bidirUnion(p, b, m0, m1, sBidir, &bidirLo, &bidirHi);
    MaskPolicy<kBlockN> mask(p, seq, b, m0, m1, bidirLo, bidirHi);
    if (kSplits && p.numSplits > 1) mask.keepSplit(split, p.numSplits);

    int64_t const rowStride = static_cast<int64_t>(p.numQHeads) * D;  // elements between Q/O rows
    int const warpRow0 = m0 + warp * Tile::kWarpRows;
    int const warpRows = max(0, min(Tile::kWarpRows, m1 - warpRow0));
    // A split-KV part writes its rows as float32 into the workspace, at the same row stride
    // (split_kv.cuh); the pointers take the places of O's and the LSE's, so that the mainloop
    // holds no more registers.
    bool const partial = kSplits && p.numSplits > 1;
    int64_t const accRow0 = partial ? accumRow(p, split, b, warpRow0, hq) : 0;
    void* gO = partial ? static_cast<void*>(p.oAccum + accRow0 * D + vSplit * kDv)
                       : static_cast<void*>(static_cast<Out*>(p.o) + (seq.qBegin + warpRow0) * rowStride +
                                            static_cast<int64_t>(hq) * D + vSplit * kDv);
    int const outCols = min(kDv, D - vSplit * kDv);
    Out* sStage = reinterpret_cast<Out*>(sQ + warp * Tile::kWarpRows * Tile::kStrideQK);
    float* gLse = partial ? p.lseAccum + accRow0
                  : p.lse == nullptr ? nullptr
                                     : p.lse + static_cast<int64_t>(b) * p.lseBatchStride +
                                           static_cast<int64_t>(hq) * p.lseHeadStride + (p.lsePacked ? seq.qBegin : 0);

    float o[kMT][kDv / 8][4];
    OnlineSoftmax<kRows> softmax;
    mainloopSm80<Tile, Elem, kKv>(p, seq, mask, sQ, sK, sV, sBidir, tid, warp, lane, g, t, D, b, hq, hkv, vSplit, m0,
                                  m1, warpRow0, warpRows, rowStride, o, softmax);

    float invSum[kRows], lse[kRows], scaleOut[kRows];
    softmax.finalize(p.scale, invSum, lse);
#pragma unroll
    for (int r = 0; r < kRows; ++r) scaleOut[r] = invSum[r] * p.outScale;
    if (partial) {  // this part's rows, unrounded, for the combine kernel
        storePartial<kMT, kDv>(o, scaleOut, lane, static_cast<float*>(gO), [rowStride](int r) { return r * rowStride; },
                               warpRows, outCols);
        if (vSplit == 0 && t == 0) storeLse(lse, g, warpRows, [&](int row) { return &gLse[row * p.numQHeads]; });
        return;
    }
    storeOutput<ET, kMT, kDv, Tile::kStrideQK>(o, scaleOut, sStage, lane, static_cast<Out*>(gO),
                                               [rowStride](int r) { return r * rowStride; }, warpRows, outCols,
                                               p.outBf16);
    if (gLse != nullptr && vSplit == 0 && t == 0)
        storeLse(lse, g, warpRows, [&](int row) { return &gLse[warpRow0 + row]; });
}

}  // namespace fmha::sm80
