// Hopper forward kernel (sm_90a): one CTA per (row tile, head, sequence), warp
// specialised; with pack GQA (FmhaParams::packLog2) the tile's rows are the query rows of a
// KV head's whole group of query heads. Warpgroup 0 produces (TMA, or cp.async gathers, of
// Q and the K/V tiles into an mbarrier pipeline, with few registers); the others (two, or
// one or three in some tile shapes) consume, 64 rows each (wgmma and softmax, with the rest).
// Orchestration only: roles, barriers, the epilogue.
#pragma once

#include <cstdint>
#include <type_traits>
#include <utility>

#include <cutlass/arch/barrier.h>
#include <cutlass/arch/reg_reconfig.h>

#include "kernels/common/combine_row.cuh"
#include "kernels/common/fill_rows.cuh"
#include "kernels/common/mask.cuh"
#include "kernels/common/packed_rows.cuh"
#include "kernels/common/seqlen.cuh"
#include "kernels/common/softmax.cuh"
#include "kernels/common/epilogue.cuh"
#include "kernels/common/split_kv.cuh"
#include "kernels/common/work_items.h"
#include "kernels/sm90/mainloop_sm90.cuh"
#include "kernels/sm90/tile_sm90.h"
#include "params.h"

namespace fmha::sm90 {

// The tile configuration of an instance: by head dim, element size, KV addressing, tile shape and
// skip-softmax (FP8 skip tiles of 128 keys stage deeper: TileSm90::kStages; 16-bit D=128 skip
// tiles over contiguous KV take 176 keys: TileSm90::kWideSkip). Instance head dims 72, 80 and
// 96: the D=128 tiles whose Q.K^T reads the head's columns rounded up to whole k-steps
// (TileSm90::kQKBytes), and FP8 D=72's 72-byte rows (TileSm90::kRows8).
template <int kHeadDim>
inline constexpr bool kPaddedDim = kHeadDim > 64 && kHeadDim < 128;
template <ElementKind kElem>
inline constexpr int kElemBytesOf = ElemTraits<typename ElemOf<kElem>::type>::kBytes;
template <ElementKind kElem, int kHeadDim, KvAddressing kKv, TileShape kShape = TileShape::kDefault, bool kSkip = false>
using TileOf = TileSm90<kPaddedDim<kHeadDim> ? 128 : kHeadDim, kElemBytesOf<kElem>, kShape,
                        kElem == ElementKind::kFp8 && kHeadDim == 72,
                        kPaddedDim<kHeadDim> ? (kHeadDim * kElemBytesOf<kElem> + 31) / 32 * 32 : 0, kSkip,
                        kKv == KvAddressing::kStrided>;

// f(std::integral_constant<int, I>) for each I of the sequence, in order.
template <class F, int... kI>
__device__ inline void forEachConstant(F const& f, std::integer_sequence<int, kI...>) {
    (f(std::integral_constant<int, kI>{}), ...);
}

// st.shared.u32 of v at (base ^ kXor) + kOffset, both constants immediates of the instructions.
template <int kXor, int kOffset>
__device__ inline void storeSharedXor(uint32_t base, uint32_t v) {
    asm volatile("{\n .reg .b32 a;\n xor.b32 a, %0, %1;\n st.shared.u32 [a + %2], %3;\n}" ::"r"(base), "n"(kXor),
                 "n"(kOffset), "r"(v)
                 : "memory");
}

// Row views (Tile::kRows8, TmaDescs::kvRows): the head's columns sit headShift bytes (FP8
// elements: 0 or 8) into Q, K and V's shared rows, so O's sit as far into the accumulator;
// moves them to its first columns (8 columns: one accumulator group of 4 registers).
template <class Tile, int N>
__device__ inline void alignHeadColumns(TmaDescs const& tma, int hkv, int D, float (&o)[N]) {
    if constexpr (Tile::kRows8) {
        if (tma.kvRows && headShift(hkv, D) != 0) {
#pragma unroll
            for (int i = 0; i + 4 < N; ++i) o[i] = o[i + 4];
        }
    }
}

// A warp's LSE of an unsplit launch, where asked for (lanes t == 0 store).
__device__ inline void storeWarpLse(FmhaParams const& p, SeqInfo const& seq, int b, int hq, int warpRow0, int warpRows,
                                    float const (&lse)[2], int g, int t) {
    if (p.lse != nullptr && t == 0) {
        PackedRows const packed(p);
        float* gLse = p.lse + static_cast<int64_t>(b) * p.lseBatchStride + static_cast<int64_t>(hq) * p.lseHeadStride +
                      (p.lsePacked ? seq.qBegin : 0);
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            int const i = warpRow0 + g + 8 * r;  // written out: storeLse would reassociate this sum
            if (g + 8 * r < warpRows) gLse[packed.head(i) * p.lseHeadStride + packed.query(i)] = lse[r];
        }
    }
}

// The epilogue of a warp's rows of an unsplit launch: O (times scaleOut) staged in sStage (the
// warp's 16 rows) and stored; LSE where asked for.
template <class ET, class Tile>
__device__ inline void storeWarpRows(FmhaParams const& p, SeqInfo const& seq, int b, int hq, int warpRow0, int warpRows,
                                     float const (&o3)[1][Tile::kDimO / 8][4], float const (&scaleOut)[2],
                                     float const (&lse)[2], typename ET::Out* sStage, int lane) {
    using Out = typename ET::Out;
    int const D = p.headDim, g = lane / 4, t = lane % 4;
    int64_t const rowStride = static_cast<int64_t>(p.numQHeads) * D;
    PackedRows const packed(p);
    Out* gO = static_cast<Out*>(p.o) + seq.qBegin * rowStride + static_cast<int64_t>(hq) * D;
    auto oOffset = [&](int r) { return packed.offset(warpRow0 + r, rowStride, D); };
    storeOutput<ET, 1, Tile::kDimO, Tile::kStrideO>(o3, scaleOut, sStage, lane, gO, oOffset, warpRows, D, p.outBf16);
    storeWarpLse(p, seq, b, hq, warpRow0, warpRows, lse, g, t);
}

// The persistent kernel's epilogue of a warp's rows: O (times scaleOut) staged in sStage, the
// warp's 16 rows as 64-column blocks of 128-byte swizzled rows (1024-byte aligned), then stored
// by a TMA store where the warp holds 16 rows and O's descriptor exists (lane 0 issues it; the
// warp's next call waits until it has read sStage), by the warp's copies otherwise; LSE where
// asked for. Lane 0 waits for its last store's reads before the kernel ends (tma_store_wait).
template <class ET, class Tile>
__device__ inline void storeWarpRowsTma(FmhaParams const& p, TmaDescs const& tma, SeqInfo const& seq, int b, int hq,
                                        int warpRow0, int warpRows, float const (&o3)[1][Tile::kDimO / 8][4],
                                        float const (&scaleOut)[2], float const (&lse)[2], uint32_t sStage,
                                        int lane) {
    using Out = typename ET::Out;
    int const D = p.headDim, g = lane / 4, t = lane % 4;
    if (lane == 0) cute::tma_store_wait<0>();  // the warp's previous store has read sStage
    __syncwarp();
    // Row g + 8r, 16-byte chunk nt % 8 of column block nt / 8 (g == row % 8: the swizzle's phase):
    // the lane's address with chunk 0 (sStage is 1024-byte aligned, so its low bits are the
    // lane's), the chunk XORed into bits 4-6 by the store's own instruction (volatile: the 8
    // addresses are not hoisted out of the persistent loop, where they spilled).
    uint32_t const lane0 = sStage + g * 128 + (g << 4) + 4 * t;
    auto stage = [&](auto ntTag) {  // (the chunk and offsets are asm immediates: nt a constant)
        constexpr int nt = decltype(ntTag)::value;
        auto word = [&](int r) {
            return packOut<ET>(o3[0][nt][2 * r] * scaleOut[r], o3[0][nt][2 * r + 1] * scaleOut[r], p.outBf16);
        };
        storeSharedXor<(nt % 8) << 4, (nt / 8) * 2048>(lane0, word(0));
        storeSharedXor<(nt % 8) << 4, (nt / 8) * 2048 + 1024>(lane0, word(1));  // row g + 8
    };
    forEachConstant(stage, std::make_integer_sequence<int, Tile::kDimO / 8>{});
    PackedRows const packed(p);
    if (warpRows == 16 && tma.oOk) {
        cutlass::arch::fence_view_async_shared();  // these writes -> the TMA store's reads
        __syncwarp();
        if (lane == 0) {
            int32_t const head = hq + packed.head(warpRow0);
            int32_t const row = static_cast<int32_t>(seq.qBegin) + packed.query(warpRow0);
#pragma unroll
            for (int cb = 0; cb < (Tile::kDimO + 63) / 64; ++cb)
                if (cb * 64 < D)
                    asm volatile(
                        "cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%2, %3, %4}], [%1];" ::"l"(
                            reinterpret_cast<uint64_t>(&tma.o)),
                        "r"(sStage + cb * 2048), "r"(cb * 64), "r"(head), "r"(row)
                        : "memory");
            cute::tma_store_arrive();
        }
    } else {
        __syncwarp();
        int64_t const rowStride = static_cast<int64_t>(p.numQHeads) * D;
        Out* gO = static_cast<Out*>(p.o) + seq.qBegin * rowStride + static_cast<int64_t>(hq) * D;
        int const chunks = D / 8;
        for (int idx = lane; idx < warpRows * chunks; idx += 32) {
            int const r = idx / chunks, c = idx % chunks;
            uint4 v;
            asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
                         : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                         : "r"(sStage + (c / 8) * 2048 + r * 128 + (((c % 8) ^ (r % 8)) << 4))
                         : "memory");
            *reinterpret_cast<uint4*>(gO + packed.offset(warpRow0 + r, rowStride, D) + c * 8) = v;
        }
    }
    storeWarpLse(p, seq, b, hq, warpRow0, warpRows, lse, g, t);
}

// Split-KV's own combine (FmhaParams::splitCounters), by the consumer threads once each has
// written its rows of this part: the row tile's counter counts the parts whose rows are in the
// workspace, and the part that brings it to numSplits merges them all, a warp a row
// (combineRow), and sets it back to zero for the next launch. Every part of a row tile that
// has rows reaches this (empty parts write zeros and -inf), so the count completes. The CTA's
// indices are read afresh (volatile), so that nothing is held for this across the mainloop:
// values live across the warpgroups' split made the producer's few registers spill.
template <class ET, class Tile>
__device__ inline void combineIfLast(FmhaParams const& p, int cwarp, int lane, int* sLast) {
    __threadfence();  // this thread's rows of the part, before the count that publishes them
    cutlass::arch::NamedBarrier::sync(Tile::kNConsumerThreads, Tile::kBarrierConsumers);
    unsigned x, nx, y, z;
    asm volatile("mov.u32 %0, %%ctaid.x;" : "=r"(x));
    asm volatile("mov.u32 %0, %%nctaid.x;" : "=r"(nx));
    asm volatile("mov.u32 %0, %%ctaid.y;" : "=r"(y));
    asm volatile("mov.u32 %0, %%ctaid.z;" : "=r"(z));
    // grid.x holds the row tiles of each part in turn (splitOfCta), highest first.
    unsigned const rowTiles = nx / static_cast<unsigned>(p.numSplits), tile = x % rowTiles;
    if (cwarp == 0 && lane == 0) {
        int32_t* counter = p.splitCounters + (static_cast<int64_t>(z) * gridDim.y + y) * rowTiles + tile;
        bool const last = atomicAdd(counter, 1) == p.numSplits - 1;
        if (last) *counter = 0;  // every part has counted: nothing else reads it in this launch
        sLast[0] = last;
    }
    cutlass::arch::NamedBarrier::sync(Tile::kNConsumerThreads, Tile::kBarrierConsumers);
    if (!sLast[0]) return;
    __threadfence();  // the other parts' rows (read through L2) after their counts
    int const b = static_cast<int>(z), hq = static_cast<int>(y) << p.packLog2;
    SeqInfo const seq(p, b);
    PackedRows const packed(p);
    int const m0 = static_cast<int>(rowTiles - 1 - tile) * Tile::kBlockM;
    int const m1 = min(m0 + Tile::kBlockM, packed.count(seq.rows));
    for (int m = m0 + cwarp; m < m1; m += Tile::kNConsumerThreads / 32)
        combineRow<ET>(p, seq, b, packed.query(m), hq + packed.head(m), lane);
}

// kStats (skip-softmax kernels only): the variant that counts its steps into p.skipStats,
// launched where a test or the benchmark asks for the counts (detail::setSkipStats), so that
// the kernel every other call runs carries no counting.
template <ElementKind kElem, int kHeadDim, KvAddressing kKv, bool kSkip, TileShape kShape, bool kStats = false>
__global__ void __launch_bounds__(TileOf<kElem, kHeadDim, kKv, kShape, kSkip>::kNThreads, TileOf<kElem, kHeadDim, kKv, kShape, kSkip>::kMinBlocks)
    fwdKernelSm90(FmhaParams const p, __grid_constant__ TmaDescs const tma) {
    using Elem = typename ElemOf<kElem>::type;
    using Tile = TileOf<kElem, kHeadDim, kKv, kShape, kSkip>;
    using ET = ElemTraits<Elem>;
    using Out = typename ET::Out;
    constexpr int kBlockM = Tile::kBlockM, kBlockN = Tile::kBlockN;

    extern __shared__ __align__(16) unsigned char smemRaw[];
    // wgmma's 128-byte swizzle repeats every 1024 bytes: align the tiles to that.
    unsigned char* smem = reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(smemRaw) + 1023) & ~uintptr_t{1023});
    unsigned char* sQ = smem;
    unsigned char* sK = sQ + Tile::kBytesQ;                   // kStages tiles
    unsigned char* sV = sK + Tile::kStages * Tile::kBytesKV;  // kStages tiles
    // FP8: the V^T stages, then their barriers (kStages full, kStages empty; kRows8 then the K
    // stages' "landed" barriers of row views, produceTiles).
    unsigned char* sVt = sV + Tile::kStages * Tile::kBytesKV;
    uint64_t* vtBar = reinterpret_cast<uint64_t*>(sVt + Tile::kStages * Tile::kBytesVt);
    __shared__ PipelineSm90<Tile::kStages, Tile::kQBuffers> pipe;
    __shared__ int sBidir[2];
    // kSkip: each consumer warpgroup's drop bytes, [tile parity][warp]
    __shared__ uint32_t sDrops[Tile::kNConsumerWarpGroups][2];
    __shared__ int sLast[1];  // split-KV: this CTA is its row tile's last part (combineIfLast)

    // Launched as a programmatic dependent (detail::dependentLaunch), this block may run before
    // the kernel ahead of it on the stream has finished: nothing global is read or written
    // before that kernel's completion. Then a kernel launched after this one as its dependent
    // (the split-KV combine, the next call) may be scheduled (it waits likewise).
    asm volatile("griddepcontrol.wait;" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    int const tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    // Highest query tiles (most keys) first; grid.x holds the row tiles of each split-KV part in turn.
    constexpr bool kSplits = kSplitsKv<kKv>;
    int const split = kSplits ? splitOfCta(p.numSplits) : 0;
    int const rowTiles = kSplits ? gridDim.x / p.numSplits : gridDim.x;
    int const mBlock = rowTiles - 1 - (blockIdx.x - split * rowTiles);
    int const b = blockIdx.z;
    int const hq = blockIdx.y << p.packLog2;  // the tile's (first) query head
    int const hkv = hq / p.headGroup;

    SeqInfo const seq(p, b);
    PackedRows const packed(p);
    if (mBlock == 0 && split == 0) zeroUncomputedRows(p, seq, b, hq, 1 << p.packLog2);
    int const rows = packed.count(seq.rows), m0 = mBlock * kBlockM;
    if (m0 >= rows) return;
    int const m1 = min(m0 + kBlockM, rows);
    int const q0 = packed.query(m0), q1 = packed.query(m1 - 1) + 1;  // the tile's query rows

    int64_t bidirLo, bidirHi;
    bidirUnion(p, b, q0, q1, sBidir, &bidirLo, &bidirHi);
    MaskPolicy<kBlockN> mask(p, seq, b, q0, q1, bidirLo, bidirHi);
    if (kSplits && p.numSplits > 1) mask.keepSplit(split, p.numSplits);
    // A CTA pair (Tile::kPairable, launched as clusters of two along grid.y: two query heads of
    // one KV head, the same row tile and sequence, so the same key tiles): rank 0 or 1, else -1.
    int pairRank = -1;
    if constexpr (Tile::kPairable) {
        uint32_t n, r;
        asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(n));
        asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
        if (n == 2) pairRank = static_cast<int>(r);
    }
    // Neither CTA of a pair leaves while the other may still write its shared memory or arrive
    // on its barriers: every thread arrives once its part is done, and waits before it leaves.
    auto pairArrive = [&] {
        if (pairRank >= 0) asm volatile("barrier.cluster.arrive;" ::: "memory");
    };
    auto pairWait = [&] {
        if (pairRank >= 0) asm volatile("barrier.cluster.wait;" ::: "memory");
    };
    if (tid == 0) {
        if constexpr (Tile::kFp8) {
            for (int s = 0; s < Tile::kStages; ++s) {
                Barrier::init(&vtBar[s], 128);
                Barrier::init(&vtBar[Tile::kStages + s], Tile::kNConsumerThreads / 32);
                if (Tile::kRows8) Barrier::init(&vtBar[2 * Tile::kStages + s], 128);
            }
        }
        pipe.init(128, Tile::kNConsumerThreads / 32,
                  (pairRank >= 0 ? 2 : 1) * Tile::kNConsumerThreads / 32);  // (its barrier-init fence covers vtBar)
    }
    __syncthreads();
    if (pairRank >= 0) {  // both CTAs' barriers are set up before either multicasts or arrives remotely
        pairArrive();
        pairWait();
    }

    if (warp < 4) {
        cutlass::arch::warpgroup_reg_dealloc<Tile::kProducerRegs>();
        if (!mask.empty())
            produceTiles<Elem, Tile, kKv>(p, tma, seq, mask, b, hq, hkv, m0, sQ, sK, sV, pipe, tid, sVt, vtBar, 0, 0,
                                          pairRank);
        pairArrive();
        pairWait();
        return;
    }
    cutlass::arch::warpgroup_reg_alloc<Tile::kConsumerRegs>();

    // cwg through a shuffle: the compiler then knows it is warp-uniform, and keeps the
    // warpgroup's shared-memory addresses (its wgmma descriptors) in uniform registers.
    int const cwarp = warp - 4, cwg = __shfl_sync(0xffffffffu, cwarp / 4, 0), g = lane / 4, t = lane % 4;
    int const D = p.headDim;
    int const warpRow0 = m0 + cwarp * 16;  // consumer warpgroup cwg owns rows 64 cwg .. 64 cwg + 63
    int const warpRows = max(0, min(16, m1 - warpRow0));

    float o[Tile::kDimO / 2];
#pragma unroll
    for (int i = 0; i < Tile::kDimO / 2; ++i) o[i] = 0.0F;
    OnlineSoftmax<2> softmax;
    softmax.init();
    if (!mask.empty()) {
        uint32_t const sQAddr = static_cast<uint32_t>(__cvta_generic_to_shared(sQ)) + cwg * 64 * Tile::kSwizzleBytes;
        // Skip-softmax: log2(lambda), lambda = S / Lk; -inf (no score is below it) where
        // lambda >= 1, so that the skip kernel's steps need no test of whether it skips.
        float const skipLog2 = kSkip && p.skipFactor > 0.0F && p.skipFactor < static_cast<float>(seq.lk)
                                   ? log2f(p.skipFactor / static_cast<float>(seq.lk))
                                   : -INFINITY;
        using Consumer = ConsumerSm90<ET, Tile, kSkip, kStats>;
        Consumer const consumer{p, seq, mask, pipe, sQAddr, static_cast<uint32_t>(__cvta_generic_to_shared(sK)),
                                static_cast<uint32_t>(__cvta_generic_to_shared(sV)), warpRow0 + g, t, lane == 0, cwg,
                                skipLog2, static_cast<uint32_t>(__cvta_generic_to_shared(sVt)), vtBar,
                                static_cast<uint32_t>(__cvta_generic_to_shared(sDrops[cwg])),
                                /*it0=*/0, /*qPhase=*/0, /*qBuf=*/0, /*ringOpen=*/true, /*ringClose=*/true,
                                /*kvTma=*/tma.kvOk != 0, /*peer=*/pairRank >= 0 ? pairRank ^ 1 : -1};
        consumer.run(o, softmax);
        alignHeadColumns<Tile>(tma, hkv, D, o);
    }
    pairArrive();  // (this CTA's last remote arrivals are made: the other's wait may end)

    float invSum[2], lse[2], scaleOut[2];
    softmax.template finalize<Tile::kPLog2>(p.scale, invSum, lse);
#pragma unroll
    for (int r = 0; r < 2; ++r) scaleOut[r] = invSum[r] * p.outScale;
    auto const& o3 = *reinterpret_cast<float const(*)[1][Tile::kDimO / 8][4]>(&o);
    if (kSplits && p.numSplits > 1) {  // this part's rows, unrounded, for the combine kernel
        int const part = splitOfCta(p.numSplits);
        auto accRow = [&](int r) {
            int const i = warpRow0 + r;
            return accumRow(p, part, b, packed.query(i), hq + packed.head(i));
        };
        storePartial<1, Tile::kDimO>(o3, scaleOut, lane, p.oAccum, [&](int r) { return accRow(r) * D; }, warpRows, D);
        if (t == 0) storeLse(lse, g, warpRows, [&](int r) { return &p.lseAccum[accRow(r)]; });
        if constexpr (!kSkip)  // (skip-softmax never splits)
            if (p.splitCounters != nullptr) combineIfLast<ET, Tile>(p, cwarp, lane, sLast);
        pairWait();
        return;
    }
    // Stage the output row-major in the K/V space, each warp its own 16 rows, once both
    // consumer warpgroups are done reading it.
    cutlass::arch::NamedBarrier::sync(Tile::kNConsumerThreads, Tile::kBarrierConsumers);
    Out* sStage = reinterpret_cast<Out*>(sK) + cwarp * 16 * Tile::kStrideO;
    storeWarpRows<ET, Tile>(p, seq, b, hq, warpRow0, warpRows, o3, scaleOut, lse, sStage, lane);
    pairWait();
}

// Persistent variant (TileShape::kPersistent; contiguous or paged KV, no split-KV, skip-softmax or
// bidirectional mask): a grid of at most one CTA an SM, CTA c taking items c, c + gridDim.x, ...
// of `tiles` (CTA pairs: cluster c of them, both its CTAs; sized by the launch, and read from the
// kernel's parameters: the producer's few registers do not hold them). The producer and the
// consumers walk the same row tiles, the K/V pipeline's stages and phases counting on across them;
// the producer loads a tile's Q into the other of two Q buffers once the consumers have done the
// last Q.K^T of the tile before it in that buffer (pipe.qEmpty), and its first K/V as stages free,
// so that they land while the consumers finish the previous tile. The consumer warpgroups'
// ping-pong ring goes on across tiles: warpgroup 0 issues a tile's first Q.K^T as soon as the last
// warpgroup has issued the previous tile's last P.V, not after its epilogue. The output is staged
// in shared memory of its own, each warp its 16 rows, and leaves by one TMA store a warp
// (storeWarpRowsTma), which the warp waits for only before its next tile's staging.
template <ElementKind kElem, int kHeadDim, KvAddressing kKv, bool kSkip, TileShape kShape>
__global__ void __launch_bounds__(TileOf<kElem, kHeadDim, kKv, kShape, kSkip>::kNThreads, 1)
    fwdKernelSm90Persistent(FmhaParams const p, __grid_constant__ TmaDescs const tma,
                            __grid_constant__ PersistentTiles const tiles) {
    using Elem = typename ElemOf<kElem>::type;
    using Tile = TileOf<kElem, kHeadDim, kKv, kShape, kSkip>;
    using ET = ElemTraits<Elem>;
    static_assert(Tile::kPersistent && !kSkip, "the persistent instances");
    constexpr int kBlockM = Tile::kBlockM;

    extern __shared__ __align__(16) unsigned char smemRaw[];
    unsigned char* smem = reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(smemRaw) + 1023) & ~uintptr_t{1023});
    unsigned char* sQ = smem;  // two buffers, tile j's in buffer j % 2
    unsigned char* sK = sQ + Tile::kQBuffers * Tile::kBytesQ;
    unsigned char* sV = sK + Tile::kStages * Tile::kBytesKV;
    unsigned char* sVt = sV + Tile::kStages * Tile::kBytesKV;
    unsigned char* sO = sVt + Tile::kStages * Tile::kBytesVt;  // 1024-byte aligned: whole tiles before it
    uint64_t* vtBar = reinterpret_cast<uint64_t*>(sO + Tile::kBytesO);
    __shared__ PipelineSm90<Tile::kStages, Tile::kQBuffers> pipe;

    asm volatile("griddepcontrol.wait;" ::: "memory");  // as in fwdKernelSm90
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    int const tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    // CTA pairs (Tile::kPairable, clusters of two along grid.x: tiles.clusterCtas 2): both CTAs
    // of a cluster walk the same items, rank r taking the query head of unit 2u + r, so the same
    // key tiles, whose loads they share as fwdKernelSm90's pairs do.
    bool const paired = Tile::kPairable && tiles.clusterCtas == 2;
    // The CTA's rank in its pair, else -1: read afresh where asked (volatile), so that no
    // register holds it across the loops.
    auto pairRankNow = [&] {
        if (!(Tile::kPairable && tiles.clusterCtas == 2)) return -1;
        uint32_t r;
        asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
        return static_cast<int>(r);
    };
    auto peerNow = [&] {  // the other CTA of the pair, else -1
        int const r = pairRankNow();
        return r >= 0 ? r ^ 1 : -1;
    };
    // Every thread of both CTAs of a pair (a barrier of the cluster).
    auto clusterSync = [] {
        asm volatile("barrier.cluster.arrive;" ::: "memory");
        asm volatile("barrier.cluster.wait;" ::: "memory");
    };
    // The CTA's cluster and the grid's count of them (clusters of tiles.clusterCtas along
    // grid.x), read afresh (volatile) where asked: the producer's few registers do not hold them.
    auto clusterIndex = [&] {
        unsigned c;
        asm volatile("mov.u32 %0, %%ctaid.x;" : "=r"(c));
        return static_cast<int>(c >> (tiles.clusterCtas - 1));
    };
    auto clusterCount = [&] {
        unsigned n;
        asm volatile("mov.u32 %0, %%nctaid.x;" : "=r"(n));
        return static_cast<int>(n >> (tiles.clusterCtas - 1));
    };
    if (tid == 0) {
        if constexpr (Tile::kFp8) {
            for (int s = 0; s < Tile::kStages; ++s) {
                Barrier::init(&vtBar[s], 128);
                Barrier::init(&vtBar[Tile::kStages + s], Tile::kNConsumerThreads / 32);
                if (Tile::kRows8) Barrier::init(&vtBar[2 * Tile::kStages + s], 128);
            }
        }
        pipe.init(128, Tile::kNConsumerThreads / 32, (paired ? 2 : 1) * Tile::kNConsumerThreads / 32);
    }
    __syncthreads();
    if (paired) clusterSync();  // both CTAs' barriers are set up before either multicasts

    PackedRows const packed(p);
    // Both roles decode the tiles of item w alike: sequence, first query head, first row.
    struct TileAt {
        int b, hq, m0;
    };
    auto at = [&](int w, int half, TileAt* x) {
        int mBlock, unit;
        if (!tiles.decode(w, half, &mBlock, &unit, &x->b, max(pairRankNow(), 0))) return false;
        x->hq = unit << p.packLog2;
        x->m0 = mBlock * kBlockM;
        return true;
    };
    // Packed Q: the zeros of the rows no tile computes, from the CTAs of the units' first row
    // tiles, before the roles part (the call would not fit the producer's few registers).
    if (p.cuQ != nullptr) {
        for (int w = clusterIndex(); w < tiles.items; w += clusterCount())
            for (int half = 0; half < 2; ++half) {
                TileAt x;
                if (at(w, half, &x) && x.m0 == 0) zeroUncomputedRows(p, SeqInfo(p, x.b), x.b, x.hq, 1 << p.packLog2);
            }
    }

    if (warp < 4) {
        cutlass::arch::warpgroup_reg_dealloc<Tile::kProducerRegs>();
        int it = 0, qIter = 0;
        // Slot j: tile j % 2 of item c + (j / 2) n, c the CTA's cluster of n (one counter: the
        // producer's 40 registers spill with two).
#pragma unroll 1
        for (int j = 0;; ++j) {
            // read afresh each tile (volatile): FP8's producer spilled them
            unsigned const w = static_cast<unsigned>(clusterIndex()) + (j >> 1) * static_cast<unsigned>(clusterCount());
            if (w >= static_cast<unsigned>(tiles.items)) break;
            TileAt x;
            if (!at(w, j & 1, &x)) continue;
            SeqInfo const seq(p, x.b);
            int const rows = packed.count(seq.rows);
            if (x.m0 >= rows) continue;
            int const m1 = min(x.m0 + kBlockM, rows);
            MaskPolicy<Tile::kBlockN> const mask(p, seq, x.b, packed.query(x.m0), packed.query(m1 - 1) + 1, 1, 0);
            if (mask.empty()) continue;
            int const qBuf = qIter & 1;
            Barrier::wait(&pipe.qEmpty[qBuf], ((qIter >> 1) & 1) ^ 1);  // the tile before last's Q is read
            produceTiles<Elem, Tile, kKv>(p, tma, seq, mask, x.b, x.hq, x.hq / p.headGroup, x.m0,
                                          sQ + qBuf * Tile::kBytesQ, sK, sV, pipe, tid, sVt, vtBar, it, qBuf,
                                          pairRankNow());
            it += mask.nBlockMax - mask.nBlockMin;
            ++qIter;
        }
        // Neither CTA of a pair leaves while the other may still arrive on its barriers.
        if (Tile::kPairable && tiles.clusterCtas == 2) clusterSync();
        return;
    }
    cutlass::arch::warpgroup_reg_alloc<Tile::kConsumerRegs>();

    int const cwarp = warp - 4, cwg = __shfl_sync(0xffffffffu, cwarp / 4, 0), g = lane / 4, t = lane % 4;
    uint32_t const sQAddr = static_cast<uint32_t>(__cvta_generic_to_shared(sQ)) + cwg * 64 * Tile::kSwizzleBytes;
    uint32_t const sKAddr = static_cast<uint32_t>(__cvta_generic_to_shared(sK));
    uint32_t const sVAddr = static_cast<uint32_t>(__cvta_generic_to_shared(sV));
    uint32_t const sVtAddr = static_cast<uint32_t>(__cvta_generic_to_shared(sVt));
    uint32_t const sStage = static_cast<uint32_t>(__cvta_generic_to_shared(sO)) + cwarp * Tile::kBytesOWarp;
    int it = 0, qIter = 0;
#pragma unroll 1
    for (int w = clusterIndex(); w < tiles.items; w += clusterCount()) {
#pragma unroll 1
        for (int half = 0; half < 2; ++half) {
            TileAt x;
            if (!at(w, half, &x)) continue;
            SeqInfo const seq(p, x.b);
            int const rows = packed.count(seq.rows);
            if (x.m0 >= rows) continue;
            int const m1 = min(x.m0 + kBlockM, rows);
            MaskPolicy<Tile::kBlockN> const mask(p, seq, x.b, packed.query(x.m0), packed.query(m1 - 1) + 1, 1, 0);
            int const warpRow0 = x.m0 + cwarp * 16;
            int const warpRows = max(0, min(16, m1 - warpRow0));
            float o[Tile::kDimO / 2];
#pragma unroll
            for (int i = 0; i < Tile::kDimO / 2; ++i) o[i] = 0.0F;
            OnlineSoftmax<2> softmax;
            softmax.init();
            if (!mask.empty()) {
                // (through a shuffle, as cwg: known warp-uniform, Q's address stays in uniform registers)
                int const qBuf = __shfl_sync(0xffffffffu, qIter & 1, 0);
                ConsumerSm90<ET, Tile> const consumer{p, seq, mask, pipe, sQAddr + qBuf * Tile::kBytesQ, sKAddr, sVAddr,
                                                      warpRow0 + g, t, lane == 0, cwg, -INFINITY, sVtAddr, vtBar, 0U, it,
                                                      static_cast<uint32_t>((qIter >> 1) & 1), qBuf,
                                                      /*ringOpen=*/qIter == 0, /*ringClose=*/false,
                                                      /*kvTma=*/tma.kvOk != 0, /*peer=*/peerNow()};
                consumer.run(o, softmax);
                alignHeadColumns<Tile>(tma, x.hq / p.headGroup, p.headDim, o);
                it += mask.nBlockMax - mask.nBlockMin;
                ++qIter;
            }
            float invSum[2], lse[2], scaleOut[2];
            softmax.template finalize<Tile::kPLog2>(p.scale, invSum, lse);
#pragma unroll
            for (int r = 0; r < 2; ++r) scaleOut[r] = invSum[r] * p.outScale;
            auto const& o3 = *reinterpret_cast<float const(*)[1][Tile::kDimO / 8][4]>(&o);
            __syncwarp();  // the warp's copies of its previous tile out of sStage are done
            storeWarpRowsTma<ET, Tile>(p, tma, seq, x.b, x.hq, warpRow0, warpRows, o3, scaleOut, lse, sStage, lane);
        }
    }
    // The last warpgroup opened warpgroup 0's turn after the CTA's last tile (ringClose false):
    // warpgroup 0 meets it, so that the barrier's phase completes.
    if constexpr (Tile::kPingPong)
        if (qIter > 0 && cwg == 0) cutlass::arch::NamedBarrier::sync(256, Tile::kBarrierTurn0);
    if (lane == 0) cute::tma_store_wait<0>();  // sStage outlives its last store's reads
    if (Tile::kPairable && tiles.clusterCtas == 2) clusterSync();
}

}  // namespace fmha::sm90
