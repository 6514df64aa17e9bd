// Host-side validation of the runner: every rule of every mode through the struct, seed and C APIs,
// the preflight argument checks, the error/log-callback plumbing, the canImplement* predicates
// and the Hopper family's pack-GQA choice.
#include <gtest/gtest.h>

#include <climits>
#include <cstddef>
#include <cstdlib>
#include <cmath>
#include <chrono>
#include <cstring>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include <cuda_runtime_api.h>

#include "fmha/fmha.h"
#include "fmha/fmha_c.h"
#include "internals.h"

namespace {

using fmha::DataType;
using fmha::detail::toC;
using fmha::FmhaRunner;
using fmha::MaskType;
using fmha::Mode;

constexpr float kNaN = NAN;
constexpr float kInf = INFINITY;
constexpr unsigned char kPattern = 0xA5;

// Host buffers standing in for device memory: a call that fails validation never touches them.
struct Buffers {
    alignas(16) unsigned char q[256] = {}, kv[256] = {}, k[256] = {}, v[256] = {};
    alignas(16) unsigned char o[512];
    alignas(16) int32_t cuQ[8] = {}, cuKV[8] = {}, pages[64] = {}, bidirBegin[16] = {}, bidirEnd[16] = {};
    alignas(16) float lse[64] = {};
    Buffers() { std::memset(o, kPattern, sizeof(o)); }
    bool outputUntouched() const {
        for (unsigned char b : o)
            if (b != kPattern) return false;
        return true;
    }
};

template <class P>
P* offsetBytes(P* p, int bytes) {
    using Byte = std::conditional_t<std::is_const_v<P>, char const, char>;
    return reinterpret_cast<P*>(reinterpret_cast<Byte*>(p) + bytes);
}

// Constructor arguments of the runner.
struct Shape {
    int32_t hq, hkv, d, batch, seqQ, cap;
};

FmhaRunner runnerFor(Shape const& h) { return FmhaRunner(h.hq, h.hkv, h.d, h.batch, h.seqQ, h.cap); }

using CRunner = std::unique_ptr<fmha_runner, void (*)(fmha_runner*)>;
CRunner cRunnerFor(Shape const& h) {
    return CRunner(fmha_runner_create(h.hq, h.hkv, h.d, h.batch, h.seqQ, h.cap), fmha_runner_destroy);
}

template <class Args>
struct Setup {
    Shape shape;
    Args args;
    std::optional<DataType> seedKvType;  // paged seed/C API only: a kvDataType other than the input type
    Buffers* buf;
};

enum class Verdict { kRunRule, kVariantRule, kAccept };

// kRunRule: run* rejects the case, its message holding every string of `expect`; preflight* never
//   sees that argument and must not report it.
// kVariantRule: a rule of the variant (heads, head dim, dtype, window, skip-softmax, mask): run* and
//   preflight* both reject it.
// kAccept: the mutated argument passes its rule. The case also nulls the last pointer checked, whose
//   check runs after every argument rule: run* must fail there, with no string of `expect`.
template <class Args>
struct Case {
    char const* name;
    void (*mutate)(Setup<Args>&);
    std::vector<char const*> expect;
    Verdict verdict = Verdict::kRunRule;
};

enum class Api { kStruct, kSeed, kC, kCStruct };
char const* apiName(Api api) {
    switch (api) {
    case Api::kStruct: return "struct API";
    case Api::kSeed: return "seed API";
    case Api::kC: return "C API";
    case Api::kCStruct: return "C struct API";
    }
    return "";
}
constexpr Api kApis[] = {Api::kStruct, Api::kSeed, Api::kC, Api::kCStruct};


// The seed and C signatures carry only a bool fp8Input and no LSE pointer.
template <class Args>
bool seedExpressible(Args const& a) {
    return (a.inputType == DataType::kHALF || a.inputType == DataType::kFP8) && a.lse == nullptr;
}

testing::AssertionResult contains(std::string const& msg, char const* part) {
    if (msg.find(part) != std::string::npos) return testing::AssertionSuccess();
    return testing::AssertionFailure() << "message \"" << msg << "\" lacks \"" << part << "\"";
}

template <class Args>
std::vector<Case<Args>> variantRules(std::vector<Case<Args>> cases) {
    for (auto& c : cases)
        if (c.verdict == Verdict::kRunRule) c.verdict = Verdict::kVariantRule;
    return cases;
}

template <class Args>
std::vector<Case<Args>> join(std::vector<std::vector<Case<Args>>> parts) {
    std::vector<Case<Args>> all;
    for (auto& p : parts) all.insert(all.end(), p.begin(), p.end());
    return all;
}

// ---------------------------------------------------------------- rules shared by the modes

// Heads, head dim and input type: rules of the variant in every mode.
template <class Args>
std::vector<Case<Args>> shapeCases(bool paged) {
    using S = Setup<Args>;
    constexpr auto kAccept = Verdict::kAccept;
    std::vector<Case<Args>> cases = {
        {"NumQHeadsZero", [](S& s) { s.shape.hq = 0; }, {"numQHeads (0)", "must be positive"}},
        {"NumQHeadsNegative", [](S& s) { s.shape.hq = -8; }, {"must be positive"}},
        {"NumKVHeadsZero", [](S& s) { s.shape.hkv = 0; }, {"numKVHeads (0)", "must be positive"}},
        {"HeadsNotMultiple", [](S& s) { s.shape.hkv = 3; }, {"must be a multiple of numKVHeads (3)"}},
        {"TooManyQHeads", [](S& s) { s.shape.hq = 65536, s.shape.hkv = 1; }, {"numQHeads (65536) exceeds 65535"}},
        {"HeadDim0", [](S& s) { s.shape.d = 0; }, {"head dim 0 is not supported"}},
        {"HeadDim48", [](S& s) { s.shape.d = 48; }, {"head dim 48"}},
        {"HeadDim100", [](S& s) { s.shape.d = 100; }, {"head dim 100"}},
        {"HeadDim160", [](S& s) { s.shape.d = 160; }, {"head dim 160"}},
        {"HeadDimNegative", [](S& s) { s.shape.d = -128; }, {"head dim -128"}},
        {"HeadDim72", [](S& s) { s.shape.d = 72; }, {"head dim"}, kAccept},
        {"HeadDim256", [](S& s) { s.shape.d = 256; }, {"head dim"}, kAccept},
        {"DtypeFloat", [](S& s) { s.args.inputType = DataType::kFLOAT; }, {"input data type fp32 is not supported"}},
        {"DtypeInt8", [](S& s) { s.args.inputType = DataType::kINT8; }, {"input data type int8"}},
        {"DtypeInt32", [](S& s) { s.args.inputType = DataType::kINT32; }, {"input data type int32"}},
        {"DtypeUint8", [](S& s) { s.args.inputType = DataType::kUINT8; }, {"input data type uint8"}},
        {"DtypeInt4", [](S& s) { s.args.inputType = DataType::kINT4; }, {"input data type int4"}},
        {"DtypeBf16", [](S& s) { s.args.inputType = DataType::kBF16; }, {"input data type"}, kAccept},
        {"DtypeFp8", [](S& s) { s.args.inputType = DataType::kFP8; }, {"input data type"}, kAccept},
    };
    if (paged)
        cases.push_back({"HeadDim512", [](S& s) { s.shape.d = 512; }, {"head dim"}, kAccept});
    else
        cases.push_back({"HeadDim512", [](S& s) { s.shape.d = 512; }, {"head dim 512 is not supported"}});
    return variantRules(cases);
}

// Scales and the Q/O/LSE pointers: checked by run* only, in every mode.
template <class Args>
std::vector<Case<Args>> runCases() {
    using S = Setup<Args>;
    constexpr auto kAccept = Verdict::kAccept;
    return {
        {"Baseline", [](S&) {}, {}, kAccept},
        {"ScaleZero", [](S& s) { s.args.attentionScale = 0.0F; }, {"attentionScale (0) must be finite and > 0"}},
        {"ScaleNegative", [](S& s) { s.args.attentionScale = -0.125F; }, {"attentionScale"}},
        {"ScaleNaN", [](S& s) { s.args.attentionScale = kNaN; }, {"attentionScale"}},
        {"ScaleInf", [](S& s) { s.args.attentionScale = kInf; }, {"attentionScale"}},
        {"Fp8QScaleZero", [](S& s) { s.args.inputType = DataType::kFP8, s.args.qScale = 0.0F; },
         {"FP8 scales", "must be finite and > 0"}},
        {"Fp8KScaleNegative", [](S& s) { s.args.inputType = DataType::kFP8, s.args.kScale = -1.0F; }, {"FP8 scales"}},
        {"Fp8VScaleNaN", [](S& s) { s.args.inputType = DataType::kFP8, s.args.vScale = kNaN; }, {"FP8 scales"}},
        {"Fp8QScaleInf", [](S& s) { s.args.inputType = DataType::kFP8, s.args.qScale = kInf; }, {"FP8 scales"}},
        {"Fp16IgnoresBadScales", [](S& s) { s.args.qScale = 0.0F, s.args.kScale = -1.0F, s.args.vScale = kNaN; },
         {"scales"}, kAccept},
        {"Bf16IgnoresBadScales", [](S& s) { s.args.inputType = DataType::kBF16, s.args.qScale = kInf; },
         {"scales"}, kAccept},
        {"NullQ", [](S& s) { s.args.q = nullptr; }, {"qPtr is null"}},
        {"NullO", [](S& s) { s.args.o = nullptr; }, {"oPtr is null"}},
        {"MisalignedQ", [](S& s) { s.args.q = offsetBytes(s.args.q, 2); }, {"qPtr must be 16-byte aligned"}},
        {"MisalignedO", [](S& s) { s.args.o = offsetBytes(s.args.o, 2); }, {"oPtr must be 16-byte aligned"}},
        {"MisalignedLse", [](S& s) { s.args.lse = offsetBytes(s.buf->lse, 1); }, {"lse must be 4-byte aligned"}},
    };
}

// The modes over a KV cache (LLM, paged, ragged): batch from the constructor and cuKVSeqLens.
template <class Args>
std::vector<Case<Args>> cacheCases() {
    using S = Setup<Args>;
    return {
        {"BatchZero", [](S& s) { s.shape.batch = 0; }, {"batchSize (0) must be positive"}},
        {"BatchNegative", [](S& s) { s.shape.batch = -3; }, {"batchSize (-3)"}},
        {"BatchTooLarge", [](S& s) { s.shape.batch = 65536; }, {"batchSize (65536) exceeds 65535"}},
        {"NullCuKV", [](S& s) { s.args.cuKVSeqLens = nullptr; }, {"cuKVSeqLens is null"}},
    };
}

template <class Args>
std::vector<Case<Args>> windowCases() {
    using S = Setup<Args>;
    return variantRules<Args>({
        {"WindowMinus1", [](S& s) { s.args.slidingWindowSize = -1; }, {"slidingWindowSize (-1)", "must be >= 0"}},
        {"WindowMinus5", [](S& s) { s.args.slidingWindowSize = -5; }, {"slidingWindowSize (-5)"}},
        {"Window0", [](S& s) { s.args.slidingWindowSize = 0; }, {"slidingWindowSize"}, Verdict::kAccept},
        {"Window1024", [](S& s) { s.args.slidingWindowSize = 1024; }, {"slidingWindowSize"}, Verdict::kAccept},
        {"WindowIntMax", [](S& s) { s.args.slidingWindowSize = INT_MAX; }, {"slidingWindowSize"}, Verdict::kAccept},
    });
}

// The paged modes: page geometry against kvCacheCapacity, pool and page list.
template <class Args>
std::vector<Case<Args>> pagingCases() {
    using S = Setup<Args>;
    constexpr auto kAccept = Verdict::kAccept;
    return {
        {"MaxPagesZero", [](S& s) { s.args.maxPagesPerSeq = 0; }, {"maxPagesPerSeq (0) must be positive"}},
        {"TokensPerPage0", [](S& s) { s.args.tokensPerPage = 0; }, {"tokensPerPage (0) must be a power of two"}},
        {"TokensPerPage8", [](S& s) { s.args.tokensPerPage = 8; }, {"tokensPerPage (8)", "[16, 256]"}},
        {"TokensPerPage100", [](S& s) { s.args.tokensPerPage = 100; }, {"tokensPerPage (100)"}},
        {"TokensPerPage512", [](S& s) { s.args.tokensPerPage = 512; }, {"tokensPerPage (512)"}},
        {"TokensPerPage16", [](S& s) { s.args.tokensPerPage = 16, s.args.maxPagesPerSeq = 16; }, {"tokens"}, kAccept},
        {"TokensPerPage128", [](S& s) { s.args.tokensPerPage = 128, s.args.maxPagesPerSeq = 2; }, {"tokens"}, kAccept},
        {"TokensPerPage256", [](S& s) { s.args.tokensPerPage = 256, s.args.maxPagesPerSeq = 1; }, {"tokens"}, kAccept},
        {"CapacityMismatchPages", [](S& s) { s.args.maxPagesPerSeq = 5; },
         {"kvCacheCapacity (256) must equal maxPagesPerSeq * tokensPerPage (320)"}},
        {"CapacityMismatchShape", [](S& s) { s.shape.cap = 255; }, {"kvCacheCapacity (255)"}},
        {"CapacityOverflow", [](S& s) { s.args.maxPagesPerSeq = 1 << 24, s.args.tokensPerPage = 256; },
         {"exceeds 2147482623"}},
        {"NullPool", [](S& s) { s.args.pool = nullptr; }, {"pagedKVPoolPtr is null"}},
        {"NullPageList", [](S& s) { s.args.pageList = nullptr; }, {"kvCachePageList is null"}},
        {"MisalignedPool", [](S& s) { s.args.pool = offsetBytes(s.args.pool, 2); },
         {"pagedKVPoolPtr must be 16-byte aligned"}},
    };
}

template <class Args>
std::vector<Case<Args>> skipCases() {
    using S = Setup<Args>;
    return variantRules<Args>({
        {"SkipNegative", [](S& s) { s.args.skipSoftmaxScaleFactor = -1.0F; },
         {"skipSoftmaxScaleFactor (-1) must be finite and >= 0"}},
        {"SkipNaN", [](S& s) { s.args.skipSoftmaxScaleFactor = kNaN; }, {"skipSoftmaxScaleFactor"}},
        {"SkipInf", [](S& s) { s.args.skipSoftmaxScaleFactor = kInf; }, {"skipSoftmaxScaleFactor"}},
        {"SkipWithWindow", [](S& s) { s.args.skipSoftmaxScaleFactor = 1.0F, s.args.slidingWindowSize = 128; },
         {"skip-softmax does not combine with a sliding window"}},
        {"SkipFp16Causal", [](S& s) { s.args.skipSoftmaxScaleFactor = 1.0F; }, {"skip"}, Verdict::kAccept},
        {"SkipBf16Causal", [](S& s) { s.args.skipSoftmaxScaleFactor = 1.0F, s.args.inputType = DataType::kBF16; },
         {"skip"}, Verdict::kAccept},
        {"SkipFp8Causal", [](S& s) { s.args.skipSoftmaxScaleFactor = 1.0F, s.args.inputType = DataType::kFP8; },
         {"skip"}, Verdict::kAccept},
    });
}

// ---------------------------------------------------------------- the four modes

struct LlmMode {
    using Args = fmha::LlmArgs;
    using S = Setup<Args>;
    static constexpr char const* kPrefix = "fmha: llm: ";

    static S valid(Buffers& b) {
        S s{{8, 2, 128, 2, 4, 256}, {}, std::nullopt, &b};
        s.args.q = b.q, s.args.kv = b.kv, s.args.o = b.o, s.args.cuKVSeqLens = b.cuKV;
        s.args.attentionScale = 0.125F;
        return s;
    }
    static void nullLastPointer(S& s) { s.args.cuKVSeqLens = nullptr; }

    static std::optional<bool> call(Api api, S const& s) {
        Args const& a = s.args;
        bool const fp8 = a.inputType == DataType::kFP8;
        if (api == Api::kStruct) return runnerFor(s.shape).run(a);
        if (api == Api::kCStruct) {
            fmha_llm_args const c = toC(a);
            return fmha_run_llm_args(cRunnerFor(s.shape).get(), &c);
        }
        if (!seedExpressible(a)) return std::nullopt;
        if (api == Api::kSeed)
            return runnerFor(s.shape).run(a.q, a.kv, a.o, a.cuKVSeqLens, a.stream, a.attentionScale,
                                          a.slidingWindowSize, fp8, a.qScale, a.kScale, a.vScale,
                                          a.skipSoftmaxScaleFactor);
        return fmha_run_llm(cRunnerFor(s.shape).get(), a.q, a.kv, a.o, a.cuKVSeqLens, a.stream, a.attentionScale,
                            a.slidingWindowSize, fp8, a.qScale, a.kScale, a.vScale, a.skipSoftmaxScaleFactor);
    }

    static std::optional<bool> preflight(Api api, S const& s) {
        Args const& a = s.args;
        bool const fp8 = a.inputType == DataType::kFP8;
        if (api == Api::kStruct) return runnerFor(s.shape).preflight(a);
        if (api == Api::kCStruct) {
            fmha_llm_args const c = toC(a);
            return fmha_preflight_llm_args(cRunnerFor(s.shape).get(), &c);
        }
        if (!seedExpressible(a)) return std::nullopt;
        if (api == Api::kSeed)
            return runnerFor(s.shape).preflightLlm(a.stream, a.slidingWindowSize, fp8, a.skipSoftmaxScaleFactor);
        return fmha_preflight_llm(cRunnerFor(s.shape).get(), a.stream, a.slidingWindowSize, fp8,
                                  a.skipSoftmaxScaleFactor);
    }

    static std::vector<Case<Args>> cases() {
        std::vector<Case<Args>> const own = {
            {"SeqLenQZero", [](S& s) { s.shape.seqQ = 0; }, {"seqLenQ (0) must be positive"}},
            {"CapacityZero", [](S& s) { s.shape.cap = 0; }, {"kvCacheCapacity (0) must be positive"}},
            {"CapacityPastKeyRange", [](S& s) { s.shape.cap = INT32_MAX; },
             {"kvCacheCapacity (2147483647) exceeds 2147482623"}},
            {"NullKV", [](S& s) { s.args.kv = nullptr; }, {"kvPtr is null"}},
            {"MisalignedKV", [](S& s) { s.args.kv = offsetBytes(s.args.kv, 2); }, {"kvPtr must be 16-byte aligned"}},
        };
        return join<Args>({shapeCases<Args>(false), runCases<Args>(), cacheCases<Args>(), windowCases<Args>(),
                           skipCases<Args>(), own});
    }
};

struct PagedMode {
    using Args = fmha::PagedArgs;
    using S = Setup<Args>;
    static constexpr char const* kPrefix = "fmha: paged: ";

    static S valid(Buffers& b) {
        S s{{8, 2, 128, 2, 4, 256}, {}, std::nullopt, &b};
        s.args.q = b.q, s.args.pool = b.kv, s.args.pageList = b.pages, s.args.o = b.o, s.args.cuKVSeqLens = b.cuKV;
        s.args.numPages = 16, s.args.maxPagesPerSeq = 4, s.args.tokensPerPage = 64;
        s.args.attentionScale = 0.125F;
        return s;
    }
    static void nullLastPointer(S& s) { s.args.cuKVSeqLens = nullptr; }

    static std::optional<bool> call(Api api, S const& s) {
        Args const& a = s.args;
        DataType const kvType = s.seedKvType.value_or(a.inputType);
        bool const fp8 = a.inputType == DataType::kFP8;
        if (api == Api::kStruct)
            return kvType == a.inputType ? std::optional<bool>(runnerFor(s.shape).runPaged(a)) : std::nullopt;
        if (api == Api::kCStruct) {  // the struct has no kvDataType: the input type is the cache's
            if (kvType != a.inputType) return std::nullopt;
            fmha_paged_args const c = toC(a);
            return fmha_run_paged_args(cRunnerFor(s.shape).get(), &c);
        }
        if (!seedExpressible(a)) return std::nullopt;
        if (api == Api::kSeed)
            return runnerFor(s.shape).runPaged(a.q, a.pool, a.pageList, a.o, a.cuKVSeqLens, a.numPages,
                                               a.maxPagesPerSeq, a.tokensPerPage, kvType, a.stream, a.attentionScale,
                                               a.slidingWindowSize, fp8, a.qScale, a.kScale, a.vScale, a.isCausal,
                                               a.skipSoftmaxScaleFactor, a.bidirectionalBlockBegin,
                                               a.bidirectionalBlockEnd);
        return fmha_run_paged(cRunnerFor(s.shape).get(), a.q, a.pool, a.pageList, a.o, a.cuKVSeqLens, a.numPages,
                              a.maxPagesPerSeq, a.tokensPerPage, static_cast<int32_t>(kvType), a.stream,
                              a.attentionScale, a.slidingWindowSize, fp8, a.qScale, a.kScale, a.vScale, a.isCausal,
                              a.skipSoftmaxScaleFactor, a.bidirectionalBlockBegin, a.bidirectionalBlockEnd);
    }

    static std::optional<bool> preflight(Api api, S const& s) {
        Args const& a = s.args;
        bool const fp8 = a.inputType == DataType::kFP8;
        bool const bidir = a.bidirectionalBlockBegin != nullptr;
        if (api == Api::kStruct) return runnerFor(s.shape).preflight(a, bidir);
        if (api == Api::kCStruct) {
            fmha_paged_args const c = toC(a);
            return fmha_preflight_paged_args(cRunnerFor(s.shape).get(), &c, bidir);
        }
        if (!seedExpressible(a)) return std::nullopt;
        if (api == Api::kSeed)
            return runnerFor(s.shape).preflightPaged(a.stream, a.slidingWindowSize, fp8, a.isCausal,
                                                     a.skipSoftmaxScaleFactor, bidir);
        return fmha_preflight_paged(cRunnerFor(s.shape).get(), a.stream, a.slidingWindowSize, fp8, a.isCausal,
                                    a.skipSoftmaxScaleFactor, bidir);
    }

    static void setBidirectional(S& s) {
        s.args.bidirectionalBlockBegin = s.buf->bidirBegin, s.args.bidirectionalBlockEnd = s.buf->bidirEnd;
    }

    static std::vector<Case<Args>> cases() {
        constexpr auto kAccept = Verdict::kAccept;
        constexpr auto kVariant = Verdict::kVariantRule;
        std::vector<Case<Args>> const own = {
            {"WindowNonCausal", [](S& s) { s.args.slidingWindowSize = 64, s.args.isCausal = false; },
             {"a sliding window needs the causal mask"}, kVariant},
            {"NonCausal", [](S& s) { s.args.isCausal = false; }, {"causal"}, kAccept},
            {"SkipNonCausal", [](S& s) { s.args.skipSoftmaxScaleFactor = 1.0F, s.args.isCausal = false; },
             {"skip-softmax needs the causal mask"}, kVariant},
            {"SkipBidirectional", [](S& s) { s.args.skipSoftmaxScaleFactor = 1.0F, setBidirectional(s); },
             {"skip-softmax does not combine with bidirectional blocks"}, kVariant},
            {"BidirBeginOnly", [](S& s) { s.args.bidirectionalBlockBegin = s.buf->bidirBegin; },
             {"bidirectionalBlockBegin and bidirectionalBlockEnd must both be set or both be null"}},
            {"BidirEndOnly", [](S& s) { s.args.bidirectionalBlockEnd = s.buf->bidirEnd; },
             {"must both be set or both be null"}},
            {"BidirBoth", [](S& s) { setBidirectional(s); }, {"bidirectional"}, kAccept},
            {"KvTypeBf16ForFp16", [](S& s) { s.seedKvType = DataType::kBF16; }, {"kvDataType (bf16) does not match"}},
            {"KvTypeFp8ForFp16", [](S& s) { s.seedKvType = DataType::kFP8; }, {"kvDataType (fp8e4m3)"}},
            {"KvTypeFp16ForFp8", [](S& s) { s.args.inputType = DataType::kFP8, s.seedKvType = DataType::kHALF; },
             {"kvDataType (fp16)", "fp8Input selects fp8e4m3"}},
            {"BatchTooLargeD512", [](S& s) { s.shape.d = 512, s.shape.batch = 40000; },
             {"batchSize (40000) exceeds 32767"}},
            {"SeqLenQZero", [](S& s) { s.shape.seqQ = 0; }, {"seqLenQ (0) must be positive"}},
            {"NumPagesZero", [](S& s) { s.args.numPages = 0; }, {"numPages (0) must be positive"}},
        };
        return join<Args>({shapeCases<Args>(true), runCases<Args>(), cacheCases<Args>(), windowCases<Args>(),
                           pagingCases<Args>(), skipCases<Args>(), own});
    }
};

struct RaggedMode {
    using Args = fmha::PagedRaggedArgs;
    using S = Setup<Args>;
    static constexpr char const* kPrefix = "fmha: ragged: ";

    static S valid(Buffers& b) {
        S s{{8, 2, 128, 2, 0, 256}, {}, std::nullopt, &b};
        s.args.q = b.q, s.args.pool = b.kv, s.args.pageList = b.pages, s.args.o = b.o;
        s.args.cuQSeqLens = b.cuQ, s.args.cuKVSeqLens = b.cuKV;
        s.args.totalQSeqLen = 8, s.args.maxQSeqLen = 4;
        s.args.numFlatPages = 16, s.args.maxPagesPerSeq = 4, s.args.tokensPerPage = 64;
        s.args.attentionScale = 0.125F;
        return s;
    }
    static void nullLastPointer(S& s) { s.args.cuKVSeqLens = nullptr; }

    // The seed signature takes the data type itself: every dtype case runs through all three APIs.
    static std::optional<bool> call(Api api, S const& s) {
        Args const& a = s.args;
        if (api == Api::kStruct) return runnerFor(s.shape).run(a);
        if (api == Api::kCStruct) {
            fmha_paged_ragged_args const c = toC(a);
            return fmha_run_paged_ragged_args(cRunnerFor(s.shape).get(), &c);
        }
        if (a.lse != nullptr) return std::nullopt;
        if (api == Api::kSeed)
            return runnerFor(s.shape).runPagedRagged(a.q, a.pool, a.pageList, a.o, a.cuQSeqLens, a.cuKVSeqLens,
                                                     a.totalQSeqLen, a.maxQSeqLen, a.numFlatPages, a.maxPagesPerSeq,
                                                     a.tokensPerPage, a.stream, a.attentionScale, a.slidingWindowSize,
                                                     a.inputType, a.qScale, a.kScale, a.vScale);
        return fmha_run_paged_ragged(cRunnerFor(s.shape).get(), a.q, a.pool, a.pageList, a.o, a.cuQSeqLens,
                                     a.cuKVSeqLens, a.totalQSeqLen, a.maxQSeqLen, a.numFlatPages, a.maxPagesPerSeq,
                                     a.tokensPerPage, a.stream, a.attentionScale, a.slidingWindowSize,
                                     static_cast<int32_t>(a.inputType), a.qScale, a.kScale, a.vScale);
    }

    static std::optional<bool> preflight(Api api, S const& s) {
        Args const& a = s.args;
        if (api == Api::kStruct) return runnerFor(s.shape).preflight(a);
        if (api == Api::kCStruct) {
            fmha_paged_ragged_args const c = toC(a);
            return fmha_preflight_paged_ragged_args(cRunnerFor(s.shape).get(), &c);
        }
        if (api == Api::kSeed)
            return runnerFor(s.shape).preflightPagedRagged(a.stream, a.slidingWindowSize, a.inputType);
        return fmha_preflight_paged_ragged(cRunnerFor(s.shape).get(), a.stream, a.slidingWindowSize,
                                           static_cast<int32_t>(a.inputType));
    }

    static std::vector<Case<Args>> cases() {
        std::vector<Case<Args>> const own = {
            {"TotalQZero", [](S& s) { s.args.totalQSeqLen = 0; }, {"totalQSeqLen (0) must be positive"}},
            {"MaxQZero", [](S& s) { s.args.maxQSeqLen = 0; }, {"maxQSeqLen (0) must be in [1, totalQSeqLen = 8]"}},
            {"MaxQAboveTotal", [](S& s) { s.args.maxQSeqLen = 9; }, {"maxQSeqLen (9)", "totalQSeqLen = 8"}},
            {"MaxQEqualsTotal", [](S& s) { s.args.maxQSeqLen = 8; }, {"maxQSeqLen"}, Verdict::kAccept},
            {"NumPagesZero", [](S& s) { s.args.numFlatPages = 0; }, {"numFlatPages (0) must be positive"}},
            {"NullCuQ", [](S& s) { s.args.cuQSeqLens = nullptr; }, {"cuQSeqLens is null"}},
        };
        return join<Args>({shapeCases<Args>(true), runCases<Args>(), cacheCases<Args>(), windowCases<Args>(),
                           pagingCases<Args>(), own});
    }
};

struct VitMode {
    using Args = fmha::VitArgs;
    using S = Setup<Args>;
    static constexpr char const* kPrefix = "fmha: vit: ";

    // As in the seed, the ViT runner is constructed from (Hq, Hkv, D) only: batch, seqLenQ, capacity stay 0.
    static S valid(Buffers& b) {
        S s{{8, 8, 80, 0, 0, 0}, {}, std::nullopt, &b};
        s.args.q = b.q, s.args.k = b.k, s.args.v = b.v, s.args.o = b.o, s.args.cuSeqLens = b.cuQ;
        s.args.totalSeqLen = 16, s.args.maxSeqLen = 8, s.args.batchSize = 2;
        s.args.attentionScale = 0.125F;
        return s;
    }
    static void nullLastPointer(S& s) { s.args.cuSeqLens = nullptr; }

    static std::optional<bool> call(Api api, S const& s) {
        Args const& a = s.args;
        bool const fp8 = a.inputType == DataType::kFP8;
        if (api == Api::kStruct) return runnerFor(s.shape).run(a);
        if (api == Api::kCStruct) {
            fmha_vit_args const c = toC(a);
            return fmha_run_vit_args(cRunnerFor(s.shape).get(), &c);
        }
        if (!seedExpressible(a)) return std::nullopt;
        if (api == Api::kSeed)
            return FmhaRunner(s.shape.hq, s.shape.hkv, s.shape.d)
                .run(a.q, a.k, a.v, a.o, a.cuSeqLens, a.totalSeqLen, a.maxSeqLen, a.batchSize, a.stream,
                     a.attentionScale, fp8, a.qScale, a.kScale, a.vScale);
        return fmha_run_vit(cRunnerFor(s.shape).get(), a.q, a.k, a.v, a.o, a.cuSeqLens, a.totalSeqLen, a.maxSeqLen,
                            a.batchSize, a.stream, a.attentionScale, fp8, a.qScale, a.kScale, a.vScale);
    }

    // preflightViT takes no data type: the seed and C paths check the FP16 variant only.
    static std::optional<bool> preflight(Api api, S const& s) {
        if (api == Api::kStruct) return runnerFor(s.shape).preflight(s.args);
        if (api == Api::kCStruct) {
            fmha_vit_args const c = toC(s.args);
            return fmha_preflight_vit_args(cRunnerFor(s.shape).get(), &c);
        }
        if (s.args.inputType != DataType::kHALF) return std::nullopt;
        if (api == Api::kSeed) return runnerFor(s.shape).preflightViT(s.args.stream);
        return fmha_preflight_vit(cRunnerFor(s.shape).get(), s.args.stream);
    }

    static std::vector<Case<Args>> cases() {
        std::vector<Case<Args>> const own = {
            {"KVHeadsBelowQHeads", [](S& s) { s.shape.hkv = 4; }, {"numKVHeads (4) must equal numQHeads (8)"},
             Verdict::kVariantRule},
            {"KVHeads1", [](S& s) { s.shape.hkv = 1; }, {"must equal numQHeads"}, Verdict::kVariantRule},
            {"BatchZero", [](S& s) { s.args.batchSize = 0; }, {"batchSize (0) must be positive"}},
            {"BatchNegative", [](S& s) { s.args.batchSize = -2; }, {"batchSize (-2)"}},
            {"BatchTooLarge", [](S& s) { s.args.batchSize = 65536; }, {"batchSize (65536) exceeds 65535"}},
            {"TotalZero", [](S& s) { s.args.totalSeqLen = 0; }, {"totalSeqLen (0) must be positive"}},
            {"TotalPastKeyRange", [](S& s) { s.args.totalSeqLen = INT32_MAX; },
             {"totalSeqLen (2147483647) exceeds 2147482623"}},
            {"MaxSeqZero", [](S& s) { s.args.maxSeqLen = 0; }, {"maxSeqLen (0) must be in [1, totalSeqLen = 16]"}},
            {"MaxSeqAboveTotal", [](S& s) { s.args.maxSeqLen = 17; }, {"maxSeqLen (17)"}},
            {"NullK", [](S& s) { s.args.k = nullptr; }, {"kPtr is null"}},
            {"NullV", [](S& s) { s.args.v = nullptr; }, {"vPtr is null"}},
            {"NullCu", [](S& s) { s.args.cuSeqLens = nullptr; }, {"cuSeqLens is null"}},
            {"MisalignedK", [](S& s) { s.args.k = offsetBytes(s.args.k, 2); }, {"kPtr must be 16-byte aligned"}},
            {"MisalignedV", [](S& s) { s.args.v = offsetBytes(s.args.v, 2); }, {"vPtr must be 16-byte aligned"}},
        };
        return join<Args>({shapeCases<Args>(false), runCases<Args>(), own});
    }
};

std::string lastErrorOf(Api api) {
    char const* raw = api == Api::kC || api == Api::kCStruct ? fmha_last_error() : fmha::lastError();
    EXPECT_NE(raw, nullptr);
    return raw != nullptr ? raw : "";
}

// Runs one case through run* and preflight* of every API that can express it.
template <class M>
void checkCase(Case<typename M::Args> const& c) {
    Buffers buf;
    auto s = M::valid(buf);
    c.mutate(s);
    bool const accepted = c.verdict == Verdict::kAccept;
    if (accepted) M::nullLastPointer(s);
    int paths = 0;
    for (Api api : kApis) {
        SCOPED_TRACE(std::string("run, ") + apiName(api));
        std::optional<bool> const ok = M::call(api, s);
        if (!ok) continue;
        ++paths;
        EXPECT_FALSE(*ok);
        std::string const msg = lastErrorOf(api);
        EXPECT_TRUE(contains(msg, M::kPrefix));
        EXPECT_TRUE(!accepted || contains(msg, "is null"));
        for (char const* e : c.expect) EXPECT_EQ(msg.find(e) != std::string::npos, !accepted) << msg << " / " << e;
        EXPECT_TRUE(buf.outputUntouched()) << "the output buffer was written";
    }
    EXPECT_GT(paths, 0) << "no API can express this case";
    bool const variant = c.verdict == Verdict::kVariantRule;
    for (Api api : kApis) {
        SCOPED_TRACE(std::string("preflight, ") + apiName(api));
        std::optional<bool> const ok = M::preflight(api, s);
        if (!ok) continue;
        std::string const msg = lastErrorOf(api);
        EXPECT_TRUE(!variant || !*ok);
        for (char const* e : c.expect) EXPECT_EQ(msg.find(e) != std::string::npos, variant) << msg << " / " << e;
    }
}

template <class Args>
std::string caseName(testing::TestParamInfo<Case<Args>> const& info) {
    return info.param.name;
}

template <class M>
using ModeValidation = testing::TestWithParam<Case<typename M::Args>>;
using LlmValidation = ModeValidation<LlmMode>;
using PagedValidation = ModeValidation<PagedMode>;
using RaggedValidation = ModeValidation<RaggedMode>;
using VitValidation = ModeValidation<VitMode>;

TEST_P(LlmValidation, Rule) { checkCase<LlmMode>(GetParam()); }
TEST_P(PagedValidation, Rule) { checkCase<PagedMode>(GetParam()); }
TEST_P(RaggedValidation, Rule) { checkCase<RaggedMode>(GetParam()); }
TEST_P(VitValidation, Rule) { checkCase<VitMode>(GetParam()); }

INSTANTIATE_TEST_SUITE_P(Host, LlmValidation, testing::ValuesIn(LlmMode::cases()), caseName<LlmMode::Args>);
INSTANTIATE_TEST_SUITE_P(Host, PagedValidation, testing::ValuesIn(PagedMode::cases()), caseName<PagedMode::Args>);
INSTANTIATE_TEST_SUITE_P(Host, RaggedValidation, testing::ValuesIn(RaggedMode::cases()), caseName<RaggedMode::Args>);
INSTANTIATE_TEST_SUITE_P(Host, VitValidation, testing::ValuesIn(VitMode::cases()), caseName<VitMode::Args>);

// A fully valid call passes validation; without a GPU it then fails on device selection.
TEST(Validation, ValidCallsReachDeviceSelection) {
    int count = 0;
    if (cudaGetDeviceCount(&count) == cudaSuccess && count > 0)
        GTEST_SKIP() << "a CUDA device is present: the host buffers must not reach a kernel";
    Buffers buf;
    auto llm = LlmMode::valid(buf);
    auto paged = PagedMode::valid(buf);
    llm.args.lse = paged.args.lse = buf.lse;
    auto failure = [](std::optional<bool> ok) { return ok == false ? std::string(fmha::lastError()) : "no failure"; };
    for (std::string const& msg : {failure(LlmMode::call(Api::kStruct, llm)),
                                   failure(LlmMode::call(Api::kSeed, LlmMode::valid(buf))),
                                   failure(PagedMode::call(Api::kStruct, paged)),
                                   failure(PagedMode::call(Api::kC, PagedMode::valid(buf))),
                                   failure(PagedMode::call(Api::kCStruct, paged)),
                                   failure(RaggedMode::call(Api::kCStruct, RaggedMode::valid(buf))),
                                   failure(VitMode::call(Api::kCStruct, VitMode::valid(buf))),
                                   failure(RaggedMode::call(Api::kSeed, RaggedMode::valid(buf))),
                                   failure(VitMode::call(Api::kC, VitMode::valid(buf)))})
        EXPECT_TRUE(contains(msg, "no CUDA device"));
    EXPECT_TRUE(buf.outputUntouched());
}

// ---------------------------------------------------------------- errors, log callback, C API

TEST(ErrorValidation, CApiNullRunner) {
    Buffers b;
    auto nullRunner = [](bool ok) { return !ok && std::string(fmha_last_error()) == "fmha: runner is null"; };
    EXPECT_TRUE(nullRunner(fmha_run_llm(nullptr, b.q, b.kv, b.o, b.cuKV, nullptr, 0.125F, INT_MAX, false, 1, 1, 1, 0)));
    EXPECT_TRUE(nullRunner(fmha_run_paged(nullptr, b.q, b.kv, b.pages, b.o, b.cuKV, 16, 4, 64, 1, nullptr, 0.125F,
                                          INT_MAX, false, 1, 1, 1, true, 0, nullptr, nullptr)));
    EXPECT_TRUE(nullRunner(fmha_run_paged_ragged(nullptr, b.q, b.kv, b.pages, b.o, b.cuQ, b.cuKV, 8, 4, 16, 4, 64,
                                                 nullptr, 0.125F, INT_MAX, 1, 1, 1, 1)));
    EXPECT_TRUE(
        nullRunner(fmha_run_vit(nullptr, b.q, b.k, b.v, b.o, b.cuQ, 16, 8, 2, nullptr, 0.125F, false, 1, 1, 1)));
    EXPECT_TRUE(nullRunner(fmha_preflight_llm(nullptr, nullptr, INT_MAX, false, 0)));
    EXPECT_TRUE(nullRunner(fmha_preflight_paged(nullptr, nullptr, INT_MAX, false, true, 0, false)));
    EXPECT_TRUE(nullRunner(fmha_preflight_paged_ragged(nullptr, nullptr, INT_MAX, 1)));
    EXPECT_TRUE(nullRunner(fmha_preflight_vit(nullptr, nullptr)));
    fmha_llm_args llm;
    fmha_llm_args_init(&llm);
    fmha_paged_args paged;
    fmha_paged_args_init(&paged);
    fmha_paged_ragged_args ragged;
    fmha_paged_ragged_args_init(&ragged);
    fmha_vit_args vit;
    fmha_vit_args_init(&vit);
    EXPECT_TRUE(nullRunner(fmha_run_llm_args(nullptr, &llm)));
    EXPECT_TRUE(nullRunner(fmha_run_paged_args(nullptr, &paged)));
    EXPECT_TRUE(nullRunner(fmha_run_paged_ragged_args(nullptr, &ragged)));
    EXPECT_TRUE(nullRunner(fmha_run_vit_args(nullptr, &vit)));
    EXPECT_TRUE(nullRunner(fmha_preflight_llm_args(nullptr, &llm)));
    EXPECT_TRUE(nullRunner(fmha_preflight_paged_args(nullptr, &paged, false)));
    EXPECT_TRUE(nullRunner(fmha_preflight_paged_ragged_args(nullptr, &ragged)));
    EXPECT_TRUE(nullRunner(fmha_preflight_vit_args(nullptr, &vit)));
    EXPECT_TRUE(nullRunner(fmha_runner_set_split_kv(nullptr, 4)));
    EXPECT_EQ(fmha_runner_workspace_bytes(nullptr), 0U);
    EXPECT_TRUE(b.outputUntouched());
}

// The C structs: init sets struct_size and the C++ defaults; a struct below the first
// version's size, a null struct, and a larger struct (a newer header) that sets fields this
// library does not know are refused; a larger one whose unknown tail is zero is read, and
// one of the first version's size (0.3's, ending at lse) reads bf16_output as 0.
TEST(ErrorValidation, CStructSizes) {
    Buffers b;
    CRunner r = cRunnerFor({8, 2, 128, 2, 4, 256});
    fmha_llm_args a;
    fmha_llm_args_init(&a);
    EXPECT_EQ(a.struct_size, sizeof(fmha_llm_args));
    EXPECT_EQ(a.sliding_window_size, INT_MAX);
    EXPECT_EQ(a.input_data_type, 1);
    EXPECT_EQ(a.q_scale, 1.0F);
    fmha_paged_args p;
    fmha_paged_args_init(&p);
    EXPECT_TRUE(p.is_causal);
    a.q = b.q, a.kv = b.kv, a.o = b.o, a.cu_kv_seq_lens = b.cuKV, a.attention_scale = 0.125F;

    EXPECT_FALSE(fmha_run_llm_args(r.get(), nullptr));
    EXPECT_TRUE(contains(fmha_last_error(), "fmha: llm: fmha_llm_args is null"));
    EXPECT_EQ(a.bf16_output, 0);
    fmha_llm_args small = a;
    small.struct_size = offsetof(fmha_llm_args, bf16_output) - 8;
    EXPECT_FALSE(fmha_run_llm_args(r.get(), &small));
    EXPECT_TRUE(contains(fmha_last_error(), "struct_size"));
    EXPECT_TRUE(contains(fmha_last_error(), "below the first version's size"));
    small.struct_size = 0;  // never set
    EXPECT_FALSE(fmha_preflight_llm_args(r.get(), &small));
    EXPECT_TRUE(contains(fmha_last_error(), "struct_size (0)"));
    // A 0.3 caller's struct ends at lse: bf16_output beyond it is not read (with FP16 input
    // it would be refused), so the run gets as far as the runner's own checks.
    fmha_llm_args old = a;
    old.struct_size = offsetof(fmha_llm_args, bf16_output);
    old.bf16_output = 1;
    old.cu_kv_seq_lens = nullptr;
    EXPECT_FALSE(fmha_run_llm_args(r.get(), &old));
    EXPECT_TRUE(contains(fmha_last_error(), "fmha: llm: cuKVSeqLens is null")) << fmha_last_error();
    old.struct_size = sizeof(fmha_llm_args);  // read now: FP16 input takes no BF16 output
    EXPECT_FALSE(fmha_run_llm_args(r.get(), &old));
    EXPECT_TRUE(contains(fmha_last_error(), "bf16Output selects BF16 output for FP8 input")) << fmha_last_error();

    struct Newer {
        fmha_llm_args base;
        int64_t future;
    } newer{a, 0};
    newer.base.struct_size = sizeof(Newer);
    newer.base.cu_kv_seq_lens = nullptr;  // read, then refused by the runner (never reaches a GPU)
    EXPECT_FALSE(fmha_run_llm_args(r.get(), &newer.base));
    EXPECT_TRUE(contains(fmha_last_error(), "fmha: llm: cuKVSeqLens is null"));
    newer.future = 7;
    EXPECT_FALSE(fmha_run_llm_args(r.get(), &newer.base));
    EXPECT_TRUE(contains(fmha_last_error(), "sets fields this library"));
    EXPECT_TRUE(b.outputUntouched());
}

TEST(ErrorValidation, LastErrorNeverNullAndClearedOnSuccess) {
    EXPECT_FALSE(fmha_run_llm(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, 1, INT_MAX, false, 1, 1, 1, 0));
    ASSERT_NE(fmha_last_error(), nullptr);
    EXPECT_STRNE(fmha_last_error(), "");
    CRunner r = cRunnerFor({8, 2, 128, 2, 4, 256});
    ASSERT_NE(r, nullptr);
    ASSERT_NE(fmha_last_error(), nullptr);
    EXPECT_STREQ(fmha_last_error(), "");
    EXPECT_STREQ(fmha::lastError(), "");
}

TEST(ErrorValidation, LastErrorIsPerThread) {
    FmhaRunner runner(8, 3, 128, 2, 4, 256);
    EXPECT_FALSE(runner.preflightLlm(nullptr));
    std::string other = "unset";
    std::thread([&] { other = fmha::lastError(); }).join();
    EXPECT_EQ(other, "");
    EXPECT_TRUE(contains(fmha::lastError(), "must be a multiple of numKVHeads"));
}

TEST(ErrorValidation, LogCallbackReceivesMessagesUntilRemoved) {
    struct Reset {
        ~Reset() { fmha::setLogCallback(nullptr, nullptr); }
    } reset;
    std::vector<std::string> log;
    fmha::setLogCallback([](char const* m, void* user) { static_cast<std::vector<std::string>*>(user)->push_back(m); },
                         &log);
    FmhaRunner runner(8, 2, 100, 2, 4, 256);
    EXPECT_FALSE(runner.preflightLlm(nullptr));
    ASSERT_EQ(log.size(), 1U);
    EXPECT_EQ(log[0], fmha::lastError());
    EXPECT_TRUE(contains(log[0], "head dim 100"));
    EXPECT_FALSE(fmha_preflight_vit(nullptr, nullptr));
    ASSERT_EQ(log.size(), 2U);
    EXPECT_TRUE(contains(log[1], "runner is null"));

    fmha::setLogCallback(nullptr, nullptr);
    EXPECT_FALSE(runner.preflightLlm(nullptr));
    EXPECT_EQ(log.size(), 2U);
    EXPECT_TRUE(contains(fmha::lastError(), "head dim 100"));
}

// A callback that calls back into the library (set the callback, fail another call) runs
// with no library lock held: it neither deadlocks nor sees its message change. Run on a
// thread with a deadline, so that a deadlock fails the test instead of hanging it.
TEST(ErrorValidation, LogCallbackMayCallBackIntoTheLibrary) {
    struct Log {
        std::vector<std::string> messages;
        std::string firstAfterNested;  // the first message as the callback still holds it
    };
    static Log log;
    log = {};
    static fmha::LogCallback const callback = [](char const* m, void* user) {
        Log& l = *static_cast<Log*>(user);
        l.messages.push_back(m);
        if (l.messages.size() == 1) {
            fmha::setLogCallback(callback, user);  // takes the callback's lock
            FmhaRunner inner(8, 3, 128, 1, 1, 1);
            EXPECT_FALSE(inner.preflightLlm(nullptr));  // fails: calls this callback again
            l.firstAfterNested = m;
        }
    };
    auto body = std::async(std::launch::async, [] {
        fmha::setLogCallback(callback, &log);
        FmhaRunner runner(8, 2, 100, 2, 4, 256);
        bool const ok = runner.preflightLlm(nullptr);
        std::string const last = fmha::lastError();
        fmha::setLogCallback(nullptr, nullptr);
        return std::make_pair(ok, last);
    });
    ASSERT_EQ(body.wait_for(std::chrono::seconds(20)), std::future_status::ready)
        << "the log callback deadlocked calling back into the library";
    auto const [ok, last] = body.get();
    EXPECT_FALSE(ok);
    ASSERT_EQ(log.messages.size(), 2U);
    EXPECT_EQ(last, log.messages[0]) << "lastError() is the outer call's error";
    EXPECT_TRUE(contains(log.messages[0], "head dim 100"));
    EXPECT_TRUE(contains(log.messages[1], "multiple of numKVHeads"));
    EXPECT_EQ(log.firstAfterNested, log.messages[0]);
}

// ---------------------------------------------------------------- canImplement* (build: sm_80 + PTX, sm_90a)

// canImplement answers from the dispatcher's table for each SM class's shared memory a block:
// every (mode, dtype, head dim) it accepts has a configuration that fits that class, and D=512
// (no configuration fits 99 KB) is refused on the 99 KB classes.
TEST(CanImplementValidation, EveryAcceptedCombinationFitsItsSmClass) {
    using fmha::detail::KernelOps;
    EXPECT_EQ(fmha::detail::smemPerBlockOfSm(86), 101376);
    EXPECT_EQ(fmha::detail::smemPerBlockOfSm(89), 101376);
    EXPECT_EQ(fmha::detail::smemPerBlockOfSm(87), 166912);
    EXPECT_EQ(fmha::detail::smemPerBlockOfSm(80), 166912);
    EXPECT_EQ(fmha::detail::smemPerBlockOfSm(90), 232448);
    for (int sm : {80, 86, 87, 89, 90, 100, 120})
        for (Mode m : {Mode::kLlm, Mode::kPaged, Mode::kPagedRagged, Mode::kVit})
            for (DataType t : {DataType::kHALF, DataType::kBF16, DataType::kFP8})
                for (int d : {64, 72, 80, 96, 128, 256, 512}) {
                    if (!FmhaRunner::canImplementMode(m, t, d, sm)) continue;
                    fmha::ElementKind const e = t == DataType::kFP8    ? fmha::ElementKind::kFp8
                                                : t == DataType::kBF16 ? fmha::ElementKind::kBf16
                                                                       : fmha::ElementKind::kFp16;
                    fmha::KvAddressing const kv = m == Mode::kPaged || m == Mode::kPagedRagged
                                                      ? fmha::KvAddressing::kPaged
                                                      : fmha::KvAddressing::kStrided;
                    KernelOps ops;
                    int const budget = fmha::detail::smemPerBlockOfSm(sm);
                    ASSERT_TRUE(fmha::detail::findKernel(e, d, kv, sm, budget, false, &ops));
                    EXPECT_LE(ops.smemBytes, fmha::detail::smemPerBlockOfSm(sm)) << "sm " << sm << " D " << d;
                }
    for (int sm : {86, 89, 120}) {
        EXPECT_TRUE(FmhaRunner::canImplementMode(Mode::kPaged, DataType::kHALF, 256, sm)) << sm;
        EXPECT_TRUE(FmhaRunner::canImplementMode(Mode::kLlm, DataType::kFP8, 128, sm)) << sm;
        EXPECT_FALSE(FmhaRunner::canImplementMode(Mode::kPaged, DataType::kHALF, 512, sm)) << sm;
    }
    EXPECT_TRUE(FmhaRunner::canImplementMode(Mode::kPaged, DataType::kHALF, 512, 80));
    EXPECT_TRUE(FmhaRunner::canImplementMode(Mode::kPaged, DataType::kHALF, 512, 87));
    // The 99 KB and 163 KB classes take the compact tiles where the default ones do not fit.
    KernelOps ops;
    ASSERT_TRUE(fmha::detail::findKernel(fmha::ElementKind::kFp16, 128, fmha::KvAddressing::kStrided, 86, 101376,
                                         false, &ops));
    EXPECT_TRUE(ops.compact);
    ASSERT_TRUE(fmha::detail::findKernel(fmha::ElementKind::kFp16, 128, fmha::KvAddressing::kStrided, 80, 166912,
                                         false, &ops));
    EXPECT_FALSE(ops.compact);
    ASSERT_TRUE(fmha::detail::findKernel(fmha::ElementKind::kFp16, 512, fmha::KvAddressing::kPaged, 80, 166912,
                                         false, &ops));
    EXPECT_TRUE(ops.compact);
}

// Where the build holds the Hopper family (sm_90a), an sm_90 device runs every head dim of its
// support-table row there, FP8 included (D=72's 72-byte rows through 8-byte cp.async pieces),
// over contiguous and paged KV, dense and (16-bit) under skip-softmax.
TEST(CanImplementValidation, HopperFamilyTakesItsHeadDims) {
    std::string const archs = fmha::detail::buildCudaArchs();
    if (archs.find("90a") == std::string::npos) GTEST_SKIP() << "no sm_90a in this build (" << archs << ")";
    bool const previous = fmha::detail::setForcePortable(false);
    for (fmha::support::HeadDim const& h : fmha::support::kHeadDims)
        for (fmha::ElementKind e : {fmha::ElementKind::kFp16, fmha::ElementKind::kBf16, fmha::ElementKind::kFp8})
            for (fmha::KvAddressing kv : {fmha::KvAddressing::kStrided, fmha::KvAddressing::kPaged})
                for (bool skip : {false, true}) {
                    if (skip && e == fmha::ElementKind::kFp8) continue;  // skip-softmax takes 16-bit input
                    if (h.pagedOnly && kv != fmha::KvAddressing::kPaged) continue;
                    fmha::detail::KernelOps ops;
                    ASSERT_TRUE(fmha::detail::findKernel(e, h.api, kv, 90, 227 * 1024, skip, &ops));
                    EXPECT_STREQ(ops.family, h.hopper != 0 ? "sm90" : "sm80")
                        << "D " << h.api << " element " << static_cast<int>(e) << " paged " << (kv == fmha::KvAddressing::kPaged)
                        << " skip " << skip;
                }
    fmha::detail::setForcePortable(previous);
}

TEST(CanImplementValidation, HeadDimsAndSmVersions) {
    EXPECT_TRUE(FmhaRunner::canImplement(128, 90));
    EXPECT_FALSE(FmhaRunner::canImplement(128, 75));
    EXPECT_FALSE(FmhaRunner::canImplement(100, 90));
    EXPECT_FALSE(FmhaRunner::canImplement(512, 90));
    EXPECT_TRUE(FmhaRunner::canImplementViT(80, 80));
    EXPECT_FALSE(FmhaRunner::canImplementViT(512, 90));
    EXPECT_FALSE(FmhaRunner::canImplementViT(48, 90));
    for (int32_t d : {64, 72, 80, 96, 128, 256})
        for (int32_t sm : {80, 86, 87, 89, 90, 100, 120}) {
            EXPECT_TRUE(FmhaRunner::canImplement(d, sm) && fmha_can_implement(d, sm)) << "d " << d << " sm " << sm;
            EXPECT_TRUE(FmhaRunner::canImplementViT(d, sm) && fmha_can_implement_vit(d, sm)) << "d " << d;
        }
    for (int32_t sm : {0, 70, 75, 79}) EXPECT_FALSE(FmhaRunner::canImplement(128, sm)) << "sm " << sm;
    EXPECT_FALSE(fmha_can_implement(128, 75));
    EXPECT_FALSE(fmha_can_implement(100, 90));
    EXPECT_FALSE(fmha_can_implement_vit(512, 90));
}

TEST(CanImplementValidation, PagedRagged) {
    auto can = [](int32_t hq, int32_t hkv, int32_t d, int32_t sm, DataType t, MaskType m) {
        bool const answer = FmhaRunner::canImplementPagedRagged(hq, hkv, d, sm, t, m);
        int32_t const cType = static_cast<int32_t>(t), cMask = static_cast<int32_t>(m);
        EXPECT_EQ(fmha_can_implement_paged_ragged(hq, hkv, d, sm, cType, cMask), answer) << "the C API disagrees";
        return answer;
    };
    EXPECT_TRUE(can(32, 8, 128, 90, DataType::kHALF, MaskType::kCAUSAL));
    EXPECT_TRUE(can(32, 8, 128, 90, DataType::kHALF, MaskType::kSLIDING_CAUSAL));
    EXPECT_TRUE(can(32, 8, 512, 90, DataType::kFP8, MaskType::kCAUSAL));
    EXPECT_TRUE(can(32, 8, 64, 80, DataType::kBF16, MaskType::kCAUSAL));
    EXPECT_FALSE(can(32, 8, 128, 90, DataType::kHALF, MaskType::kNON_CAUSAL));
    EXPECT_FALSE(can(32, 8, 128, 90, DataType::kHALF, MaskType::kBIDIRECTIONAL));
    EXPECT_FALSE(can(32, 6, 128, 90, DataType::kHALF, MaskType::kCAUSAL));
    EXPECT_FALSE(can(0, 8, 128, 90, DataType::kHALF, MaskType::kCAUSAL));
    EXPECT_FALSE(can(32, 0, 128, 90, DataType::kHALF, MaskType::kCAUSAL));
    EXPECT_FALSE(can(32, 8, 100, 90, DataType::kHALF, MaskType::kCAUSAL));
    EXPECT_FALSE(can(32, 8, 128, 75, DataType::kHALF, MaskType::kCAUSAL));
    EXPECT_FALSE(can(32, 8, 128, 90, DataType::kINT8, MaskType::kCAUSAL));
}

TEST(CanImplementValidation, ModesAndDtypes) {
    EXPECT_TRUE(FmhaRunner::canImplementMode(Mode::kPaged, DataType::kHALF, 512, 90));
    EXPECT_TRUE(FmhaRunner::canImplementMode(Mode::kPagedRagged, DataType::kHALF, 512, 90));
    EXPECT_FALSE(FmhaRunner::canImplementMode(Mode::kLlm, DataType::kHALF, 512, 90));
    EXPECT_FALSE(FmhaRunner::canImplementMode(Mode::kVit, DataType::kHALF, 512, 90));
    for (Mode m : {Mode::kLlm, Mode::kPaged, Mode::kPagedRagged, Mode::kVit}) {
        SCOPED_TRACE(fmha::modeName(m));
        for (DataType t : {DataType::kHALF, DataType::kBF16, DataType::kFP8})
            EXPECT_TRUE(FmhaRunner::canImplementMode(m, t, 128, 90)) << fmha::dataTypeName(t);
        for (DataType t : {DataType::kFLOAT, DataType::kINT8, DataType::kINT32, DataType::kUINT8})
            EXPECT_FALSE(FmhaRunner::canImplementMode(m, t, 128, 90)) << fmha::dataTypeName(t);
        EXPECT_FALSE(FmhaRunner::canImplementMode(m, DataType::kHALF, 0, 90));
        EXPECT_FALSE(FmhaRunner::canImplementMode(m, DataType::kHALF, 160, 90));
    }
}

// The params each mode launches (detail::paramsFor, which the run path uses), field by field
// against the layouts of docs/SEMANTICS.md.
TEST(RunnerParams, EachModeFillsItsParams) {
    auto addr = [](uintptr_t a) { return reinterpret_cast<void*>(a); };
    auto ints = [](uintptr_t a) { return reinterpret_cast<int32_t const*>(a); };
    FmhaRunner const r(8, 2, 128, 3, 40, 1024);  // Hq 8, Hkv 2, D 128, B 3, S_q 40, capacity 1024
    {
        fmha::LlmArgs a;
        a.q = addr(0x1000), a.kv = addr(0x100000), a.o = addr(0x2000), a.cuKVSeqLens = ints(0x3000);
        a.attentionScale = 0.5F, a.inputType = DataType::kFP8, a.qScale = 2, a.kScale = 3, a.vScale = 5;
        a.slidingWindowSize = 77, a.lse = reinterpret_cast<float*>(0x4000);
        fmha::FmhaParams const p = fmha::detail::paramsFor(r, a);
        EXPECT_EQ(p.element, fmha::ElementKind::kFp8);
        EXPECT_EQ(p.kvAddressing, fmha::KvAddressing::kStrided);
        EXPECT_EQ(p.headDim, 128);
        EXPECT_EQ(p.headGroup, 4);
        EXPECT_EQ(p.batch, 3);
        EXPECT_EQ(p.seqLenQ, 40);
        EXPECT_EQ(p.maxSeqLenQ, 40);
        EXPECT_EQ(p.cuQ, nullptr);
        EXPECT_EQ(p.maxKvLen, 1024);
        EXPECT_EQ(p.k, a.kv);
        EXPECT_EQ(p.v, addr(0x100000 + 2 * 1024 * 128));  // KV [B, 2, Hkv, Cap, D] of 1-byte FP8
        EXPECT_EQ(p.kvBatchStride, 2 * 2 * 1024 * 128);
        EXPECT_EQ(p.kvRowStride, 128);
        EXPECT_EQ(p.kvHeadStride, 1024 * 128);
        EXPECT_FALSE(p.kvRowsFromCu);
        EXPECT_EQ(p.lseBatchStride, 8 * 40);
        EXPECT_EQ(p.lseHeadStride, 40);
        EXPECT_FALSE(p.lsePacked);
        EXPECT_FLOAT_EQ(p.scale, 0.5F * 2 * 3);
        EXPECT_FLOAT_EQ(p.scaleLog2, 3.0F * 1.4426950408889634F);
        EXPECT_FLOAT_EQ(p.outScale, 5.0F);
        EXPECT_TRUE(p.causal);
        EXPECT_EQ(p.window, 77);
        EXPECT_EQ(p.packLog2, 0);
        EXPECT_EQ(p.walkUnits, 1);
        a.inputType = DataType::kBF16;
        fmha::FmhaParams const b = fmha::detail::paramsFor(r, a);
        EXPECT_EQ(b.v, addr(0x100000 + 2 * 1024 * 128 * 2));  // 2-byte elements
        EXPECT_FLOAT_EQ(b.scale, 0.5F);                       // 16-bit input ignores the FP8 scales
        EXPECT_FLOAT_EQ(b.outScale, 1.0F);
    }
    {
        fmha::PagedArgs a;
        a.q = addr(0x1000), a.pool = addr(0x5000), a.pageList = ints(0x6000), a.o = addr(0x2000);
        a.cuKVSeqLens = ints(0x3000), a.numPages = 99, a.maxPagesPerSeq = 16, a.tokensPerPage = 64;
        a.isCausal = false, a.bidirectionalBlockBegin = ints(0x7000), a.bidirectionalBlockEnd = ints(0x8000);
        a.attentionScale = 0.25F;
        fmha::FmhaParams const p = fmha::detail::paramsFor(r, a);
        EXPECT_EQ(p.kvAddressing, fmha::KvAddressing::kPaged);
        EXPECT_EQ(p.k, a.pool);
        EXPECT_EQ(p.v, a.pool);
        EXPECT_EQ(p.pageTable, a.pageList);
        EXPECT_EQ(p.numPages, 99);
        EXPECT_EQ(p.maxPagesPerSeq, 16);
        EXPECT_EQ(p.pageSizeLog2, 6);
        EXPECT_EQ(p.maxKvLen, 16 * 64);
        EXPECT_EQ(p.seqLenQ, 40);
        EXPECT_FALSE(p.causal);
        EXPECT_EQ(p.bidirBegin, a.bidirectionalBlockBegin);
        EXPECT_EQ(p.bidirEnd, a.bidirectionalBlockEnd);
        EXPECT_EQ(p.lseHeadStride, 40);
    }
    {
        fmha::PagedRaggedArgs a;
        a.q = addr(0x1000), a.pool = addr(0x5000), a.pageList = ints(0x6000), a.o = addr(0x2000);
        a.cuQSeqLens = ints(0x9000), a.cuKVSeqLens = ints(0x3000), a.totalQSeqLen = 70, a.maxQSeqLen = 33;
        a.numFlatPages = 50, a.maxPagesPerSeq = 8, a.tokensPerPage = 128, a.attentionScale = 0.25F;
        a.lse = reinterpret_cast<float*>(0x4000);
        fmha::FmhaParams const p = fmha::detail::paramsFor(r, a);
        EXPECT_EQ(p.cuQ, a.cuQSeqLens);
        EXPECT_EQ(p.totalQ, 70);
        EXPECT_EQ(p.maxSeqLenQ, 33);
        EXPECT_EQ(p.seqLenQ, 0);
        EXPECT_EQ(p.pageSizeLog2, 7);
        EXPECT_EQ(p.maxKvLen, 8 * 128);
        EXPECT_TRUE(p.causal);
        EXPECT_EQ(p.lseBatchStride, 0);
        EXPECT_EQ(p.lseHeadStride, 70);
        EXPECT_TRUE(p.lsePacked);
    }
    {
        FmhaRunner const vr(6, 6, 80);
        fmha::VitArgs a;
        a.q = addr(0x1000), a.k = addr(0x5000), a.v = addr(0x6000), a.o = addr(0x2000), a.cuSeqLens = ints(0x9000);
        a.totalSeqLen = 300, a.maxSeqLen = 200, a.batchSize = 2, a.attentionScale = 0.25F;
        fmha::FmhaParams const p = fmha::detail::paramsFor(vr, a);
        EXPECT_EQ(p.batch, 2);
        EXPECT_EQ(p.cuQ, a.cuSeqLens);
        EXPECT_EQ(p.cuKV, a.cuSeqLens);
        EXPECT_EQ(p.totalQ, 300);
        EXPECT_EQ(p.maxSeqLenQ, 200);
        EXPECT_EQ(p.maxKvLen, 300);
        EXPECT_EQ(p.k, a.k);
        EXPECT_EQ(p.v, a.v);
        EXPECT_TRUE(p.kvRowsFromCu);
        EXPECT_EQ(p.kvRowStride, 6 * 80);
        EXPECT_EQ(p.kvHeadStride, 80);
        EXPECT_FALSE(p.causal);
        EXPECT_EQ(p.window, INT_MAX);
        EXPECT_TRUE(p.lsePacked);
    }
}

// The launch plan: the portable walk's section size and where it applies.
TEST(LaunchPlan, WalkAndPackFollowTheKernel) {
    fmha::FmhaParams p;
    p.element = fmha::ElementKind::kFp16, p.headDim = 128, p.maxKvLen = 512, p.maxSeqLenQ = 512, p.causal = true;
    p.numQHeads = 16, p.numKVHeads = 16, p.headGroup = 1, p.batch = 32, p.seqLenQ = 512;
    EXPECT_EQ(fmha::detail::walkUnits(p), (16 << 20) / (2 * 2 * 128 * 512));  // 64 units of 256 KiB
    p.element = fmha::ElementKind::kFp8;
    EXPECT_EQ(fmha::detail::walkUnits(p), (16 << 20) / (2 * 128 * 512));
    p.maxSeqLenQ = 513;
    EXPECT_EQ(fmha::detail::walkUnits(p), 1);
    p.maxSeqLenQ = 512, p.window = 100;
    EXPECT_EQ(fmha::detail::walkUnits(p), 1);
    p.window = INT32_MAX, p.causal = false;
    EXPECT_EQ(fmha::detail::walkUnits(p), 1);
    p.causal = true;
    fmha::detail::KernelOps ops;
    ops.blockM = 128;
    fmha::detail::planLaunch(ops, &p);
    EXPECT_EQ(p.walkUnits, 1);  // an instance without a walking variant
    ops.walks = true;
    fmha::detail::planLaunch(ops, &p);
    EXPECT_GT(p.walkUnits, 1);
    EXPECT_EQ(p.packLog2, 0);
    p.numKVHeads = 4, p.headGroup = 4, p.seqLenQ = 16, p.maxSeqLenQ = 16;  // short chunks of a group of 4
    ops.packsGqa = true;
    fmha::detail::planLaunch(ops, &p);
    EXPECT_EQ(p.packLog2, 2);
}

// The automatic split-KV choice (heuristics.h; no GPU involved): a decode step over a long
// cache fills the idle SMs in either family; a grid that fills the GPU, a short cache, the
// contiguous-KV modes and skip-softmax stay unsplit; the workspace bound holds.
TEST(LaunchPlan, SplitKvFillsIdleSms) {
    int const sms = 132, smem = 227 * 1024;
    fmha::FmhaParams p;
    p.kvAddressing = fmha::KvAddressing::kPaged;
    p.headDim = 128, p.numQHeads = 32, p.numKVHeads = 8, p.headGroup = 4, p.batch = 1;
    p.seqLenQ = p.maxSeqLenQ = 1, p.maxKvLen = 128 * 1024, p.packLog2 = 2;
    fmha::detail::KernelOps hopper;  // 128 x 128 tiles, one CTA an SM, packs GQA
    hopper.blockM = 128, hopper.blockN = 128, hopper.smemBytes = 164864, hopper.packsGqa = true;
    EXPECT_EQ(fmha::detail::residentCtas(hopper, smem), 1);
    EXPECT_EQ(fmha::detail::unsplitCtas(p, hopper), 8);
    // Up to 33 parts (264 CTAs, two full waves); 15 is the fewest within 85% of that fill, and
    // one CTA an SM takes the 16th part the wave still holds (at most 16: the merge's batch).
    EXPECT_EQ(fmha::detail::splitParts(p, hopper, sms, smem), 16);
    auto withinBound = [&](fmha::detail::KernelOps const& ops, int parts) {
        return int64_t{parts} * p.batch * p.maxSeqLenQ * p.numQHeads <= fmha::detail::splitRowsBound(ops, sms, smem);
    };
    EXPECT_TRUE(withinBound(hopper, 16));
    fmha::detail::KernelOps portable;  // 128 x 64 tiles, two CTAs an SM, no pack GQA
    portable.blockM = 128, portable.blockN = 64, portable.smemBytes = 104544;
    p.packLog2 = 0;
    EXPECT_EQ(fmha::detail::residentCtas(portable, smem), 2);
    EXPECT_EQ(fmha::detail::unsplitCtas(p, portable), 32);
    EXPECT_EQ(fmha::detail::splitParts(p, portable, sms, smem), 7);  // 224 of 264 slots; at most 16 parts
    EXPECT_TRUE(withinBound(portable, 7));
    p.packLog2 = 2;
    // One consumer warpgroup (64 x 64 tiles, two CTAs an SM by shared memory): parts fill the
    // SMs once, as for the default tiles.
    fmha::detail::KernelOps oneWg = hopper;
    oneWg.blockM = 64, oneWg.blockN = 64, oneWg.smemBytes = 115712, oneWg.shape = fmha::TileShape::kOneWarpGroup;
    EXPECT_EQ(fmha::detail::residentCtas(oneWg, smem), 2);
    EXPECT_EQ(fmha::detail::splitParts(p, oneWg, sms, smem), 16);
    EXPECT_TRUE(withinBound(oneWg, 16));
    p.numQHeads = 32, p.numKVHeads = 4, p.headGroup = 8, p.packLog2 = 3;  // 4 CTAs: 29 parts, none added past 16
    EXPECT_EQ(fmha::detail::unsplitCtas(p, oneWg), 4);
    EXPECT_EQ(fmha::detail::splitParts(p, oneWg, sms, smem), 29);
    EXPECT_TRUE(withinBound(oneWg, 29));
    p.numKVHeads = 8, p.headGroup = 4, p.packLog2 = 2;
    p.batch = 8, p.maxKvLen = 32 * 1024;  // 64 CTAs: two parts fill 128 of 132 SMs
    EXPECT_EQ(fmha::detail::splitParts(p, hopper, sms, smem), 2);
    p.batch = 32;  // 256 CTAs fill the GPU
    EXPECT_EQ(fmha::detail::splitParts(p, hopper, sms, smem), 1);
    p.batch = 1, p.maxKvLen = 512;  // 4 tiles: a part needs kMinTilesPerPart
    EXPECT_EQ(fmha::detail::splitParts(p, hopper, sms, smem), 1);
    p.maxKvLen = 128 * 1024;
    p.skipFactor = 1.0F;
    EXPECT_EQ(fmha::detail::splitParts(p, hopper, sms, smem), 1);
    p.skipFactor = 0.0F;
    p.kvAddressing = fmha::KvAddressing::kStrided;
    EXPECT_EQ(fmha::detail::splitParts(p, hopper, sms, smem), 1);
}

// The split-KV setting: 0 (automatic), 1 (never) and forced counts up to kMaxSplits; other
// values are refused with a message and change nothing. A new runner holds no workspace.
// CTA pairs (heuristics.h, no GPU involved): grid.y's neighbours must be query heads of one KV
// head. Groups of 2 and 4 pair; 1 and 3 do not; a packed group (its heads in one tile) leaves
// none to pair, a partly packed group of 8 (two tiles of 4) does; no TMA descriptor or pairs
// turned off: none.
TEST(LaunchPlan, KvPairsOnlyWithinAKvHead) {
    fmha::FmhaParams p;
    auto ctas = [&](int hq, int hkv, int packLog2, bool kvTma = true) {
        p.numQHeads = hq, p.numKVHeads = hkv, p.headGroup = hq / hkv, p.packLog2 = packLog2;
        return fmha::detail::kvClusterCtas(p, kvTma, static_cast<unsigned>(hq >> packLog2));
    };
    EXPECT_EQ(ctas(8, 4, 0), 2U);
    EXPECT_EQ(ctas(32, 8, 0), 2U);
    EXPECT_EQ(ctas(8, 8, 0), 1U);
    EXPECT_EQ(ctas(12, 4, 0), 1U);
    EXPECT_EQ(ctas(6, 2, 0), 1U);   // groups of 3
    EXPECT_EQ(ctas(32, 8, 2), 1U);  // packed: one tile a KV head
    EXPECT_EQ(ctas(32, 4, 2), 2U);  // groups of 8 packed by 4: two tiles a KV head
    EXPECT_EQ(ctas(32, 8, 0, /*kvTma=*/false), 1U);
    int const previous = fmha::detail::setKvPairs(0);
    EXPECT_EQ(ctas(32, 8, 0), 1U);
    fmha::detail::setKvPairs(previous);
}

// K/V loads are marked evict-first only where one CTA (of each split-KV part) reads each K/V
// tile: one row tile holds every query row of a KV head.
TEST(LaunchPlan, KvEvictFirstOnlyWhereEachTileIsReadOnce) {
    if (std::getenv("FMHA_KV_HINT") != nullptr) GTEST_SKIP() << "FMHA_KV_HINT sets the hint of every launch";
    using fmha::detail::KvCachePriority;
    fmha::FmhaParams p;
    auto priority = [&](int lq, int hq, int hkv, int packLog2, int blockM) {
        p.maxSeqLenQ = lq, p.numQHeads = hq, p.numKVHeads = hkv, p.headGroup = hq / hkv, p.packLog2 = packLog2;
        return fmha::detail::kvCachePriority(p, blockM);
    };
    EXPECT_EQ(priority(1, 32, 8, 2, 64), KvCachePriority::kFirst);     // decode, the group packed
    EXPECT_EQ(priority(16, 32, 8, 2, 64), KvCachePriority::kFirst);    // 64 rows: one tile
    EXPECT_EQ(priority(17, 32, 8, 2, 64), KvCachePriority::kLast);     // two row tiles
    EXPECT_EQ(priority(16, 32, 8, 2, 128), KvCachePriority::kFirst);
    EXPECT_EQ(priority(1, 32, 8, 0, 64), KvCachePriority::kLast);      // four CTAs a KV head
    EXPECT_EQ(priority(1, 32, 4, 2, 64), KvCachePriority::kLast);      // groups of 8 packed by 4
    EXPECT_EQ(priority(1, 32, 32, 0, 64), KvCachePriority::kFirst);    // no GQA
    EXPECT_EQ(priority(4096, 32, 8, 2, 128), KvCachePriority::kLast);  // prefill
    EXPECT_EQ(priority(128, 16, 16, 0, 128), KvCachePriority::kFirst);
    EXPECT_EQ(priority(129, 16, 16, 0, 128), KvCachePriority::kLast);
}

TEST(SplitKvSetting, RangeAndWorkspace) {
    fmha::FmhaRunner r(8, 2, 128, 1, 1, 4096);
    EXPECT_EQ(r.splitKv(), 0);
    EXPECT_EQ(r.workspaceBytes(), 0U);
    for (int v : {0, 1, 2, 17, fmha::FmhaRunner::kMaxSplits}) {
        EXPECT_TRUE(r.setSplitKv(v)) << fmha::lastError();
        EXPECT_EQ(r.splitKv(), v);
    }
    for (int v : {-1, fmha::FmhaRunner::kMaxSplits + 1, INT_MIN}) {
        EXPECT_FALSE(r.setSplitKv(v));
        EXPECT_NE(std::string(fmha::lastError()).find("setSplitKv"), std::string::npos) << fmha::lastError();
        EXPECT_EQ(r.splitKv(), fmha::FmhaRunner::kMaxSplits);
    }
    fmha_runner* c = fmha_runner_create(8, 2, 128, 1, 1, 4096);
    ASSERT_NE(c, nullptr);
    EXPECT_TRUE(fmha_runner_set_split_kv(c, 3));
    EXPECT_FALSE(fmha_runner_set_split_kv(c, 65));
    EXPECT_EQ(fmha_runner_workspace_bytes(c), 0U);
    fmha_runner_destroy(c);
}

// Which launches pack GQA (the Hopper family's host-side choice; no GPU involved).
TEST(PackGqaChoice, ShortChunksOfPowerOfTwoGroupsPack) {
    int const previous = fmha::detail::setPackGqa(-1);
    fmha::FmhaParams p;
    p.numQHeads = 32;
    p.numKVHeads = 8;
    p.headGroup = 4;
    p.batch = 16;
    auto lq = [&p](int n) {
        p.seqLenQ = p.maxSeqLenQ = n;
        return fmha::detail::choosePackLog2(p, 128);
    };
    EXPECT_EQ(lq(1), 2);
    EXPECT_EQ(lq(16), 2);
    EXPECT_EQ(lq(64), 2);
    EXPECT_EQ(lq(77), 2);    // 77 of 128 rows filled; packed, 308 of 384
    EXPECT_EQ(lq(128), 0);   // full tiles already
    EXPECT_EQ(lq(1000), 0);  // 1000 of 1024 either way
    EXPECT_EQ(lq(4096), 0);
    p.headGroup = 8;
    p.numQHeads = 64;
    EXPECT_EQ(lq(16), 3);
    p.headGroup = 6;  // not a power of two: never
    p.numQHeads = 48;
    EXPECT_EQ(lq(16), 0);
    p.headGroup = 1;
    p.numQHeads = 8;
    EXPECT_EQ(lq(16), 0);
    p.headGroup = 256;  // more heads than a tile has rows
    p.numQHeads = 2048;
    EXPECT_EQ(lq(1), 0);

    // Ragged: the mean length decides (100 rows over 4 sequences).
    int32_t const cu[5] = {0, 10, 20, 30, 100};
    p.headGroup = 4;
    p.numQHeads = 32;
    p.batch = 4;
    p.cuQ = cu;
    p.totalQ = 100;
    p.maxSeqLenQ = 70;
    EXPECT_EQ(fmha::detail::choosePackLog2(p, 128), 2);
    // Packed rows must stay int32.
    p.totalQ = INT32_MAX / 2;
    p.maxSeqLenQ = INT32_MAX / 2;
    EXPECT_EQ(fmha::detail::choosePackLog2(p, 128), 0);
    p.cuQ = nullptr;

    // The setting: 1 packs wherever it can, 0 never.
    p.batch = 16;
    fmha::detail::setPackGqa(1);
    EXPECT_EQ(lq(4096), 2);
    p.headGroup = 6;
    p.numQHeads = 48;
    EXPECT_EQ(lq(16), 0);
    p.headGroup = 4;
    p.numQHeads = 32;
    fmha::detail::setPackGqa(0);
    EXPECT_EQ(lq(16), 0);
    EXPECT_EQ(fmha::detail::setPackGqa(previous), 0);
}

// Which Hopper tile shape the runner asks for (host-side; no GPU involved): the ViT mode's key
// count is its longest sequence's, not the packed total of all sequences.
TEST(TileShapeChoice, LongestSequenceDecides) {
    int const previous = fmha::detail::setTileShape(-1);
    fmha::FmhaRunner const runner(32, 32, 64, 32, 0, 0);
    auto vit = [&](fmha::DataType dt, int batch, int maxLen) {
        fmha::VitArgs a;
        a.inputType = dt;
        a.batchSize = batch;
        a.maxSeqLen = maxLen;
        a.totalSeqLen = batch * maxLen;
        return fmha::detail::tileShapeFor(fmha::detail::paramsFor(runner, a));
    };
    // 16k keys in all, 512 a sequence: not the 256-key tiles; one consumer warpgroup (at most
    // 1024 queries and keys).
    EXPECT_EQ(vit(fmha::DataType::kFP8, 32, 512), fmha::TileShape::kOneWarpGroup);
    // FP8 D=64 past 1024 keys (non-causal) or 2048 (causal): three consumer warpgroups, ahead of the
    // 256-key tiles and the persistent kernel.
    EXPECT_EQ(vit(fmha::DataType::kFP8, 4, 4096), fmha::TileShape::kThreeWarpGroups);
    EXPECT_EQ(vit(fmha::DataType::kFP8, 16, 1024), fmha::TileShape::kOneWarpGroup);
    EXPECT_EQ(vit(fmha::DataType::kFP8, 8, 2048), fmha::TileShape::kThreeWarpGroups);
    for (int keys : {2048, 4096}) {
        fmha::FmhaRunner const llm64(32, 32, 64, 1, keys, keys);
        fmha::LlmArgs l;
        l.inputType = fmha::DataType::kFP8;
        EXPECT_EQ(fmha::detail::tileShapeFor(fmha::detail::paramsFor(llm64, l)),
                  keys <= 2048 ? fmha::TileShape::kOneWarpGroup : fmha::TileShape::kThreeWarpGroups);
    }
    EXPECT_EQ(vit(fmha::DataType::kHALF, 32, 512), fmha::TileShape::kOneWarpGroup);
    EXPECT_EQ(vit(fmha::DataType::kBF16, 16, 1024), fmha::TileShape::kOneWarpGroup);
    for (int keys : {512, 1024, 2048}) {  // causal: one consumer warpgroup up to 1024 keys (FP8 2048)
        fmha::FmhaRunner const llm(32, 32, 64, 16384 / keys, keys, keys);
        fmha::LlmArgs l;
        fmha::TileShape const sixteen = keys <= 1024 ? fmha::TileShape::kOneWarpGroup : fmha::TileShape::kPersistent;
        EXPECT_EQ(fmha::detail::tileShapeFor(fmha::detail::paramsFor(llm, l)), sixteen);
        l.inputType = fmha::DataType::kBF16;
        EXPECT_EQ(fmha::detail::tileShapeFor(fmha::detail::paramsFor(llm, l)), sixteen);
        l.inputType = fmha::DataType::kFP8;
        EXPECT_EQ(fmha::detail::tileShapeFor(fmha::detail::paramsFor(llm, l)), fmha::TileShape::kOneWarpGroup);
    }
    {  // FP8, 512 queries over a cache of 4096 keys: past the one-warpgroup shape's 1024 keys
        fmha::FmhaRunner const chunk(32, 32, 64, 4, 512, 4096);
        fmha::LlmArgs l;
        l.inputType = fmha::DataType::kFP8;
        EXPECT_EQ(fmha::detail::tileShapeFor(fmha::detail::paramsFor(chunk, l)), fmha::TileShape::kThreeWarpGroups);
    }
    // 16-bit D=64 past the one-warpgroup shape's 1024 queries: three consumer warpgroups, except
    // where the persistent kernel runs (causal of at most 8192 keys) and under skip-softmax.
    EXPECT_EQ(vit(fmha::DataType::kHALF, 4, 4096), fmha::TileShape::kThreeWarpGroups);
    EXPECT_EQ(vit(fmha::DataType::kBF16, 1, 2048), fmha::TileShape::kThreeWarpGroups);
    for (int keys : {4096, 8192, 16384}) {
        fmha::FmhaRunner const llm64(32, 32, 64, 1, keys, keys);
        fmha::LlmArgs l;
        EXPECT_EQ(fmha::detail::tileShapeFor(fmha::detail::paramsFor(llm64, l)),
                  keys <= 8192 ? fmha::TileShape::kPersistent : fmha::TileShape::kThreeWarpGroups);
        l.skipSoftmaxScaleFactor = 1.0F;
        EXPECT_EQ(fmha::detail::tileShapeFor(fmha::detail::paramsFor(llm64, l)), fmha::TileShape::kDefault);
    }
    // Paged 16-bit D=65-128 with at most 64 query rows a KV head (decode steps, small chunks)
    // over pages of 64 and up: one consumer warpgroup; more rows, pages of 16, FP8 or
    // skip-softmax: not.
    for (int lq : {1, 16, 17}) {
        fmha::FmhaRunner const paged(32, 8, 128, 4, lq, 32768);
        fmha::PagedArgs a;
        a.tokensPerPage = 128;
        EXPECT_EQ(fmha::detail::tileShapeFor(fmha::detail::paramsFor(paged, a)) == fmha::TileShape::kOneWarpGroup,
                  lq <= 16);
        a.tokensPerPage = 16;  // four boxes a 64-key tile: the default tiles
        EXPECT_NE(fmha::detail::tileShapeFor(fmha::detail::paramsFor(paged, a)), fmha::TileShape::kOneWarpGroup);
        a.tokensPerPage = 64;
        EXPECT_EQ(fmha::detail::tileShapeFor(fmha::detail::paramsFor(paged, a)) == fmha::TileShape::kOneWarpGroup,
                  lq <= 16);
        a.skipSoftmaxScaleFactor = 1.0F;
        EXPECT_EQ(fmha::detail::tileShapeFor(fmha::detail::paramsFor(paged, a)), fmha::TileShape::kDefault);
        a.skipSoftmaxScaleFactor = 0.0F;
        a.inputType = fmha::DataType::kFP8;
        EXPECT_NE(fmha::detail::tileShapeFor(fmha::detail::paramsFor(paged, a)), fmha::TileShape::kOneWarpGroup);
    }
    fmha::detail::setTileShape(static_cast<int>(fmha::TileShape::kDefault));  // forced
    EXPECT_EQ(vit(fmha::DataType::kHALF, 32, 512), fmha::TileShape::kDefault);
    fmha::detail::setTileShape(-1);

    // Head dims 65-128 (the D=128 kernel): persistent where causal of at most 8192 keys or
    // non-causal of at most 1024.
    for (int d : {80, 128}) {
        fmha::FmhaRunner const vit128(16, 16, d, 32, 0, 0);
        fmha::VitArgs v;
        v.batchSize = 32;
        v.maxSeqLen = 512;
        v.totalSeqLen = 32 * 512;
        EXPECT_EQ(fmha::detail::tileShapeFor(fmha::detail::paramsFor(vit128, v)), fmha::TileShape::kPersistent);
        v.batchSize = 4;
        v.maxSeqLen = 4096;
        v.totalSeqLen = 4 * 4096;
        EXPECT_EQ(fmha::detail::tileShapeFor(fmha::detail::paramsFor(vit128, v)), fmha::TileShape::kDefault);
        v.batchSize = 8;
        v.maxSeqLen = 2048;
        v.totalSeqLen = 8 * 2048;
        EXPECT_EQ(fmha::detail::tileShapeFor(fmha::detail::paramsFor(vit128, v)), fmha::TileShape::kDefault);
        fmha::FmhaRunner const llm(16, 16, d, 4, 4096, 4096);  // causal prefill over 4k keys
        fmha::LlmArgs l;
        EXPECT_EQ(fmha::detail::tileShapeFor(fmha::detail::paramsFor(llm, l)), fmha::TileShape::kPersistent);
        fmha::FmhaRunner const llm16k(16, 16, d, 1, 16384, 16384);
        EXPECT_EQ(fmha::detail::tileShapeFor(fmha::detail::paramsFor(llm16k, l)), fmha::TileShape::kDefault);
    }
    // D=256 (no persistent kernel): 16-bit over contiguous KV from 4096 keys a sequence, 80-key
    // tiles (kWideKeys); FP8, skip-softmax, paged KV and shorter sequences the default tiles.
    for (int keys : {512, 2048, 4095, 4096, 16384}) {
        fmha::FmhaRunner const llm256(8, 8, 256, 1, keys, keys);
        fmha::LlmArgs l;
        fmha::TileShape const wide = keys >= 4096 ? fmha::TileShape::kWideKeys : fmha::TileShape::kDefault;
        EXPECT_EQ(fmha::detail::tileShapeFor(fmha::detail::paramsFor(llm256, l)), wide);
        l.slidingWindowSize = 300;  // every mask
        EXPECT_EQ(fmha::detail::tileShapeFor(fmha::detail::paramsFor(llm256, l)), wide);
        l.inputType = fmha::DataType::kBF16;
        EXPECT_EQ(fmha::detail::tileShapeFor(fmha::detail::paramsFor(llm256, l)), wide);
        l.inputType = fmha::DataType::kFP8;
        EXPECT_EQ(fmha::detail::tileShapeFor(fmha::detail::paramsFor(llm256, l)), fmha::TileShape::kDefault);
        l.inputType = fmha::DataType::kHALF;
        l.skipSoftmaxScaleFactor = 1.0F;
        EXPECT_EQ(fmha::detail::tileShapeFor(fmha::detail::paramsFor(llm256, l)), fmha::TileShape::kDefault);
        fmha::PagedArgs a;
        a.tokensPerPage = 64;
        EXPECT_EQ(fmha::detail::tileShapeFor(fmha::detail::paramsFor(llm256, a)), fmha::TileShape::kDefault);
        fmha::FmhaRunner const vit256(8, 8, 256, 4, 0, 0);
        fmha::VitArgs v;
        v.batchSize = 4;
        v.maxSeqLen = keys;
        v.totalSeqLen = 4 * keys;
        EXPECT_EQ(fmha::detail::tileShapeFor(fmha::detail::paramsFor(vit256, v)), wide);
    }
    fmha::detail::setTileShape(previous);
}

// The persistent kernel's work items (host and device share PersistentTiles): over sections of
// every size, with and without the causal pairs and pack GQA, the items' tiles are every
// (row tile, unit, sequence) exactly once, and a pair's two tiles see rowTiles + 1 key tiles
// of a square causal problem between them.
TEST(PersistentTiles, ItemsCoverEveryTileOnce) {
    for (bool causal : {false, true})
        for (int maxLen : {1, 127, 128, 129, 512, 640, 1000})
            for (int packLog2 : {0, 2})
                for (int sectionUnits : {1, 3, 7, 64, 1000}) {
                    fmha::FmhaParams p;
                    p.causal = causal;
                    p.maxSeqLenQ = maxLen;
                    p.packLog2 = packLog2;
                    p.numQHeads = 8;
                    p.batch = 3;
                    p.persistUnits = sectionUnits;
                    fmha::PersistentTiles const tiles(p, 128);
                    int const rowTiles = ((maxLen << packLog2) + 127) / 128, units = 8 >> packLog2;
                    SCOPED_TRACE(testing::Message() << "causal " << causal << " maxLen " << maxLen << " pack "
                                                    << packLog2 << " section " << sectionUnits);
                    ASSERT_EQ(tiles.rowTiles, rowTiles);
                    std::vector<int> seen(static_cast<size_t>(rowTiles * units * 3), 0);
                    for (int w = 0; w < tiles.items; ++w) {
                        int keyTiles = 0, count = 0;
                        for (int half = 0; half < 2; ++half) {
                            int m = -1, u = -1, b = -1;
                            if (!tiles.decode(w, half, &m, &u, &b)) continue;
                            ASSERT_TRUE(m >= 0 && m < rowTiles && u >= 0 && u < units && b >= 0 && b < 3);
                            ++seen[static_cast<size_t>((b * units + u) * rowTiles + m)];
                            keyTiles += m + 1;
                            ++count;
                        }
                        ASSERT_GE(count, 1);
                        if (causal && count == 2) EXPECT_EQ(keyTiles, rowTiles + 1);
                    }
                    for (size_t i = 0; i < seen.size(); ++i) ASSERT_EQ(seen[i], 1) << "tile " << i;
                }
}

// CTA pairs over the persistent items: the two CTAs of a cluster take the same row tiles of the
// same sequence, CTA r the unit 2u + r (neighbouring heads), and together every tile once.
TEST(PersistentTiles, PairsTakeNeighbouringUnitsOfTheSameTiles) {
    for (bool causal : {false, true})
        for (int maxLen : {1, 129, 640})
            for (int sectionUnits : {1, 3, 1000}) {
                fmha::FmhaParams p;
                p.causal = causal;
                p.maxSeqLenQ = maxLen;
                p.numQHeads = 8;
                p.batch = 3;
                p.persistUnits = sectionUnits;
                fmha::PersistentTiles const tiles(p, 128, 2);
                fmha::PersistentTiles const single(p, 128);
                int const rowTiles = (maxLen + 127) / 128;
                SCOPED_TRACE(testing::Message() << "causal " << causal << " maxLen " << maxLen << " section "
                                                << sectionUnits);
                ASSERT_EQ(tiles.clusterCtas, 2);
                ASSERT_EQ(tiles.items * 2, single.items);  // a cluster's item: two CTAs' tiles
                std::vector<int> seen(static_cast<size_t>(rowTiles * 8 * 3), 0);
                for (int w = 0; w < tiles.items; ++w)
                    for (int half = 0; half < 2; ++half) {
                        int m[2], u[2], b[2];
                        bool has[2];
                        for (int r = 0; r < 2; ++r) has[r] = tiles.decode(w, half, &m[r], &u[r], &b[r], r);
                        ASSERT_EQ(has[0], has[1]);
                        if (!has[0]) continue;
                        EXPECT_EQ(m[0], m[1]);
                        EXPECT_EQ(b[0], b[1]);
                        EXPECT_EQ(u[0] % 2, 0);
                        EXPECT_EQ(u[1], u[0] + 1);
                        for (int r = 0; r < 2; ++r) {
                            ASSERT_TRUE(m[r] >= 0 && m[r] < rowTiles && u[r] >= 0 && u[r] < 8 && b[r] >= 0 && b[r] < 3);
                            ++seen[static_cast<size_t>((b[r] * 8 + u[r]) * rowTiles + m[r])];
                        }
                    }
                for (size_t i = 0; i < seen.size(); ++i) ASSERT_EQ(seen[i], 1) << "tile " << i;
            }
}

}  // namespace
