// Hopper forward kernel (sm_90a), persistent and warp specialised: each CTA walks its share
// of the (128-row query tile, head, sequence) work list. Warpgroup 0 produces (TMA, or
// cp.async gathers, of Q and the K/V tiles into an mbarrier pipeline, with few registers);
// warpgroups 1 and 2 consume, 64 query rows each (wgmma and softmax, with the rest). The
// pipeline runs on across work tiles, so the next tile's loads overlap this one's epilogue.
// Orchestration only: roles, barriers, the work loop, the epilogue.
#pragma once

#include <cstdint>

#include <cutlass/arch/barrier.h>
#include <cutlass/arch/reg_reconfig.h>

#include "kernels/common/mask.cuh"
#include "kernels/common/seqlen.cuh"
#include "kernels/common/softmax.cuh"
#include "kernels/sm90/mainloop_sm90.cuh"
#include "kernels/sm90/scheduler_sm90.cuh"
#include "kernels/sm90/tile_sm90.h"
#include "params.h"

namespace fmha::sm90 {

// Byte offset of the 16-byte chunk c of row r in a row-major staging tile of kRowBytes rows,
// chunks XOR-swizzled by (row % 8): conflict-free for the accumulator layout's 4-byte writes
// (8 rows x 4 lanes a warp) and for 16-byte reads along a row.
template <int kRowBytes>
__device__ inline int stagedOffset(int r, int c) {
    return r * kRowBytes + ((c ^ (r % 8)) << 4);
}

template <ElementKind kElem, int kHeadDim, KvAddressing kKv>
__global__ void __launch_bounds__(TileSm90<kHeadDim>::kNThreads, 1)
    fwdKernelSm90(FmhaParams const p, __grid_constant__ TmaDescs const tma,
                  __grid_constant__ TileScheduler const sched) {
    using Tile = TileSm90<kHeadDim>;
    using Elem = typename ElemOf<kElem>::type;
    using ET = ElemTraits<Elem>;
    using Out = typename ET::Out;
    constexpr int kBlockM = Tile::kBlockM, kBlockN = Tile::kBlockN;

    extern __shared__ __align__(16) unsigned char smemRaw[];
    // wgmma's 128-byte swizzle repeats every 1024 bytes: align the tiles to that.
    unsigned char* smem = reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(smemRaw) + 1023) & ~uintptr_t{1023});
    unsigned char* sQ = smem;
    unsigned char* sK = sQ + Tile::kBytesQ;                   // kStages tiles
    unsigned char* sV = sK + Tile::kStages * Tile::kBytesKV;  // kStages tiles
    unsigned char* sO = sV + Tile::kStages * Tile::kBytesKV;  // kStageO only
    __shared__ PipelineSm90<Tile::kStages> pipe;
    __shared__ int sBidir[2][2][2];  // [producer, consumers][call parity][lo, hi]

    int const tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    if (tid == 0) pipe.init(128, Tile::kNConsumerThreads / 32);
    __syncthreads();

    if (warp < 4) {
        cutlass::arch::warpgroup_reg_dealloc<Tile::kProducerRegs>();
        if (tid == 0) {
            cute::prefetch_tma_descriptor(reinterpret_cast<cute::TmaDescriptor const*>(&tma.q));
            cute::prefetch_tma_descriptor(reinterpret_cast<cute::TmaDescriptor const*>(&tma.k));
            cute::prefetch_tma_descriptor(reinterpret_cast<cute::TmaDescriptor const*>(&tma.v));
        }
        auto sync = [] { cutlass::arch::NamedBarrier::sync(128, Tile::kBarrierProducer); };
        int kvIter = 0, qIter = 0, calls = 0;
#pragma unroll 1
        for (int64_t work = blockIdx.x; work < sched.total; work += gridDim.x) {
            int32_t mBlock, hq, b;
            sched.decode(work, &mBlock, &hq, &b);
            SeqInfo const seq(p, b);
            int const m0 = mBlock * kBlockM;
            if (m0 >= seq.lq) continue;
            int64_t bidirLo, bidirHi;
            bidirUnion(p, b, m0, min(m0 + kBlockM, seq.lq), sBidir[0][calls++ & 1], tid, 128, sync, &bidirLo, &bidirHi);
            MaskPolicy<kBlockN> const mask(p, seq, b, m0, min(m0 + kBlockM, seq.lq), bidirLo, bidirHi);
            if (mask.empty()) continue;
            produceTile<Elem, Tile, kKv>(p, tma, seq, mask, b, hq, hq / p.headGroup, m0, sQ, sK, sV, pipe, tid, kvIter,
                                         qIter);
            kvIter += mask.nBlockMax - mask.nBlockMin;
            ++qIter;
        }
        cute::cp_async_wait<0>();  // no copy outlives its thread
        return;
    }
    cutlass::arch::warpgroup_reg_alloc<Tile::kConsumerRegs>();

    int const ctid = tid - 128, cwarp = warp - 4, cwg = cwarp / 4, g = lane / 4, t = lane % 4;
    int const D = p.headDim;
    int64_t const rowStride = static_cast<int64_t>(p.numQHeads) * D;
    auto sync = [] { cutlass::arch::NamedBarrier::sync(Tile::kNConsumerThreads, Tile::kBarrierConsumers); };
    uint32_t const sQAddr = static_cast<uint32_t>(__cvta_generic_to_shared(sQ)) + cwg * 64 * 128;
    uint32_t const sKAddr = static_cast<uint32_t>(__cvta_generic_to_shared(sK));
    uint32_t const sVAddr = static_cast<uint32_t>(__cvta_generic_to_shared(sV));
    int kvIter = 0, qIter = 0, calls = 0;
#pragma unroll 1
    for (int64_t work = blockIdx.x; work < sched.total; work += gridDim.x) {
        int32_t mBlock, hq, b;
        sched.decode(work, &mBlock, &hq, &b);
        SeqInfo const seq(p, b);
        int const m0 = mBlock * kBlockM;
        if (m0 >= seq.lq) continue;
        int const m1 = min(m0 + kBlockM, seq.lq);
        int64_t bidirLo, bidirHi;
        bidirUnion(p, b, m0, m1, sBidir[1][calls++ & 1], ctid, Tile::kNConsumerThreads, sync, &bidirLo, &bidirHi);
        MaskPolicy<kBlockN> const mask(p, seq, b, m0, m1, bidirLo, bidirHi);

        // Where this warp's rows go (consumer warpgroup cwg owns rows 64 cwg .. 64 cwg + 63).
        auto outputs = [&](SeqInfo const& sq, int first, int last, int head, int seqIdx, Out** gO, float** gLse,
                           int* warpRows) {
            int const warpRow0 = first + cwarp * 16;
            *warpRows = max(0, min(16, last - warpRow0));
            *gO = static_cast<Out*>(p.o) + (sq.qBegin + warpRow0) * rowStride + static_cast<int64_t>(head) * D;
            *gLse = p.lse == nullptr ? nullptr
                                     : p.lse + static_cast<int64_t>(seqIdx) * p.lseBatchStride +
                                           static_cast<int64_t>(head) * p.lseHeadStride + (p.lsePacked ? sq.qBegin : 0) +
                                           warpRow0;
        };
        Out* gO;
        float* gLse;
        int warpRows;
        if (mask.empty()) {
            // No row sees a key: zeros and LSE -inf, written directly.
            outputs(seq, m0, m1, hq, b, &gO, &gLse, &warpRows);
            for (int idx = lane; idx < warpRows * (D / 8); idx += 32)
                *reinterpret_cast<uint4*>(gO + (idx / (D / 8)) * rowStride + (idx % (D / 8)) * 8) = make_uint4(0, 0, 0, 0);
            if (gLse != nullptr && lane < warpRows) gLse[lane] = -INFINITY;
            continue;
        }

        float o[kHeadDim / 2];
#pragma unroll
        for (int i = 0; i < kHeadDim / 2; ++i) o[i] = 0.0F;
        OnlineSoftmax<2> softmax;
        softmax.init();
        int const tiles = mask.nBlockMax - mask.nBlockMin;
        {
            ConsumerSm90<ET, Tile> const consumer{p, seq, mask, pipe, sQAddr, sKAddr, sVAddr, m0 + cwarp * 16 + g, t,
                                                  lane == 0, cwg, kvIter, qIter};
            consumer.run(o, softmax);
        }
        kvIter += tiles;
        ++qIter;
        // Every wgmma of this tile has completed: Q's space goes back to the producer.
        if (lane == 0) Barrier::arrive(&pipe.qEmpty);
        // The tile's place is derived again here rather than kept in registers across the
        // mainloop (the empty asm hides that it is the same work item).
        {
            int64_t w = work;
            asm volatile("" : "+l"(w));
            sched.decode(w, &mBlock, &hq, &b);
        }
        SeqInfo const seqOut(p, b);
        int const m0Out = mBlock * kBlockM;
        outputs(seqOut, m0Out, min(m0Out + kBlockM, seqOut.lq), hq, b, &gO, &gLse, &warpRows);

        float invSum[2], lse[2];
        softmax.finalize(p.scale, invSum, lse);
        if constexpr (Tile::kStageO) {
            // Stage the output row-major, each warp its own 16 rows, then 16-byte stores.
            constexpr int kRowBytes = kHeadDim * 2;
            unsigned char* stage = sO + cwarp * 16 * kRowBytes;
            // The staging offsets are the same for every work tile; computed from an opaque
            // copy of g, they are not hoisted out of the work loop (and spilled across it).
            int gRow = g;
            asm volatile("" : "+r"(gRow));
#pragma unroll
            for (int nt = 0; nt < kHeadDim / 8; ++nt)
#pragma unroll
                for (int r = 0; r < 2; ++r) {
                    float const f = invSum[r] * p.outScale;
                    *reinterpret_cast<uint32_t*>(stage + stagedOffset<kRowBytes>(gRow + 8 * r, nt) + 4 * t) =
                        ET::pack(o[nt * 4 + 2 * r] * f, o[nt * 4 + 2 * r + 1] * f);
                }
            __syncwarp();
            for (int idx = lane; idx < warpRows * (D / 8); idx += 32) {  // D: the caller's (padded dims)
                int const r = idx / (D / 8), c = idx % (D / 8);
                *reinterpret_cast<uint4*>(gO + r * rowStride + c * 8) =
                    *reinterpret_cast<uint4 const*>(stage + stagedOffset<kRowBytes>(r, c));
            }
            __syncwarp();  // the warp's reads of its staging rows before its next tile writes them
        } else {
#pragma unroll
            for (int r = 0; r < 2; ++r) {
                if (g + 8 * r >= warpRows) continue;
                float const f = invSum[r] * p.outScale;
                Out* row = gO + (g + 8 * r) * rowStride + 2 * t;
#pragma unroll
                for (int nt = 0; nt < kHeadDim / 8; ++nt)
                    if (nt * 8 < D) *reinterpret_cast<uint32_t*>(row + nt * 8) = ET::pack(o[nt * 4 + 2 * r] * f, o[nt * 4 + 2 * r + 1] * f);
            }
        }
        if (gLse != nullptr && t == 0) {
#pragma unroll
            for (int r = 0; r < 2; ++r)
                if (g + 8 * r < warpRows) gLse[g + 8 * r] = lse[r];
        }
    }
}

}  // namespace fmha::sm90
