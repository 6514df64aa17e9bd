// Host-only launch heuristics (see heuristics.h).
#include "heuristics.h"

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

#include "fmha/fmha.h"

namespace fmha::detail {

namespace {

std::atomic<unsigned long long*> gSkipStats{nullptr};

// An environment setting read once into `cache` (-2 until then): the index of its value in
// `names`, or -1 (automatic) where it is unset or names none of them.
int envChoice(std::atomic<int>& cache, char const* name, std::initializer_list<char const*> names) {
    int v = cache.load(std::memory_order_relaxed);
    if (v == -2) {
        char const* env = std::getenv(name);
        v = -1;
        int i = 0;
        for (char const* n : names) {
            if (env != nullptr && std::strcmp(env, n) == 0) v = i;
            ++i;
        }
        cache.store(v, std::memory_order_relaxed);
    }
    return v;
}

std::atomic<int> gPackGqa{-2};
int packGqaSetting() { return envChoice(gPackGqa, "FMHA_PACK_GQA", {"0", "1"}); }

std::atomic<int> gTileShape{-2};  // (setTileShape stores here too)
// FMHA_TILE_SHAPE: the names in TileShape's order.
int tileShapeSetting() {
    return envChoice(gTileShape, "FMHA_TILE_SHAPE",
                     {"default", "wide-keys", "one-warpgroup", "persistent", "three-warpgroups"});
}

// FMHA_SPLIT_MERGE=combine / kernel (0 / 1): every split launch merges its parts with the combine
// kernel or in the kernel (where the kernel can); unset or anything else: the rule below. For
// measurement.
std::atomic<int> gSplitMerge{-2};
int splitMergeSetting() { return envChoice(gSplitMerge, "FMHA_SPLIT_MERGE", {"combine", "kernel"}); }

std::atomic<int> gDependentLaunch{-2};

}  // namespace

unsigned long long* setSkipStats(unsigned long long* counters) { return gSkipStats.exchange(counters); }

bool dependentLaunch() { return envChoice(gDependentLaunch, "FMHA_DEPENDENT_LAUNCH", {"0", "1"}) != 0; }

namespace {
std::atomic<int> gKvHint{-2};
}  // namespace

KvCachePriority kvCachePriority(FmhaParams const& p, int blockM) {
    switch (envChoice(gKvHint, "FMHA_KV_HINT", {"last", "first", "normal"})) {
        case 0: return KvCachePriority::kLast;
        case 1: return KvCachePriority::kFirst;
        case 2: return KvCachePriority::kNormal;
        default: break;
    }
    bool const oneRowTile = (static_cast<int64_t>(p.maxSeqLenQ) << p.packLog2) <= blockM;
    bool const wholeGroup = (1 << p.packLog2) == p.headGroup;
    return oneRowTile && wholeGroup ? KvCachePriority::kFirst : KvCachePriority::kLast;
}

namespace {
std::atomic<int> gKvPairs{-2};  // (setKvPairs stores here too)
int kvPairsSetting() { return envChoice(gKvPairs, "FMHA_KV_PAIRS", {"0", "1"}); }
thread_local bool tLastKvPairs = false;
}  // namespace

bool kvPairs() { return kvPairsSetting() != 0; }

int setKvPairs(int mode) {
    int const previous = kvPairsSetting();
    gKvPairs.store(mode < 0 ? -1 : mode, std::memory_order_relaxed);
    return previous;
}

unsigned kvClusterCtas(FmhaParams const& p, bool kvTma, unsigned gridY) {
    int const groupTiles = p.headGroup >> p.packLog2;  // grid.y's tiles a KV head
    bool const paired = kvPairs() && kvTma && gridY % 2 == 0 && groupTiles >= 2 && groupTiles % 2 == 0 &&
                        (groupTiles << p.packLog2) == p.headGroup;
    return paired ? 2U : 1U;
}

void noteKvPairs(bool paired) { tLastKvPairs = paired; }
bool lastKvPairs() { return tLastKvPairs; }

int setTileShape(int shape) {
    int const previous = tileShapeSetting();
    gTileShape.store(shape < 0 ? -1 : shape, std::memory_order_relaxed);
    return previous;
}

// D=64 with one consumer warpgroup (64 x 64 tiles, three CTAs an SM) over contiguous KV, up to
// 1024 queries and keys a sequence (FP8 causal 2048): against the next choice, 16-bit ViT S=512
// +10% (its 128-key tiles at two CTAs an SM, which ran 7.8% ahead of the persistent kernel),
// 1024 +2-4% and 768 even (three consumer warpgroups), 2048 -16%; 16-bit causal (the persistent
// kernel) S=512 +18.5%, 1024 +9%, 2048 -6%, 4096 -11%; FP8 (the persistent kernel) ViT S=512
// +14%, 1024 +3%, causal S=512 +9%, 1024 even, 2048 +3.7%, 4096 -8.5%
// (bench/results/2026-12-03_onewg-k64_ab.txt, 2026-12-03_onewg3_ab.txt).
// FP8 D=64 with 256-key tiles: +4% on non-causal 4k and -1% on ViT S=512, while a causal tile
// set of S=512 does a fifth more key work than with 128 keys, so non-causal launches without a
// window whose longest sequence has at least 2048 keys. The persistent kernel (head dims up to
// 128): causal +8-10% at S=512, +2-3% at 2k, +0-6% at 4k, about even at 8k
// and -3% to -4% at 16k (its items, pairs of row tiles, are too coarse to end together);
// non-causal +1-6% up to 1024 keys, -2% at 2k and -1% to -3% at 4k
// (2026-12-01_ff19a35_persistent_ab.txt, 2026-12-01_persistent-order_ab.txt,
// 2026-12-01_ebb45b4_persistent-bounds_ab.txt): causal launches of at most 8192 keys and
// non-causal ones of at most 1024. Over paged KV under the same bounds: D=96 causal 4k +5-10%,
// D=128 causal 8k within 1% (2026-12-01_5542a39_persist-paged_ab.txt). 16-bit D=64 with three
// consumer warpgroups (192-row tiles), against the default tiles: non-causal +5-8% at 2k and 4k,
// +10% at 16k; causal +3-4% at 16k, but 1-5% below the persistent kernel at 2k and 4k
// (2026-12-01_d457cb7_three-wg_ab.txt): contiguous KV where neither the one-warpgroup shape
// nor the persistent kernel is taken. FP8 D=64 with three consumer warpgroups, against the
// automatic choice before them: non-causal +17% at 2k, +12% at 4k, +9% at 16k (against 256-key
// tiles), causal +4-5% at 4k (against the persistent kernel) and +17% at 16k
// (2026-12-02_28f3bef_fp8-three-wg_ab.txt).
TileShape tileShapeFor(FmhaParams const& p) {
    int const forced = tileShapeSetting();
    // The persistent kernel has no bidirectional-mask union (a barrier of the whole CTA a tile)
    // and counts its tiles (at most maxSeqLenQ / 128 + 1 a head and sequence) in 32 bits.
    bool const persistentFits = p.bidirBegin == nullptr &&
                                (static_cast<int64_t>(p.maxSeqLenQ) / 128 + 1) * p.numQHeads * p.batch < (int64_t{1} << 31);
    if (forced == static_cast<int>(TileShape::kPersistent) && !persistentFits) return TileShape::kDefault;
    if (forced >= 0) return static_cast<TileShape>(forced);
    bool const fp8 = p.element == ElementKind::kFp8, strided = p.kvAddressing == KvAddressing::kStrided;
    // The longest sequence's keys: the ViT mode's maxKvLen is the packed total of all sequences'.
    int64_t const longestKeys = p.kvRowsFromCu ? p.maxSeqLenQ : p.maxKvLen;
    int const oneWgKeys = fp8 && p.causal ? 2048 : 1024;
    if (p.headDim == 64 && strided && p.skipFactor == 0.0F && p.maxSeqLenQ <= oneWgKeys && longestKeys <= oneWgKeys)
        return TileShape::kOneWarpGroup;
    // Paged 16-bit head dims 65-128 whose query rows of a KV head fit 64 (decode steps, small
    // chunks), over pages of 64 keys and up (one TMA box a K or V tile): one consumer warpgroup
    // of 64-key tiles, two CTAs an SM. Against the default tiles, decode of one sequence +7% at
    // 32k and +10% at 8k, +1% at 128k, grids that fill the GPU +1-3%; over pages of 16 -4.5%
    // (2026-12-02_decode-onewg_final.txt).
    if (p.headDim > 64 && p.headDim <= 128 && !fp8 && !strided && p.skipFactor == 0.0F && p.pageSizeLog2 >= 6 &&
        static_cast<int64_t>(p.maxSeqLenQ) * p.headGroup <= 64)
        return TileShape::kOneWarpGroup;
    bool const persistent = p.headDim <= 128 && persistentFits && p.skipFactor == 0.0F &&
                            longestKeys <= (p.causal ? 8192 : 1024);
    // Three consumer warpgroups at D=64 over contiguous KV: 16-bit wherever the persistent kernel
    // is not taken; FP8 past 1024 keys, and past 2048 when causal, ahead of the wide keys and the
    // persistent kernel.
    bool const threeWarpGroups = fp8 ? longestKeys > (p.causal ? 2048 : 1024) : !persistent;
    if (p.headDim == 64 && strided && p.skipFactor == 0.0F && threeWarpGroups) return TileShape::kThreeWarpGroups;
    if (p.headDim == 64 && fp8 && !p.causal && p.window == INT32_MAX && p.bidirBegin == nullptr && longestKeys >= 2048)
        return TileShape::kWideKeys;
    // 16-bit D=256 with 80-key tiles over contiguous KV, every mask, from 4096 keys a sequence:
    // against 64 keys non-causal +4-6% at 4k and 16k, causal +5% at 16k and even at 4k (-3.6% to
    // +4.9% over four A/Bs); 1024 and 1536 keys -2% to -5%, 2048 -3% to +1%, 512 -12% to -14%
    // (bench/results/2026-12-03_levers_ab.txt).
    if (p.headDim == 256 && !fp8 && strided && p.skipFactor == 0.0F && longestKeys >= 4096) return TileShape::kWideKeys;
    // (Contiguous or paged KV; a launch that then splits its keys takes the default tiles.)
    if (persistent) return TileShape::kPersistent;
    return TileShape::kDefault;
}

int setPackGqa(int mode) {
    int const previous = packGqaSetting();
    gPackGqa.store(mode < 0 ? -1 : (mode > 0 ? 1 : 0), std::memory_order_relaxed);
    return previous;
}

int choosePackLog2(FmhaParams const& p, int blockM) {
    int const g = p.headGroup;
    if (g <= 1 || (g & (g - 1)) != 0 || g > blockM || blockM % g != 0 || p.batch <= 0) return 0;
    int log2 = 0;
    while ((1 << log2) < g) ++log2;
    // Tile rows are int32 in the kernels, sequences' lengths included.
    int64_t const qRows = p.cuQ != nullptr ? p.totalQ : static_cast<int64_t>(p.batch) * p.seqLenQ;
    if ((qRows << log2) > INT32_MAX || (static_cast<int64_t>(p.maxSeqLenQ) << log2) > INT32_MAX) return 0;
    int const mode = packGqaSetting();
    if (mode != -1) return mode == 1 ? log2 : 0;
    // Share of real rows in the row tiles of a mean-length sequence, one head or the group.
    int64_t const rows = (qRows + p.batch - 1) / p.batch;
    auto filled = [blockM](int64_t r) {
        int64_t const tiles = (r + blockM - 1) / blockM;
        return tiles == 0 ? 1.0 : static_cast<double>(r) / static_cast<double>(tiles * blockM);
    };
    return filled(rows << log2) > 1.1 * filled(rows) ? log2 : 0;
}

// Causal prefill of short sequences makes short CTAs of uneven length (query tile i of M sees
// i + 1 of the M tiles' keys); up to 512 queries the portable kernel's CTAs walk sections of
// about 16 MiB of K/V, each section's top query tiles first. On the H200, causal, 16 heads:
// +5% at D=128 S=512 (B=32), -1% to -2% at S=1024 (B=8) and no change at S=2048 (B=8); at
// D=64 S=512 the same walk lost 5% (the walking instances are D=128 over contiguous KV).
// Units a section: 16 MiB over one unit's K/V at maxKvLen keys (the cache capacity in LLM
// mode, so a cache larger than its sequences makes sections smaller, never wrong).
int32_t walkUnits(FmhaParams const& p) {
    if (!p.causal || p.window != INT32_MAX || p.maxSeqLenQ > 512) return 1;
    int64_t const elemBytes = p.element == ElementKind::kFp8 ? 1 : 2;
    int64_t const unitBytes = 2 * elemBytes * p.headDim * (p.maxKvLen > 0 ? p.maxKvLen : 1);
    int64_t const units = (int64_t{16} << 20) / unitBytes;
    return static_cast<int32_t>(units < 1 ? 1 : units > INT32_MAX ? INT32_MAX : units);
}

void planLaunch(KernelOps const& ops, FmhaParams* p) {
    p->packLog2 = ops.packsGqa ? choosePackLog2(*p, ops.blockM) : 0;
    p->walkUnits = ops.walks ? walkUnits(*p) : 1;
    p->skipStats = p->skipFactor > 0.0F ? gSkipStats.load(std::memory_order_relaxed) : nullptr;
}

int residentCtas(KernelOps const& ops, int smemPerBlock) {
    // An SM's shared memory is its blocks' limit plus 1 KB reserved a block; registers (up to
    // 255 a thread of 128-thread CTAs, or the Hopper family's whole register file) hold two
    // portable CTAs at most.
    int const bySmem = (smemPerBlock + 1024) / (ops.smemBytes + 1024);
    return std::clamp(bySmem, 1, 2);
}

int64_t unsplitCtas(FmhaParams const& p, KernelOps const& ops) {
    int64_t const rows = static_cast<int64_t>(p.maxSeqLenQ) << p.packLog2;
    int64_t const halves = !ops.packsGqa && p.headDim > 256 ? 2 : 1;  // the portable D=512 V halves
    return (rows + ops.blockM - 1) / ops.blockM * (p.numQHeads >> p.packLog2) * p.batch * halves;
}

int32_t splitParts(FmhaParams const& p, KernelOps const& ops, int smCount, int smemPerBlock) {
    if (p.kvAddressing != KvAddressing::kPaged || p.skipFactor > 0.0F || smCount <= 0) return 1;
    int64_t const ctas = unsplitCtas(p, ops);
    // Two one-warpgroup CTAs on an SM share its K/V stream: parts for two an SM ran slower than
    // for one (one sequence of 32k, D=128: 29 parts 2.32 TB/s, 16 parts 3.04;
    // bench/results/2026-12-02_decode-onewg_ab.txt), so their parts fill the SMs once.
    int const resident = ops.shape == TileShape::kOneWarpGroup ? 1 : residentCtas(ops, smemPerBlock);
    int64_t const slots = static_cast<int64_t>(smCount) * resident;
    int64_t const tiles = (static_cast<int64_t>(p.maxKvLen) + ops.blockN - 1) / ops.blockN;
    int64_t const most = std::min<int64_t>({FmhaRunner::kMaxSplits, tiles / kMinTilesPerPart, 2 * slots / std::max<int64_t>(ctas, 1)});
    if (ctas <= 0 || most <= 1) return 1;
    // Fill of s parts: the waves' share of the slots they occupy (1: every wave full).
    auto fill = [&](int64_t s) {
        int64_t const n = ctas * s, waves = (n + slots - 1) / slots;
        return static_cast<double>(n) / static_cast<double>(waves * slots);
    };
    double best = 0.0;
    for (int64_t s = 1; s <= most; ++s) best = std::max(best, fill(s));
    int64_t s = 1;
    while (s < most && fill(s) < 0.85 * best) ++s;
    if (fill(s) < 0.85 * best) return 1;
    // One CTA an SM and the parts in one wave of at most 16: as many more parts as the wave
    // still holds, up to the 16 the merge loads together. One sequence, 8 KV heads, 16 parts
    // against 15 (14 at 8k): +7% at 8k, +1-2% at 32k (pages of 128 and 256, 1 and 4 queries),
    // +6% over pages of 16, +0.6% at 128k; past 16 parts (4 KV heads) 33 against 29 ran 5%
    // slower, so counts above 16 stay as chosen (bench/results/2026-12-03_decode-parts.txt).
    if (resident == 1)
        while (s < std::min<int64_t>(most, 16) && (s + 1) * ctas <= slots) ++s;
    return static_cast<int32_t>(s);
}

int64_t splitRowsBound(KernelOps const& ops, int smCount, int smemPerBlock) {
    return 2 * static_cast<int64_t>(smCount) * residentCtas(ops, smemPerBlock) * ops.blockM;
}

// The merge in the kernel runs after the tile's other parts, on the critical path of the
// grid's end: one warp a row, a row's parts read 8 at a time (an L2 round trip each). Against
// the combine kernel (bench/results/2026-12-02_75b72d3_fused-combine_ab.txt, decode of 32/8
// heads, D=128): one query a sequence (4 rows a tile, a row a warp, 14-15 parts: two trips)
// +16% at 8k, +2-5% at 32k, +1% at 128k; 4 and 8 queries (16 and 32 rows: four and eight rows
// a warp) -4% to -34%; 8 rows of 29 parts (32/4 heads) -4%; 16 rows of 4 parts -3%. With the
// merge's first 16 parts loaded together (2026-12-03_0068543_final.txt, FMHA_SPLIT_MERGE forced
// each way): the kernel merge on the rule's combine rows -3% to -20%, the combine kernel on its
// kernel rows -0.4% to +1.3%; the rule stands.
bool mergeInKernel(FmhaParams const& p, KernelOps const& ops, int64_t parts) {
    if (!ops.combinesSplits || ops.blockM <= 0) return false;
    if (int const forced = splitMergeSetting(); forced >= 0) return forced == 1;
    int64_t const rows = std::min<int64_t>(ops.blockM, static_cast<int64_t>(p.maxSeqLenQ) << p.packLog2);
    int64_t const warps = std::max(1, ops.blockM / 16);  // the consumer warps: 16 rows each
    return (rows + warps - 1) / warps * ((parts + 7) / 8) <= 2;
}

}  // namespace fmha::detail
