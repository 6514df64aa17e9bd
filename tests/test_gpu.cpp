// GPU tests: every kernel variant against the CPU reference on the shared test matrix and
// edge cases (poisoned outputs, NaN in unused cache slots and pages), plus skip-softmax,
// ragged holes and capture. They skip with a message where there is no GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <utility>

#include <cuda_runtime_api.h>

#include "cases.h"
#include "dispatch.h"
#include "fuzz.h"
#include "problems.h"
#include "reference/numeric.h"

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

// The two references a GPU result is judged against: exact, and with P rounded to the input
// type (the same-precision error the budget scales).
bool references(harness::HostProblem const& p, ref::Result* exact, ref::Result* lowp, std::string* err) {
    ref::Options lowpOpt;
    lowpOpt.roundP = true;
    return harness::runReference(p, {}, exact, err) && harness::runReference(p, lowpOpt, lowp, err);
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
    EXPECT_TRUE(references(p, &exact, &lowp, &err)) << err;
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

// Longer sequences for the multi-tile paths of the two tile configurations.
std::vector<Case> longCases() {
    std::vector<Case> v;
    for (DataType t : {DataType::kHALF, DataType::kBF16, DataType::kFP8})
        for (int d : {64, 128, 256}) {
            Case c = edge("llm_long_" + dtypeTag(t) + "_d" + std::to_string(d), Mode::kLlm, d, {1100}, {2300}, 4, 1);
            c.spec.dtype = t;
            v.push_back(c);
        }
    Case w = edge("paged_long_window", Mode::kPaged, 128, {900}, {2000}, 8, 2);
    w.spec.window = 500;
    v.push_back(w);
    return v;
}
INSTANTIATE_TEST_SUITE_P(Long, KernelVsReference, ::testing::ValuesIn(longCases()), caseName);

// Scores spread wide (inputs in [-3, 3] and [-8, 8]): a row's max keeps rising over the key
// sweep, by less than 2^8 between chunks (the portable kernel's softmax reference then lags
// it, probabilities above 1) and by more (the reference moves mid-sequence).
std::vector<Case> wideScoreCases() {
    auto wide = [](std::string name, Mode m, int d, float range, DataType t) {
        Case c = edge("wide_" + name + "_" + dtypeTag(t) + "_d" + std::to_string(d) + "_r" +
                          std::to_string(static_cast<int>(range)),
                      m, d, {300}, {2300}, 4, 2);
        c.spec.dtype = t;
        c.spec.valueRange = range;
        return c;
    };
    std::vector<Case> v;
    for (int d : {64, 80, 128, 256})
        for (float range : {3.0F, 8.0F}) v.push_back(wide("llm", Mode::kLlm, d, range, DataType::kHALF));
    v.push_back(wide("llm", Mode::kLlm, 128, 8.0F, DataType::kBF16));
    v.push_back(wide("llm", Mode::kLlm, 128, 8.0F, DataType::kFP8));
    Case p = wide("paged_noncausal_p16", Mode::kPaged, 128, 8.0F, DataType::kHALF);
    p.spec.pageSize = 16;
    p.spec.causal = false;
    v.push_back(p);
    Case w = wide("vit", Mode::kVit, 96, 8.0F, DataType::kHALF);
    w.spec.lq = {700, 1500};
    w.spec.lk = w.spec.lq;
    w.spec.numKVHeads = 4;
    v.push_back(w);
    return v;
}
INSTANTIATE_TEST_SUITE_P(WideScores, KernelVsReference, ::testing::ValuesIn(wideScoreCases()), caseName);

// More work tiles (query tile x head x sequence) than the GPU has SMs, with ragged, short
// and empty sequences among them: several waves of CTAs, many pipelines ending early.
std::vector<Case> manyTileCases() {
    std::vector<Case> v;
    auto lengths = [](int n, int lo, int hi, uint32_t seed) {
        std::vector<int> out;
        for (int i = 0; i < n; ++i) {
            seed = seed * 1664525u + 1013904223u;
            out.push_back(lo + static_cast<int>((seed >> 8) % static_cast<uint32_t>(hi - lo + 1)));
        }
        return out;
    };
    Case a = edge("many_llm_causal_d128", Mode::kLlm, 128, std::vector<int>(40, 200), lengths(40, 200, 420, 1), 4, 2);
    v.push_back(a);
    Case b = edge("many_paged_window_d64_p16", Mode::kPaged, 64, std::vector<int>(40, 190), lengths(40, 190, 600, 2),
                  4, 1);
    b.spec.pageSize = 16;
    b.spec.window = 150;
    v.push_back(b);
    Case c = edge("many_paged_bidir_d128_p256", Mode::kPaged, 128, std::vector<int>(24, 260), lengths(24, 260, 700, 3),
                  4, 4);
    c.spec.pageSize = 256;
    c.spec.bidirectional = true;
    v.push_back(c);
    Case d = edge("many_ragged_gqa7_d64", Mode::kPagedRagged, 64, lengths(48, 0, 200, 4), lengths(48, 200, 500, 5), 7, 1);
    d.spec.pageSize = 64;
    v.push_back(d);
    Case e = edge("many_vit_d128", Mode::kVit, 128, {}, {}, 4, 4);
    e.spec.lq = lengths(60, 0, 300, 6);
    e.spec.lk = e.spec.lq;
    v.push_back(e);
    Case f = edge("many_paged_noncausal_bf16_d256", Mode::kPaged, 256, std::vector<int>(40, 140), lengths(40, 1, 300, 7),
                  4, 4);
    f.spec.dtype = DataType::kBF16;
    f.spec.causal = false;
    f.spec.pageSize = 128;
    v.push_back(f);
    // The portable D=128 kernel over contiguous KV walks short causal launches in sections of
    // (head, sequence) units, about 16 MiB of K/V each: here about 65 units of 144 (in the
    // first case about 77 of 160), so the walk crosses sections and ends in a partial one.
    // FP8 runs it under either dispatch, the first case only with FMHA_KERNEL_FAMILY=portable.
    Case g = edge("many_llm_causal_fp8_d128", Mode::kLlm, 128, std::vector<int>(36, 300), lengths(36, 300, 1000, 8), 4,
                  2);
    g.spec.dtype = DataType::kFP8;
    v.push_back(g);
    return v;
}
INSTANTIATE_TEST_SUITE_P(ManyTiles, KernelVsReference, ::testing::ValuesIn(manyTileCases()), caseName);

// Pack GQA: the Hopper family puts the query heads of one KV head into one tile of rows.
// Short chunks pack by default; forcing it covers long, multi-tile sequences (causal
// diagonals and window edges inside packed tiles) too. Each case says how many heads must
// have been packed where the Hopper family ran (1 elsewhere).
TEST(PackGqa, MatchesReferenceAndPacks) {
    FMHA_REQUIRE_GPU();
    struct PackCase {
        Case c;
        int setting;  // setPackGqa: -1 default, 1 always, 0 never
        int packed;   // heads packed on the Hopper family
    };
    std::vector<PackCase> cases;
    auto add = [&](Case c, int setting, int packed) { cases.push_back({std::move(c), setting, packed}); };
    add(edge("llm_hg4", Mode::kLlm, 128, {40}, {300}, 8, 2), -1, 4);
    add(edge("llm_hg8_one_row", Mode::kLlm, 64, {1, 1}, {129, 64}, 16, 2), -1, 8);
    Case w = edge("llm_hg2_window_d256", Mode::kLlm, 256, {33}, {500}, 4, 2);
    w.spec.window = 100;
    add(w, -1, 2);
    Case p16 = edge("paged_hg4_p16", Mode::kPaged, 128, {50, 50}, {600, 300}, 8, 2);
    p16.spec.pageSize = 16;
    p16.spec.dtype = DataType::kBF16;
    add(p16, -1, 4);
    Case nc = edge("paged_hg16_noncausal", Mode::kPaged, 128, {8}, {1000}, 16, 1);
    nc.spec.causal = false;
    add(nc, -1, 16);
    Case bd = edge("paged_hg4_bidir", Mode::kPaged, 64, {60, 60}, {400, 250}, 4, 1);
    bd.spec.bidirectional = true;
    add(bd, -1, 4);
    add(edge("ragged_hg8", Mode::kPagedRagged, 128, {1, 17, 0, 90}, {300, 200, 50, 700}, 16, 2), -1, 8);
    add(edge("ragged_hg4_d80", Mode::kPagedRagged, 80, {30, 5}, {200, 90}, 4, 1), -1, 4);
    add(edge("llm_hg4_forced_long", Mode::kLlm, 128, {300, 300}, {700, 333}, 8, 2), 1, 4);
    Case fw = edge("paged_hg8_forced_window", Mode::kPaged, 64, {200}, {900}, 8, 1);
    fw.spec.window = 300;
    add(fw, 1, 8);
    add(edge("llm_hg4_off", Mode::kLlm, 128, {40}, {300}, 8, 2), 0, 1);
    add(edge("llm_hg6_not_pow2", Mode::kLlm, 128, {20}, {300}, 12, 2), -1, 1);
    Case f8 = edge("llm_hg4_fp8", Mode::kLlm, 128, {40}, {300}, 8, 2);
    f8.spec.dtype = DataType::kFP8;
    add(f8, -1, 1);  // FP8 runs in the portable family, which never packs
    int hopperRuns = 0;
    for (PackCase const& pc : cases) {
        SCOPED_TRACE(pc.c.name);
        int const previous = detail::setPackGqa(pc.setting);
        harness::GpuResult const gpu = checkAgainstReference(pc.c.spec);
        detail::setPackGqa(previous);
        if (gpu.family == "sm90") {
            ++hopperRuns;
            EXPECT_EQ(gpu.packedHeads, pc.packed);
        } else {
            EXPECT_EQ(gpu.packedHeads, 1);
        }
    }
    std::printf("[fmha] %d pack-GQA cases ran on the Hopper family\n", hopperRuns);
}

harness::ProblemSpec skipSpec(Mode mode, float skip) {
    Case c = edge("skip", mode, 128, {700, 700}, {2100, 1500}, 4, 2);
    c.spec.attentionScale = 12.0F;  // peaked scores (std ~45), so that whole tiles fall below lambda
    c.spec.skip = skip;
    c.spec.seed = 11;
    return c.spec;
}

// Skip-softmax runs in the portable family, so the dense run it must match is forced there too.
TEST(SkipSoftmax, ZeroFactorIsBitIdenticalToDense) {
    FMHA_REQUIRE_GPU();
    bool const previous = detail::setForcePortable(true);
    for (Mode mode : {Mode::kLlm, Mode::kPaged}) {
        harness::ProblemSpec dense = skipSpec(mode, 0.0F);
        dense.seed ^= runSeed();
        harness::HostProblem const p = harness::makeProblem(dense);
        harness::GpuResult a, b;
        std::string err;
        ASSERT_TRUE(harness::runGpu(p, &a, &err)) << err;
        // A factor so small that no tile can qualify runs the skip path but must not move a bit.
        harness::HostProblem q = p;
        q.spec.skip = 1e-30F;
        ASSERT_TRUE(harness::runGpu(q, &b, &err)) << err;
        ASSERT_EQ(a.o.size(), b.o.size());
        EXPECT_EQ(std::memcmp(a.o.data(), b.o.data(), a.o.size() * 2), 0);
        EXPECT_EQ(std::memcmp(a.lse.data(), b.lse.data(), a.lse.size() * 4), 0);
        EXPECT_EQ(a.family, "sm80");
        EXPECT_EQ(b.family, "sm80");
    }
    detail::setForcePortable(previous);
}

TEST(SkipSoftmax, SmallFactorWithinDocumentedBound) {
    FMHA_REQUIRE_GPU();
    for (Mode mode : {Mode::kLlm, Mode::kPaged}) {
        float const S = 0.05F;
        harness::ProblemSpec spec = skipSpec(mode, S);
        // Documented bound: |O_skip - O_dense| <= 2 * S * max|V| on top of the dense budget.
        harness::GpuResult const skipped = checkAgainstReference(spec, 2.0 * S * spec.valueRange);
        harness::ProblemSpec dense = spec;
        dense.skip = 0.0F;
        harness::GpuResult const full = checkAgainstReference(dense);
        EXPECT_NE(std::memcmp(skipped.o.data(), full.o.data(), full.o.size() * 2), 0)
            << "skip-softmax skipped nothing on a problem built to skip";
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
    bool const previous = detail::setForcePortable(false);
    for (DataType t : {DataType::kHALF, DataType::kFP8}) {
        Case c = edge("large", Mode::kLlm, 128, {96, 96}, {130, 257}, 8, 8);
        c.spec.dtype = t;
        c.spec.capacity = 1 << 20;
        c.spec.seed ^= runSeed();
        harness::HostProblem const p = harness::makeProblem(c.spec);
        ASSERT_GE(int64_t{2} * 8 * p.shape.kvCacheCapacity * 128, int64_t{1} << 31);
        ref::Result exact, lowp;
        std::string err;
        ASSERT_TRUE(references(p, &exact, &lowp, &err)) << err;
        for (bool portable : {false, true}) {
            if (portable && t == DataType::kFP8) continue;  // FP8 runs portable either way
            detail::setForcePortable(portable);
            harness::GpuResult gpu;
            ASSERT_TRUE(harness::runGpu(p, &gpu, &err)) << err;
            harness::Verdict const v = harness::compare(p, gpu, exact, lowp);
            EXPECT_TRUE(v.pass) << p.describe() << " [" << gpu.family << "]: " << v.detail;
        }
    }
    detail::setForcePortable(previous);
}

// run* is capturable into a CUDA graph; preflight refuses during capture.
TEST(Capture, RunIsCapturablePreflightIsNot) {
    FMHA_REQUIRE_GPU();
    Case c = edge("capture", Mode::kLlm, 128, {64}, {128});
    harness::HostProblem const p = harness::makeProblem(c.spec);
    FmhaRunner runner(4, 4, 128, 1, 64, p.shape.kvCacheCapacity);
    void *q = nullptr, *kv = nullptr, *o = nullptr;
    int32_t* cu = nullptr;
    ASSERT_EQ(cudaMalloc(&q, p.q.size()), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&kv, p.k.size()), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&o, p.oElems * 2), cudaSuccess);
    ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&cu), p.cuKV.size() * 4), cudaSuccess);
    cudaMemcpy(q, p.q.data(), p.q.size(), cudaMemcpyHostToDevice);
    cudaMemcpy(kv, p.k.data(), p.k.size(), cudaMemcpyHostToDevice);
    cudaMemcpy(cu, p.cuKV.data(), p.cuKV.size() * 4, cudaMemcpyHostToDevice);
    cudaStream_t stream;
    ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
    ASSERT_TRUE(runner.preflightLlm(stream)) << lastError();
    cudaGraph_t graph = nullptr;
    ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), cudaSuccess);
    EXPECT_FALSE(runner.preflightLlm(stream));
    EXPECT_NE(std::string(lastError()).find("captured"), std::string::npos) << lastError();
    EXPECT_TRUE(runner.run(q, kv, o, cu, stream, 0.125F)) << lastError();
    ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
    cudaGraphExec_t exec = nullptr;
    ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
    cudaMemset(o, 0xFF, p.oElems * 2);
    ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    std::vector<uint16_t> out(static_cast<size_t>(p.oElems));
    cudaMemcpy(out.data(), o, out.size() * 2, cudaMemcpyDeviceToHost);
    for (uint16_t bits : out) ASSERT_NE(bits & 0x7C00, 0x7C00) << "graph replay left a non-finite output";
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    cudaStreamDestroy(stream);
    cudaFree(q);
    cudaFree(kv);
    cudaFree(o);
    cudaFree(cu);
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
        bool const previous = detail::setForcePortable(portable);
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
        ASSERT_TRUE(references(p, &exact, &lowp, &err)) << err;
        harness::Verdict const v = harness::compare(p, gpu, exact, lowp);
        EXPECT_TRUE(v.pass) << v.detail;
        detail::setForcePortable(previous);
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

// A fixed-seed batch of the randomized differential fuzzer (`fmha fuzz` runs the same
// generator at any size): every mode, mask, dtype, head dim, page size and GQA ratio on
// random lengths, through every kernel family the GPU has. A failure prints the problem
// and the command that re-runs it alone.
TEST(Fuzz, FixedSeedBatch) {
    FMHA_REQUIRE_GPU();
    constexpr uint64_t kSeed = 20261201;
    harness::FuzzFilter filter;
    filter.maxWork = 3e6;  // small problems: the suite also runs under compute-sanitizer
    int failures = 0;
    for (uint64_t i = 0; i < 300 && failures < 5; ++i) {
        harness::FuzzVerdict const v = harness::runFuzzCase(harness::makeFuzzCase(kSeed, i, filter));
        if (!v.pass) ++failures;
        EXPECT_TRUE(v.pass) << v.detail << "\n  reproduce: " << harness::fuzzRepro(kSeed, i, filter);
    }
}

// Corrupted device metadata (prefix sums that decrease, are negative or pass the capacity,
// maxQSeqLen below the longest sequence, page ids outside the pool, bidirectional bounds out
// of range): the call succeeds, rows no sequence computes stay unwritten and the others
// follow the documented clamps. compute-sanitizer checks that nothing leaves the buffers.
TEST(Fuzz, MalformedMetadataIsClamped) {
    FMHA_REQUIRE_GPU();
    constexpr uint64_t kSeed = 20261202;
    harness::FuzzFilter filter;
    filter.malformed = true;
    filter.maxWork = 3e6;
    int failures = 0;
    for (uint64_t i = 0; i < 100 && failures < 5; ++i) {
        harness::FuzzVerdict const v = harness::runFuzzCase(harness::makeFuzzCase(kSeed, i, filter));
        if (!v.pass) ++failures;
        EXPECT_TRUE(v.pass) << v.detail << "\n  reproduce: " << harness::fuzzRepro(kSeed, i, filter);
    }
}

}  // namespace
}  // namespace fmha::testing

namespace fmha::testing {
namespace {

// On a GPU where the Hopper family runs, every shape it covers is also run through the
// portable family: the two must agree within the sum of their error budgets.
TEST(Families, HopperMatchesPortable) {
    FMHA_REQUIRE_GPU();
    std::vector<Case> cases;
    for (Mode m : {Mode::kLlm, Mode::kPaged, Mode::kPagedRagged, Mode::kVit})
        for (int d : {64, 80, 128, 256})
            for (DataType t : {DataType::kHALF, DataType::kBF16}) {
                Case c = edge("fam", m, d, {300, 130}, {m == Mode::kVit ? 300 : 700, m == Mode::kVit ? 130 : 200}, 4,
                              m == Mode::kVit ? 4 : 2);
                c.spec.dtype = t;
                cases.push_back(c);
            }
    int hopperRuns = 0;
    bool const previous = detail::setForcePortable(false);
    for (Case const& c : cases) {
        harness::ProblemSpec spec = c.spec;
        spec.seed ^= runSeed();
        harness::HostProblem const p = harness::makeProblem(spec);
        harness::GpuResult fast, portable;
        std::string err;
        detail::setForcePortable(false);
        ASSERT_TRUE(harness::runGpu(p, &fast, &err)) << err;
        detail::setForcePortable(true);
        ASSERT_TRUE(harness::runGpu(p, &portable, &err)) << err;
        EXPECT_EQ(portable.family, "sm80");
        if (fast.family != "sm90") continue;
        ++hopperRuns;
        ref::Result exact, lowp;
        ASSERT_TRUE(references(p, &exact, &lowp, &err)) << err;
        harness::Verdict const vf = harness::compare(p, fast, exact, lowp);
        harness::Verdict const vp = harness::compare(p, portable, exact, lowp);
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
    detail::setForcePortable(previous);
    std::printf("[fmha] %d problems ran on the Hopper family\n", hopperRuns);
}

}  // namespace
}  // namespace fmha::testing
