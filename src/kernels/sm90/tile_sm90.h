// Tile configuration of the Hopper (wgmma) family, one constexpr place for every choice.
#pragma once

#include "params.h"

namespace fmha::sm90 {

// kElemBytes: 2 (FP16/BF16) or 1 (FP8 E4M3; wgmma reads both FP8 operands K-major, so V is
// transposed in shared memory into a stage of its own, kBytesVt). kShape: the default tiles or
// one of the shapes built beside them for some problems (TileShape).
// kRows8 (FP8 at D=128): rows of 72 bytes, 8-byte aligned only (API head dim 72): the producer
// gathers them by 8-byte pieces or reads TMA's row views (produceTiles). kQKBytes_ (D=128 tiles
// of head dims 72-96): the bytes of a row Q.K^T reads, a multiple of its 32-byte k-steps (0:
// the whole row); the columns past the head dim are zeros there. kSkip_: the tiles of a
// skip-softmax instance (kBlockN, kStages, kTransposeLag); kStridedKv_: of an instance over
// contiguous KV (kBlockN).
template <int kHeadDim, int kElemBytes = 2, TileShape kShape = TileShape::kDefault, bool kRows8_ = false,
          int kQKBytes_ = 0, bool kSkip_ = false, bool kStridedKv_ = false>
struct TileSm90 {
    static_assert(kHeadDim == 64 || kHeadDim == 128 || kHeadDim == 256, "native wgmma head dims");
    static_assert(kElemBytes == 2 || kElemBytes == 1, "16-bit or FP8 elements");
    static constexpr int kDim = kHeadDim;
    static constexpr bool kFp8 = kElemBytes == 1;
    static constexpr bool kRows8 = kRows8_;
    static_assert(!kRows8 || (kFp8 && kHeadDim == 128 && kShape != TileShape::kWideKeys), "72-byte rows: FP8, D=128 tiles");
    static_assert(kShape != TileShape::kWideKeys || (kFp8 && (kHeadDim == 64 || kHeadDim == 128)) ||
                      (!kFp8 && kHeadDim == 256),
                  "wide key tiles: FP8 at D=64 and 128, 16-bit at D=256");
    static_assert(kShape != TileShape::kOneWarpGroup || kHeadDim == 64 || (!kFp8 && kHeadDim == 128),
                  "one consumer warpgroup: D=64, and 16-bit D=128");
    static_assert(kShape != TileShape::kThreeWarpGroups || kHeadDim == 64, "three consumer warpgroups: D=64");
    // kPersistent: the default tiles, one CTA an SM walking several tiles (the output staged
    // in shared memory of its own, so that the producer loads the next tile's Q and K/V while
    // the consumers finish the current one); D=256's stages leave no room for that staging.
    static constexpr bool kPersistent = kShape == TileShape::kPersistent;
    static_assert(!kPersistent || kHeadDim <= 128, "persistent tiles: D=64 and 128");
    // One producer warpgroup (TMA, or cp.async gathers, into a K/V mbarrier pipeline) and two
    // consumer warpgroups of 64 query rows each (the wgmma M); kOneWarpGroup: one consumer
    // warpgroup and 64-key tiles, several CTAs an SM, so that one CTA's prologue and epilogue
    // overlap the others' mainloops (short sequences), at the cost of ping-pong and of K/V
    // loaded per 64 rows: at D=64 (at most 1024 queries and keys) three CTAs an SM; at D=128
    // (paged KV, at most 64 query rows a KV head: decode steps and small chunks) two, where it
    // halves the tensor work of tiles that hold a few real rows, and two CTAs an SM keep twice
    // the K/V streams in flight.
    // kThreeWarpGroups: three consumer warpgroups taking turns at the tensor cores (192-row
    // tiles), so that two of them can be in their softmax while the third's GEMMs run: at D=64
    // a warpgroup's exponentials take the SM's MUFU as long as its two GEMMs take the tensor cores.
    static constexpr int kNConsumerWarpGroups = kShape == TileShape::kOneWarpGroup       ? 1
                                                : kShape == TileShape::kThreeWarpGroups ? 3
                                                                                        : 2;
    // CTAs an SM (__launch_bounds__). One consumer warpgroup at D=64: three, against two
    // with 128-key tiles +10% on 16-bit ViT S=512 (bench/results/2026-12-03_onewg-k64_ab.txt).
    static constexpr int kMinBlocks = kNConsumerWarpGroups != 1 ? 1 : kHeadDim == 64 ? 3 : 2;
    static constexpr int kNConsumerThreads = 128 * kNConsumerWarpGroups;
    static constexpr int kNThreads = 128 + kNConsumerThreads;
    static constexpr int kBlockM = 64 * kNConsumerWarpGroups;
    // Keys per tile. A consumer thread holds O (kHeadDim/2 FP32), the next S (kBlockN/2) and
    // this P (kBlockN/4 packed) at once: 160 registers at D=128 with 128 keys; at D=256, O
    // alone takes 128, so the default tiles take 64 keys (kWideKeys 80) within its 240.
    // kWideKeys (FP8): 256 keys at D=64 (S 128 + O 32 + P 32 registers, four stages) and 192 at
    // D=128 (S 96 + O 64 + P 24, two stages). Against 128 keys, 256 at D=64 gained 4-5% on
    // non-causal 4k rows but adds a fifth of the key work of a causal S = 512 tile set; 192 at
    // D=128 gained 0.5-2% at 8k and lost 9-18% at S = 512 and 1024 (512 / 192 tiles round up)
    // and 1-3% at 4k, so only D=64 builds it (bench/results/2026-12-01_branches_ab.txt,
    // 2026-12-01_fp8-d128-keys_ab.txt).
    // kWideKeys (16-bit D=256): 80 keys (S 40 + O 128 + P 20 registers of the consumers' 240;
    // Q 64 KB and two 80 KB stages, 225 KB): against 64 keys +4-5% on ViT 4k and 16k and causal
    // 16k, -12% to -14% at S = 512, where 512 / 80 tiles round up
    // (bench/results/2026-12-03_levers_ab.txt).
    // One consumer warpgroup: 64-key tiles, so that Q and the stages fit two CTAs an SM at
    // D=128 and three at D=64 (whose S takes 32 registers a thread instead of 64).
    // Skip-softmax at 16-bit D=128 over contiguous KV: 176 keys (S 88 + O 64 + P 44 registers;
    // Q 32 KB and two 88 KB stages, 208 KB). A skipped step is a Q.K^T and the drop test, whose
    // fixed cost a wider tile spreads over more keys: against 128 keys on the 16k causal skip
    // sweep (H100), 1.1-2.2% faster where 70-89% of the tiles are skipped and 0.8-1.7% with
    // nothing qualifying (bench/results/2026-12-07_4054cb0_skip-keys_c62.txt). The dense tiles
    // keep 128 keys (with the unroll, which 176 keys leave no registers for); paged KV keeps
    // 128, whose pages a 176-key tile would load in boxes of 16 rows.
    static constexpr bool kWideSkip = kSkip_ && kStridedKv_ && kElemBytes == 2 && kHeadDim == 128 &&
                                      kShape == TileShape::kDefault;
    static constexpr int kBlockN = kShape == TileShape::kWideKeys ? (kHeadDim == 64 ? 256 : kHeadDim == 256 ? 80 : 192)
                                   : kNConsumerWarpGroups == 1   ? 64
                                   : kWideSkip                   ? 176
                                   : kHeadDim <= 128             ? 128
                                                                 : 64;
    // FP8 transposes V in 64-key blocks; 16-bit P.V reads V's rows 16 keys a k-step.
    static_assert((kFp8 ? kBlockN % 64 == 0 : kBlockN % 16 == 0) && kBlockN <= 256, "whole V^T blocks or k-steps, a wgmma N");
    // Paged TMA boxes: at most a page, and a power of two dividing the tile (64 at 192 keys, 16 at 80).
    static constexpr int kBoxRowsMax = kBlockN & -kBlockN;
    // K/V stages, each a K and a V tile with their own barriers: Q + stages fill 112 KB
    // (D=64, 3 stages), 160 KB (D=128, 2) and 192 KB (D=256, 2) of the 227 KB. FP8 tiles take
    // half the bytes, so its stages (K, V and V^T) go deeper: the producer's transpose of a V
    // tile then starts a tile earlier, off the consumers' path (105, 161 and 177 KB).
    // (One consumer warpgroup: at D=128 Q 16 KB and three 32 KB stages, 113 KB; at D=64 Q 8 KB
    // and four 16 KB stages, 73 KB, three of them within the SM's 228 KB; four stages gained 1.5%
    // over three on ViT S=512.)
    // FP8 skip-softmax at D=128 (two consumer warpgroups, 128 keys): four stages (209 KB), so
    // that a V transpose can lag its load by three tiles (kTransposeLag).
    static constexpr bool kDeepSkipFp8 = kSkip_ && kElemBytes == 1 && kHeadDim == 128 && kBlockN == 128 &&
                                         kNConsumerWarpGroups == 2;
    static constexpr int kStages = kDeepSkipFp8                                    ? 4
                                   : kElemBytes == 1                               ? (kHeadDim == 64 ? 4 : kBlockN > 128 ? 2 : 3)
                                   : kNConsumerWarpGroups == 1 && kHeadDim == 64 ? 4
                                   : kHeadDim == 64 || kNConsumerWarpGroups == 1 ? 3
                                                                                  : 2;
    // setmaxnreg moves registers within the CTA's launch allocation: __launch_bounds__ gives a
    // thread at most 65536 / (kNThreads * kMinBlocks) registers (in units of 8, at most 255):
    // 168 a thread with two consumer warpgroups (a pool of 64512), 128 with three (65536), 128
    // and 80 with one at two and three CTAs an SM (32768, 20480). A request past the pool waits
    // in setmaxnreg.inc forever (an FP8 D=256 experiment at 32/240 hung), so the producer takes
    // kProducerRegs and the consumers the rest of the pool (kConsumerRegs).
    static constexpr int kLaunchRegsMax = 65536 / (kNThreads * kMinBlocks);
    static constexpr int kLaunchRegs = (kLaunchRegsMax > 255 ? 255 : kLaunchRegsMax) / 8 * 8;
    // The producer's share: 40 (16-bit, two consumer warpgroups: consumers 232); 24 at D=256,
    // whose O holds 128 registers a thread (consumers 240). FP8: the producer also transposes V
    // (56; consumers 224; 40 in some tiles, kLeanProducer), and P takes half the registers of
    // 16-bit P (O + S + P: 168 at D=256). One consumer warpgroup: at D=64 32 (consumer 128: O 32,
    // S 32 and P 16; at four CTAs an SM the consumer spilled), FP8 40 (120: P 8; kLeanProducer);
    // at D=128 (paged KV) 40 (216), where the split-KV combine in the kernel made the producer
    // spill at 32 (the consumer's O 64, S 32 and P 16 leave room). Persistent (16-bit): the
    // producer walks its tiles in a loop that spills at 40: 48 (consumers 224). Three consumer
    // warpgroups: 32 (160: D=64 O 32, S 64 and P 32); FP8 keeps the producer's 56 for its V
    // transposes (152). 72-byte rows (kRows8): the producer's gathers and K zeroing take 72 (216).
    static constexpr bool kOneWgPaged = kNConsumerWarpGroups == 1 && kHeadDim == 128;
    // kLeanProducer: FP8 tiles whose consumers spill under the producer's 56 registers and ran
    // faster with fewer: the producer takes 40 and its V transposes batches of two
    // (kTransposeBatch), the consumers 8 registers more (232; one warpgroup 120 instead of 104). By
    // default D=64's one-warpgroup and 256-key tiles and D=256 over contiguous KV, dense (ptxas's
    // spill stores 20 -> 0, 272 -> 28 (paged 272 -> 48) and 52 -> 28 bytes); against 56 on an H100
    // (bench/results/2026-12-07_754c5c6_fp8-lean-producer_c76-c81.txt, two or three rounds): one
    // warpgroup ViT S=512 +5.1%, 1024 +6.1%, causal 512 +4.4%, 2048 +0.8%; 256-key tiles over pages
    // (16 and 64 queries on 8k keys) +2.4% and +3.0%, forced over contiguous KV +1.6% at 4k and
    // 16k; D=256 ViT and causal S=512 +1.1% and +2.2%, 4k and 16k 0% to +0.9%. Not by default,
    // though their spills fall too: D=256 over pages (2 x 8k causal 8% slower, 64-query chunks
    // 15%), the D=128 skip tiles (104 -> 40 bytes: 0.2-0.7% faster with nothing skipped, 3-4%
    // slower where 74-93% of the tiles are skipped, 5-7% over pages at 72-88%) and the 72-byte-row
    // tiles at 56 instead of 72 (96 -> 32: ViT 4k +1.8%, causal 16k -8.5%, over pages -2.1%). The
    // persistent tiles' producers spill at 40 (and the 72-byte rows' at 56).
    // FMHA_SM90_FP8_LEAN_PRODUCER=0 keeps 56 (72) in every tile, =1 takes 40 (56) in all of those
    // named (measurement).
#ifndef FMHA_SM90_FP8_LEAN_PRODUCER
#define FMHA_SM90_FP8_LEAN_PRODUCER -1
#endif
    static constexpr bool kLeanByRule = kFp8 && !kPersistent && !kRows8 && !kSkip_ &&
                                        (kShape == TileShape::kOneWarpGroup || kShape == TileShape::kWideKeys ||
                                         (kHeadDim == 256 && kStridedKv_));
    static constexpr bool kLeanEverywhere =
        kFp8 && !kPersistent &&
        (kRows8 || kDeepSkipFp8 || kShape == TileShape::kWideKeys || kShape == TileShape::kOneWarpGroup ||
         kHeadDim == 256);
    static constexpr bool kLeanProducer =
        FMHA_SM90_FP8_LEAN_PRODUCER < 0 ? kLeanByRule : FMHA_SM90_FP8_LEAN_PRODUCER != 0 && kLeanEverywhere;
    static constexpr int kProducerRegs = kRows8                      ? (kLeanProducer ? 56 : 72)
                                         : kLeanProducer             ? 40
                                         : kFp8                      ? 56
                                         : kOneWgPaged               ? 40
                                         : kNConsumerWarpGroups != 2 ? 32
                                         : kHeadDim == 256           ? 24
                                         : kPersistent               ? 48
                                                                     : 40;
    // FP8: the producer's V transposes issue up to this many ldmatrix loads (four registers
    // each) before their stores; two where the producer's registers hold more besides
    // (persistent tiles' loop, D=256, 256-key tiles), which spilled a few words at four.
    static constexpr int kTransposeBatch =
        (kLeanProducer && !kRows8) || kPersistent || kHeadDim == 256 || kBlockN > 128 ? 2 : 4;
    // FP8 with three stages or more: the tiles between a V tile's load and its transpose
    // (produceTiles), below kStages (the raw stage of tile i frees in an earlier round than V of
    // tile i + kStages loads into it). Three in the deep skip-softmax tiles: a run of skipped
    // steps, each far shorter than a V tile's landing, then does not hold the producer's next
    // loads behind each landing (H100, 16k causal, FP8: +2-3% at 0% and at 74-89% skipped,
    // bench/results/2026-12-05_skip-variants_multi-ab.txt); two elsewhere.
    static constexpr int kTransposeLag = kDeepSkipFp8 ? 3 : 2;
    static_assert(!kFp8 || kStages < 3 || kTransposeLag < kStages, "a V tile's raw stage frees before its reload");
    static constexpr int kConsumerRegs = (kNThreads * kLaunchRegs - 128 * kProducerRegs) / kNConsumerThreads / 8 * 8;
    static_assert(kProducerRegs % 8 == 0, "setmaxnreg takes multiples of 8");
    // Ping-pong scheduling of the consumer warpgroups in turn (named barriers 2, 3 and, with
    // three, 4: warpgroup w's turn; 0 is __syncthreads, 1 the consumers' meeting before the
    // epilogue, 7 and 8 skip-softmax's votes without ping-pong).
#ifndef FMHA_SM90_PINGPONG
#define FMHA_SM90_PINGPONG 1
#endif
    static constexpr bool kPingPong = FMHA_SM90_PINGPONG != 0 && kNConsumerWarpGroups >= 2;
    static constexpr int kBarrierConsumers = 1;
    static constexpr int kBarrierTurn0 = 2;
    static constexpr int kBarrierSkip0 = 7;  // skip-softmax without ping-pong: each warpgroup's drop exchange (7, 8)
    // Shared memory in 128-byte swizzled rows: 128 bytes of columns per block (64 16-bit or
    // 128 FP8 elements), blocks of rows x 128 B.
    static constexpr int kRowBytes = kHeadDim * kElemBytes;
    static constexpr int kQKBytes = kQKBytes_ > 0 ? kQKBytes_ : kRowBytes;
    static_assert(kQKBytes % 32 == 0 && kQKBytes <= kRowBytes, "whole k-steps of a row");
    // O's columns, the P.V wgmma's N: at head dims 72-96 the columns Q.K^T reads (16-bit 80 or
    // 96, FP8 96), so that the P.V does no work on the padding and O takes 40-48 registers a
    // thread instead of 64; the whole padded row elsewhere (72-byte rows: the head sits up to 8
    // columns into it). V stays in 64-column blocks: the wgmma reads the first kDimO columns.
    static constexpr int kDimO = kQKBytes_ > 0 && !kRows8 ? kQKBytes / kElemBytes : kHeadDim;
    static_assert(kDimO % 16 == 0 && kDimO <= kHeadDim, "whole 16-column groups of O");
    // FP8: O accumulated in float32 outside the tensor cores. The FP8 wgmma keeps about 13
    // bits of the accumulator it adds to (cut toward zero at each instruction), so O summed on
    // the tensor cores over a whole key range loses its low part: with all V = 1, O came out 9%
    // low at 8k keys, 31% at 32k and 60% at 128k (H200). Each P.V goes instead into a fresh
    // accumulator of kPromoteCols columns of O at a time, added into O once it lands
    // (ConsumerSm90::landChunks): kPromoteCols / 2 registers beside O, S and P.
    // FMHA_SM90_PROMOTE=0 (measurement) accumulates O on the tensor cores as the 16-bit tiles do.
#ifndef FMHA_SM90_PROMOTE
#define FMHA_SM90_PROMOTE 1
#endif
    static constexpr bool kPromoteO = kFp8 && FMHA_SM90_PROMOTE != 0;
    // The widest chunk that ptxas fits without spilling in the main loop, except in the
    // one-warpgroup tiles (below), in the 256-key tiles (272 bytes; 16 columns spilled 604)
    // and at D=128 (and 72, whose O has 128 columns): two chunks of 64 spill 32-152 bytes
    // there but ran the D=128 rows 4-7% faster than four of 32, which spill none (H100,
    // bench/results/2026-12-06_e1540d8_fp8-d128-chunks_ab.txt); in the FP8 D=128 skip kernel
    // over contiguous KV, which spills 104 bytes with two of 64, four of 32 spill none but ran
    // 0.94x (one at a time) and 0.97x (two in flight) with nothing skipped (H100,
    // bench/results/2026-12-07_8390297_fp8-skip-chunks32_c73.txt). At D=256 four chunks of 64
    // with kPromoteEarly (52-148 bytes of spills) ran the contiguous rows 2-4% and paged 8% faster
    // than eight of 32 two in flight (kPromotePipe), the skip kernels even (H100,
    // bench/results/2026-12-06_a76debe_fp8-d256-chunks_ab.txt).
    // The one-warpgroup tiles (FP8 D=64) take four chunks of 16: ptxas spilled 28 bytes there,
    // and they ran ViT and causal S=512 5-6% faster than eight of 8, which spill none; two
    // chunks of 32 in the three-warpgroup tiles (152 bytes) ran causal 4k 2% slower than four
    // of 16 (H100, bench/results/2026-12-06_be6dcce_fp8-d64-chunks_ab.txt).
    // FMHA_SM90_PROMOTE_COLS: the chunk at D=128, for measurement.
#ifndef FMHA_SM90_PROMOTE_COLS
#define FMHA_SM90_PROMOTE_COLS 64
#endif
    static constexpr int kPromoteCols = kShape == TileShape::kOneWarpGroup ? 16
                                        : kShape == TileShape::kThreeWarpGroups ? 16
                                        : kShape == TileShape::kWideKeys ? 32
                                        : kDimO == 128 ? FMHA_SM90_PROMOTE_COLS
                                        : kDimO % 64 == 0 ? 64
                                                          : kDimO / 2;
    // kPromotePipe: two chunks in flight, the next issued before the wait for the one before it
    // (ConsumerSm90::landChunks). Built in no tile: at D=256 eight chunks of 32 columns ran the
    // contiguous rows 3-7% and the skip kernels 5-7% faster with it than one at a time
    // (bench/results/2026-12-06_fe9041a_fp8-d256-pipe_check.txt), but four of 64 one at a time
    // faster still (above); four pipelined chunks of 32 at D=128 ran its rows at 0.92-1.00x two
    // of 64 one after the other (which leave no room for a second), and the three-warpgroup D=64
    // tiles even (bench/results/2026-12-06_5aed89b_fp8-chunk-pipe_ab.txt; both on an H100).
    // FMHA_SM90_PROMOTE_PIPE=1 sets it in every FP8 tile, for measurement.
#ifndef FMHA_SM90_PROMOTE_PIPE
#define FMHA_SM90_PROMOTE_PIPE 0
#endif
    static constexpr bool kPromotePipe = FMHA_SM90_PROMOTE_PIPE != 0;
    // kPromoteEarly: in the dense kernels' steps chunk 0 of the P.V lands and chunk 1 is issued
    // before the softmax's exponentials, so that chunk 1 runs beside them instead of after them
    // (ConsumerSm90::body). In the D=128 tiles (two chunks of 64; ptxas then spills nothing in
    // the default tiles, 40 bytes in the persistent one) it ran the contiguous D=128 rows 1.5-8.5%
    // faster, paged 8k even, the 16/64-query chunks 1-2%; in the one- and three-warpgroup D=64
    // tiles 0.5-2%, the one-warpgroup tiles' spills 28 -> 20 bytes (H100,
    // bench/results/2026-12-06_dc886b5_fp8-chunk1-early_ab.txt). At D=80-96 (two chunks of 48)
    // it ran ViT D=80 2.4% and causal D=96 4.8% faster, paged D=96 even; at D=72 (72-byte rows,
    // O of 128 columns) 2-3.5% slower, so not there (H100,
    // bench/results/2026-12-06_f3f68a0_fp8-early-d72-96_ab.txt). D=256's four chunks of 64
    // were measured with it (bench/results/2026-12-06_a76debe_fp8-d256-chunks_ab.txt); the
    // 256-key tiles not at all.
    // FMHA_SM90_PROMOTE_EARLY=0 or 1 sets it in every FP8 tile, for measurement.
#ifndef FMHA_SM90_PROMOTE_EARLY
#define FMHA_SM90_PROMOTE_EARLY -1
#endif
    static constexpr bool kPromoteEarly =
        FMHA_SM90_PROMOTE_EARLY >= 0 ? FMHA_SM90_PROMOTE_EARLY != 0
                                     : kShape == TileShape::kOneWarpGroup || kShape == TileShape::kThreeWarpGroups ||
                                           ((kDimO == 128 || kDimO == 96 || kDimO == 256) && !kRows8);
    // Q, K and V rows: blocks of 128-byte rows under the 128-byte swizzle, or (FP8 at D=64)
    // one block of 64-byte rows under the 64-byte swizzle.
    static constexpr int kSwizzleBytes = kRowBytes >= 128 ? 128 : 64;
    static_assert(kRowBytes % kSwizzleBytes == 0, "whole swizzle blocks");
    static constexpr int kBytesQ = kBlockM * kRowBytes;
    // Q buffers: persistent tiles two, so that the producer loads the next tile's Q while the
    // consumers still read this one's (the loads then land a whole tile ahead).
    static constexpr int kQBuffers = kPersistent ? 2 : 1;
    static constexpr int kBytesKV = kBlockN * kRowBytes;
    // FP8: V^T of a stage, kHeadDim rows of kBlockN keys: 128-byte rows (128-byte swizzle) at
    // D=128, 64-byte rows (64-byte swizzle) at D=256.
    static constexpr int kBytesVt = kFp8 ? kHeadDim * kBlockN : 0;
    // The epilogue stages O (16-bit) row-major with 16 bytes of padding per row, in the K/V
    // space once the consumers are done with it, or (kPersistent) in kBytesO of its own after
    // the V^T stages, each warp's 16 rows as 64-column blocks under the 128-byte swizzle (a TMA
    // store's box): 32 KB at D=128.
    static constexpr int kStrideO = kHeadDim + 8;
    static constexpr int kBytesOWarp = 16 * kHeadDim * 2;
    static constexpr int kBytesO = kPersistent ? (kNConsumerThreads / 32) * kBytesOWarp : 0;
    // FP8 mbarriers after the stages: V^T's full and empty, and (kRows8) K's "landed" ones for
    // row views (produceTiles).
    static constexpr int kFp8Barriers = (kRows8 ? 3 : 2) * kStages;
    // + the staged output (persistent), + the FP8 mbarriers, + alignment slack:
    // persistent 145 KB (D=64) and 225 KB (D=128), FP8 129 and 209 KB.
    static constexpr int kSmemBytes =
        kQBuffers * kBytesQ + 2 * kStages * kBytesKV + kStages * kBytesVt + kBytesO + (kFp8 ? kFp8Barriers * 8 : 0) + 1024;
    static_assert(kSmemBytes <= 227 * 1024, "within the SM's opt-in shared memory");
    // (K, V and, FP8, the V^T stages that follow them)
    static_assert(kBlockM * kStrideO * 2 <= 2 * kStages * kBytesKV + kStages * kBytesVt, "epilogue staging fits");
    // FP8: P comes out of the exponentials multiplied by kPScale = 2^kPLog2 (the exponent
    // shifted, no multiply) before its conversion to E4M3, so that probabilities up to 1 use
    // the format's range (E4M3 holds up to 448); the row sums carry the same factor, so the
    // epilogue's division by them removes it.
    static constexpr int kPLog2 = kFp8 ? 8 : 0;
    // The softmax's reference max lags the running max by up to kSlack8 / 8 (base 2), so that
    // O is rescaled only in the steps where some row's maximum outgrows it
    // (OnlineSoftmax::updateWarp); P then reaches 2^(kPLog2 + kSlack8 / 8): 256 in 16-bit,
    // and 2^8.75 = 430 within E4M3's 448 in FP8. 16-bit D=64 keeps the exact max: its lag
    // gained 2-5% on 4k rows but cost 1.5-2% on S=512 ones, where the exact max gains 1%.
    // FMHA_SM90_SLACK8 (>= 0) sets one lag for every instance, for measurement.
#ifndef FMHA_SM90_SLACK8
#define FMHA_SM90_SLACK8 -1
#endif
    static constexpr int kSlack8 = FMHA_SM90_SLACK8 >= 0 ? FMHA_SM90_SLACK8 : kFp8 ? 6 : kHeadDim == 64 ? 0 : 64;
    static_assert(!kFp8 || kSlack8 <= 6, "FP8 P within E4M3's range");
    static constexpr float kPScale = static_cast<float>(1 << kPLog2);
    // kPairable: the 16-bit D=128 tiles (two 64-column blocks a K/V row; contiguous or paged KV,
    // whose TMA boxes pair alike; persistent or not) may run as clusters of two CTAs of the same
    // KV head (two query heads of its group, the same row tiles), each loading one column block
    // of every K/V tile by TMA and multicasting it to both, so that the pair reads each tile from
    // L2 once (the launch decides: KernelSm90::launch).
    static constexpr bool kPairable = !kFp8 && kHeadDim == 128 && kNConsumerWarpGroups == 2;
    // FP8: the producer warpgroup's barrier after it has read a raw V stage (named barrier 6).
    static constexpr int kBarrierProducer = 6;
};

}  // namespace fmha::sm90
