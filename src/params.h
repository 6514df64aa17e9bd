// The one parameter struct that flows from the runner to every kernel: raw pointers,
// int64 strides and lengths. Plain C++ (no CUDA types) so host code and kernels share it.
#pragma once

#include <cstdint>

namespace fmha {

enum class KvAddressing : int32_t {
    kStrided = 0,  // K/V rows at base + row * kvRowStride + head * kvHeadStride (+ per-sequence offset)
    kPaged = 1,    // K/V rows through the page table into an NHD pool
};

// Element type of Q/K/V in device memory. Output is FP16 for kFp16/kFp8, BF16 for kBf16.
enum class ElementKind : int32_t { kFp16 = 0, kBf16 = 1, kFp8 = 2 };

// Tile shapes of the Hopper family beside its default, built for some (element, head dim)
// pairs and chosen per problem (heuristics.h: tileShapeFor).
enum class TileShape : int32_t {
    kDefault = 0,
    kWideKeys = 1,      // FP8: 256-key tiles at D=64 (192 at D=128); 16-bit D=256: 80-key tiles
    kOneWarpGroup = 2,  // one consumer warpgroup, 64 x 64 tiles: D=64 (three CTAs an SM), paged 16-bit D=128 (two)
    kPersistent = 3,    // D=64/128, unsplit launches: the default tiles, one CTA an SM walking several
    kThreeWarpGroups = 4,  // D=64 (16-bit and FP8): three consumer warpgroups, 192-row tiles
};

struct FmhaParams {
    ElementKind element = ElementKind::kFp16;
    KvAddressing kvAddressing = KvAddressing::kStrided;
    int32_t headDim = 0;
    int32_t numQHeads = 0;
    int32_t numKVHeads = 0;
    int32_t headGroup = 1;  // numQHeads / numKVHeads
    int32_t batch = 0;
    // Pack GQA (Hopper family): 0, or log2(headGroup) when a tile's rows are the query rows of
    // every query head of one KV head: row r of a sequence is query row r >> packLog2 of
    // query head kvHead * headGroup + (r mod headGroup). Short-Q chunks then fill the tiles.
    int32_t packLog2 = 0;

    // Q and O: row r of head h starts at (r * numQHeads + h) * headDim (packed rows).
    void const* q = nullptr;
    void* o = nullptr;
    // Sequence b owns Q rows [b * seqLenQ, +seqLenQ) when cuQ is null, else [cuQ[b], cuQ[b+1])
    // clamped to [0, totalQ).
    int32_t seqLenQ = 0;
    int32_t const* cuQ = nullptr;
    int32_t totalQ = 0;
    int32_t maxSeqLenQ = 0;  // grid extent in query rows

    // LSE (float32, natural log): index = b * lseBatchStride + h * lseHeadStride + rowIndex,
    // rowIndex relative to the sequence (batched) or to the packed buffer (packed).
    float* lse = nullptr;
    int64_t lseBatchStride = 0;
    int64_t lseHeadStride = 0;
    bool lsePacked = false;  // row index is the packed Q row

    // KV lengths: Lk[b] = cuKV[b+1] - cuKV[b], clamped to [0, maxKvLen].
    int32_t const* cuKV = nullptr;
    int32_t maxKvLen = 0;
    // Strided KV (LLM, ViT). Row j of sequence b, head h of K at
    //   k + b * kvBatchStride + (kvRowsFromCu ? cuKV[b] * kvRowStride : 0) + j * kvRowStride + h * kvHeadStride
    void const* k = nullptr;
    void const* v = nullptr;
    int64_t kvBatchStride = 0;
    int64_t kvRowStride = 0;
    int64_t kvHeadStride = 0;
    bool kvRowsFromCu = false;
    // Paged KV: pool [numPages, pageSize, numKVHeads, headDim]; table [B, 2, maxPagesPerSeq].
    // Page ids outside [0, numPages) are never dereferenced: their keys read as zeros.
    int32_t const* pageTable = nullptr;
    int32_t numPages = 0;
    int32_t maxPagesPerSeq = 0;
    int32_t pageSizeLog2 = 0;

    // Mask (docs/SEMANTICS.md): causal bottom-right, window, bidirectional blocks.
    bool causal = true;
    int32_t window = INT32_MAX;  // INT32_MAX: disabled
    int32_t const* bidirBegin = nullptr;  // [B, seqLenQ]
    int32_t const* bidirEnd = nullptr;

    // Softmax: scores * scaleLog2 are exponentiated in base 2 (scale includes qScale*kScale).
    float scaleLog2 = 0.0F;
    float scale = 0.0F;     // natural-log scale, for LSE
    float outScale = 1.0F;  // vScale for FP8, else 1
    float skipFactor = 0.0F;  // skip-softmax S (0: off); lambda = S / Lk per sequence

    // Portable family, contiguous KV: the grid's CTAs (query tile, head, sequence) are walked
    // in sections of walkUnits units (one head of one sequence), each section's highest query
    // tiles first; 1: each unit's tiles in turn. Set by the runner (heuristics.h).
    int32_t walkUnits = 1;

    // Split-KV (numSplits > 1): the key tiles a row tile visits are cut into numSplits
    // contiguous parts of near-equal length (split_kv.cuh), part s run by the CTAs of grid.x
    // [s * rowTiles, (s + 1) * rowTiles). Each writes its rows' normalised output (float32)
    // and LSE into the workspace at accumRow() (an empty part: zeros and -inf), and the
    // combine kernel (or the Hopper kernel's own, splitCounters) merges the parts into o and
    // lse. numSplits 1: o and lse directly.
    int32_t numSplits = 1;
    float* oAccum = nullptr;    // [numSplits, batch, maxSeqLenQ, numQHeads, headDim]
    float* lseAccum = nullptr;  // [numSplits, batch, maxSeqLenQ, numQHeads]

    // Skip-softmax statistics (tests and the benchmark; null otherwise): the Hopper family adds
    // the (consumer warpgroup, key tile) steps it visited to [0] and those whose P.V it skipped
    // to [1], the (warp, key tile) steps to [2] and those the warp dropped to [3]. Counted by
    // the skip-softmax instances' counting kernels, launched only where this is set.
    // Last, so that the kernels' offsets of the fields above stay as they were.
    unsigned long long* skipStats = nullptr;
    static constexpr int kSkipStats = 4;
    // FP8 input: O is written as BF16 instead of FP16 (FP8 instances only read it).
    bool outBf16 = false;
    // Hopper persistent kernels (TileShape::kPersistent): the units (one head, or pack-GQA head
    // group, of one sequence) whose row tiles a section holds; a section's tiles are walked
    // highest query tile first across its units, so that the longest (causal) tiles go first
    // and the section's K/V stays in L2. Set by the launch.
    int32_t persistUnits = 1;
    // Split-KV in the Hopper family (numSplits > 1): one counter a row tile (sequence, query
    // head or pack-GQA group, row tile: [batch][grid.y][row tiles]), zero between launches. Each
    // part's CTA counts itself in once its rows are in the workspace; the last one merges the
    // parts (combineRow) and sets the counter back to zero. Null: the combine kernel merges.
    int32_t* splitCounters = nullptr;
};

}  // namespace fmha
