// CPU tests of the reference: the number formats, and the reference against the naive
// dense formula on the whole test matrix and every edge case; skip-softmax semantics.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdlib>
#include <fstream>
#include <string>
#include <random>

#include "cases.h"
#include "internals.h"
#include "problems.h"

namespace fmha::testing {
namespace {

uint64_t runSeed() {
    static uint64_t const seed = [] {
        char const* env = std::getenv("FMHA_TEST_SEED");
        return env ? std::strtoull(env, nullptr, 10) : std::random_device{}();
    }();
    return seed;
}

// The README's support table lists, per mode, the head dims of the one support table.
TEST(SupportTable, ReadmeListsItsHeadDims) {
    std::ifstream readme(FMHA_SOURCE_DIR "/README.md");
    ASSERT_TRUE(readme) << "README.md not found";
    auto expected = [](bool paged) {
        std::string list;
        for (int d : harness::headDims(paged)) list += (list.empty() ? "" : " ") + std::to_string(d);
        return list;
    };
    int rows = 0;
    for (std::string line; std::getline(readme, line);) {
        bool const paged = line.rfind("| paged KV", 0) == 0;
        if (!paged && line.rfind("| LLM, contiguous", 0) != 0 && line.rfind("| ViT packed", 0) != 0) continue;
        ++rows;
        EXPECT_NE(line.find("| " + expected(paged) + " |"), std::string::npos) << line;
    }
    EXPECT_EQ(rows, 4) << "the README's support table has a row per mode";
}

TEST(Numeric, E4m3DecodesTheFormat) {
    EXPECT_EQ(num::e4m3ToFloat(0x00), 0.0F);
    EXPECT_EQ(num::e4m3ToFloat(0x01), std::ldexp(1.0F, -9));   // smallest subnormal
    EXPECT_EQ(num::e4m3ToFloat(0x07), 7 * std::ldexp(1.0F, -9));
    EXPECT_EQ(num::e4m3ToFloat(0x08), std::ldexp(1.0F, -6));   // smallest normal
    EXPECT_EQ(num::e4m3ToFloat(0x38), 1.0F);
    EXPECT_EQ(num::e4m3ToFloat(0x7E), 448.0F);                 // largest finite
    EXPECT_EQ(num::e4m3ToFloat(0xFE), -448.0F);
    EXPECT_TRUE(std::isnan(num::e4m3ToFloat(0x7F)));
    EXPECT_TRUE(std::isnan(num::e4m3ToFloat(0xFF)));
    for (int c = 0; c < 256; ++c) {
        float const f = num::e4m3ToFloat(static_cast<uint8_t>(c));
        if (std::isnan(f)) continue;
        if (c == 0x80) continue;  // -0 encodes back to -0 (0x80), compared as bits below
        EXPECT_EQ(num::floatToE4m3(f), c) << "code " << c;
        EXPECT_EQ(num::roundToHalf(f), f) << "every E4M3 value is an FP16 value";
    }
    EXPECT_EQ(num::floatToE4m3(-0.0F), 0x80);
    EXPECT_EQ(num::floatToE4m3(1000.0F), 0x7E);  // saturates
    EXPECT_EQ(num::floatToE4m3(1.0625F), 0x38);  // ties to even (1.0625 between 1 and 1.125)
}

TEST(Numeric, HalfAndBf16RoundToNearestEven) {
    EXPECT_EQ(num::floatToHalf(1.0F), 0x3C00);
    EXPECT_EQ(num::floatToHalf(65504.0F), 0x7BFF);
    EXPECT_EQ(num::floatToHalf(70000.0F), 0x7C00);
    EXPECT_EQ(num::floatToHalf(std::ldexp(1.0F, -24)), 0x0001);
    EXPECT_EQ(num::floatToHalf(1.0F + std::ldexp(1.0F, -11)), 0x3C00);  // tie -> even
    EXPECT_EQ(num::floatToHalf(1.0F + 3 * std::ldexp(1.0F, -11)), 0x3C02);
    EXPECT_EQ(num::halfToFloat(0xC000), -2.0F);
    EXPECT_EQ(num::floatToBf16(1.0F), 0x3F80);
    EXPECT_EQ(num::bf16ToFloat(0x3F81), 1.0F + std::ldexp(1.0F, -7));
    std::mt19937 rng(runSeed());
    std::uniform_real_distribution<float> u(-100, 100);
    for (int i = 0; i < 10000; ++i) {
        float const x = u(rng);
        EXPECT_LE(std::fabs(num::roundToHalf(x) - x), std::fabs(x) * std::ldexp(1.0F, -11) + 1e-7F);
        EXPECT_LE(std::fabs(num::roundToBf16(x) - x), std::fabs(x) * std::ldexp(1.0F, -8));
    }
}

class ReferenceVsNaive : public ::testing::TestWithParam<Case> {};

TEST_P(ReferenceVsNaive, Agrees) {
    harness::ProblemSpec spec = GetParam().spec;
    spec.seed ^= runSeed();
    harness::HostProblem const p = harness::makeProblem(spec);
    ref::Result got, naive;
    std::string err;
    ref::Options opt;
    ASSERT_TRUE(harness::runReference(p, opt, &got, &err)) << err;
    harness::naiveAttention(p, &naive);
    ASSERT_EQ(got.o.size(), naive.o.size());
    double maxErr = 0;
    for (size_t i = 0; i < got.o.size(); ++i) {
        ASSERT_TRUE(std::isfinite(got.o[i])) << "element " << i;
        maxErr = std::max(maxErr, std::fabs(got.o[i] - naive.o[i]));
    }
    EXPECT_LE(maxErr, 1e-10) << p.describe() << " seed " << spec.seed;
    ASSERT_EQ(got.lse.size(), naive.lse.size());
    for (size_t i = 0; i < got.lse.size(); ++i) {
        if (std::isinf(naive.lse[i])) {
            EXPECT_EQ(got.lse[i], naive.lse[i]) << "row " << i;
        } else {
            EXPECT_NEAR(got.lse[i], naive.lse[i], 1e-10) << "row " << i;
        }
    }
    // The same-precision variant moves the result by a rounding-sized amount only.
    ref::Result lowp;
    opt.roundP = true;
    ASSERT_TRUE(harness::runReference(p, opt, &lowp, &err)) << err;
    double lowpErr = 0;
    for (size_t i = 0; i < got.o.size(); ++i) lowpErr = std::max(lowpErr, std::fabs(lowp.o[i] - got.o[i]));
    EXPECT_LE(lowpErr, spec.dtype == DataType::kBF16 ? 2e-2 : 3e-3);
}

std::string caseName(::testing::TestParamInfo<Case> const& info) { return info.param.name; }

INSTANTIATE_TEST_SUITE_P(Matrix, ReferenceVsNaive, ::testing::ValuesIn(matrixCases(0.5)), caseName);
INSTANTIATE_TEST_SUITE_P(Edge, ReferenceVsNaive, ::testing::ValuesIn(edgeCases(0.5)), caseName);

// The GPU skip-softmax tests' problem (test_gpu.cpp: skipSpec) skips tiles at S = 0.05 even at
// the granularity of the Hopper family's skipped P.V products (a warpgroup's 64 rows, 128-key
// tiles; its warps drop tiles for 16 rows), and none at S = 1e-30.
TEST(ReferenceSkipSoftmax, StructuredProblemSkipsAtHopperGranularity) {
    for (Mode mode : {Mode::kLlm, Mode::kPaged}) {
        Case c = edge("skip", mode, 128, {700, 700}, {3100, 2600}, 4, 2);
        c.spec.structured = true;
        c.spec.seed = 11 ^ runSeed();
        ref::Options opt;
        opt.skipTileN = 128;
        opt.skipGroupRows = 64;
        for (float S : {1e-30F, 0.05F}) {
            c.spec.skip = S;
            harness::HostProblem const p = harness::makeProblem(c.spec);
            ref::Result r;
            std::string err;
            ASSERT_TRUE(harness::runReference(p, opt, &r, &err)) << err;
            if (S < 0.01F)
                EXPECT_EQ(r.skippedTiles, 0);
            else
                EXPECT_GT(r.skippedTiles, 0);
        }
    }
}

// The lowp reference of the Hopper family's FP8 (P * 256 rounded to E4M3): chosen for that
// family and dtype only, it moves the result more than FP16 rounding of P does, but within a
// few percent of the values' range.
TEST(Reference, HopperFp8LowpRoundsPToE4m3) {
    Case c = edge("fp8lowp", Mode::kLlm, 128, {64}, {500}, 4, 2);
    c.spec.dtype = DataType::kFP8;
    c.spec.seed ^= runSeed();
    harness::HostProblem const p = harness::makeProblem(c.spec);
    EXPECT_GT(harness::lowpOptions(p, "sm90").pE4m3Scale, 0.0F);
    EXPECT_EQ(harness::lowpOptions(p, "sm80").pE4m3Scale, 0.0F);
    harness::HostProblem q = p;
    q.spec.dtype = DataType::kHALF;
    EXPECT_EQ(harness::lowpOptions(q, "sm90").pE4m3Scale, 0.0F);
    ref::Result exact, half, e4m3;
    std::string err;
    ASSERT_TRUE(harness::runReference(p, {}, &exact, &err)) << err;
    ASSERT_TRUE(harness::runReference(p, harness::lowpOptions(p, "sm80"), &half, &err)) << err;
    ASSERT_TRUE(harness::runReference(p, harness::lowpOptions(p, "sm90"), &e4m3, &err)) << err;
    double errHalf = 0, errE4m3 = 0;
    for (size_t i = 0; i < exact.o.size(); ++i) {
        errHalf = std::max(errHalf, std::fabs(half.o[i] - exact.o[i]));
        errE4m3 = std::max(errE4m3, std::fabs(e4m3.o[i] - exact.o[i]));
    }
    EXPECT_GT(errE4m3, 2.0 * errHalf);
    EXPECT_LT(errE4m3, 0.05 * c.spec.valueRange);
}

// valueOffset shifts V alone (FP8: a V scale that keeps the shifted values in E4M3's range),
// and with O about 1 the comparison fails an output 1% low, which V of mean 0 would let pass:
// the LongContext GPU cases can fail on a bias that grows with the key count.
TEST(Problems, ValueOffsetShiftsVAndExposesABias) {
    for (DataType t : {DataType::kHALF, DataType::kFP8}) {
        Case c = edge("offset_" + dtypeTag(t), Mode::kLlm, 64, {16}, {3000}, 2, 1);
        c.spec.dtype = t;
        c.spec.valueRange = 0.5F;
        c.spec.valueOffset = 1.0F;
        c.spec.seed ^= runSeed();
        harness::HostProblem const p = harness::makeProblem(c.spec);
        int32_t const cap = p.shape.kvCacheCapacity, D = 64;
        double vMin = 1e9, vMax = -1e9, kMin = 1e9, kMax = -1e9, vSum = 0;
        int64_t vCount = 0;
        for (int32_t w = 0; w < 2; ++w)
            for (int32_t j = 0; j < 3000; ++j)
                for (int32_t d = 0; d < D; ++d) {
                    double const x = ref::loadElement(p.k.data(), (int64_t{w} * cap + j) * D + d, t) *
                                     (t == DataType::kFP8 ? (w ? p.vScale : p.kScale) : 1.0);
                    ASSERT_TRUE(std::isfinite(x));
                    (w ? vMin : kMin) = std::min(w ? vMin : kMin, x);
                    (w ? vMax : kMax) = std::max(w ? vMax : kMax, x);
                    if (w) {
                        vSum += x;
                        ++vCount;
                    }
                }
        double const q = t == DataType::kFP8 ? 0x1p-4 : 0x1p-11;  // the element type's relative rounding
        EXPECT_GE(vMin, 0.5 * (1 - q)) << dtypeTag(t);
        EXPECT_LE(vMax, 1.5 * (1 + q)) << dtypeTag(t);
        EXPECT_NEAR(vSum / vCount, 1.0, 0.01) << dtypeTag(t);
        EXPECT_GE(kMin, -0.5 * (1 + q)) << dtypeTag(t);
        EXPECT_LE(kMax, 0.5 * (1 + q)) << dtypeTag(t);
        ref::Result exact, lowp;
        std::string err;
        std::string const family = "sm90";
        ASSERT_TRUE(harness::runReference(p, {}, &exact, &err)) << err;
        ASSERT_TRUE(harness::runReference(p, harness::lowpOptions(p, family), &lowp, &err)) << err;
        auto asGpu = [&](double factor) {
            harness::GpuResult g;
            g.family = family;
            for (double x : lowp.o) g.o.push_back(num::floatToHalf(static_cast<float>(x * factor)));
            for (double x : lowp.lse) g.lse.push_back(static_cast<float>(x));
            return g;
        };
        harness::Verdict const same = harness::compare(p, asGpu(1.0), exact, lowp);
        EXPECT_TRUE(same.pass) << dtypeTag(t) << ": " << same.detail;
        harness::Verdict const low = harness::compare(p, asGpu(0.99), exact, lowp);
        EXPECT_FALSE(low.pass) << dtypeTag(t) << ": " << low.detail;
    }
}

// A row that sees no key writes zeros and LSE -inf (causal with Lk < Lq).
TEST(Reference, EmptyRowsAreZeroWithMinusInfLse) {
    Case c = edge("empty", Mode::kLlm, 64, {50}, {10});
    harness::HostProblem const p = harness::makeProblem(c.spec);
    ref::Result r;
    std::string err;
    ASSERT_TRUE(harness::runReference(p, {}, &r, &err)) << err;
    int const Hq = c.spec.numQHeads, D = c.spec.headDim;
    for (int i = 0; i < 50; ++i) {  // off = -40: rows 0..39 have no key
        bool const empty = i < 40;
        for (int h = 0; h < Hq; ++h) {
            double const lse = r.lse[static_cast<size_t>(h * 50 + i)];
            EXPECT_EQ(std::isinf(lse) && lse < 0, empty) << "row " << i;
            double sumAbs = 0;
            for (int d = 0; d < D; ++d) sumAbs += std::fabs(r.o[static_cast<size_t>((i * Hq + h) * D + d)]);
            if (empty) EXPECT_EQ(sumAbs, 0.0);
            else EXPECT_GT(sumAbs, 0.0);
        }
    }
}

harness::ProblemSpec skipSpec(float skip) {
    Case c = edge("skip", Mode::kLlm, 128, {300}, {1200}, 4, 2);
    c.spec.attentionScale = 12.0F;  // peaked scores (std ~45), so that whole tiles fall below lambda
    c.spec.skip = skip;
    c.spec.seed = 7 ^ runSeed();
    return c.spec;
}

TEST(ReferenceSkipSoftmax, ZeroIsExactlyDense) {
    harness::HostProblem const dense = harness::makeProblem(skipSpec(0.0F));
    ref::Result a, b;
    std::string err;
    ASSERT_TRUE(harness::runReference(dense, {}, &a, &err));
    harness::naiveAttention(dense, &b);
    for (size_t i = 0; i < a.o.size(); ++i) ASSERT_NEAR(a.o[i], b.o[i], 1e-10);
    EXPECT_EQ(a.skippedTiles, 0);
}

TEST(ReferenceSkipSoftmax, SmallFactorStaysWithinTheBound) {
    float const S = 0.05F;
    harness::HostProblem const p = harness::makeProblem(skipSpec(S));
    ref::Result skipped, dense;
    std::string err;
    ASSERT_TRUE(harness::runReference(p, {}, &skipped, &err));
    harness::naiveAttention(p, &dense);
    EXPECT_GT(skipped.skippedTiles, 0) << "the problem is meant to skip some tiles";
    double maxErr = 0;
    for (size_t i = 0; i < dense.o.size(); ++i) maxErr = std::max(maxErr, std::fabs(skipped.o[i] - dense.o[i]));
    // Dropped probability mass per row is at most Lk * lambda = S of the kept mass.
    EXPECT_LE(maxErr, 2.0 * S * p.spec.valueRange);
    EXPECT_GT(maxErr, 0.0);
}

// The skip-softmax benchmark's structured inputs: a query's largest score lies in its own
// segment of 1024 positions, whose mean score is well above the previous segment's; the
// heavy-hitter keys (the first 64, in the previous segment here) score well above the rest of
// that segment; the reference skips some tiles at a moderate factor, none at a negligible one.
TEST(StructuredScores, SegmentsAndHeavyHitters) {
    harness::ProblemSpec s;
    s.mode = Mode::kLlm;
    s.numQHeads = 2;
    s.numKVHeads = 1;
    s.headDim = 128;
    s.lq = {512};
    s.lk = {2048};
    s.structured = true;
    s.seed = 3 ^ runSeed();
    harness::HostProblem const p = harness::makeProblem(s);
    int32_t const D = s.headDim, lq = s.lq[0], lk = s.lk[0];
    auto elem = [](std::vector<uint8_t> const& buf, int64_t i) {
        uint16_t h;
        std::memcpy(&h, buf.data() + 2 * i, 2);
        return num::halfToFloat(h);
    };
    auto score = [&](int32_t i, int32_t h, int32_t j) {  // K of KV head 0
        double dot = 0;
        for (int32_t d = 0; d < D; ++d)
            dot += static_cast<double>(elem(p.q, (int64_t{i} * s.numQHeads + h) * D + d)) * elem(p.k, int64_t{j} * D + d);
        return dot;
    };
    for (int32_t i : {0, lq / 2, lq - 1})
        for (int32_t h = 0; h < s.numQHeads; ++h) {
            int32_t const diag = i + lk - lq;  // the query's own key (bottom-right causal): segment 1
            double best = -1e30, own = 0, prev = 0, heavy = 0;
            int32_t bestKey = -1;
            for (int32_t j = 0; j <= diag; ++j) {
                double const x = score(i, h, j);
                if (x > best) best = x, bestKey = j;
                if (j >= 1024) own += x / (diag - 1023);
                else if (j >= 64) prev += x / 960;
                else heavy += x / 64;
            }
            EXPECT_GE(bestKey, 1024) << "row " << i << ": the largest score is at key " << bestKey;
            EXPECT_GT(own, prev + 100.0) << "row " << i;    // about 189 against 66
            EXPECT_GT(heavy, prev + 60.0) << "row " << i;   // about 166 against 66
            EXPECT_GT(own, heavy) << "row " << i;
        }
    s.mode = Mode::kPaged;  // the same structure over a paged pool
    harness::HostProblem const paged = harness::makeProblem(s);
    for (harness::HostProblem const* problem : {&p, &paged})
        for (float S : {1e-30F, 64.0F}) {
            harness::HostProblem q = *problem;
            q.spec.skip = S;
            ref::Result r;
            std::string err;
            ASSERT_TRUE(harness::runReference(q, {}, &r, &err)) << err;
            if (S < 1.0F)
                EXPECT_EQ(r.skippedTiles, 0);
            else
                EXPECT_GT(r.skippedTiles, 0) << (problem == &paged ? "paged" : "llm");
        }
}

}  // namespace
}  // namespace fmha::testing
