// Mainloop of the Hopper family: the K/V mbarrier pipeline, the producer warpgroup's loads
// (TMA, or zero-filling cp.async gathers), and the consumer warpgroups' wgmma steps (SS for
// Q.K^T, RS for P.V) with intra-warpgroup overlap: tile n's Q.K^T and the previously visited
// tile's P.V run on the tensor cores while the warpgroup does tile n's softmax.
// 128-byte-swizzled shared memory throughout.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>
#include <utility>

#include <cute/arch/mma_sm90_desc.hpp>
#include <cute/arch/copy_sm90_desc.hpp>
#include <cute/arch/copy_sm90_tma.hpp>
#include <cute/arch/mma_sm90_gmma.hpp>
#include <cute/arch/mma_sm90_gmma_ext.hpp>
#include <cutlass/arch/barrier.h>

#include "kernels/common/elem.cuh"
#include "kernels/common/kv_address.cuh"
#include "kernels/common/mask.cuh"
#include "kernels/common/packed_rows.cuh"
#include "kernels/common/softmax.cuh"
#include "kernels/common/tile_load.cuh"
#include "kernels/sm90/tma_sm90.h"

namespace fmha::sm90 {

namespace gmma = cute::SM90::GMMA;
using Barrier = cutlass::arch::ClusterBarrier;
using TxBarrier = cutlass::arch::ClusterTransactionBarrier;

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
FMHA_GMMA_OPS(__half, F16, 80)
FMHA_GMMA_OPS(__half, F16, 96)
FMHA_GMMA_OPS(__half, F16, 128)
FMHA_GMMA_OPS(__half, F16, 176)
FMHA_GMMA_OPS(__half, F16, 256)
FMHA_GMMA_OPS(__nv_bfloat16, BF16, 64)
FMHA_GMMA_OPS(__nv_bfloat16, BF16, 80)
FMHA_GMMA_OPS(__nv_bfloat16, BF16, 96)
FMHA_GMMA_OPS(__nv_bfloat16, BF16, 128)
FMHA_GMMA_OPS(__nv_bfloat16, BF16, 176)
FMHA_GMMA_OPS(__nv_bfloat16, BF16, 256)
#undef FMHA_GMMA_OPS
// FP8 E4M3: both operands K-major (TN), 32 keys or head-dim columns a k-step.
#define FMHA_GMMA_OPS_FP8(N)                                                   \
    template <>                                                                \
    struct GmmaOps<__nv_fp8_e4m3, N> {                                         \
        using SS = gmma::MMA_64x##N##x32_F32E4M3E4M3_SS_TN<>;                  \
        using RS = gmma::MMA_64x##N##x32_F32E4M3E4M3_RS_TN<>;                  \
    };
FMHA_GMMA_OPS_FP8(8)
FMHA_GMMA_OPS_FP8(16)
FMHA_GMMA_OPS_FP8(32)
FMHA_GMMA_OPS_FP8(48)
FMHA_GMMA_OPS_FP8(64)
FMHA_GMMA_OPS_FP8(96)
FMHA_GMMA_OPS_FP8(128)
FMHA_GMMA_OPS_FP8(192)
FMHA_GMMA_OPS_FP8(256)
#undef FMHA_GMMA_OPS_FP8

// Byte offset of chunk c (16 bytes, c < 4) of row r in a tile of 64-byte rows under the
// 64-byte swizzle (chunks XOR-ed with (r / 2) % 4), which wgmma reads with sw64Desc.
__device__ inline int swizzled64Offset(int r, int c) { return r * 64 + ((c ^ ((r / 2) % 4)) << 4); }

// Descriptor of a K-major SWIZZLE_64B tile of 64-byte rows at addr (512-byte aligned atoms):
// 8-row groups 512 B apart.
__device__ inline uint64_t sw64Desc(uint32_t addr) {
    cute::GmmaDescriptor d;
    d.bitfield.start_address_ = static_cast<uint16_t>((addr & 0x3FFFF) >> 4);
    d.bitfield.leading_byte_offset_ = 1;
    d.bitfield.stride_byte_offset_ = 512 >> 4;
    d.bitfield.base_offset_ = 0;
    d.bitfield.layout_type_ = 2;  // SWIZZLE_64B
    return d.desc_;
}

// The descriptor of the tile `bytes` further than d's (a multiple of 16): the start address
// field (bits 0-13, address / 16) grows alone, since shared addresses stay below 2^18. One
// 32-bit add a k-step instead of the descriptor's whole construction.
__device__ inline uint64_t descPlus(uint64_t d, uint32_t bytes) {
    return (d & 0xFFFFFFFF00000000ULL) | (static_cast<uint32_t>(d) + (bytes >> 4));
}

template <class Op, int N, size_t... I>
__device__ inline void ss(uint64_t da, uint64_t db, float (&d)[N], gmma::ScaleOut scale, std::index_sequence<I...>) {
    Op::fma(da, db, d[I]..., scale);
}
template <class Op, int N, size_t... I>
__device__ inline void rs(uint32_t const (&a)[4], uint64_t db, float (&d)[N], std::index_sequence<I...>,
                          gmma::ScaleOut scale = gmma::ScaleOut::One) {
    Op::fma(a[0], a[1], a[2], a[3], db, d[I]..., scale);
}

// Pins registers between a wgmma's issue and its wait: without it the compiler may move,
// or reuse, registers the tensor cores still read or write.
template <int N>
__device__ inline void fenceOperands(float (&d)[N]) {
#pragma unroll
    for (int i = 0; i < N; ++i) cute::warpgroup_fence_operand(d[i]);
}
template <int N>
__device__ inline void fenceOperands(uint32_t (&a)[N][4]) {
#pragma unroll
    for (int k = 0; k < N; ++k)
#pragma unroll
        for (int i = 0; i < 4; ++i) cute::warpgroup_fence_operand(a[k][i]);
}

// Issues S[64 x kBlockN] = Q[warpgroup's 64 rows] . K^T as one wgmma group (no wait).
// sQ: this warpgroup's first Q row inside a kRowsQ-row swizzled tile; sK: a kBlockN-row
// swizzled tile. A k-step reads 32 bytes of each row (16 16-bit or 32 FP8 columns), the first
// kQKBytes of it (the rest of a row is zeros); rows of 64 bytes (FP8 at D=64) are one
// 64-byte-swizzled block.
template <class T, int kHeadDim, int kBlockN, int kRowsQ, int kQKBytes = kHeadDim * static_cast<int>(sizeof(T))>
__device__ inline void issueQK(uint32_t sQ, uint32_t sK, float (&s)[kBlockN / 2]) {
    using Op = typename GmmaOps<T, kBlockN>::SS;
    constexpr int kRowBytes = kHeadDim * static_cast<int>(sizeof(T));
    uint64_t const descQ = kRowBytes == 64 ? sw64Desc(sQ) : sw128Desc(sQ, 0);
    uint64_t const descK = kRowBytes == 64 ? sw64Desc(sK) : sw128Desc(sK, 0);
    fenceOperands(s);
    cute::warpgroup_arrive();
#pragma unroll
    for (int kk = 0; kk < kQKBytes / 32; ++kk) {
        // k-step kk: 32 bytes further per step inside a row; 128-byte rows: column block kk/4.
        uint32_t const colOffQ = kRowBytes == 64 ? kk * 32 : (kk / 4) * (kRowsQ * 128) + (kk % 4) * 32;
        uint32_t const colOffK = kRowBytes == 64 ? kk * 32 : (kk / 4) * (kBlockN * 128) + (kk % 4) * 32;
        ss<Op>(descPlus(descQ, colOffQ), descPlus(descK, colOffK), s,
               kk == 0 ? gmma::ScaleOut::Zero : gmma::ScaleOut::One, std::make_index_sequence<kBlockN / 2>{});
    }
    cute::warpgroup_commit_batch();
}

// Issues O[64 x kDimO] += P[64 x kBlockN] . V as one wgmma group (no wait), P in
// registers (A fragments) and V an MN-major operand: its kBlockN-row swizzled tile (64-column
// blocks) read transposed, its first kDimO columns.
template <class T, int kDimO, int kBlockN>
__device__ inline void issuePV(uint32_t (&p)[kBlockN / 16][4], uint32_t sV, float (&o)[kDimO / 2]) {
    using Op = typename GmmaOps<T, kDimO>::RS;
    uint64_t const descV = sw128Desc(sV, kBlockN * 128);
    fenceOperands(p);
    fenceOperands(o);
    cute::warpgroup_arrive();
#pragma unroll
    for (int kk = 0; kk < kBlockN / 16; ++kk)  // 16 keys = two 8-row groups, 2 KB further
        rs<Op>(p[kk], descPlus(descV, kk * 2048), o, std::make_index_sequence<kDimO / 2>{});
    cute::warpgroup_commit_batch();
}

// FP8: O[64 x kDimO] += P[64 x kBlockN] . V as one wgmma group (no wait), P in registers
// (E4M3 A fragments, keys in the order of permutedKey) and V^T a K-major swizzled tile of
// kHeadDim rows of kBlockN keys (128 and 256: blocks of 128 keys under the 128-byte swizzle;
// 64 and 192: blocks of 64 keys under the 64-byte swizzle), in the same key order; the wgmma
// reads its first kDimO rows. kFresh: o = P . V (the first k-step overwrites o).
template <int kHeadDim, int kDimO, int kBlockN, bool kFresh = false>
__device__ inline void issuePVFp8(uint32_t (&p)[kBlockN / 32][4], uint32_t sVt, float (&o)[kDimO / 2]) {
    using Op = typename GmmaOps<__nv_fp8_e4m3, kDimO>::RS;
    constexpr bool kSw128 = kBlockN % 128 == 0;  // blocks of 128 keys (128-byte rows), else of 64
    uint64_t const descVt = kSw128 ? sw128Desc(sVt, 0) : sw64Desc(sVt);
    fenceOperands(p);
    fenceOperands(o);
    cute::warpgroup_arrive();
#pragma unroll
    for (int kk = 0; kk < kBlockN / 32; ++kk) {  // 32 keys = 32 bytes further in each V^T row
        uint32_t const off = kSw128 ? (kk / 4) * (kHeadDim * 128) + (kk % 4) * 32
                                    : (kk / 2) * (kHeadDim * 64) + (kk % 2) * 32;
        rs<Op>(p[kk], descPlus(descVt, off), o, std::make_index_sequence<kDimO / 2>{},
               kFresh && kk == 0 ? gmma::ScaleOut::Zero : gmma::ScaleOut::One);
    }
    cute::warpgroup_commit_batch();
}

// FP8 P.V: the key that slot k (0..31) of a 32-key k-step holds. An E4M3 A fragment gives
// lane (g, t) slots 4t..4t+3 and 16+4t..16+4t+3 of rows g and g+8, where the S accumulator
// gives it keys 8n+2t and 8n+2t+1 of each 8-key group n: slots take those keys in order (two
// groups per four slots), so that P needs no exchange between lanes, and V^T's columns
// follow the same order.
__host__ __device__ constexpr int permutedKey(int k) {
    return 16 * (k / 16) + 8 * ((k % 4) / 2) + 2 * ((k % 16) / 4) + (k % 2);
}

// FP8 producer: V^T of one stage from its raw V tile (kBlockN keys of kHeadDim bytes, as
// loaded: 128-byte swizzled, or 64-byte at D=64): V^T row d, slot s of k-step kk holds
// V[32 kk + permutedKey(s)][d], rows of kBlockN bytes (128: 128-byte swizzle; 64: 64-byte).
// A warp moves one unit of 32 keys x 16 columns at a time: ldmatrix.trans gives lane (g, t),
// from the 8-key group q, the bytes of columns 2g and 2g+1 of keys 8q+2t and 8q+2t+1; two
// byte permutes per group pair make the words of V^T rows 2g and 2g+1 holding slots
// 4t..4t+3 (keys 2t, 2t+1, 2t+8, 2t+9: permutedKey's order), and stmatrix writes them.
// Lanes g >= 4 swap their two rows' words, so that each stored 8x16-byte matrix covers rows
// of eight different swizzle phases: loads and stores are free of bank conflicts. tid < 128.
// Warp w moves units w, w + 4, ...: all of one k-step (kk = w % kSteps) and column blocks c0,
// c0 + kCStep, ... (c0 = w / kSteps < kCStep), so that a lane's addresses are its first
// unit's with a constant XOR (the swizzle phase of the raw chunk) and a constant offset: a
// unit's work is the two matrix instructions, the permutes and one LOP3 (the same bytes as
// swizzledOffset / swizzled64Offset of each unit's key and column). kCols: the columns moved,
// V^T's first kCols rows (those the P.V reads: Tile::kDimO).
template <int kHeadDim, int kBlockN, int kCols = kHeadDim, int kBatchMax = 4>
__device__ inline void transposeVTile(unsigned char const* raw, unsigned char* vt, int tid) {
    static_assert(kBlockN == 128 || kBlockN == 64, "V^T rows of one 128- or 64-byte swizzle span");
    constexpr int kSteps = kBlockN / 32, kUnits = kSteps * (kCols / 16);
    static_assert(kUnits % 4 == 0 && 4 % kSteps == 0, "whole units per warp, one k-step a warp");
    constexpr int kCStep = 4 / kSteps;                      // column blocks between a warp's units
    constexpr int kRawRowBytes = kHeadDim == 64 ? 64 : 128;  // a raw row's bytes in one swizzle block
    constexpr int kVtColBytes = 16 * kBlockN;               // 16 V^T rows: one column block of V^T
    int const lane = tid % 32, warp = tid / 32;
    int const i = lane / 8, j = lane % 8;  // the matrix and row whose address this lane gives
    int const kk = warp % kSteps, c0 = warp / kSteps;
    int const key = 32 * kk + 8 * i + j;
    // Raw chunk c = c0 + it kCStep of row key: (c % 8) ^ phase in the 16-byte slot, where c0 and
    // (it kCStep) % 8 share no bit; 128-byte rows step a whole block of kBlockN rows every 8 chunks.
    int const phase = kHeadDim == 64 ? (key / 2) % 4 : key % 8;
    uint32_t const rawBase = static_cast<uint32_t>(key * kRawRowBytes) | static_cast<uint32_t>((c0 ^ phase) << 4);
    // V^T row d = 16 c + d0 (its swizzle phase that of d0), chunk 2 kk + i / 2 of it.
    int const d0 = 2 * j + ((i % 2) ^ (j >= 4 ? 1 : 0)), chunk = 2 * kk + i / 2;
    int const vtBase = kBlockN == 128 ? d0 * 128 + ((chunk ^ (d0 % 8)) << 4) : d0 * 64 + ((chunk ^ ((d0 / 2) % 4)) << 4);
    uint32_t const rawAddr = static_cast<uint32_t>(__cvta_generic_to_shared(raw));
    uint32_t const vtAddr = static_cast<uint32_t>(__cvta_generic_to_shared(vt)) + vtBase + c0 * kVtColBytes;
    bool const swap = lane >= 16;  // lane group g = lane / 4 >= 4
    uint32_t const selEven = swap ? 0x7531 : 0x6420, selOdd = swap ? 0x6420 : 0x7531;
    // Units in batches of up to kBatchMax: a batch's loads first, then its permutes and stores,
    // so that the loads' latencies overlap (one after another, each unit waited for its load).
    constexpr int kPerWarp = kUnits / 4, kBatch = kPerWarp < kBatchMax ? kPerWarp : kBatchMax;
    constexpr int kBlockRows = kBlockN * 128;  // bytes of a 64-column block of the raw tile
#pragma unroll
    for (int b0 = 0; b0 < kPerWarp; b0 += kBatch) {
        uint32_t a[kBatch][4];
#pragma unroll
        for (int u = 0; u < kBatch; ++u) {
            int const cStep = (b0 + u) * kCStep;
            uint32_t const rawOff = (rawBase ^ static_cast<uint32_t>((cStep % 8) << 4)) +
                                    static_cast<uint32_t>(kHeadDim == 64 ? 0 : (cStep / 8) * kBlockRows);
            if (b0 + u < kPerWarp)
                asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                             : "=r"(a[u][0]), "=r"(a[u][1]), "=r"(a[u][2]), "=r"(a[u][3])
                             : "r"(rawAddr + rawOff)
                             : "memory");
        }
#pragma unroll
        for (int u = 0; u < kBatch; ++u) {
            int const cStep = (b0 + u) * kCStep;
            if (b0 + u < kPerWarp)
                asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(
                                 vtAddr + static_cast<uint32_t>(cStep * kVtColBytes)),
                             "r"(__byte_perm(a[u][0], a[u][1], selEven)), "r"(__byte_perm(a[u][0], a[u][1], selOdd)),
                             "r"(__byte_perm(a[u][2], a[u][3], selEven)), "r"(__byte_perm(a[u][2], a[u][3], selOdd))
                             : "memory");
        }
    }
}

// V^T of one stage (transposeVTile); a 192-key tile (D=128) as three 64-key blocks, a 256-key
// one (D=64) as two 128-key blocks: raw rows of block b (each row's swizzle phase its own) and
// V^T block b (kHeadDim rows of 64 or 128 bytes). kCols: V^T's rows the P.V reads (128-key tiles).
template <int kHeadDim, int kBlockN, int kCols = kHeadDim, int kBatchMax = 4>
__device__ inline void transposeV(unsigned char const* raw, unsigned char* vt, int tid) {
    if constexpr (kBlockN == 192) {
        static_assert(kHeadDim == 128, "192-key tiles at D=128");
#pragma unroll
        for (int b = 0; b < 3; ++b)
            transposeVTile<kHeadDim, 64, kHeadDim, kBatchMax>(raw + b * 64 * 128, vt + b * kHeadDim * 64, tid);
    } else if constexpr (kBlockN == 256) {
        static_assert(kHeadDim == 64, "256-key tiles at D=64");
#pragma unroll
        for (int b = 0; b < 2; ++b)
            transposeVTile<kHeadDim, 128, kHeadDim, kBatchMax>(raw + b * 128 * 64, vt + b * kHeadDim * 128, tid);
    } else {
        transposeVTile<kHeadDim, kBlockN, kCols, kBatchMax>(raw, vt, tid);
    }
}

// The byte offset, in a row view's box (TmaDescs::kvRows), of KV head h's first column of D
// (FP8): the box starts at the 16-byte column at or below it, as TMA requires.
__device__ inline int headShift(int h, int D) { return (h * D) % 16; }

// The mbarriers of one CTA. Tile i of the visit order uses stage i % kStages in phase
// (i / kStages) & 1; K and V have separate barriers, so that Q.K^T of a tile can start
// while its V is still in flight.
// kQBuffers: Tile::kQBuffers (persistent kernels two, b = the tile's parity; one elsewhere).
template <int kStages, int kQBuffers>
struct PipelineSm90 {
    uint64_t qFull[kQBuffers];   // Q buffer b has landed
    uint64_t qEmpty[kQBuffers];  // persistent kernels: each consumer warp is done reading Q buffer b
    uint64_t full[2][kStages];   // [K or V][stage]: each producer thread's copies have landed
    uint64_t empty[2][kStages];  // each consumer warp's wgmma has read the stage

    // emptyWarps: the consumer warps that release each K/V stage (a CTA pair's: both CTAs').
    __device__ void init(int producerThreads, int consumerWarps, int emptyWarps) {
        for (int b = 0; b < kQBuffers; ++b) {
            Barrier::init(&qFull[b], producerThreads);
            Barrier::init(&qEmpty[b], consumerWarps);
        }
        for (int w = 0; w < 2; ++w)
            for (int s = 0; s < kStages; ++s) {
                Barrier::init(&full[w][s], producerThreads);
                Barrier::init(&empty[w][s], emptyWarps);
            }
        cutlass::arch::fence_barrier_init();
    }
};

enum : int { kK = 0, kV = 1 };

// Who makes a gathered K/V stage of tile i of the visit order (cp.async: generic-proxy writes)
// visible to the wgmma's async proxy. The consumers, after their wait, where the CTA has no K/V
// TMA descriptor (kvTma false: every tile may be gathered) and on the first tile (a ragged
// sequence end); TMA writes need no fence. The producer itself, before it arrives, for any
// other gathered tile (bad page ids' zeros).
__device__ inline bool consumersFenceGathers(bool kvTma, int i) { return !kvTma || i == 0; }

// Producer warpgroup: Q once, then K of the first tile, then K of tile i with V of tile
// i-1 (the order the consumers use them in), each into the next free stage. A tile goes
// through TMA when its descriptor exists and every row of it is a real key (a whole tile
// inside the sequence, every page id of it inside the pool); otherwise (the ragged last
// tile, bad page ids, a layout TMA refuses) through zero-filling cp.async, so that keys
// past the sequence read as zeros and no bad address is ever formed. Either way all 128
// threads arrive once on the stage's barrier: TMA with one expect-tx arrive and 127 plain
// ones, cp.async with each thread's arrive firing when its own copies have landed (a
// gather the consumers do not fence for, bad page ids', with each thread's fence first).
// The tile's rows start at m0 (tile rows; see PackedRows), its query heads at hq.
// FP8 (Tile::kFp8): the consumers read V^T (sVt, barriers vtBar: kStages "full", then
// kStages "empty"): the producer loads V of tile i with its K (three stages or more),
// transposes each raw V stage two tiles later, once it has landed, and refills a raw stage
// only after all its threads have read it.
// Tile::kRows8 (FP8 rows of 72 bytes, instances of their own): 8-byte cp.async pieces, or TMA
// boxes over a token's KV heads as one row (TmaDescs::kvRows), whose K columns outside the head
// the producer zeroes before the consumers read them.
// it0: the pipeline's count of tiles before this row tile's (a persistent CTA's earlier
// tiles): tile i of the visit order uses stage (it0 + i) % kStages. qBuf: the barriers of Q's
// buffer sQ (persistent kernels: two buffers, the tile's parity).
// pairRank (Tile::kPairable): this CTA's rank in a pair of CTAs of the same KV
// head and row tile (-1: unpaired). A paired CTA's TMA loads only column block pairRank of each
// K/V tile, multicast to both CTAs (whose full barriers each expect the whole tile); its empty
// barriers count both CTAs' consumer warps, so that neither CTA's stage is refilled before
// both have read it.
template <class Elem, class Tile, KvAddressing kKv>
__device__ inline void produceTiles(FmhaParams const& p, TmaDescs const& tma, SeqInfo const& seq,
                                    MaskPolicy<Tile::kBlockN> const& mask, int b, int hq, int hkv, int m0,
                                    unsigned char* sQ, unsigned char* sK, unsigned char* sV,
                                    PipelineSm90<Tile::kStages, Tile::kQBuffers>& pipe, int ptid, unsigned char* sVt = nullptr,
                                    uint64_t* vtBar = nullptr, int it0 = 0, int qBuf = 0, int pairRank = -1) {
    constexpr int kBlockM = Tile::kBlockM, kBlockN = Tile::kBlockN, kStages = Tile::kStages;
    constexpr int kSw = Tile::kSwizzleBytes;  // bytes of a row in one swizzled block (128, or 64)
    constexpr int kChunks = Tile::kRowBytes / 16, kColBlocks = Tile::kRowBytes / kSw, kElemBytes = ElemTraits<Elem>::kBytes;
    constexpr int kBoxCols = kSw / kElemBytes;  // elements of a TMA box row
    // The byte offset of 16-byte chunk c of row r in a tile of kRows rows.
    auto offsetIn = [](auto rowsTag, int r, int c) {
        [[maybe_unused]] constexpr int kRows = decltype(rowsTag)::value;
        if constexpr (kSw == 64)
            return swizzled64Offset(r, c);
        else
            return swizzledOffset<kRows>(r, c);
    };
    // cp.async gathers copy 16-byte chunks as they are (FP8 included: no dequantisation).
    using CopyElem = std::conditional_t<Tile::kFp8, __half, Elem>;
    uint64_t const kvHint = tma.kvHint;  // K/V's L2 eviction priority (TmaDescs::kvHint)
    constexpr uint64_t kOnce = static_cast<uint64_t>(cute::TMA::CacheHintSm90::EVICT_FIRST);
    static_assert(kCacheHintEvictFirst == kOnce &&
                      kCacheHintEvictLast == static_cast<uint64_t>(cute::TMA::CacheHintSm90::EVICT_LAST) &&
                      kCacheHintEvictNormal == static_cast<uint64_t>(cute::TMA::CacheHintSm90::EVICT_NORMAL),
                  "the host's cache hints are cute's");
    int const D = p.headDim, lane = ptid % 32;
    bool const lead = ptid == 0;
    // kRows8: rows of 72 bytes are 8-byte aligned only (no TMA descriptor takes their strides):
    // 8-byte pieces instead of 16-byte chunks. Or TMA's row views (TmaDescs::kvRows), whose
    // boxes start at a 16-byte column: at the head's first column less its shift (headShift:
    // 8 bytes for odd KV heads), so that the head's columns sit `shift` bytes into each row of
    // Q, K and V in shared memory (the consumers move O's columns back). A K tile lands on its
    // stage's "landed" barrier (vtBar[2 kStages + stage]), the producer zeroes its columns
    // outside the head's (the neighbours'), and only then arrives on the stage's full barrier,
    // which the consumers wait on.
    constexpr bool kRows8 = Tile::kRows8;
    bool const rowViews = kRows8 && tma.kvRows;
    int const shift = rowViews ? headShift(hkv, D) : 0;
    int32_t const col0 = rowViews ? hkv * D - shift : 0;  // a row view's first column
    // Rows [0, kRows) of a tile by cp.async gathers: rowPtr(r) the global row (null: zeros),
    // dst(r, c) the 16-byte chunk c of row r in shared memory.
    auto gather = [&](auto rowsTag, auto const& rowPtr, auto const& dst, void const* fallback) {
        constexpr int kRows = decltype(rowsTag)::value;
        if constexpr (kRows8)
            loadTile8<kRows, kChunks, 128>(rowPtr, dst, D * kElemBytes / 8, shift / 8, fallback, ptid);
        else
            loadTile<CopyElem, kRows, kChunks, 128>(rowPtr, dst, 0, D * kElemBytes / 16, fallback, ptid);
    };
    int64_t const rowStride = static_cast<int64_t>(p.numQHeads) * D;
    if (lead) {
        cute::prefetch_tma_descriptor(reinterpret_cast<cute::TmaDescriptor const*>(&tma.q));
        cute::prefetch_tma_descriptor(reinterpret_cast<cute::TmaDescriptor const*>(&tma.k));
        if constexpr (kKv == KvAddressing::kStrided)
            cute::prefetch_tma_descriptor(reinterpret_cast<cute::TmaDescriptor const*>(&tma.v));
    }

    if (tma.qOk) {
        if (lead) {
            TxBarrier::arrive_and_expect_tx(&pipe.qFull[qBuf], Tile::kBytesQ);
#pragma unroll
            for (int cb = 0; cb < kColBlocks; ++cb)
                cute::SM90_TMA_LOAD_3D::copy(&tma.q, &pipe.qFull[qBuf], kOnce, sQ + cb * kBlockM * kSw, cb * kBoxCols, hq,
                                             static_cast<int32_t>(seq.qBegin + PackedRows(p).query(m0)));
        } else {
            Barrier::arrive(&pipe.qFull[qBuf]);
        }
    } else {
        char const* qBase =
            static_cast<char const*>(p.q) + (seq.qBegin * rowStride + static_cast<int64_t>(hq) * D) * kElemBytes;
        PackedRows const packed(p);
        int const rows = packed.count(seq.rows);
        auto qRow = [&](int r) -> char const* {
            int const i = m0 + r;
            return i < rows ? qBase + packed.offset(i, rowStride, D) * kElemBytes : nullptr;
        };
        auto dstQ = [&](int r, int c) { return sQ + offsetIn(std::integral_constant<int, kBlockM>{}, r, c); };
        gather(std::integral_constant<int, kBlockM>{}, qRow, dstQ, p.q);
        cutlass::arch::cpasync_barrier_arrive_noinc(&pipe.qFull[qBuf]);
    }

    KvAddress<kKv, kElemBytes> const kv(p, seq, b, hkv);
    // Paged: a tile spans kPagesPerTile pages (1 when a page holds a whole tile), one TMA
    // box of kBoxRows rows each.
    int const pageLog2 = p.pageSizeLog2;
    int const boxRows = kKv == KvAddressing::kPaged ? min(1 << pageLog2, Tile::kBoxRowsMax) : kBlockN;
    auto load = [&](int which, int i) {
        int const n = mask.nBlockMax - 1 - i, it = it0 + i, stage = it % kStages;
        auto waitEmpty = [&] {  // FP8 raw V: the producer's own transposes free the stage
            if (!(Tile::kFp8 && which == kV)) Barrier::wait(&pipe.empty[which][stage], ((it / kStages) & 1) ^ 1);
        };
        uint64_t* full = rowViews && which == kK ? &vtBar[2 * kStages + stage] : &pipe.full[which][stage];
        unsigned char* base = (which == kV ? sV : sK) + stage * Tile::kBytesKV;
        int32_t const j0 = n * kBlockN;
        bool viaTma = tma.kvOk && j0 + kBlockN <= seq.lk;
        int32_t page = 0;  // lane c: the page of box c
        if constexpr (kKv == KvAddressing::kPaged) {
            static_assert(kBlockN / 16 <= 32, "a box of at least 16 rows (the smallest page) a producer lane");
            int const boxes = kBlockN / boxRows;
            if (viaTma) {
                bool ok = true;
                if (lane < boxes) {
                    page = kv.pages[(which == kV ? kv.maxPages : 0) + ((j0 + lane * boxRows) >> pageLog2)];
                    ok = page >= 0 && page < kv.numPages;
                }
                viaTma = __all_sync(0xffffffffu, ok);  // the same answer in every producer warp
            }
            waitEmpty();  // after the page-table reads, so that their latency overlaps the wait
            if (viaTma) {
                // Lane c of the first producer warp issues box c (its own page), so that small
                // pages' many boxes leave in parallel; the lead's expect-tx arrive comes first.
                if (lead) TxBarrier::arrive_and_expect_tx(full, Tile::kBytesKV);
                __syncwarp();
                // Box c's first key within its page (non-zero only when a page holds several boxes).
                int const inPage = (j0 + ptid * boxRows) & ((1 << pageLog2) - 1);
                if constexpr (Tile::kPairable && kColBlocks == 2) {
                    if (pairRank >= 0) {  // a pair: this CTA's column block of each box, into both
                        if (ptid < boxes)
                            cute::SM90_TMA_LOAD_MULTICAST_3D::copy(&tma.k, full, uint16_t{3}, kvHint,
                                                                   base + pairRank * kBlockN * kSw + ptid * boxRows * kSw,
                                                                   pairRank * kBoxCols, hkv, (page << pageLog2) + inPage);
                        if (!lead) Barrier::arrive(full);
                        return;
                    }
                }
                if (ptid < boxes) {
#pragma unroll
                    for (int cb = 0; cb < kColBlocks; ++cb) {
                        unsigned char* dst = base + cb * kBlockN * kSw + ptid * boxRows * kSw;
                        int32_t const token = (page << pageLog2) + inPage;
                        if (rowViews)
                            cute::SM90_TMA_LOAD_2D::copy(&tma.k, full, kvHint, dst, col0 + cb * kBoxCols, token);
                        else
                            cute::SM90_TMA_LOAD_3D::copy(&tma.k, full, kvHint, dst, cb * kBoxCols, hkv, token);
                    }
                }
                if (!lead) Barrier::arrive(full);
                return;
            }
        } else {
            waitEmpty();
            if (viaTma) {
                if (lead) {
                    TxBarrier::arrive_and_expect_tx(full, Tile::kBytesKV);
                    CUtensorMap const* map = which == kV ? &tma.v : &tma.k;
                    int32_t const row = static_cast<int32_t>(seq.kvBegin) + j0;
                    int32_t const batch = p.kvRowsFromCu ? 0 : b;
                    if constexpr (Tile::kPairable && kColBlocks == 2) {
                        if (pairRank >= 0) {
                            cute::SM90_TMA_LOAD_MULTICAST_4D::copy(map, full, uint16_t{3}, kvHint,
                                                                   base + pairRank * kBlockN * kSw, pairRank * kBoxCols,
                                                                   row, hkv, batch);
                            return;
                        }
                    }
#pragma unroll
                    for (int cb = 0; cb < kColBlocks; ++cb) {
                        if (rowViews)
                            cute::SM90_TMA_LOAD_3D::copy(map, full, kvHint, base + cb * kBlockN * kSw, col0 + cb * kBoxCols,
                                                         row, batch);
                        else
                            cute::SM90_TMA_LOAD_4D::copy(map, full, kvHint, base + cb * kBlockN * kSw, cb * kBoxCols, row,
                                                         hkv, batch);
                    }
                } else {
                    Barrier::arrive(full);
                }
                return;
            }
        }
        auto row = [&](int r) -> char const* {
            int const j = j0 + r;
            return j < seq.lk ? kv.row(which == kV, j) : nullptr;
        };
        auto dst = [&](int r, int c) { return base + offsetIn(std::integral_constant<int, kBlockN>{}, r, c); };
        gather(std::integral_constant<int, kBlockN>{}, row, dst, p.k);
        if (!consumersFenceGathers(tma.kvOk != 0, i)) {
            // Its copies land, this thread makes them visible to the wgmma's async proxy, and
            // only then arrives.
            cute::cp_async_wait<0>();
            cutlass::arch::fence_view_async_shared();
            Barrier::arrive(full);
        } else {
            cutlass::arch::cpasync_barrier_arrive_noinc(full);
        }
    };
    int const nTiles = mask.nBlockMax - mask.nBlockMin;
    if constexpr (Tile::kFp8) {
        // V^T of tile j: its raw stage has landed and the consumers are done with the V^T
        // stage; every producer thread's part, then (after all have read the raw stage) the
        // raw stage may be refilled.
        auto transpose = [&](int j) {
            int const stage = (it0 + j) % kStages, phase = ((it0 + j) / kStages) & 1;
            Barrier::wait(&pipe.full[kV][stage], phase);
            Barrier::wait(&vtBar[kStages + stage], phase ^ 1);
            transposeV<Tile::kDim, kBlockN, Tile::kDimO, Tile::kTransposeBatch>(sV + stage * Tile::kBytesKV,
                                                                                  sVt + stage * Tile::kBytesVt, ptid);
            cutlass::arch::fence_view_async_shared();  // these writes -> the consumers' wgmma reads
            Barrier::arrive(&vtBar[stage]);
            cutlass::arch::NamedBarrier::sync(128, Tile::kBarrierProducer);  // the raw stage is read
        };
        // Row views: K tile j's columns outside the head's zeroed once it has landed (row r by
        // thread r), then the stage's full barrier (all producer threads, its count).
        auto zeroOutsideHead = [&](int j) {
            int const stage = (it0 + j) % kStages, phase = ((it0 + j) / kStages) & 1;
            Barrier::wait(&vtBar[2 * kStages + stage], phase);
            unsigned char* base = sK + stage * Tile::kBytesKV;
            int const first = shift / 8, end = first + D * kElemBytes / 8;  // the head's 8-byte pieces
            for (int r = ptid; r < kBlockN; r += 128)
                for (int q = 0; q < 2 * kChunks; ++q)
                    if (q < first || q >= end)
                        *reinterpret_cast<uint64_t*>(base + offsetIn(std::integral_constant<int, kBlockN>{}, r, q / 2) +
                                                     (q % 2) * 8) = 0;
            cutlass::arch::fence_view_async_shared();  // these writes -> the consumers' wgmma reads
            Barrier::arrive(&pipe.full[kK][stage]);
        };
        // With three stages or more, V of tile i leaves with its K, kLag tiles before its
        // transpose (its raw stage was V of tile i - kStages, transposed in an earlier round):
        // the transpose then rarely waits for its V to land. With two, V of tile i waits for the
        // transpose of tile i - 2 to free its raw stage, one tile later.
        constexpr bool kEarlyV = kStages >= 3;
        constexpr int kLag = Tile::kTransposeLag;
        load(kK, 0);
        if (kEarlyV) load(kV, 0);
        for (int i = 1; i < nTiles; ++i) {
            load(kK, i);
            if (kEarlyV) load(kV, i);
            else load(kV, i - 1);
            if (rowViews) zeroOutsideHead(i - 1);
            if (i >= kLag) transpose(i - kLag);
        }
        if (!kEarlyV) load(kV, nTiles - 1);
        if (rowViews) zeroOutsideHead(nTiles - 1);
        for (int j = nTiles >= kLag ? nTiles - kLag : 0; j < nTiles; ++j) transpose(j);
    } else {
        load(kK, 0);
        for (int i = 1; i < nTiles; ++i) {
            load(kK, i);
            load(kV, i - 1);
        }
        load(kV, nTiles - 1);
    }
    cute::cp_async_wait<0>();  // no copy outlives its thread
}

// A hook that does nothing (ConsumerSm90::softmaxStep's default pvEarly).
struct NoOp {
    __device__ void operator()() const {}
};

// Consumer warpgroup: every tile of the visit order through the two GEMMs and the online
// softmax, accumulating this warpgroup's 64 rows of O. kSkip: skip-softmax
// (docs/SEMANTICS.md): a warp whose 16 rows all find a tile negligible drops it (no
// exponentials, row sums or rescale; P = 0 for its rows); when all four warps of the
// warpgroup drop it, the warpgroup skips the tile's P.V too, its V stage waited for and
// released unread. The warps learn each other's drops without a barrier of their own: each
// writes its drop of tile i to shared memory, and the four read them after the next step's
// ping-pong turn barrier, which they pass together before issuing the P.V of tile i.
template <class ET, class Tile, bool kSkip = false, bool kStats = false>
struct ConsumerSm90 {
    // FP8: E4M3 operands in both GEMMs (P converted from the softmax, scaled by kPScale).
    using T = std::conditional_t<Tile::kFp8, __nv_fp8_e4m3, typename ET::Compute>;
    using Mask = MaskPolicy<Tile::kBlockN>;
    static constexpr int kBlockN = Tile::kBlockN, kStages = Tile::kStages, kNT = kBlockN / 8;
    static constexpr int kHeadDim = Tile::kDim;
    static constexpr int kDimO = Tile::kDimO;  // O's columns (a thread holds kDimO / 2)
    static constexpr int kPSteps = kBlockN * static_cast<int>(sizeof(T)) / 32;  // P.V k-steps (A fragments)

    FmhaParams const& p;
    SeqInfo const& seq;
    Mask const& mask;
    PipelineSm90<kStages, Tile::kQBuffers>& pipe;
    uint32_t sQ, sK, sV;  // this warpgroup's Q rows; the K and V stages
    int row0;             // the first tile row this thread holds (it also holds row0 + 8; see PackedRows)
    int t;                // lane position in its quad
    bool leadLane;        // lane 0: arrives for its warp
    int wg;               // consumer warpgroup, 0 .. kNConsumerWarpGroups - 1
    float skipLog2;       // kSkip: log2(lambda); -inf where the sequence skips nothing (lambda >= 1)
    uint32_t sVt;         // FP8: the V^T stages
    uint64_t* vtBar;      // FP8: their barriers (kStages full, then kStages empty)
    uint32_t sDrops;      // kSkip: this warpgroup's drop bytes, [tile parity][warp]
    int it0 = 0;          // the pipeline's tiles before this row tile's (persistent kernels; see produceTiles)
    uint32_t qPhase = 0;  // the phase of Q's barriers for this row tile
    int qBuf = 0;         // its Q buffer (persistent kernels: the tile's parity)
    // Ping-pong across tiles: ringOpen, the CTA's first tile (the last warpgroup opens
    // warpgroup 0's first turn); ringClose, the last warpgroup does not open warpgroup 0's next
    // turn after this tile. A one-tile CTA opens and closes; a persistent CTA opens on its first
    // tile only and never closes (warpgroup 0 meets the last opening after the CTA's last tile),
    // so that warpgroup 0 starts the next tile's Q.K^T while the others finish this one's.
    bool ringOpen = true;
    bool ringClose = true;
    // The CTA has K/V TMA descriptors (TmaDescs::kvOk): see consumersFenceGathers.
    bool kvTma = true;
    // A CTA pair's other CTA (produceTiles' pairRank), whose empty barriers this CTA's warps
    // also arrive on; -1 unpaired.
    int peer = -1;

    // Ping-pong: the warpgroups take turns issuing their GEMMs in a ring (0, 1[, 2], 0, ...),
    // so that the tensor cores run one warpgroup's GEMMs while the others do their softmax.
    // Each issue section waits on its own named barrier (its 128 threads and the arrivals of
    // the warpgroup before it) and then opens the next one's; the last warpgroup opens
    // warpgroup 0's first turn and skips its own last opening, so that every barrier phase
    // completes (all warpgroups visit the same tiles).
    static constexpr int kLastWg = Tile::kNConsumerWarpGroups - 1;
    __device__ void turnBegin() const {
        if constexpr (Tile::kPingPong) cutlass::arch::NamedBarrier::sync(256, Tile::kBarrierTurn0 + wg);
    }
    __device__ void turnEnd(bool last) const {
        if constexpr (Tile::kPingPong)
            if (!(last && ringClose && wg == kLastWg))
                cutlass::arch::NamedBarrier::arrive(256, Tile::kBarrierTurn0 + (kLastWg == 1      ? wg ^ 1
                                                                                 : wg == kLastWg ? 0
                                                                                                 : wg + 1));
    }

    // FP8: V means its V^T stage.
    __device__ void waitFull(int which, int i) const {
        int const it = it0 + i;
        uint64_t* bar = Tile::kFp8 && which == kV ? &vtBar[it % kStages] : &pipe.full[which][it % kStages];
        Barrier::wait(bar, (it / kStages) & 1);
        // cp.async (generic proxy) writes -> wgmma reads (consumersFenceGathers); FP8 V^T stages
        // are fenced by the producer that writes them.
        if (!(Tile::kFp8 && which == kV) && consumersFenceGathers(kvTma, i)) cutlass::arch::fence_view_async_shared();
    }
    __device__ void release(int which, int i) const {
        int const it = it0 + i;
        uint64_t* bar = Tile::kFp8 && which == kV ? &vtBar[kStages + it % kStages] : &pipe.empty[which][it % kStages];
        if (leadLane) {
            Barrier::arrive(bar);
            if constexpr (Tile::kPairable)
                if (peer >= 0) Barrier::arrive(bar, static_cast<uint32_t>(peer), 1u);
        }
    }
    __device__ void issuePVStage(uint32_t (&pa)[kPSteps][4], int i, float (&o)[kDimO / 2]) const {
        if constexpr (Tile::kFp8)
            issuePVFp8<kHeadDim, kDimO, kBlockN>(pa, sVt + ((it0 + i) % kStages) * Tile::kBytesVt, o);
        else
            issuePV<T, kDimO, kBlockN>(pa, stage(sV, i), o);
    }
    __device__ uint32_t stage(uint32_t base, int i) const { return base + ((it0 + i) % kStages) * Tile::kBytesKV; }

    // Tile::kPromoteO: a P.V does not add into O on the tensor cores but goes, kPromoteCols
    // columns of O at a time, into a fresh accumulator that is added into O in float32 once it
    // lands. The first chunk runs beside the tile's softmax, as the plain P.V does; the others
    // follow it one by one. A chunk costs kPromoteCols / 2 registers while in flight.
    static constexpr bool kPromote = Tile::kPromoteO;
    static constexpr int kChunkCols = kPromote ? Tile::kPromoteCols : kDimO;
    static constexpr int kChunks = kDimO / kChunkCols;
    static_assert(kDimO % kChunkCols == 0 && kChunkCols % 8 == 0, "whole chunks of 8-column groups");
    using Chunk = float[kChunkCols / 2];
    // P.V of tile i into f for O's columns [c kChunkCols, (c + 1) kChunkCols): V^T's rows
    // from c kChunkCols on (whole 8-row swizzle atoms). No wait.
    __device__ void issuePVChunk(uint32_t (&pa)[kPSteps][4], int i, int c, Chunk& f) const {
        constexpr uint32_t kVtRowBytes = kBlockN % 128 == 0 ? 128 : 64;
        issuePVFp8<kHeadDim, kChunkCols, kBlockN, true>(
            pa, sVt + ((it0 + i) % kStages) * Tile::kBytesVt + c * kChunkCols * kVtRowBytes, f);
    }
    // Waits for the chunk in flight (chunk c of tile i's P.V) and adds it into O; then the
    // chunks after it, each waited for and added. Leaves V's stage to the caller.
    // Tile::kPromotePipe: two chunks in flight, the next issued before the wait for the one
    // it follows, so that the tensor cores run it while that one is added.
    __device__ void landChunks(uint32_t (&pa)[kPSteps][4], int i, int c, Chunk& f, float (&o)[kDimO / 2]) const {
        auto add = [&](int cc, Chunk& x) {
            fenceOperands(x);
#pragma unroll
            for (int j = 0; j < kChunkCols / 2; ++j) o[cc * (kChunkCols / 2) + j] += x[j];
        };
        if constexpr (Tile::kPromotePipe && kChunks > 1) {
            Chunk g;
#pragma unroll
            for (; c < kChunks; c += 2) {
                if (c + 1 < kChunks) {
                    issuePVChunk(pa, i, c + 1, g);
                    cute::warpgroup_wait<1>();
                } else {
                    cute::warpgroup_wait<0>();
                }
                add(c, f);
                if (c + 1 < kChunks) {
                    if (c + 2 < kChunks) {
                        issuePVChunk(pa, i, c + 2, f);
                        cute::warpgroup_wait<1>();
                    } else {
                        cute::warpgroup_wait<0>();
                    }
                    add(c + 1, g);
                }
            }
        } else {
#pragma unroll
            for (; c < kChunks; ++c) {
                cute::warpgroup_wait<0>();
                add(c, f);
                if (c + 1 < kChunks) issuePVChunk(pa, i, c + 1, f);
            }
        }
        fenceOperands(pa);
    }

    // Masks tile n's scores and folds them into the running softmax: s becomes the tile's
    // unnormalised probabilities, then onKeep(rescale, moved): rescale the factor for O's rows,
    // moved whether it holds anything but 1 (the same in the warp). Where the warp drops the
    // tile instead (kSkip only; the same in the warp), onDrop(): s and the softmax state are left
    // as they are. pvDone(), the wait for the P.V in flight, runs where the paths of all four
    // warps meet (a warpgroup's wgmma instructions, the wait included, run at one pc).
    // rm: the mask rows of this thread's two query rows; live: which of them are real rows.
    // kWaitBeforeExps (the skip kernels with a lagging reference, all but 16-bit D=64): the wait
    // after the votes and the reference max's move, before the exponentials, which then share one
    // block with P's conversions and O's rescale, as in the dense kernels (whose ptxas places
    // their wait there). Otherwise the wait follows the exponentials.
    static constexpr bool kWaitBeforeExps = kSkip && Tile::kSlack8 > 0;
    // pvEarly() (kWaitBeforeExps false): before the exponentials, where all four warps' paths
    // are one (Tile::kPromoteEarly: chunk 0 of the P.V in flight landed, the next issued).
    template <bool kMasked, class PvDone, class OnKeep, class OnDrop, class PvEarly = NoOp>
    __device__ void softmaxStep(float (&s)[kBlockN / 2], int n, typename Mask::Row const (&rm)[2],
                                bool const (&live)[2], OnlineSoftmax<2>& softmax, PvDone&& pvDone, OnKeep&& onKeep,
                                [[maybe_unused]] OnDrop&& onDrop, [[maybe_unused]] PvEarly&& pvEarly = {}) const {
        if constexpr (kMasked) {
#pragma unroll
            for (int r = 0; r < 2; ++r)
                Mask::template maskRow<kNT>(rm[r], n * kBlockN, t,
                                            [&](int nt, int e) { s[nt * 4 + 2 * r + e] = -INFINITY; });
        }
        float sr[2][kNT * 2];
#pragma unroll
        for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
            for (int e = 0; e < 4; ++e) sr[e / 2][nt * 2 + (e & 1)] = s[nt * 4 + e];
        // With a lagging reference each lane tests its own maxima (updateWarp and
        // rowNegligible both take them); the exact update takes the quad's.
        float tileMax[2];
        if constexpr (Tile::kSlack8 > 0)
            OnlineSoftmax<2>::threadMax(sr, tileMax);
        else
            OnlineSoftmax<2>::tileMax(sr, tileMax);
        [[maybe_unused]] bool move = false;  // kSkip with a lagging reference: its move, voted beside the drop
        bool drop = false;
        if constexpr (kSkip) {  // (a skipLog2 of -inf drops only the tiles of warps without a real row)
            // One lead a row for both tests (rowNegligible's, updateWarp's move), both votes
            // before the drop's branch.
            bool mine = true, grow = false;
#pragma unroll
            for (int r = 0; r < 2; ++r) {
                float const lead = softmax.lead(r, tileMax[r], p.scaleLog2);
                mine = mine && (!live[r] || lead < skipLog2);
                if constexpr (Tile::kSlack8 > 0) grow = grow || OnlineSoftmax<2>::grows<Tile::kSlack8>(lead);
            }
            if constexpr (Tile::kSlack8 > 0) move = __any_sync(0xffffffffu, grow);
            drop = __all_sync(0xffffffffu, mine);
        }
        auto toS = [&] {  // the row layout back into s
#pragma unroll
            for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
                for (int e = 0; e < 4; ++e) s[nt * 4 + e] = sr[e / 2][nt * 2 + (e & 1)];
        };
        float rescale[2];
        if constexpr (kWaitBeforeExps) {
            if (!drop) softmax.template moveWarp<Tile::kSlack8>(tileMax, p.scaleLog2, rescale, move);
            pvDone();
            if (drop) {
                onDrop();
                return;
            }
            softmax.template exponentiateRows<Tile::kPLog2>(sr, p.scaleLog2);
            toS();
            onKeep(rescale, move);
        } else {
            bool moved = false;
            pvEarly();
            if (!drop) {
                if constexpr (Tile::kSlack8 > 0) {
                    moved = softmax.template updateWarp<Tile::kSlack8, Tile::kPLog2>(sr, tileMax, p.scaleLog2, rescale);
                } else {
                    softmax.template update<kNT * 2, Tile::kPLog2>(sr, tileMax, p.scaleLog2, rescale);
                    moved = true;
                }
                toS();
            }
            pvDone();
            if (drop)
                onDrop();
            else
                onKeep(rescale, moved);
        }
    }

    // P in the A-fragment layout of the P.V wgmma: k-step kk covers key groups 2kk, 2kk+1
    // (16-bit), or 4kk .. 4kk+3 in permutedKey's order (FP8: already scaled by kPScale).
    __device__ static void packP(float const (&s)[kBlockN / 2], uint32_t (&pa)[kPSteps][4]) {
        if constexpr (Tile::kFp8) {
            auto e4m3x2 = [](float lo, float hi) {  // lo in the low byte
                return static_cast<uint32_t>(__nv_cvt_float2_to_fp8x2(
                    make_float2(lo, hi), __NV_SATFINITE, __NV_E4M3));
            };
#pragma unroll
            for (int kk = 0; kk < kPSteps; ++kk)
#pragma unroll
                for (int h = 0; h < 2; ++h) {  // groups 4kk + 2h, 4kk + 2h + 1: slots 16h + 4t ..
                    float const* v0 = s + (4 * kk + 2 * h) * 4;
                    float const* v1 = v0 + 4;
                    pa[kk][2 * h + 0] = e4m3x2(v0[0], v0[1]) | (e4m3x2(v1[0], v1[1]) << 16);  // row g
                    pa[kk][2 * h + 1] = e4m3x2(v0[2], v0[3]) | (e4m3x2(v1[2], v1[3]) << 16);  // row g + 8
                }
        } else {
#pragma unroll
            for (int kk = 0; kk < kBlockN / 16; ++kk)
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    float const* v = s + (2 * kk + h) * 4;
                    pa[kk][2 * h + 0] = ET::pack(v[0], v[1]);
                    pa[kk][2 * h + 1] = ET::pack(v[2], v[3]);
                }
        }
    }

    // kSkip: this warp's drop of tile i, for the other warps of its warpgroup (byte
    // (i & 1) * 4 + warp). Written before the warp's next turn barrier; read after it.
    // The lead lane's store is predicated, not branched around.
    __device__ void publishDrop(int i, bool dropped) const {
        // (the warp's 16 rows in its warpgroup's 64: row tiles start at multiples of 64 rows)
        uint32_t const addr = sDrops + (i & 1) * 4 + static_cast<uint32_t>(row0) / 16 % 4;
        asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %2, 0;\n\t@p st.shared.u8 [%0], %1;\n\t}\n" ::"r"(addr),
                     "r"(static_cast<uint32_t>(dropped)), "r"(static_cast<uint32_t>(leadLane))
                     : "memory");
    }
    // kSkip, after the turn barrier of the step that follows tile i: whether all four warps
    // dropped tile i (the same in the warpgroup: its wgmma instructions run at one pc). The byte
    // pair of parity i & 1 is written again only in step i + 2, after every warp has passed the
    // turn barrier of step i + 2.
    __device__ bool groupDropped(int i) const {
        if constexpr (!Tile::kPingPong)  // no turn barrier to meet at: a barrier of its own
            cutlass::arch::NamedBarrier::sync(128, Tile::kBarrierSkip0 + wg);
        uint32_t drops;
        asm volatile("ld.shared.u32 %0, [%1];" : "=r"(drops) : "r"(sDrops + (i & 1) * 4) : "memory");
        return drops == 0x01010101u;
    }

    // P = 0 for this warp's rows of a tile it dropped, for the P.V its warpgroup may still
    // issue. The empty asm keeps the zeroing behind the caller's branch: without it the moves
    // become selects that every step issues.
    __device__ static void zeroP(uint32_t (&pa)[kPSteps][4]) {
#pragma unroll
        for (int kk = 0; kk < kPSteps; ++kk)
#pragma unroll
            for (int r = 0; r < 4; ++r) pa[kk][r] = 0;
        asm volatile("" ::: "memory");
    }

    // After the softmax of a tile i the warp keeps and the P.V that read pa: O rescaled, P of
    // tile i into pa and (kSkip) the keep published.
    __device__ void keepTile(int i, float const (&s)[kBlockN / 2], float const (&rescale)[2], bool moved,
                             uint32_t (&pa)[kPSteps][4], float (&o)[kDimO / 2]) const {
        if (moved) {  // warp-uniform (always, with the exact max); rare once a row's first tiles are seen
#pragma unroll
            for (int nt = 0; nt < kDimO / 8; ++nt) {
                o[nt * 4 + 0] *= rescale[0];
                o[nt * 4 + 1] *= rescale[0];
                o[nt * 4 + 2] *= rescale[1];
                o[nt * 4 + 3] *= rescale[1];
            }
        }
        packP(s, pa);
        if constexpr (kSkip) publishDrop(i, false);
    }
    // After the P.V that read pa, for a tile i the warp drops (kSkip): P = 0 for its rows (the
    // warpgroup may still issue that P.V) and the drop published; o is left alone.
    __device__ void dropTile(int i, uint32_t (&pa)[kPSteps][4]) const {
        zeroP(pa);
        publishDrop(i, true);
    }

    // The body of one step after its turn barrier: Q.K^T of tile i and P.V of tile i-1 on the
    // tensor cores while the warpgroup waits for the first, then tile i's softmax while the
    // second runs. kPV: tile i-1 has a P.V (the warpgroup did not skip it: kSkip only). A step
    // without P.V is a body of its own, so that each body's wgmma pipeline is straight-line (a
    // branch around the P.V serialises ptxas's wgmma pipeline: C7514). dropped: out, whether
    // this warp dropped tile i (kSkip).
    template <bool kMasked, bool kPV>
    __device__ void body(int i, int nLast, typename Mask::Row const (&rm)[2], bool const (&live)[2],
                         uint32_t (&pa)[kPSteps][4], float (&o)[kDimO / 2], OnlineSoftmax<2>& softmax,
                         bool& dropped) const {
        float s[kBlockN / 2];
        [[maybe_unused]] Chunk f;  // kPromote: the P.V chunk in flight
        issueQK<T, kHeadDim, kBlockN, Tile::kBlockM, Tile::kQKBytes>(sQ, stage(sK, i), s);
        waitFull(kV, i - 1);
        if constexpr (kPV) {
            if constexpr (kPromote)
                issuePVChunk(pa, i - 1, 0, f);
            else
                issuePVStage(pa, i - 1, o);
        }
        turnEnd(false);
        cute::warpgroup_wait<kPV ? 1 : 0>();  // Q.K^T done; P.V still reads pa and writes o
        fenceOperands(s);
        release(kK, i);
        // Tile::kPromoteEarly: chunk 0 lands and chunk 1 leaves before the exponentials, which
        // then run beside it (the dense kernels' softmax; the skip kernels wait before them).
        constexpr bool kEarly = kPV && kPromote && Tile::kPromoteEarly && kChunks > 1 && !kWaitBeforeExps;
        softmaxStep<kMasked>(
            s, nLast - i, rm, live, softmax,
            [&] {
                if constexpr (kPV && kPromote) landChunks(pa, i - 1, kEarly ? 1 : 0, f, o);
                cute::warpgroup_wait<0>();
                fenceOperands(o);
                fenceOperands(pa);  // pa stays live (unreused) until the P.V that reads it is done
                release(kV, i - 1);
            },
            [&](float const (&rescale)[2], bool moved) {
                keepTile(i, s, rescale, moved, pa, o);
                dropped = false;
            },
            [&] {
                dropTile(i, pa);
                dropped = true;
            },
            [&] {
                if constexpr (kEarly) {
                    cute::warpgroup_wait<0>();
                    fenceOperands(f);
#pragma unroll
                    for (int j = 0; j < kChunkCols / 2; ++j) o[j] += f[j];
                    issuePVChunk(pa, i - 1, 1, f);
                }
            });
    }

    // One step of the visit order: tile i's Q.K^T and softmax, and the P.V of tile i-1 unless
    // every warp dropped it (kSkip). Returns whether that P.V was skipped.
    template <bool kMasked>
    __device__ bool step(int i, int nLast, typename Mask::Row const (&rm)[2], bool const (&live)[2],
                         uint32_t (&pa)[kPSteps][4], float (&o)[kDimO / 2], OnlineSoftmax<2>& softmax,
                         bool& dropped) const {
        waitFull(kK, i);
        turnBegin();
        if constexpr (kSkip) {
            if (groupDropped(i - 1)) {
                body<kMasked, false>(i, nLast, rm, live, pa, o, softmax, dropped);
                return true;
            }
        }
        body<kMasked, true>(i, nLast, rm, live, pa, o, softmax, dropped);
        return false;
    }

    // The unmasked run's steps, unrolled twice in the 16-bit kernels of head dims up to 128
    // without skip-softmax whose CTA runs one tile of two or three consumer warpgroups: each
    // copy keeps its own stage's descriptors in registers. The other kernels have no registers
    // to spare for that and would spill; the one-warpgroup tiles (several CTAs an SM) and the
    // persistent kernel on short sequences measured slower with it (perf-history, "The
    // unmasked run unrolled twice").
    static constexpr int kUnrollUnmasked =
        !kSkip && !Tile::kFp8 && Tile::kDim <= 128 && !Tile::kPersistent && Tile::kNConsumerWarpGroups > 1 ? 2 : 1;
    // The persistent 16-bit kernels of head dims up to 128 without skip-softmax run the unmasked
    // run unrolled twice where it holds at least FMHA_SM90_PERSIST_UNROLL_MIN steps, once
    // otherwise: unrolled throughout, their 512-key rows ran slower; from 4 steps, on an H100 at
    // the settled clock, the causal 4k rows +0.4-1.7%, the causal 512-key rows 0.6-0.8% slower
    // and the 8k rows within 0.3% (perf-history, "The persistent kernels' unroll from 4 steps").
    // 0 turns it off (measurement).
#ifndef FMHA_SM90_PERSIST_UNROLL_MIN
#define FMHA_SM90_PERSIST_UNROLL_MIN 4
#endif
    static constexpr int kUnrollMinRun =
        !kSkip && !Tile::kFp8 && Tile::kDim <= 128 && Tile::kPersistent ? FMHA_SM90_PERSIST_UNROLL_MIN : 0;
    __device__ void run(float (&o)[kDimO / 2], OnlineSoftmax<2>& softmax) const {
        Barrier::wait(&pipe.qFull[qBuf], qPhase);
        cutlass::arch::fence_view_async_shared();
        int const nTiles = mask.nBlockMax - mask.nBlockMin, nLast = mask.nBlockMax - 1;
        int32_t firstUnmasked, endUnmasked;
        mask.visitSplit(&firstUnmasked, &endUnmasked);
        // The mask of this thread's two rows, read once (rows past the sequence see nothing).
        PackedRows const packed(p);
        typename Mask::Row rm[2];
        bool live[2];
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            live[r] = row0 + 8 * r < packed.count(seq.rows);
            rm[r] = live[r] ? mask.row(packed.query(row0 + 8 * r)) : Mask::none();
        }
        uint32_t pa[kPSteps][4];
        bool dropped = false;  // this warp dropped the tile last visited (kSkip)
        [[maybe_unused]] int nSkipped = 0, nDropped = 0;  // kStats: P.V products skipped, tiles this warp dropped
        {
            float s[kBlockN / 2];
            waitFull(kK, 0);
            if constexpr (Tile::kPingPong)
                if (ringOpen && wg == kLastWg) cutlass::arch::NamedBarrier::arrive(256, Tile::kBarrierTurn0);
            turnBegin();
            issueQK<T, kHeadDim, kBlockN, Tile::kBlockM, Tile::kQKBytes>(sQ, stage(sK, 0), s);
            turnEnd(false);
            cute::warpgroup_wait<0>();
            fenceOperands(s);
            release(kK, 0);
            // O is still zero. Dropped only where the warp holds no real row: a real row's
            // first tile holds its maximum.
            softmaxStep<true>(
                s, nLast, rm, live, softmax, [] {},  // (no P.V yet)
                [&](float const (&rescale)[2], bool) {
                    keepTile(0, s, rescale, /*moved=*/false, pa, o);  // (O is still zero: nothing to rescale)
                    dropped = false;
                },
                [&] {
                    dropTile(0, pa);
                    dropped = true;
                });
            if constexpr (kSkip && kStats) nDropped += dropped;
        }
        // Masked tiles (the causal diagonal, the ragged end) come first in the visit order,
        // then the unmasked run without mask code, then the masked window edge.
        int i = 1;
        auto visit = [&](auto masked) {
            [[maybe_unused]] bool const skippedPV =
                step<decltype(masked)::value>(i, nLast, rm, live, pa, o, softmax, dropped);
            if constexpr (kSkip && kStats) {
                nSkipped += skippedPV;
                nDropped += dropped;
            }
        };
#pragma unroll 1
        for (; i < firstUnmasked; ++i) visit(std::true_type{});
        if constexpr (kUnrollMinRun > 0) {
            if (endUnmasked - i >= kUnrollMinRun) {
#pragma unroll 2
                for (; i < endUnmasked; ++i) visit(std::false_type{});
            } else {
#pragma unroll 1
                for (; i < endUnmasked; ++i) visit(std::false_type{});
            }
        } else {
#pragma unroll kUnrollUnmasked
            for (; i < endUnmasked; ++i) visit(std::false_type{});
        }
#pragma unroll 1
        for (; i < nTiles; ++i) visit(std::true_type{});
        // Every Q.K^T of the row tile is done: a persistent CTA's producer may load the next Q.
        if constexpr (Tile::kPersistent)
            if (leadLane) Barrier::arrive(&pipe.qEmpty[qBuf]);
        waitFull(kV, nTiles - 1);
        turnBegin();
        bool const skipLast = kSkip && groupDropped(nTiles - 1);
        if constexpr (kPromote) {
            Chunk f;
            if (!skipLast) issuePVChunk(pa, nTiles - 1, 0, f);
            turnEnd(true);
            if (!skipLast) landChunks(pa, nTiles - 1, 0, f, o);
        } else {
            if (!skipLast) issuePVStage(pa, nTiles - 1, o);
            turnEnd(true);
        }
        cute::warpgroup_wait<0>();
        fenceOperands(o);
        release(kV, nTiles - 1);
        if constexpr (kSkip && kStats) {
            // Counts for the tests and the benchmark: per warpgroup its steps and skipped P.V
            // products, per warp its steps and dropped tiles.
            if (p.skipStats != nullptr && leadLane) {
                nSkipped += skipLast;
                if (threadIdx.x % 128 == 0) {
                    atomicAdd(&p.skipStats[0], static_cast<unsigned long long>(nTiles));
                    atomicAdd(&p.skipStats[1], static_cast<unsigned long long>(nSkipped));
                }
                atomicAdd(&p.skipStats[2], static_cast<unsigned long long>(nTiles));
                atomicAdd(&p.skipStats[3], static_cast<unsigned long long>(nDropped));
            }
        }
    }
};

}  // namespace fmha::sm90
