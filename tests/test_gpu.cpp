// GPU tests: every kernel variant against the CPU reference on the shared test matrix and
// edge cases (poisoned outputs, NaN in unused cache slots and pages), plus skip-softmax,
// ragged holes and capture. They skip with a message where there is no GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <random>
#include <utility>

#include <cuda_runtime_api.h>

#include "cases.h"
#include "fuzz.h"
#include "guards.h"
#include "internals.h"
#include "problems.h"

namespace fmha::testing {
namespace {

uint64_t runSeed() {
    static uint64_t const seed = [] {
        char const* env = std::getenv("FMHA_TEST_SEED");
        uint64_t s = env ? std::strtoull(env, nullptr, 10) : std::random_device{}();
        std::printf("[fmha] test seed %llu (set FMHA_TEST_SEED to repeat)\n", static_cast<unsigned long long>(s));
        return s;
    }();
    return seed;
}

#define FMHA_REQUIRE_GPU()                                            \
    do {                                                              \
        std::string why_;                                             \
        if (!harness::gpuAvailable(&why_)) GTEST_SKIP() << why_;      \
    } while (0)

// The two references a GPU result of the family that ran is judged against: exact, and with
// P rounded as that family rounds it (the same-precision error the budget scales).
bool references(harness::HostProblem const& p, std::string const& family, ref::Result* exact, ref::Result* lowp,
                std::string* err) {
    return harness::runReference(p, {}, exact, err) &&
           harness::runReference(p, harness::lowpOptions(p, family), lowp, err);
}

// Runs spec on the GPU and checks it against the reference; returns the GPU output.
harness::GpuResult checkAgainstReference(harness::ProblemSpec spec, double extraBound = 0.0) {
    spec.seed ^= runSeed();
    harness::HostProblem const p = harness::makeProblem(spec);
    harness::GpuResult gpu;
    std::string err;
    EXPECT_TRUE(harness::runGpu(p, &gpu, &err)) << err;
    if (!err.empty()) return gpu;
    ref::Result exact, lowp;
    EXPECT_TRUE(references(p, gpu.family, &exact, &lowp, &err)) << err;
    harness::Verdict const v = harness::compare(p, gpu, exact, lowp, extraBound);
    EXPECT_TRUE(v.pass) << p.describe() << " seed " << spec.seed << ": " << v.detail;
    return gpu;
}

class KernelVsReference : public ::testing::TestWithParam<Case> {};

TEST_P(KernelVsReference, Matches) {
    FMHA_REQUIRE_GPU();
    std::string why;
    // Under a capped shared-memory budget (FMHA_SMEM_BUDGET) D=512 has no kernel on 99 KB.
    if (!harness::kernelAvailable(GetParam().spec, &why)) GTEST_SKIP() << why;
    checkAgainstReference(GetParam().spec);
}

std::string caseName(::testing::TestParamInfo<Case> const& info) { return info.param.name; }

INSTANTIATE_TEST_SUITE_P(Matrix, KernelVsReference, ::testing::ValuesIn(matrixCases(1.0)), caseName);
INSTANTIATE_TEST_SUITE_P(Edge, KernelVsReference, ::testing::ValuesIn(edgeCases(1.0)), caseName);

INSTANTIATE_TEST_SUITE_P(Long, KernelVsReference, ::testing::ValuesIn(longCases()), caseName);
INSTANTIATE_TEST_SUITE_P(LongContext, KernelVsReference, ::testing::ValuesIn(longContextCases()), caseName);

INSTANTIATE_TEST_SUITE_P(WideScores, KernelVsReference, ::testing::ValuesIn(wideScoreCases()), caseName);

INSTANTIATE_TEST_SUITE_P(ManyTiles, KernelVsReference, ::testing::ValuesIn(manyTileCases()), caseName);

class PackGqa : public ::testing::TestWithParam<PackCase> {};

// Pack GQA: each case says how many heads the Hopper family must have packed (1 elsewhere).
TEST_P(PackGqa, MatchesReferenceAndPacks) {
    FMHA_REQUIRE_GPU();
    PackCase const& pc = GetParam();
    ScopedPackGqa const pack(pc.setting);
    harness::GpuResult const gpu = checkAgainstReference(pc.c.spec);
    // The expected packing is that of the automatically chosen tiles; a tile shape forced by
    // FMHA_TILE_SHAPE packs by its own rows (64-row tiles pack fewer heads), and then only the
    // output is judged.
    if (std::getenv("FMHA_TILE_SHAPE") == nullptr)
        EXPECT_EQ(gpu.packedHeads, gpu.family == "sm90" ? pc.packed : 1) << "family " << gpu.family;
}
INSTANTIATE_TEST_SUITE_P(Cases, PackGqa, ::testing::ValuesIn(packGqaCases()),
                         [](::testing::TestParamInfo<PackCase> const& info) { return info.param.c.name; });

// Structured scores: the queries' own and previous segments of 1024 keys, heavy-hitter blocks
// and near-zero scores elsewhere (the first segment for the later rows), so that whole tiles
// fall below lambda for every row of a group (the Hopper family's 64 rows) at S = 0.05.
harness::ProblemSpec skipSpec(Mode mode, DataType dtype, float skip, std::vector<int> lq = {700, 700},
                              std::vector<int> lk = {3100, 2600}) {
    Case c = edge("skip", mode, 128, std::move(lq), std::move(lk), 4, 2);
    c.spec.dtype = dtype;
    c.spec.structured = true;
    c.spec.skip = skip;
    c.spec.seed = 11;
    c.spec.splits = 1;  // skip-softmax calls never split; neither may the dense ones they are compared with
    return c.spec;
}

// Skip-softmax in each family (the Hopper family's skip variant on sm_90, the portable one
// forced), against the dense run of the same family, in FP16, BF16 and FP8 (FP16 output).
class SkipSoftmax : public ::testing::TestWithParam<bool> {};

std::vector<std::pair<Mode, DataType>> skipDtypeCases() {
    std::vector<std::pair<Mode, DataType>> cases;
    for (DataType dtype : {DataType::kHALF, DataType::kBF16, DataType::kFP8})
        for (Mode mode : {Mode::kLlm, Mode::kPaged}) cases.emplace_back(mode, dtype);
    return cases;
}

// A test budget of shared memory (FMHA_SMEM_BUDGET) below the card's: tiles that do not fit it
// are not chosen. The Hopper family's FP8 skip tiles (four stages) and 16-bit skip tiles over
// contiguous KV (176 keys) may not fit where its dense ones do; the skip call then runs in the
// portable family, and the dense run it is compared with goes there too.
bool cappedSmem() { return detail::smemBudget(227 * 1024) < 227 * 1024; }

// A factor so small that no tile can qualify runs the skip path but must not move a bit: its
// output is that of the same call with lambda = S / Lk >= 1 (the skip kernel with skipping off
// for every sequence) and, where the skip kernel's tiles are the dense kernel's, that of the
// dense call; on the Hopper family the counters show tiles visited and, over whole tiles, none
// dropped. The lengths are whole 128-row and 128-key tiles: a warp whose rows all lie past
// the sequence's end, or that sees none of a causal tile's keys, drops that tile at any factor
// (it adds nothing, but the counters would show it). The Hopper family's 16-bit skip tiles over
// contiguous KV take 176 keys (the dense ones 128): their sums run in another order, so there
// the output is checked against the reference within the dense budget, and the last tiles'
// rows may drop keys they do not see.
TEST_P(SkipSoftmax, ZeroFactorIsBitIdenticalToDense) {
    FMHA_REQUIRE_GPU();
    ScopedFamily const family(/*portable=*/GetParam());
    for (auto [mode, dtype] : skipDtypeCases()) {
        SCOPED_TRACE(dataTypeName(dtype));
        harness::ProblemSpec const base = skipSpec(mode, dtype, 0.0F, {768, 640}, {3072, 2560});
        harness::ProblemSpec dense = base;
        dense.seed ^= runSeed();
        harness::HostProblem const p = harness::makeProblem(dense);
        harness::GpuResult a, b, off;
        std::string err;
        ASSERT_TRUE(harness::runGpu(p, &a, &err)) << err;
        harness::HostProblem q = p;
        q.spec.skip = 1e-30F;
        SkipCounts c;
        {
            ScopedSkipStats const stats;
            ASSERT_TRUE(stats.ok());
            ASSERT_TRUE(harness::runGpu(q, &b, &err)) << err;
            ASSERT_TRUE(stats.read(&c));
        }
        harness::HostProblem r = p;
        r.spec.skip = 1e6F;  // above every sequence's Lk: lambda >= 1, nothing skipped
        ASSERT_TRUE(harness::runGpu(r, &off, &err)) << err;
        EXPECT_EQ(off.family, b.family);
        ASSERT_EQ(off.o.size(), b.o.size());
        EXPECT_EQ(std::memcmp(off.o.data(), b.o.data(), b.o.size() * 2), 0) << "against lambda >= 1";
        EXPECT_EQ(std::memcmp(off.lse.data(), b.lse.data(), b.lse.size() * 4), 0) << "against lambda >= 1";
        if (b.family != a.family && cappedSmem()) {  // the dense run in the skip's family (cappedSmem)
            ScopedFamily const same(/*portable=*/true);
            ASSERT_TRUE(harness::runGpu(p, &a, &err)) << err;
        }
        EXPECT_EQ(a.family, b.family);
        bool const sameTiles = a.blockM == b.blockM && a.blockN == b.blockN;
        ASSERT_EQ(a.o.size(), b.o.size());
        if (sameTiles) {
            EXPECT_EQ(std::memcmp(a.o.data(), b.o.data(), a.o.size() * 2), 0);
            EXPECT_EQ(std::memcmp(a.lse.data(), b.lse.data(), a.lse.size() * 4), 0);
        } else {
            EXPECT_TRUE(b.family == "sm90" && b.blockN == 176 && mode == Mode::kLlm && dtype != DataType::kFP8)
                << "tiles of the skip call unlike the dense call's: " << b.family << " " << b.blockM << " x "
                << b.blockN;
            harness::ProblemSpec tiny = base;
            tiny.skip = 1e-30F;
            checkAgainstReference(tiny);
        }
        // Without counters (every call but the tests' and the benchmark's: on the Hopper family
        // the instance's kernel that does not count) the same bits.
        harness::GpuResult plain;
        ASSERT_TRUE(harness::runGpu(q, &plain, &err)) << err;
        ASSERT_EQ(plain.o.size(), b.o.size());
        EXPECT_EQ(std::memcmp(plain.o.data(), b.o.data(), b.o.size() * 2), 0) << "the kernel without counters";
        EXPECT_EQ(std::memcmp(plain.lse.data(), b.lse.data(), b.lse.size() * 4), 0) << "the kernel without counters";
        if (b.family == "sm90") {
            EXPECT_GT(c.visited, 0U);
            EXPECT_EQ(c.warpVisited, 4 * c.visited);
            if (sameTiles) {
                EXPECT_EQ(c.skipped, 0U);
                EXPECT_EQ(c.warpDropped, 0U);
            }
        } else {
            EXPECT_EQ(c.visited + c.warpVisited, 0U) << "only the Hopper family counts";
        }
    }
}

// Documented bound: |O_skip - O_dense| <= 2 * S * max|V| on top of the dense budget, on a
// problem built to skip (the Hopper family's counters show skipped tiles).
TEST_P(SkipSoftmax, SmallFactorWithinDocumentedBound) {
    FMHA_REQUIRE_GPU();
    ScopedFamily const family(/*portable=*/GetParam());
    for (auto [mode, dtype] : skipDtypeCases()) {
        SCOPED_TRACE(dataTypeName(dtype));
        float const S = 0.05F;
        harness::ProblemSpec spec = skipSpec(mode, dtype, S);
        harness::GpuResult skipped;
        SkipCounts c;
        {
            ScopedSkipStats const stats;
            ASSERT_TRUE(stats.ok());
            skipped = checkAgainstReference(spec, 2.0 * S * spec.valueRange);
            ASSERT_TRUE(stats.read(&c));
        }
        // Without counters (on the Hopper family the instance's kernel that does not count, which
        // every other call runs) the same bits: the problem checkAgainstReference made, again.
        harness::ProblemSpec same = spec;
        same.seed ^= runSeed();
        harness::GpuResult plain;
        std::string err;
        ASSERT_TRUE(harness::runGpu(harness::makeProblem(same), &plain, &err)) << err;
        EXPECT_EQ(plain.family, skipped.family);
        ASSERT_EQ(plain.o.size(), skipped.o.size());
        EXPECT_EQ(std::memcmp(plain.o.data(), skipped.o.data(), plain.o.size() * 2), 0) << "the kernel without counters";
        harness::ProblemSpec dense = spec;
        dense.skip = 0.0F;
        // The dense run in the skip's family (cappedSmem).
        ScopedFamily const denseFamily(/*portable=*/GetParam() || (skipped.family != "sm90" && cappedSmem()));
        harness::GpuResult const full = checkAgainstReference(dense);
        EXPECT_EQ(skipped.family, full.family);
        EXPECT_NE(std::memcmp(skipped.o.data(), full.o.data(), full.o.size() * 2), 0)
            << "skip-softmax skipped nothing on a problem built to skip";
        if (skipped.family == "sm90") {  // a P.V is skipped only where all four warps dropped the tile
            EXPECT_GT(c.skipped, 0U);
            EXPECT_LT(c.skipped, c.visited);
            // More drops than the skipped P.V products account for: some warp dropped a tile
            // its warpgroup kept (P = 0 for its rows in that P.V), a path of its own.
            EXPECT_GT(c.warpDropped, 4 * c.skipped);
            EXPECT_LT(c.warpDropped, c.warpVisited);
        }
    }
}
INSTANTIATE_TEST_SUITE_P(Families, SkipSoftmax, ::testing::Values(false, true),
                         [](::testing::TestParamInfo<bool> const& info) {
                             return std::string(info.param ? "portable" : "default");
                         });

// The Hopper tile shapes built beside the default (TileShape), forced on problems of every
// mode and mask they can run: one consumer warpgroup (D=64, contiguous KV, 16-bit and FP8,
// and 16-bit D=65-128, paged KV: 64 x 64 tiles), three (D=64, contiguous KV, 16-bit and
// FP8: 192-row tiles), 256-key tiles (FP8 D=64) and the persistent kernel (D=64 and 128,
// contiguous and paged KV, unsplit: problems of more tiles than the H200 has SMs, so that CTAs walk several,
// ragged and empty ones among them; a split launch takes the default tiles); the launch record
// shows the shape ran (unless a test budget of shared memory, FMHA_SMEM_BUDGET, leaves it out:
// the default runs then).
TEST(TileShapes, ForcedShapesMatchReference) {
    FMHA_REQUIRE_GPU();
    struct ShapeCase {
        Case c;
        TileShape shape;
        int blockM, blockN;  // the tile the shape runs where the Hopper family takes the case
        bool persistent = false;
    };
    std::vector<ShapeCase> cases;
    auto add = [&](std::initializer_list<Case*> cs, DataType dt, TileShape shape, int blockM, int blockN) {
        for (Case* c : cs) {
            c->spec.dtype = dt;
            cases.push_back({*c, shape, blockM, blockN});
        }
    };
    for (DataType dt : {DataType::kHALF, DataType::kBF16, DataType::kFP8}) {
        std::string const t = dt == DataType::kBF16 ? "bf16" : dt == DataType::kFP8 ? "fp8" : "fp16";
        Case causal = edge("llm_causal_" + t, Mode::kLlm, 64, {300, 300}, {700, 333}, 8, 2);
        Case window = edge("llm_window_" + t, Mode::kLlm, 64, {500}, {900}, 4, 4);
        window.spec.window = 200;
        Case vit = edge("vit_" + t, Mode::kVit, 64, {1, 65, 200, 0, 513}, {1, 65, 200, 0, 513}, 4, 4);
        add({&causal, &window, &vit}, dt, TileShape::kOneWarpGroup, 64, 64);
        // Three consumer warpgroups (192-row tiles, contiguous KV): the causal diagonal across
        // three key tiles, pack GQA of 4 and 64 heads (48 and 3 query positions a tile), 128
        // heads a KV head (192 rows hold no whole group of them: unpacked); FP8 too.
        Case causal3 = edge("threewg_causal_" + t, Mode::kLlm, 64, {400, 193, 1}, {700, 193, 900}, 8, 2);
        Case window3 = edge("threewg_window_" + t, Mode::kLlm, 64, {500}, {900}, 4, 4);
        window3.spec.window = 200;
        Case vit3 = edge("threewg_vit_" + t, Mode::kVit, 64, {1, 191, 192, 0, 577}, {1, 191, 192, 0, 577}, 4, 4);
        Case wide3 = edge("threewg_pack64_" + t, Mode::kLlm, 64, {7, 3}, {300, 200}, 64, 1);
        Case unpacked3 = edge("threewg_group128_" + t, Mode::kLlm, 64, {5}, {300}, 128, 1);
        add({&causal3, &window3, &vit3, &wide3, &unpacked3}, dt, TileShape::kThreeWarpGroups, 192, 128);
    }
    for (DataType dt : {DataType::kHALF, DataType::kBF16}) {
        std::string const t = dt == DataType::kBF16 ? "bf16" : "fp16";
        // One consumer warpgroup over paged KV at head dims 65-128 (64-row, 64-key tiles):
        // decode steps and small chunks with pack GQA, split (automatic and forced) and unsplit,
        // pages of 16, 64 and 128, a window, D=80/96 padded, rows past one tile, the ragged mode.
        Case decode = edge("onewg_paged_decode_" + t, Mode::kPaged, 128, {1, 1, 1}, {5000, 77, 1}, 32, 8);
        decode.spec.pageSize = 128;
        Case chunk = edge("onewg_paged_chunk_" + t, Mode::kPaged, 128, {16, 9}, {900, 2000}, 8, 2);
        chunk.spec.pageSize = 16;
        chunk.spec.splits = 5;
        Case window = edge("onewg_paged_window_d96_" + t, Mode::kPaged, 96, {40, 3}, {1500, 600}, 16, 16);
        window.spec.pageSize = 64;
        window.spec.window = 300;
        window.spec.splits = 1;
        Case rows = edge("onewg_paged_rows_" + t, Mode::kPaged, 128, {150, 70}, {400, 700}, 4, 2);
        rows.spec.pageSize = 16;
        Case ragged = edge("onewg_ragged_d80_" + t, Mode::kPagedRagged, 80, {1, 8, 0, 3}, {300, 700, 50, 1200}, 16, 4);
        add({&decode, &chunk, &window, &rows, &ragged}, dt, TileShape::kOneWarpGroup, 64, 64);
    }
    Case llm8 = edge("llm_fp8_noncausal", Mode::kLlm, 64, {200, 77}, {2500, 900}, 8, 2);
    llm8.spec.causal = false;
    Case causal8 = edge("llm_fp8_causal", Mode::kLlm, 64, {300}, {1000}, 4, 4);
    Case vit8 = edge("vit_fp8", Mode::kVit, 64, {1, 300, 0, 2100}, {1, 300, 0, 2100}, 4, 4);
    Case paged8 = edge("paged_fp8_window", Mode::kPaged, 64, {100, 3}, {1500, 600}, 8, 2);
    paged8.spec.window = 400;
    paged8.spec.pageSize = 16;
    Case ragged8 = edge("ragged_fp8", Mode::kPagedRagged, 64, {1, 40, 0, 90}, {300, 700, 50, 1200}, 8, 4);
    add({&llm8, &causal8, &vit8, &paged8, &ragged8}, DataType::kFP8, TileShape::kWideKeys, 128, 256);
    for (DataType dt : {DataType::kHALF, DataType::kBF16}) {
        std::string const t = dt == DataType::kBF16 ? "bf16" : "fp16";
        // 16-bit D=256 with 80-key tiles (contiguous KV): lengths on and off the 80-key and
        // 16-key steps, the causal diagonal across tiles with pack GQA (8/2), a window, ViT.
        Case causal = edge("widekeys_d256_causal_" + t, Mode::kLlm, 256, {300, 81, 1}, {700, 160, 900}, 8, 2);
        Case window = edge("widekeys_d256_window_" + t, Mode::kLlm, 256, {250}, {1000}, 4, 4);
        window.spec.window = 170;
        Case vit = edge("widekeys_d256_vit_" + t, Mode::kVit, 256, {1, 79, 80, 0, 417}, {1, 79, 80, 0, 417}, 4, 4);
        add({&causal, &window, &vit}, dt, TileShape::kWideKeys, 128, 80);
    }
    for (DataType dt : {DataType::kHALF, DataType::kBF16, DataType::kFP8}) {
        std::string const t = dt == DataType::kBF16 ? "bf16" : dt == DataType::kFP8 ? "fp8" : "fp16";
        // 8 sequences x 16 heads x up to 5 row tiles: CTAs walk several, many of them past a short sequence.
        Case vit = edge("persistent_vit_" + t, Mode::kVit, 64, {1, 65, 200, 0, 513, 129, 300, 64},
                        {1, 65, 200, 0, 513, 129, 300, 64}, 16, 16);
        // Pack GQA (8/2), causal over longer caches, a sequence without queries.
        Case causal = edge("persistent_causal_" + t, Mode::kLlm, 128, {300, 300, 300, 300}, {700, 333, 300, 40}, 8, 2);
        Case window = edge("persistent_window_" + t, Mode::kLlm, 128, {500, 500}, {900, 500}, 16, 8);
        window.spec.window = 200;
        Case noncausal = edge("persistent_noncausal_" + t, Mode::kLlm, 64, {200, 200, 200}, {2500, 900, 5}, 32, 8);
        noncausal.spec.causal = false;
        Case vit80 = edge("persistent_vit_d80_" + t, Mode::kVit, 80, {600, 400, 3}, {600, 400, 3}, 16, 16);
        // Paged KV (pages of 16 and 64; the ragged mode's packed queries), unsplit.
        Case paged = edge("persistent_paged_" + t, Mode::kPaged, 128, {300, 300, 300}, {700, 333, 2000}, 8, 2);
        paged.spec.pageSize = 16;
        Case paged96 = edge("persistent_paged_d96_" + t, Mode::kPaged, 96, {500, 500}, {900, 500}, 16, 16);
        paged96.spec.pageSize = 64;
        Case ragged =
            edge("persistent_ragged_" + t, Mode::kPagedRagged, 64, {1, 300, 0, 129}, {300, 700, 50, 1200}, 16, 4);
        // D=72 (FP8: 72-byte rows, the producer's 8-byte cp.async pieces), contiguous and paged.
        Case causal72 = edge("persistent_causal_d72_" + t, Mode::kLlm, 72, {300, 300, 300}, {700, 333, 40}, 8, 2);
        Case paged72 = edge("persistent_paged_d72_" + t, Mode::kPaged, 72, {200, 3, 300}, {900, 1500, 300}, 8, 2);
        paged72.spec.pageSize = 16;
        for (Case* c : {&paged, &paged96, &ragged, &paged72}) c->spec.splits = 1;
        Case split = paged;  // forced into 4 split-KV parts: the default tiles run
        split.name = "persistent_split_" + t;
        split.spec.splits = 4;
        for (Case* c : {&vit, &causal, &window, &noncausal, &vit80, &paged, &paged96, &ragged, &split, &causal72,
                        &paged72}) {
            c->spec.dtype = dt;
            cases.push_back({*c, TileShape::kPersistent, 128, 128, c != &split});
        }
    }
    for (ShapeCase const& sc : cases) {
        SCOPED_TRACE(sc.c.name);
        ScopedTileShape const shape(static_cast<int>(sc.shape));
        harness::GpuResult const gpu = checkAgainstReference(sc.c.spec);  // (fresh inputs: it mixes in the run's seed)
        bool const capped = cappedSmem();
        if (gpu.family == "sm90" && !capped) {
            EXPECT_EQ(gpu.blockM, sc.blockM);
            EXPECT_EQ(gpu.blockN, sc.blockN);
            EXPECT_EQ(gpu.persistent, sc.persistent);
        }
    }
}

// CTA pairs of the Hopper family's 16-bit D=65-128 tiles (two query heads of a KV head sharing
// each K/V tile's TMA loads, each multicasting one column block to both), in the default tiles
// and the persistent kernel (whose pairs walk the same items, each CTA its head; skip-softmax
// and split-KV parts leave it for the default tiles): groups of 2 and 4 query heads (paired),
// lengths on and off the 128-key tiles (a pair's ragged last tile gathered by each CTA alone),
// causal, a window, non-causal D=96, a sequence without queries, skip-softmax, paged KV over
// pages of 16 and 128 with forced split parts, the ragged mode; a group of 3 and ViT without GQA
// (unpaired) beside them. Each against the reference, and bit-identical to the same problem with
// pairs turned off (the same products in the same order); the launch record shows which ran
// paired and persistent. Pack GQA (a KV head's query heads in one tile's rows, which leaves no
// pair to share) is off here.
TEST(KvPairs, SharedLoadsMatchReferenceAndUnpaired) {
    FMHA_REQUIRE_GPU();
    ScopedPackGqa const unpacked(0);
    for (TileShape const tileShape : {TileShape::kDefault, TileShape::kPersistent}) {
        for (DataType dt : {DataType::kHALF, DataType::kBF16}) {
            ScopedTileShape const shape(static_cast<int>(tileShape));
            bool const persistent = tileShape == TileShape::kPersistent;
            std::string const t = dt == DataType::kBF16 ? "bf16" : "fp16";
            Case causal =
                edge("pairs_causal_" + t, Mode::kLlm, 128, {300, 513, 1, 128, 0}, {700, 1000, 900, 128, 40}, 8, 2);
            Case window = edge("pairs_window_" + t, Mode::kLlm, 128, {500, 260}, {900, 1300}, 4, 2);
            window.spec.window = 200;
            Case noncausal = edge("pairs_noncausal_d96_" + t, Mode::kLlm, 96, {200, 77}, {2500, 900}, 6, 3);
            noncausal.spec.causal = false;
            Case skip;  // skip-softmax on a problem built to skip (within its documented bound)
            skip.name = "pairs_skip_" + t;
            skip.spec = skipSpec(Mode::kLlm, dt, 0.05F);
            Case vit = edge("pairs_vit_" + t, Mode::kVit, 128, {1, 300, 0, 1100}, {1, 300, 0, 1100}, 4, 4);
            Case odd = edge("pairs_group3_" + t, Mode::kLlm, 128, {300, 129}, {700, 1000}, 12, 4);
            // Paged KV: pages of 16 (eight boxes a tile) and 128, split-KV parts, the ragged mode.
            Case paged16 = edge("pairs_paged16_" + t, Mode::kPaged, 128, {300, 40}, {1500, 2000}, 4, 2);
            paged16.spec.pageSize = 16;
            paged16.spec.splits = 1;
            Case pagedSplit = edge("pairs_paged_split_d96_" + t, Mode::kPaged, 96, {70, 5}, {3000, 900}, 6, 3);
            pagedSplit.spec.pageSize = 128;
            pagedSplit.spec.splits = 3;
            Case ragged =
                edge("pairs_ragged_" + t, Mode::kPagedRagged, 128, {1, 300, 0, 129}, {300, 700, 50, 1200}, 8, 4);
            for (Case* c : {&causal, &window, &noncausal, &skip, &vit, &odd, &paged16, &pagedSplit, &ragged}) {
                SCOPED_TRACE(c->name + (persistent ? " persistent" : ""));
                c->spec.dtype = dt;
                double const bound = c == &skip ? 2.0 * c->spec.skip * c->spec.valueRange : 0.0;
                harness::GpuResult const paired = checkAgainstReference(c->spec, bound);
                if (paired.family != "sm90") continue;
                EXPECT_EQ(paired.packedHeads, 1);
                EXPECT_EQ(paired.pairedKv, c != &vit && c != &odd);
                EXPECT_EQ(paired.persistent, persistent && c != &skip && c != &pagedSplit);
                ScopedKvPairs const off(0);
                harness::GpuResult const unpaired = checkAgainstReference(c->spec, bound);
                EXPECT_FALSE(unpaired.pairedKv);
                EXPECT_TRUE(paired.o == unpaired.o) << "paired and unpaired outputs differ";
                EXPECT_TRUE(paired.lse == unpaired.lse);
            }
        }
    }
}

// FP8 at D=72: the Hopper family reads a token's KV heads through one TMA row view whose boxes
// cover the next head's first columns. NaN in KV head 1's first 8 columns (every token, K and
// V) must leave KV head 0's query heads bit-identical to a clean run (and make head 1's NaN),
// in both families, in the ViT and paged modes (row views) and with 3 KV heads (gathers).
TEST(HeadIsolation, Fp8D72NeighbourNaN) {
    FMHA_REQUIRE_GPU();
    struct IsoCase {
        Mode mode;
        int hq, hkv;
    };
    for (IsoCase const ic : {IsoCase{Mode::kVit, 4, 4}, IsoCase{Mode::kPaged, 4, 2}, IsoCase{Mode::kPaged, 6, 3},
                             IsoCase{Mode::kPagedRagged, 4, 2}})
        for (bool portable : {false, true}) {
            ScopedFamily const family(portable);
            bool const vit = ic.mode == Mode::kVit;
            Case c = edge(std::string("iso_") + modeName(ic.mode), ic.mode, 72, {300, 130}, {vit ? 300 : 700, vit ? 130 : 400},
                          ic.hq, ic.hkv);
            c.spec.dtype = DataType::kFP8;
            c.spec.splits = 1;
            c.spec.seed ^= runSeed();
            SCOPED_TRACE(c.name + (portable ? " portable" : " default"));
            harness::HostProblem const clean = harness::makeProblem(c.spec);
            harness::HostProblem poisoned = clean;
            int const D = 72, rowHeads = vit ? ic.hq : ic.hkv;  // the K/V rows' heads
            for (std::vector<uint8_t>* kv : {&poisoned.k, &poisoned.v})
                for (size_t row = 0; row < kv->size() / (static_cast<size_t>(rowHeads) * D); ++row)
                    for (int d = 0; d < 8; ++d) (*kv)[(row * rowHeads + 1) * D + d] = 0x7F;  // E4M3 NaN
            harness::GpuResult a, b;
            std::string err;
            ASSERT_TRUE(harness::runGpu(clean, &a, &err)) << err;
            ASSERT_TRUE(harness::runGpu(poisoned, &b, &err)) << err;
            ASSERT_EQ(a.o.size(), b.o.size());
            int const group = ic.hq / ic.hkv;
            size_t sameHead0 = 0, nanHead1 = 0, head0 = 0;
            for (size_t i = 0; i < a.o.size(); ++i) {
                int const kvHead = static_cast<int>(i / D % static_cast<size_t>(ic.hq)) / group;
                if (kvHead == 0) {
                    ++head0;
                    sameHead0 += a.o[i] == b.o[i];
                } else if (kvHead == 1) {
                    nanHead1 += std::isnan(num::halfToFloat(b.o[i]));
                }
            }
            EXPECT_EQ(sameHead0, head0) << "KV head 0's outputs changed [" << b.family << "]";
            EXPECT_GT(nanHead1, 0U) << "the poison did not reach KV head 1 [" << b.family << "]";
            if (!portable && !cappedSmem()) {
                detail::DeviceInfo dev;
                if (detail::currentDevice(&dev) && dev.smVersion == 90) EXPECT_EQ(b.family, "sm90");
            }
        }
}

// Random lengths, including zero-length sequences, many times over.
TEST(Randomised, RaggedAndVitShapes) {
    FMHA_REQUIRE_GPU();
    std::mt19937_64 rng(runSeed());
    for (int iter = 0; iter < 12; ++iter) {
        harness::ProblemSpec s;
        s.mode = iter % 2 ? Mode::kPagedRagged : Mode::kVit;
        s.dtype = iter % 3 == 0 ? DataType::kBF16 : (iter % 3 == 1 ? DataType::kHALF : DataType::kFP8);
        int const dims[] = {64, 72, 80, 96, 128};
        s.headDim = dims[rng() % 5];
        s.numKVHeads = 1 + static_cast<int>(rng() % 3);
        s.numQHeads = s.mode == Mode::kVit ? s.numKVHeads : s.numKVHeads * (1 + static_cast<int>(rng() % 5));
        int const b = 1 + static_cast<int>(rng() % 6);
        for (int i = 0; i < b; ++i) {
            bool const empty = i > 0 && rng() % 4 == 0;  // sequence 0 keeps the total positive
            int const q = empty ? 0 : 1 + static_cast<int>(rng() % 400);
            s.lq.push_back(q);
            s.lk.push_back(s.mode == Mode::kVit ? q : q + static_cast<int>(rng() % 500));
        }
        if (s.mode == Mode::kPagedRagged) {
            s.pageSize = 16 << (rng() % 5);
            if (rng() % 2) s.window = static_cast<int>(rng() % 300);
        }
        s.seed = rng();
        checkAgainstReference(s);
    }
}

// Element offsets past 2^31: sequence 1 of a 2-sequence, 8-head, 2^20-token, D=128 cache
// starts at element 2^31 (its V at 2^31 + 2^30), in bytes too for FP8. FP16 runs through
// both families. The unused slots (most of the 8 GiB) hold NaN, as everywhere.
TEST(Large, CacheOffsetsPastInt32) {
    FMHA_REQUIRE_GPU();
    size_t freeBytes = 0, totalBytes = 0;
    if (cudaMemGetInfo(&freeBytes, &totalBytes) != cudaSuccess || freeBytes < (size_t{12} << 30))
        GTEST_SKIP() << "needs 12 GiB of free device memory";
    ScopedFamily const family(/*portable=*/false);
    for (DataType t : {DataType::kHALF, DataType::kFP8}) {
        Case c = edge("large", Mode::kLlm, 128, {96, 96}, {130, 257}, 8, 8);
        c.spec.dtype = t;
        c.spec.capacity = 1 << 20;
        c.spec.seed ^= runSeed();
        harness::HostProblem const p = harness::makeProblem(c.spec);
        ASSERT_GE(int64_t{2} * 8 * p.shape.kvCacheCapacity * 128, int64_t{1} << 31);
        std::string err;
        for (bool portable : {false, true}) {
            family.set(portable);
            harness::GpuResult gpu;
            ASSERT_TRUE(harness::runGpu(p, &gpu, &err)) << err;
            ref::Result exact, lowp;
            ASSERT_TRUE(references(p, gpu.family, &exact, &lowp, &err)) << err;
            harness::Verdict const v = harness::compare(p, gpu, exact, lowp);
            EXPECT_TRUE(v.pass) << p.describe() << " [" << gpu.family << "]: " << v.detail;
        }
    }
}

// run* is capturable into a CUDA graph; preflight refuses during capture.
TEST(Capture, RunIsCapturablePreflightIsNot) {
    FMHA_REQUIRE_GPU();
    Case c = edge("capture", Mode::kLlm, 128, {64}, {128});
    harness::HostProblem const p = harness::makeProblem(c.spec);
    FmhaRunner runner(4, 4, 128, 1, 64, p.shape.kvCacheCapacity);
    DeviceMemory q(p.q.size()), kv(p.k.size()), o(p.oElems * 2), cuMem(p.cuKV.size() * 4);
    ASSERT_TRUE(q.get() && kv.get() && o.get() && cuMem.get());
    int32_t* cu = cuMem.as<int32_t>();
    cudaMemcpy(q.get(), p.q.data(), p.q.size(), cudaMemcpyHostToDevice);
    cudaMemcpy(kv.get(), p.k.data(), p.k.size(), cudaMemcpyHostToDevice);
    cudaMemcpy(cu, p.cuKV.data(), p.cuKV.size() * 4, cudaMemcpyHostToDevice);
    cudaStream_t stream;
    ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
    ASSERT_TRUE(runner.preflightLlm(stream)) << lastError();
    cudaGraph_t graph = nullptr;
    ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), cudaSuccess);
    EXPECT_FALSE(runner.preflightLlm(stream));
    EXPECT_NE(std::string(lastError()).find("captured"), std::string::npos) << lastError();
    EXPECT_TRUE(runner.run(q.get(), kv.get(), o.get(), cu, stream, 0.125F)) << lastError();
    ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
    cudaGraphExec_t exec = nullptr;
    ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
    cudaMemset(o.get(), 0xFF, p.oElems * 2);
    ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    std::vector<uint16_t> out(static_cast<size_t>(p.oElems));
    cudaMemcpy(out.data(), o.get(), out.size() * 2, cudaMemcpyDeviceToHost);
    for (uint16_t bits : out) ASSERT_NE(bits & 0x7C00, 0x7C00) << "graph replay left a non-finite output";
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    cudaStreamDestroy(stream);
}

// The Hopper family's kernels are launched as programmatic dependents of the kernel before them
// on the stream (detail::dependentLaunch): their blocks may be resident before it ends, and
// wait for it before touching memory. Here a run's Q is the output of the run before it: the
// first is long (one sequence of 16k causal queries on one head, 128 CTAs on the SMs at once;
// its last 64 rows, the second run's Q, come from the CTA with the most keys) and its output
// starts as NaN, so a second run that read its Q before the first had finished, or wrote
// before it, would not match the reference of the first run's final output.
TEST(Launch, RunWaitsForTheKernelBeforeIt) {
    FMHA_REQUIRE_GPU();
    constexpr int kLongQ = 16384, kD = 128, kRowsB = 64;
    harness::ProblemSpec sa;
    sa.mode = Mode::kLlm;
    sa.numQHeads = sa.numKVHeads = 1;
    sa.headDim = kD;
    sa.lq = {kLongQ};
    sa.lk = {kLongQ};
    sa.seed = runSeed() ^ 0x51;
    harness::ProblemSpec sb = sa;
    sb.lq = {kRowsB};
    sb.lk = {700};
    sb.withLse = false;
    sb.seed = runSeed() ^ 0x52;
    harness::HostProblem const pa = harness::makeProblem(sa);
    harness::HostProblem pb = harness::makeProblem(sb);
    size_t const rowBytes = static_cast<size_t>(kD) * 2;
    ASSERT_EQ(pb.q.size(), kRowsB * rowBytes);
    DeviceMemory qa(pa.q.size()), kva(pa.k.size()), oa(pa.oElems * 2), cua(pa.cuKV.size() * 4);
    DeviceMemory kvb(pb.k.size()), ob(pb.oElems * 2), cub(pb.cuKV.size() * 4);
    ASSERT_TRUE(qa.get() && kva.get() && oa.get() && cua.get() && kvb.get() && ob.get() && cub.get());
    cudaMemcpy(qa.get(), pa.q.data(), pa.q.size(), cudaMemcpyHostToDevice);
    cudaMemcpy(kva.get(), pa.k.data(), pa.k.size(), cudaMemcpyHostToDevice);
    cudaMemcpy(cua.get(), pa.cuKV.data(), pa.cuKV.size() * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(kvb.get(), pb.k.data(), pb.k.size(), cudaMemcpyHostToDevice);
    cudaMemcpy(cub.get(), pb.cuKV.data(), pb.cuKV.size() * 4, cudaMemcpyHostToDevice);
    cudaMemset(oa.get(), 0xFF, pa.oElems * 2);  // NaN
    cudaMemset(ob.get(), 0xFF, pb.oElems * 2);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    FmhaRunner ra(1, 1, kD, 1, kLongQ, pa.shape.kvCacheCapacity), rb(1, 1, kD, 1, kRowsB, pb.shape.kvCacheCapacity);
    cudaStream_t stream;
    ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
    ASSERT_TRUE(ra.preflightLlm(stream) && rb.preflightLlm(stream)) << lastError();
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    LlmArgs a;
    a.q = qa.get();
    a.kv = kva.get();
    a.o = oa.get();
    a.cuKVSeqLens = cua.as<int32_t>();
    a.stream = stream;
    a.attentionScale = 1.0F / std::sqrt(static_cast<float>(kD));
    LlmArgs b = a;
    b.q = oa.as<unsigned char>() + (kLongQ - kRowsB) * rowBytes;  // the first run's last rows
    b.kv = kvb.get();
    b.o = ob.get();
    b.cuKVSeqLens = cub.as<int32_t>();
    LaunchRecord recA, recB;
    ASSERT_TRUE(ra.run(a, &recA)) << lastError();
    ASSERT_TRUE(rb.run(b, &recB)) << lastError();
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    cudaMemcpy(pb.q.data(), b.q, pb.q.size(), cudaMemcpyDeviceToHost);
    harness::GpuResult gpu;
    gpu.o.resize(static_cast<size_t>(pb.oElems));
    cudaMemcpy(gpu.o.data(), ob.get(), gpu.o.size() * 2, cudaMemcpyDeviceToHost);
    gpu.family = recB.family;
    cudaStreamDestroy(stream);
    for (size_t i = 0; i < pb.q.size(); i += 2)
        ASSERT_NE(pb.q[i + 1] & 0x7C, 0x7C) << "the first run left row " << kLongQ - kRowsB + i / rowBytes << " unwritten";
    std::string err;
    ref::Result exact, lowp;
    ASSERT_TRUE(references(pb, gpu.family, &exact, &lowp, &err)) << err;
    harness::Verdict const v = harness::compare(pb, gpu, exact, lowp);
    EXPECT_TRUE(v.pass) << "[" << recA.family << " then " << recB.family << "]: " << v.detail;
}

class SplitKv : public ::testing::TestWithParam<Case> {};

// Forced part counts, in each family: the reference's answer, from as many parts as asked.
TEST_P(SplitKv, MatchesReferenceInEachFamily) {
    FMHA_REQUIRE_GPU();
    for (bool portable : {false, true}) {
        ScopedFamily const family(portable);
        harness::GpuResult const gpu = checkAgainstReference(GetParam().spec);
        EXPECT_EQ(gpu.splits, GetParam().spec.splits) << "family " << gpu.family;
    }
}
INSTANTIATE_TEST_SUITE_P(Forced, SplitKv, ::testing::ValuesIn(splitKvCases()), caseName);

// Forced part counts 1..64 over random lengths (sequences shorter than one part, or empty,
// included), paged and ragged, every dtype, both families.
TEST(SplitKvRandom, PartsAndLengths) {
    FMHA_REQUIRE_GPU();
    std::mt19937_64 rng(runSeed() ^ 0x5B11ULL);
    for (int iter = 0; iter < 16; ++iter) {
        harness::ProblemSpec s;
        s.mode = iter % 2 ? Mode::kPagedRagged : Mode::kPaged;
        s.dtype = std::vector<DataType>{DataType::kHALF, DataType::kBF16, DataType::kFP8}[iter % 3];
        s.headDim = std::vector<int>{64, 80, 128, 256}[rng() % 4];
        s.numKVHeads = 1 + static_cast<int>(rng() % 2);
        s.numQHeads = s.numKVHeads * std::vector<int>{1, 2, 4, 8}[rng() % 4];
        int const batch = 1 + static_cast<int>(rng() % 4), shared = 1 + static_cast<int>(rng() % 8);
        for (int b = 0; b < batch; ++b) {
            int const q = s.mode == Mode::kPaged ? shared : (b == 0 ? 1 : 0) + static_cast<int>(rng() % 9);
            s.lq.push_back(q);
            s.lk.push_back(q + static_cast<int>(rng() % 3 == 0 ? rng() % 50 : rng() % 3000));
        }
        s.pageSize = 16 << (rng() % 5);
        if (rng() % 3 == 0) s.window = static_cast<int>(rng() % 500);
        s.splits = 1 + static_cast<int>(rng() % FmhaRunner::kMaxSplits);
        s.seed = rng();
        ScopedFamily const family(/*portable=*/iter % 4 >= 2);
        harness::GpuResult const gpu = checkAgainstReference(s);
        EXPECT_EQ(gpu.splits, s.splits) << "family " << gpu.family;
    }
}

// The automatic choice splits a decode step over a long history (a few row tiles on a GPU of
// many SMs) in each family, and matches the reference.
TEST(SplitKvAuto, DecodeOverLongHistorySplits) {
    FMHA_REQUIRE_GPU();
    for (bool portable : {false, true}) {
        ScopedFamily const family(portable);
        Case d = edge("auto_decode", Mode::kPaged, 128, {1}, {16000}, 32, 8);
        harness::GpuResult const gpu = checkAgainstReference(d.spec);
        EXPECT_GT(gpu.splits, 1) << "family " << gpu.family;
    }
}

// A split run captured into a CUDA graph replays correctly after preflight (which sizes the
// workspace; the captured run allocates nothing). Without preflight, the automatic choice runs
// with the parts the (empty) workspace holds, unsplit, and a forced count fails inside
// capture, naming the sizes.
TEST(Capture, SplitRunReplays) {
    FMHA_REQUIRE_GPU();
    for (int splits : {0, 8}) {
        Case c = edge("capture_split", Mode::kPaged, 128, {1}, {6000, 700}, 8, 2);
        c.spec.pageSize = 16;
        c.spec.splits = splits;
        c.spec.graph = 1;
        harness::GpuResult const gpu = checkAgainstReference(c.spec);
        if (splits > 0)
            EXPECT_EQ(gpu.splits, splits);
        else
            EXPECT_GT(gpu.splits, 1);
    }
    Case r = edge("capture_ragged_split", Mode::kPagedRagged, 64, {1, 4}, {5000, 3000}, 4, 1);
    r.spec.splits = 16;
    r.spec.graph = 1;
    EXPECT_EQ(checkAgainstReference(r.spec).splits, 16);

    Case n = edge("capture_no_preflight", Mode::kPaged, 128, {1}, {6000, 700}, 8, 2);
    checkAgainstReference(n.spec);  // loads the kernels (process-wide) outside capture; its runner is gone
    n.spec.graph = 2;
    EXPECT_EQ(checkAgainstReference(n.spec).splits, 1);
    n.spec.splits = 8;
    harness::HostProblem const p = harness::makeProblem(n.spec);
    harness::GpuResult gpu;
    std::string err;
    EXPECT_FALSE(harness::runGpu(p, &gpu, &err));
    EXPECT_NE(err.find("workspace"), std::string::npos) << err;
}

// Split runs repeated on one runner, and a split graph replayed, with the outputs poisoned
// before each: every run merges its parts. In the Hopper family the last part of each row
// tile merges them where a tile holds few rows (one query of 4 packed heads; it sets the
// tile's counter back to zero for the next run), the combine kernel where it holds more (4
// queries: 16 rows, four a warp). Parts of unequal lengths, a sequence shorter than a part,
// pack-GQA groups.
TEST(SplitKv, RepeatedRunsMergeEveryTime) {
    FMHA_REQUIRE_GPU();
    // Where the parts merge: the rule's choice, or the one FMHA_SPLIT_MERGE forces.
    char const* forced = std::getenv("FMHA_SPLIT_MERGE");
    auto inKernel = [&](bool byRule) {
        if (forced != nullptr && std::strcmp(forced, "kernel") == 0) return true;
        if (forced != nullptr && std::strcmp(forced, "combine") == 0) return false;
        return byRule;
    };
    for (int graph : {0, 1}) {
        for (int queries : {1, 4}) {
            for (int splits : {3, 8, 0}) {
                Case c = edge("repeat_split", Mode::kPaged, 128, {queries, queries}, {9000, 100}, 16, 4);
                c.spec.pageSize = 64;
                c.spec.splits = splits;
                c.spec.graph = graph;
                c.spec.runs = 3;
                harness::GpuResult const gpu = checkAgainstReference(c.spec);
                if (splits > 0) EXPECT_EQ(gpu.splits, splits);
                EXPECT_GT(gpu.splits, 1);
                if (gpu.family == "sm90") EXPECT_EQ(gpu.mergedInKernel, inKernel(queries == 1)) << "splits " << splits;
            }
        }
        Case r = edge("repeat_ragged_split", Mode::kPagedRagged, 64, {1, 1}, {4000, 2500}, 4, 1);
        r.spec.splits = 5;
        r.spec.graph = graph;
        r.spec.runs = 3;
        harness::GpuResult const gpu = checkAgainstReference(r.spec);
        EXPECT_EQ(gpu.splits, 5);
        if (gpu.family == "sm90") EXPECT_EQ(gpu.mergedInKernel, inKernel(true));
    }
}

// Malformed device-side data (lengths past the capacity, page ids outside the pool) never
// leads outside the buffers; compute-sanitizer checks that claim on this test.
TEST(Robustness, MalformedDeviceDataStaysInBounds) {
    FMHA_REQUIRE_GPU();
    harness::GpuResult gpu;
    std::string err;
    // Each page-read path of the portable kernels: pages smaller than the tile at D=64
    // (128-key tiles: one read a row) and at D=128 (64-key tiles: one read a 16-row run),
    // and pages larger than the tile (one read a tile).
    for (auto [d, page] : {std::pair{64, 32}, std::pair{128, 16}, std::pair{128, 128}}) {
        Case c = edge("bad", Mode::kPaged, d, {40}, {300}, 2, 2);
        c.spec.pageSize = page;
        harness::HostProblem p = harness::makeProblem(c.spec);
        p.cuKV = {5, 1 << 30};  // Lk far beyond the capacity
        for (size_t i = 0; i < p.pageTable.size(); ++i)
            p.pageTable[i] = (i % 3 == 0) ? -7 : (i % 3 == 1 ? p.numPages + 100 : p.pageTable[i]);
        EXPECT_TRUE(harness::runGpu(p, &gpu, &err)) << "D=" << d << " page " << page << ": " << err;
    }
    harness::HostProblem r = harness::makeProblem(edge("badr", Mode::kPagedRagged, 64, {40, 20}, {300, 40}, 2, 2).spec);
    r.cuQ = {0, 1 << 29, -5};  // starts and ends outside the packed buffer
    EXPECT_TRUE(harness::runGpu(r, &gpu, &err)) << err;
}

// An unrelated error already pending on the thread (a failed allocation of the caller's) is
// neither taken by the run nor reported as its failure: the run succeeds, computes the right
// result, and the caller still finds its own error afterwards.
TEST(ErrorPaths, PendingErrorIsNeitherConsumedNorBlamed) {
    FMHA_REQUIRE_GPU();
    for (bool portable : {false, true}) {
        ScopedFamily const family(portable);
        Case c = edge("pending", Mode::kPagedRagged, 128, {70, 33}, {300, 40}, 8, 2);
        c.spec.seed ^= runSeed();
        harness::HostProblem const p = harness::makeProblem(c.spec);
        harness::GpuResult warm;
        std::string warmErr;
        // The first call for a kernel loads it (what preflight* does ahead of time); the CUDA
        // runtime may clear a pending error while it loads a module.
        ASSERT_TRUE(harness::runGpu(p, &warm, &warmErr)) << warmErr;
        void* huge = nullptr;
        ASSERT_EQ(cudaMalloc(&huge, size_t{1} << 62), cudaErrorMemoryAllocation);  // now pending
        harness::GpuResult gpu;
        std::string err;
        EXPECT_TRUE(harness::runGpu(p, &gpu, &err)) << err;
        EXPECT_EQ(cudaGetLastError(), cudaErrorMemoryAllocation) << "the caller's pending error was consumed";
        EXPECT_EQ(cudaGetLastError(), cudaSuccess);
        ref::Result exact, lowp;
        ASSERT_TRUE(references(p, gpu.family, &exact, &lowp, &err)) << err;
        harness::Verdict const v = harness::compare(p, gpu, exact, lowp);
        EXPECT_TRUE(v.pass) << v.detail;
    }
}

// After a kernel fault (the Q pointer is not device memory), the context's sticky error is
// reported as such by the next call, not as a missing kernel or a failed launch of ours. It
// runs in a child process (the fault ends the context); compute-sanitizer runs exclude it.
TEST(ErrorPathsDeathTest, StickyContextErrorIsNamed) {
    FMHA_REQUIRE_GPU();
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    auto child = [] {
        Case c = edge("sticky", Mode::kLlm, 128, {64}, {128}, 4, 4);
        harness::HostProblem const p = harness::makeProblem(c.spec);
        FmhaRunner runner(4, 4, 128, 1, 64, p.shape.kvCacheCapacity);
        void *kv = nullptr, *o = nullptr;
        int32_t* cu = nullptr;
        cudaMalloc(&kv, p.k.size());
        cudaMalloc(&o, p.oElems * 2);
        cudaMalloc(reinterpret_cast<void**>(&cu), p.cuKV.size() * 4);
        cudaMemcpy(cu, p.cuKV.data(), p.cuKV.size() * 4, cudaMemcpyHostToDevice);
        void const* bogusQ = reinterpret_cast<void const*>(uintptr_t{0x7f0000000000});
        if (!runner.run(bogusQ, kv, o, cu, nullptr, 0.125F)) std::_Exit(3);
        cudaError_t const fault = cudaDeviceSynchronize();
        if (fault == cudaSuccess) std::_Exit(4);
        bool const refused = !runner.run(kv, kv, o, cu, nullptr, 0.125F);
        std::string const msg = lastError();
        std::fprintf(stderr, "%s\n", msg.c_str());
        bool const named = msg.find("sticky error") != std::string::npos &&
                           msg.find(cudaGetErrorName(fault)) != std::string::npos;
        std::_Exit(refused && named ? 0 : 5);
    };
    EXPECT_EXIT(child(), ::testing::ExitedWithCode(0), "sticky error");
}

// Cases 0..count-1 of a fuzz run of small problems (the suite also runs under
// compute-sanitizer); stops after 5 failures, each printed with the command that re-runs it.
void fuzzBatch(uint64_t seed, uint64_t count, harness::FuzzFilter filter) {
    filter.maxWork = 3e6;
    int failures = 0;
    for (uint64_t i = 0; i < count && failures < 5; ++i) {
        harness::FuzzVerdict const v = harness::runFuzzCase(harness::makeFuzzCase(seed, i, filter));
        if (!v.pass) ++failures;
        EXPECT_TRUE(v.pass) << v.detail << "\n  reproduce: " << harness::fuzzRepro(seed, i, filter);
    }
}

// A fixed-seed batch of the randomized differential fuzzer (`fmha fuzz` runs the same
// generator at any size): every mode, mask, dtype, head dim, page size and GQA ratio on
// random lengths, through every kernel family the GPU has.
TEST(Fuzz, FixedSeedBatch) {
    FMHA_REQUIRE_GPU();
    fuzzBatch(20261201, 300, {});
}

// Corrupted device metadata (prefix sums that decrease, are negative or pass the capacity,
// maxQSeqLen below the longest sequence, page ids outside the pool, bidirectional bounds out
// of range): the call succeeds, rows no sequence computes are zeros and the others follow
// the documented clamps. compute-sanitizer checks that nothing leaves the buffers.
TEST(Fuzz, MalformedMetadataIsClamped) {
    FMHA_REQUIRE_GPU();
    harness::FuzzFilter filter;
    filter.malformed = true;
    fuzzBatch(20261202, 100, filter);
}

}  // namespace
}  // namespace fmha::testing

namespace fmha::testing {
namespace {

class Families : public ::testing::TestWithParam<Case> {};

// On a GPU where the Hopper family runs, every shape it covers is also run through the
// portable family: the two must agree within the sum of their error budgets.
TEST_P(Families, HopperMatchesPortable) {
    FMHA_REQUIRE_GPU();
    harness::ProblemSpec spec = GetParam().spec;
    spec.seed ^= runSeed();
    harness::HostProblem const p = harness::makeProblem(spec);
    harness::GpuResult fast, portable;
    std::string err;
    {
        ScopedFamily const family(/*portable=*/false);
        ASSERT_TRUE(harness::runGpu(p, &fast, &err)) << err;
    }
    {
        ScopedFamily const family(/*portable=*/true);
        ASSERT_TRUE(harness::runGpu(p, &portable, &err)) << err;
    }
    EXPECT_EQ(portable.family, "sm80");
    if (fast.family != "sm90") GTEST_SKIP() << "the Hopper family does not run here (" << fast.family << ")";
    ref::Result exact, lowpFast, lowpPortable;
    ASSERT_TRUE(references(p, fast.family, &exact, &lowpFast, &err)) << err;
    ASSERT_TRUE(references(p, portable.family, &exact, &lowpPortable, &err)) << err;
    harness::Verdict const vf = harness::compare(p, fast, exact, lowpFast);
    harness::Verdict const vp = harness::compare(p, portable, exact, lowpPortable);
    EXPECT_TRUE(vf.pass) << p.describe() << ": " << vf.detail;
    EXPECT_TRUE(vp.pass) << p.describe() << ": " << vp.detail;
    bool const bf16 = p.spec.dtype == DataType::kBF16;
    double maxDiff = 0;
    for (size_t i = 0; i < fast.o.size(); ++i) {
        double const a = bf16 ? num::bf16ToFloat(fast.o[i]) : num::halfToFloat(fast.o[i]);
        double const b = bf16 ? num::bf16ToFloat(portable.o[i]) : num::halfToFloat(portable.o[i]);
        maxDiff = std::max(maxDiff, std::fabs(a - b));
    }
    EXPECT_LE(maxDiff, vf.bound + vp.bound) << p.describe();
}
INSTANTIATE_TEST_SUITE_P(Shapes, Families, ::testing::ValuesIn(familyCases()), caseName);

}  // namespace
}  // namespace fmha::testing
