// Harness implementation: random problems with poisoned unused memory, GPU and reference runs,
// and the error budget.
#include "problems.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <numeric>
#include <random>
#include <sstream>
#include <thread>
#include <vector>

#include <cuda_runtime_api.h>

#include "internals.h"

namespace fmha::harness {
namespace {

int elemBytes(DataType t) { return t == DataType::kFP8 ? 1 : 2; }

// Stores x (already divided by the FP8 scale where there is one) at element idx.
void store(std::vector<uint8_t>& buf, int64_t idx, float x, DataType t) {
    if (t == DataType::kFP8) {
        buf[static_cast<size_t>(idx)] = num::floatToE4m3(x);
        return;
    }
    uint16_t const bits = t == DataType::kBF16 ? num::floatToBf16(x) : num::floatToHalf(x);
    std::memcpy(&buf[static_cast<size_t>(idx) * 2], &bits, 2);
}

// Counter-based random values: value i of a stream is a hash of (stream key, i), so that any
// part of a buffer is filled on its own and the result does not depend on the order or the
// thread count (SplitMix64's finaliser as the hash).
uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}
// Uniform in [-range, range) (24 random bits), value i of the stream with this key.
float uniformAt(uint64_t key, int64_t i, float range) {
    uint64_t const r = mix64(key + static_cast<uint64_t>(i) * 0x9E3779B97F4A7C15ULL);
    return range * (static_cast<float>(r >> 40) * 0x1p-23F - 1.0F);
}
// A stream key from the problem's seed and a stream name.
uint64_t streamKey(uint64_t seed, uint64_t stream) { return mix64(seed ^ mix64(stream + 0x5EED)); }

// f(i) for i in [0, n), in contiguous ranges on the host's threads (inputs of up to a few GB
// take seconds on one thread).
template <class F>
void parallelFor(int64_t n, F const& f) {
    int64_t const threads = std::clamp<int64_t>(std::thread::hardware_concurrency(), 1, 64);
    int64_t const parts = std::min<int64_t>(threads, std::max<int64_t>(1, n / 4096));
    if (parts <= 1) {
        for (int64_t i = 0; i < n; ++i) f(i);
        return;
    }
    std::vector<std::thread> pool;
    pool.reserve(static_cast<size_t>(parts));
    for (int64_t t = 0; t < parts; ++t)
        pool.emplace_back([&f, n, parts, t] {
            for (int64_t i = n * t / parts, end = n * (t + 1) / parts; i < end; ++i) f(i);
        });
    for (std::thread& th : pool) th.join();
}

void fillNaN(std::vector<uint8_t>& buf, DataType t) {
    if (t == DataType::kFP8) {
        std::fill(buf.begin(), buf.end(), uint8_t{0x7F});
        return;
    }
    uint16_t const nan = t == DataType::kBF16 ? 0x7FC0 : 0x7E00;
    for (size_t i = 0; i + 1 < buf.size(); i += 2) std::memcpy(&buf[i], &nan, 2);
}

std::vector<int32_t> prefix(std::vector<int32_t> const& len) {
    std::vector<int32_t> cu(len.size() + 1, 0);
    for (size_t i = 0; i < len.size(); ++i) cu[i + 1] = cu[i] + len[i];
    return cu;
}

struct DeviceBuffer {
    void* ptr = nullptr;
    ~DeviceBuffer() {
        if (ptr) cudaFree(ptr);
    }
    bool alloc(size_t bytes) { return cudaMalloc(&ptr, std::max<size_t>(bytes, 16)) == cudaSuccess; }
    template <class T>
    bool upload(std::vector<T> const& v) {
        if (!alloc(v.size() * sizeof(T))) return false;
        return v.empty() || cudaMemcpy(ptr, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice) == cudaSuccess;
    }
    template <class T>
    T* as() const {
        return static_cast<T*>(ptr);
    }
};

}  // namespace

std::string HostProblem::describe() const {
    std::ostringstream os;
    os << modeName(spec.mode) << " " << dataTypeName(spec.dtype) << " B=" << spec.lk.size() << " H=" << spec.numQHeads
       << "/" << spec.numKVHeads << " D=" << spec.headDim;
    auto list = [&](char const* name, std::vector<int32_t> const& v) {
        os << " " << name << "=";
        for (size_t i = 0; i < v.size() && i < 4; ++i) os << (i ? "," : "") << v[i];
        if (v.size() > 4) os << ",...";
    };
    list("Lq", spec.lq);
    list("Lk", spec.lk);
    if (spec.mode == Mode::kPaged || spec.mode == Mode::kPagedRagged) os << " page=" << spec.pageSize;
    if (spec.mode == Mode::kPaged && !spec.causal) os << " non-causal";
    if (spec.window != INT_MAX) os << " window=" << spec.window;
    if (spec.bidirectional) os << " bidir";
    if (spec.bf16Out) os << " bf16-out";
    if (spec.skip > 0) os << " skip=" << spec.skip;
    if (spec.splits != 0) os << " splits=" << spec.splits;
    if (spec.tileShape >= 0) os << " shape=" << spec.tileShape;
    if (spec.graph != 0) os << (spec.graph == 1 ? " [graph]" : " [graph, no preflight]");
    if (spec.runs > 1) os << " runs=" << spec.runs;
    if (spec.cApi) os << " [C API]";
    return os.str();
}

namespace {

// Rewrites an LLM or paged problem's Q and K (makeProblem's spec.structured). The keys fall into
// segments of spec.structuredSegment positions, segment s holding the basis vector
// e_(s mod kEmbed) times kAmp in dims 0..kEmbed-1; a query holds its own segment's vector plus kPrev
// (spec.structuredPrev) times the previous segment's (normalised), so that its scores are
// about 189 on its own segment, 66 on the previous one and 0 elsewhere (kPrev 0.35; 175 and
// 96 at 0.55). Dim kEmbed marks the heavy-hitter keys (the first 64 and
// three random blocks of 64: +100 for every query); the other dims are noise in [-1, 1]
// (score noise of std 2.6 at D=128). A query's segment is that of its own key position
// (bottom-right aligned). FP8: Q and K take the scale kAmp / 224, so that the largest value is
// stored as 224 (E4M3 keeps 4 significant bits: scores within a few percent of the above).
void structureScores(HostProblem& p, std::mt19937_64& rng) {
    constexpr int kEmbed = 64, kBlock = 64;
    int const segment = std::max(1, p.spec.structuredSegment);
    constexpr float kAmp = 14.142F, kHeavy = 10.0F;
    float const kPrev = p.spec.structuredPrev;
    ProblemSpec const& s = p.spec;
    DataType const t = s.dtype;
    int32_t const B = static_cast<int32_t>(s.lk.size()), Hq = s.numQHeads, Hkv = s.numKVHeads, D = s.headDim;
    int32_t const sq = p.shape.seqLenQ, cap = p.shape.kvCacheCapacity;
    if (D <= kEmbed) return;
    if (t == DataType::kFP8) p.qScale = p.kScale = kAmp / 224.0F;
    float const qInv = 1.0F / p.qScale, kInv = 1.0F / p.kScale;  // (1 in 16-bit)
    // The first element of K row j of (sequence b, KV head h): the cache, or the pool's page.
    auto kRow = [&](int32_t b, int32_t h, int32_t j) -> int64_t {
        if (s.mode == Mode::kLlm) return ((int64_t{b} * 2 * Hkv + h) * cap + j) * D;
        int32_t const T = s.pageSize;
        int32_t const page = p.pageTable[static_cast<size_t>(b) * 2 * p.maxPagesPerSeq + j / T];
        return ((int64_t{page} * T + j % T) * Hkv + h) * D;
    };
    // Noise from counter-based streams of its own (uniformAt), by element index.
    uint64_t const kNoise = streamKey(s.seed, 4), qNoise = streamKey(s.seed, 5);
    float const norm = 1.0F / std::sqrt(1.0F + kPrev * kPrev);
    for (int32_t b = 0; b < B; ++b) {
        int32_t const lk = s.lk[b];
        std::vector<bool> heavy(static_cast<size_t>(lk), false);
        for (int32_t j = 0; j < std::min(lk, kBlock); ++j) heavy[static_cast<size_t>(j)] = true;
        for (int n = 0; n < 3 && lk > kBlock; ++n) {
            int32_t const j0 = static_cast<int32_t>(rng() % static_cast<uint64_t>(lk / kBlock)) * kBlock;
            for (int32_t j = j0; j < std::min(lk, j0 + kBlock); ++j) heavy[static_cast<size_t>(j)] = true;
        }
        parallelFor(int64_t{Hkv} * lk, [&](int64_t u) {
            int32_t const h = static_cast<int32_t>(u / lk), j = static_cast<int32_t>(u % lk);
            int32_t const seg = (j / segment) % kEmbed;
            int64_t const base = kRow(b, h, j);
            for (int32_t d = 0; d < D; ++d) {
                float x = d == seg ? kAmp : 0.0F;
                if (d == kEmbed) x = heavy[static_cast<size_t>(j)] ? kHeavy : 0.0F;
                if (d > kEmbed) x = uniformAt(kNoise, base + d, 1.0F);
                store(p.k, base + d, x * kInv, t);
            }
        });
        parallelFor(int64_t{sq} * Hq, [&](int64_t u) {
            int32_t const i = static_cast<int32_t>(u / Hq), h = static_cast<int32_t>(u % Hq);
            int32_t const pos = i + lk - sq, seg = pos / segment;
            int64_t const base = ((int64_t{b} * sq + i) * Hq + h) * D;
            for (int32_t d = 0; d < D; ++d) {
                float x = 0.0F;
                if (d == seg % kEmbed) x = kAmp * norm;
                if (seg > 0 && d == (seg - 1) % kEmbed) x = kAmp * kPrev * norm;
                if (d == kEmbed) x = kHeavy;
                if (d > kEmbed) x = uniformAt(qNoise, base + d, 1.0F);
                store(p.q, base + d, x * qInv, t);
            }
        });
    }
}

}  // namespace

HostProblem makeProblem(ProblemSpec const& specIn) {
    HostProblem p;
    p.spec = specIn;
    ProblemSpec& spec = p.spec;
    if ((spec.mode == Mode::kLlm || spec.mode == Mode::kPaged) && !spec.lq.empty())  // one S_q for all
        spec.lq.assign(spec.lk.size(), spec.lq[0]);
    if (spec.mode == Mode::kVit) spec.lk = spec.lq;
    std::mt19937_64 rng(spec.seed);
    float const range = spec.valueRange;
    // Q, K and V values: counter-based streams (uniformAt), each element's value a function of
    // the seed and its index in its buffer, filled in parallel.
    uint64_t const qKey = streamKey(spec.seed, 1), kKey = streamKey(spec.seed, 2), vKey = streamKey(spec.seed, 3);
    DataType const t = spec.dtype;
    int32_t const B = static_cast<int32_t>(spec.lk.size());
    int32_t const Hq = spec.numQHeads, Hkv = spec.numKVHeads, D = spec.headDim;
    bool const fp8 = t == DataType::kFP8;
    if (fp8) {  // values up to ~240 in E4M3 keep 4 significant bits
        p.qScale = spec.valueRange / 240.0F;
        p.kScale = spec.valueRange / 200.0F;
        p.vScale = maxAbsV(spec) / 224.0F;
    }
    auto valueAt = [&](uint64_t key, int64_t i) { return (uniformAt(key, i, range) + spec.valueOffset) / p.vScale; };
    int32_t const maxLk = B ? *std::max_element(spec.lk.begin(), spec.lk.end()) : 0;
    int32_t const maxLq = B ? *std::max_element(spec.lq.begin(), spec.lq.end()) : 0;
    p.shape.numQHeads = Hq;
    p.shape.numKVHeads = Hkv;
    p.shape.headDim = D;
    p.shape.batchSize = B;
    p.maxQ = std::max(1, maxLq);
    p.cuKV = prefix(spec.lk);
    p.cuQ = prefix(spec.lq);
    p.totalQ = p.cuQ.back();
    int32_t const sq = (spec.mode == Mode::kLlm || spec.mode == Mode::kPaged) ? (B ? spec.lq[0] : 0) : 0;
    p.shape.seqLenQ = sq;
    int64_t const qRows = (spec.mode == Mode::kLlm || spec.mode == Mode::kPaged) ? int64_t{B} * sq : p.totalQ;
    int64_t const qElems = qRows * Hq * D;
    p.q.resize(static_cast<size_t>(qElems * elemBytes(t)));
    parallelFor(qElems, [&](int64_t i) { store(p.q, i, uniformAt(qKey, i, range) / p.qScale, t); });
    p.oElems = qElems;
    p.lseElems = qRows * Hq;

    if (spec.mode == Mode::kLlm) {
        int32_t const cap = spec.capacity > 0 ? spec.capacity : maxLk + 5;
        p.shape.kvCacheCapacity = cap;
        p.k.resize(static_cast<size_t>(int64_t{B} * 2 * Hkv * cap * D * elemBytes(t)));
        fillNaN(p.k, t);
        // Row r = ((b * 2 + w) * Hkv + h) * cap + j of the cache (w: 0 K, 1 V); rows past lk stay NaN.
        parallelFor(int64_t{B} * 2 * Hkv * cap, [&](int64_t r) {
            int64_t const bwh = r / cap;
            int32_t const j = static_cast<int32_t>(r % cap), w = static_cast<int32_t>(bwh / Hkv % 2);
            if (j >= spec.lk[static_cast<size_t>(bwh / (2 * Hkv))]) return;
            for (int32_t d = 0; d < D; ++d)
                store(p.k, r * D + d, w ? valueAt(vKey, r * D + d) : uniformAt(kKey, r * D + d, range) / p.kScale, t);
        });
    } else if (spec.mode == Mode::kVit) {
        p.shape.kvCacheCapacity = 0;
        p.k.resize(static_cast<size_t>(p.totalQ) * Hq * D * elemBytes(t));
        p.v.resize(p.k.size());
        parallelFor(int64_t{p.totalQ} * Hq * D, [&](int64_t i) {
            store(p.k, i, uniformAt(kKey, i, range) / p.kScale, t);
            store(p.v, i, valueAt(vKey, i), t);
        });
        p.cuKV = p.cuQ;
    } else {  // paged pool, pages in random order, spare pages and slots hold NaN
        int32_t const T = spec.pageSize;
        p.maxPagesPerSeq = (maxLk + T - 1) / T + 1;
        p.shape.kvCacheCapacity = p.maxPagesPerSeq * T;
        int32_t used = 0;
        for (int32_t b = 0; b < B; ++b) used += 2 * ((spec.lk[b] + T - 1) / T);
        p.numPages = std::max(1, used + spec.sparepages);  // a pool holds a page even when no sequence has a key
        std::vector<int32_t> ids(static_cast<size_t>(p.numPages));
        std::iota(ids.begin(), ids.end(), 0);
        std::shuffle(ids.begin(), ids.end(), rng);
        p.pageTable.assign(static_cast<size_t>(B) * 2 * p.maxPagesPerSeq, -1);
        p.k.resize(static_cast<size_t>(int64_t{p.numPages} * T * Hkv * D * elemBytes(t)));
        fillNaN(p.k, t);
        struct PageFill {
            int32_t page, w, keys;  // the pool page, K (0) or V (1), the keys it holds
        };
        std::vector<PageFill> fills;
        size_t next = 0;
        for (int32_t b = 0; b < B; ++b)
            for (int32_t w = 0; w < 2; ++w)
                for (int32_t pg = 0; pg < (spec.lk[b] + T - 1) / T; ++pg) {
                    int32_t const page = ids[next++];
                    p.pageTable[(static_cast<size_t>(b) * 2 + w) * p.maxPagesPerSeq + pg] = page;
                    fills.push_back({page, w, std::min(T, spec.lk[b] - pg * T)});
                }
        // Slot s of a page holds Hkv * D values; slots past the sequence's last key stay NaN.
        parallelFor(static_cast<int64_t>(fills.size()) * T, [&](int64_t u) {
            PageFill const& f = fills[static_cast<size_t>(u / T)];
            int32_t const s = static_cast<int32_t>(u % T);
            if (s >= f.keys) return;
            int64_t const base = (int64_t{f.page} * T + s) * Hkv * D;
            for (int64_t e = base; e < base + int64_t{Hkv} * D; ++e)
                store(p.k, e, f.w ? valueAt(vKey, e) : uniformAt(kKey, e, range) / p.kScale, t);
        });
        if (spec.bidirectional && spec.mode == Mode::kPaged) {
            p.bidirBegin.assign(static_cast<size_t>(B) * sq, -1);
            p.bidirEnd.assign(static_cast<size_t>(B) * sq, -1);
            for (int32_t b = 0; b < B; ++b) {
                int32_t const off = spec.lk[b] - sq;
                int32_t row = static_cast<int32_t>(rng() % std::max(1, sq / 3 + 1));
                while (row < sq) {  // disjoint vision runs separated by text
                    int32_t const len = 1 + static_cast<int32_t>(rng() % std::max(1, sq / 3));
                    int32_t const r1 = std::min(sq - 1, row + len - 1);
                    int32_t const begin = std::max(0, row + off), end = r1 + off;
                    if (end >= 0)
                        for (int32_t r = row; r <= r1; ++r) {
                            p.bidirBegin[static_cast<size_t>(b) * sq + r] = begin;
                            p.bidirEnd[static_cast<size_t>(b) * sq + r] = end;
                        }
                    row = r1 + 2 + static_cast<int32_t>(rng() % std::max(1, sq / 4 + 1));
                }
            }
        }
    }
    if (spec.structured && (spec.mode == Mode::kLlm || spec.mode == Mode::kPaged)) structureScores(p, rng);
    return p;
}

ref::Options lowpOptions(HostProblem const& p, std::string const& family) {
    ref::Options o;
    o.roundP = true;
    if (family == "sm90" && p.spec.dtype == DataType::kFP8) o.pE4m3Scale = sm90::TileSm90<128, 1>::kPScale;
    return o;
}

bool gpuAvailable(std::string* why) {
    int n = 0;
    cudaError_t err = cudaGetDeviceCount(&n);
    if (err != cudaSuccess || n == 0) {
        cudaGetLastError();
        if (why) *why = std::string("no CUDA GPU: ") + (err != cudaSuccess ? cudaGetErrorString(err) : "0 devices");
        return false;
    }
    return true;
}

std::vector<int> headDims(bool paged) {
    std::vector<int> dims;
    for (support::HeadDim const& h : support::kHeadDims)
        if (!h.pagedOnly || paged) dims.push_back(h.api);
    return dims;
}

bool kernelAvailable(ProblemSpec const& spec, std::string* why) {
    detail::DeviceInfo dev;
    if (!detail::currentDevice(&dev)) {
        if (why) *why = lastError();
        return false;
    }
    ElementKind const e = spec.dtype == DataType::kFP8    ? ElementKind::kFp8
                          : spec.dtype == DataType::kBF16 ? ElementKind::kBf16
                                                          : ElementKind::kFp16;
    KvAddressing const kv =
        spec.mode == Mode::kPaged || spec.mode == Mode::kPagedRagged ? KvAddressing::kPaged : KvAddressing::kStrided;
    detail::KernelOps ops;
    int const budget = detail::smemBudget(dev.maxSmemOptin);
    if (detail::findKernel(e, spec.headDim, kv, dev.smVersion, budget, spec.skip > 0, &ops)) return true;
    if (why) *why = "no kernel fits " + std::to_string(budget) + " bytes of shared memory a block";
    return false;
}

namespace {

float attentionScaleOf(ProblemSpec const& s) {
    return s.attentionScale > 0 ? s.attentionScale : 1.0F / std::sqrt(static_cast<float>(s.headDim));
}

// The fields every mode's argument struct has: the output, the scales, the dtypes and the LSE.
template <class Args>
void setCommonArgs(HostProblem const& p, void const* q, void* o, float* lse, Args* a) {
    a->q = q;
    a->o = o;
    a->attentionScale = attentionScaleOf(p.spec);
    a->inputType = p.spec.dtype;
    a->bf16Output = p.spec.bf16Out;
    a->qScale = p.qScale;
    a->kScale = p.kScale;
    a->vScale = p.vScale;
    a->lse = lse;
}

// Fills the mode's argument struct (with the given pointers) and calls fn(runner, args).
template <class Fn>
bool withArgs(HostProblem const& p, void const* q, void const* k, void const* v, void* o, int32_t const* cuQ,
              int32_t const* cuKV, int32_t const* table, int32_t const* bb, int32_t const* be, float* lse, Fn&& fn) {
    ProblemSpec const& s = p.spec;
    switch (s.mode) {
    case Mode::kLlm: {
        LlmArgs a;
        setCommonArgs(p, q, o, lse, &a);
        a.kv = k;
        a.cuKVSeqLens = cuKV;
        a.slidingWindowSize = s.window;
        a.skipSoftmaxScaleFactor = s.skip;
        return fn(a);
    }
    case Mode::kPaged: {
        PagedArgs a;
        setCommonArgs(p, q, o, lse, &a);
        a.pool = k;
        a.pageList = table;
        a.cuKVSeqLens = cuKV;
        a.numPages = p.numPages;
        a.maxPagesPerSeq = p.maxPagesPerSeq;
        a.tokensPerPage = s.pageSize;
        a.slidingWindowSize = s.window;
        a.isCausal = s.causal;
        a.skipSoftmaxScaleFactor = s.skip;
        a.bidirectionalBlockBegin = bb;
        a.bidirectionalBlockEnd = be;
        return fn(a);
    }
    case Mode::kPagedRagged: {
        PagedRaggedArgs a;
        setCommonArgs(p, q, o, lse, &a);
        a.pool = k;
        a.pageList = table;
        a.cuQSeqLens = cuQ;
        a.cuKVSeqLens = cuKV;
        a.totalQSeqLen = p.totalQ;
        a.maxQSeqLen = p.maxQ;
        a.numFlatPages = p.numPages;
        a.maxPagesPerSeq = p.maxPagesPerSeq;
        a.tokensPerPage = s.pageSize;
        a.slidingWindowSize = s.window;
        return fn(a);
    }
    case Mode::kVit: {
        VitArgs a;
        setCommonArgs(p, q, o, lse, &a);
        a.k = k;
        a.v = v;
        a.cuSeqLens = cuQ;
        a.totalSeqLen = p.totalQ;
        a.maxSeqLen = p.maxQ;
        a.batchSize = p.shape.batchSize;
        return fn(a);
    }
    }
    return false;
}

template <class Args>
bool dispatchRun(FmhaRunner& r, Args const& a, LaunchRecord* record) {
    if constexpr (std::is_same_v<Args, PagedArgs>) {
        return r.runPaged(a, record);
    } else {
        return r.run(a, record);
    }
}

template <class Args>
bool dispatchPreflight(FmhaRunner& r, Args const& a, bool bidirectional) {
    if constexpr (std::is_same_v<Args, PagedArgs>) {
        return r.preflight(a, bidirectional);
    } else {
        return r.preflight(a);
    }
}

// The same call through the C API's struct functions.
template <class Args>
bool dispatchRunC(fmha_runner* r, Args const& a) {
    auto const c = detail::toC(a);
    if constexpr (std::is_same_v<Args, LlmArgs>) return fmha_run_llm_args(r, &c);
    if constexpr (std::is_same_v<Args, PagedArgs>) return fmha_run_paged_args(r, &c);
    if constexpr (std::is_same_v<Args, PagedRaggedArgs>) return fmha_run_paged_ragged_args(r, &c);
    if constexpr (std::is_same_v<Args, VitArgs>) return fmha_run_vit_args(r, &c);
}

}  // namespace

bool runGpu(HostProblem const& p, GpuResult* out, std::string* error, int timingIters, int launchesPerSample) {
    auto cudaFail = [&](char const* what) {
        cudaError_t err = cudaGetLastError();
        if (error) *error = std::string(what) + ": " + cudaGetErrorString(err);
        return false;
    };
    DeviceBuffer q, k, v, o, lse, cuQ, cuKV, table, bb, be;
    if (!q.upload(p.q) || !k.upload(p.k) || !cuQ.upload(p.cuQ) || !cuKV.upload(p.cuKV))
        return cudaFail("device upload");
    if (!p.v.empty() && !v.upload(p.v)) return cudaFail("device upload");
    if (!p.pageTable.empty() && !table.upload(p.pageTable)) return cudaFail("device upload");
    if (!p.bidirBegin.empty() && (!bb.upload(p.bidirBegin) || !be.upload(p.bidirEnd)))
        return cudaFail("device upload");
    size_t const oBytes = static_cast<size_t>(p.oElems) * 2, lseBytes = static_cast<size_t>(p.lseElems) * 4;
    if (!o.alloc(oBytes) || !lse.alloc(lseBytes)) return cudaFail("device alloc");
    // Poison: all-ones bits are NaN in FP16, BF16 and FP32.
    if (cudaMemset(o.ptr, 0xFF, oBytes) != cudaSuccess || cudaMemset(lse.ptr, 0xFF, lseBytes) != cudaSuccess)
        return cudaFail("poison");
    cudaStream_t stream = nullptr;
    if (cudaStreamCreate(&stream) != cudaSuccess) return cudaFail("stream");
    FmhaRunner runner(p.shape.numQHeads, p.shape.numKVHeads, p.shape.headDim, p.shape.batchSize, p.shape.seqLenQ,
                      p.shape.kvCacheCapacity);
    std::unique_ptr<fmha_runner, void (*)(fmha_runner*)> cRunner(
        p.spec.cApi ? fmha_runner_create(p.shape.numQHeads, p.shape.numKVHeads, p.shape.headDim, p.shape.batchSize,
                                         p.shape.seqLenQ, p.shape.kvCacheCapacity)
                    : nullptr,
        fmha_runner_destroy);
    if (!runner.setSplitKv(p.spec.splits) || (cRunner && !fmha_runner_set_split_kv(cRunner.get(), p.spec.splits))) {
        if (error) *error = lastError();
        cudaStreamDestroy(stream);
        return false;
    }
    // The forced tile shape for this run, the setting restored on every way out.
    struct ShapeSetting {
        int previous;
        explicit ShapeSetting(int shape) : previous(shape >= 0 ? detail::setTileShape(shape) : -3) {}
        ~ShapeSetting() {
            if (previous != -3) detail::setTileShape(previous);
        }
    } const shapeSetting(p.spec.tileShape);
    bool const bidir = !p.bidirBegin.empty();
    LaunchRecord record;
    // The mode's arguments over the device buffers, on this stream, handed to fn.
    auto withDeviceArgs = [&](auto&& fn) {
        return withArgs(p, q.ptr, k.ptr, p.v.empty() ? nullptr : v.ptr, o.ptr, cuQ.as<int32_t>(),
                        cuKV.as<int32_t>(), p.pageTable.empty() ? nullptr : table.as<int32_t>(),
                        bidir ? bb.as<int32_t>() : nullptr, bidir ? be.as<int32_t>() : nullptr,
                        p.spec.withLse ? lse.as<float>() : nullptr, [&](auto& a) {
                            a.stream = stream;
                            return fn(a);
                        });
    };
    auto launch = [&]() {
        return withDeviceArgs([&](auto& a) {
            return p.spec.cApi ? dispatchRunC(cRunner.get(), a) : dispatchRun(runner, a, &record);
        });
    };
    bool const captured = p.spec.graph != 0 && !p.spec.cApi;
    if (captured && p.spec.graph == 1) {
        bool const ready = withDeviceArgs([&](auto& a) { return dispatchPreflight(runner, a, bidir); });
        if (!ready) {
            if (error) *error = std::string("preflight: ") + lastError();
            cudaStreamDestroy(stream);
            return false;
        }
    }
    if (captured && cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal) != cudaSuccess) {
        cudaStreamDestroy(stream);
        return cudaFail("begin capture");
    }
    auto poison = [&]() {
        return cudaMemsetAsync(o.ptr, 0xFF, oBytes, stream) == cudaSuccess &&
               cudaMemsetAsync(lse.ptr, 0xFF, lseBytes, stream) == cudaSuccess;
    };
    bool ok = launch();
    for (int run = 1; ok && !captured && run < p.spec.runs; ++run) {
        if (!poison()) return cudaFail("poison");
        ok = launch();
    }
    std::string const runError = ok ? "" : lastError();
    if (captured) {  // the outputs are still poison: the graph's replays must write them
        cudaGraph_t graph = nullptr;
        cudaGraphExec_t exec = nullptr;
        cudaError_t e = cudaStreamEndCapture(stream, &graph);
        if (e == cudaSuccess && ok) e = cudaGraphInstantiate(&exec, graph, 0);
        for (int run = 0; e == cudaSuccess && ok && run < p.spec.runs; ++run) {
            if (run > 0 && !poison()) e = cudaErrorUnknown;
            if (e == cudaSuccess) e = cudaGraphLaunch(exec, stream);
        }
        if (e == cudaSuccess && ok) e = cudaStreamSynchronize(stream);
        if (exec != nullptr) cudaGraphExecDestroy(exec);
        if (graph != nullptr) cudaGraphDestroy(graph);
        if (e != cudaSuccess) {
            cudaStreamDestroy(stream);
            return cudaFail("graph capture and replay");
        }
    }
    if (!ok) {
        if (error) *error = runError;
        cudaStreamDestroy(stream);
        return false;
    }
    out->family = p.spec.cApi ? lastKernelFamily() : record.family;  // the C API returns no record
    out->packedHeads = p.spec.cApi ? 0 : record.packedHeads;
    out->splits = p.spec.cApi ? 0 : record.splits;
    out->blockM = p.spec.cApi ? 0 : record.blockM;
    out->blockN = p.spec.cApi ? 0 : record.blockN;
    out->persistent = !p.spec.cApi && record.persistent;
    out->mergedInKernel = !p.spec.cApi && record.mergedInKernel;
    out->pairedKv = !p.spec.cApi && record.pairedKv;
    if (cudaStreamSynchronize(stream) != cudaSuccess) {
        cudaStreamDestroy(stream);
        return cudaFail("kernel execution");
    }
    out->o.resize(static_cast<size_t>(p.oElems));
    out->lse.assign(p.spec.withLse ? static_cast<size_t>(p.lseElems) : 0, 0.0F);
    if (cudaMemcpy(out->o.data(), o.ptr, oBytes, cudaMemcpyDeviceToHost) != cudaSuccess) return cudaFail("download");
    if (p.spec.withLse && cudaMemcpy(out->lse.data(), lse.ptr, lseBytes, cudaMemcpyDeviceToHost) != cudaSuccess)
        return cudaFail("download");
    if (timingIters > 0) {
        for (int i = 0; i < 3; ++i) launch();
        std::vector<float> ms;
        cudaEvent_t e0, e1;
        cudaEventCreate(&e0);
        cudaEventCreate(&e1);
        int const perSample = std::max(1, launchesPerSample);
        for (int i = 0; i < timingIters; ++i) {
            if (perSample > 1) launch();  // busy GPU: the timed launches queue behind it
            cudaEventRecord(e0, stream);
            for (int l = 0; l < perSample; ++l) launch();
            cudaEventRecord(e1, stream);
            cudaEventSynchronize(e1);
            float t = 0;
            cudaEventElapsedTime(&t, e0, e1);
            ms.push_back(t / static_cast<float>(perSample));
        }
        cudaEventDestroy(e0);
        cudaEventDestroy(e1);
        std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());
        out->medianMs = ms[ms.size() / 2];
        if (cudaGetLastError() != cudaSuccess) {
            cudaStreamDestroy(stream);
            return cudaFail("timing");
        }
    }
    cudaStreamDestroy(stream);
    return true;
}

bool runReference(HostProblem const& p, ref::Options const& opt, ref::Result* out, std::string* error) {
    ProblemSpec const& s = p.spec;
    std::vector<float> lseDummy(1);
    float* lse = s.withLse ? lseDummy.data() : nullptr;  // only its non-nullness matters
    bool const bidir = !p.bidirBegin.empty();
    return withArgs(p, p.q.data(), p.k.data(), p.v.empty() ? nullptr : p.v.data(), nullptr, p.cuQ.data(),
                    p.cuKV.data(), p.pageTable.empty() ? nullptr : p.pageTable.data(),
                    bidir ? p.bidirBegin.data() : nullptr, bidir ? p.bidirEnd.data() : nullptr, lse, [&](auto& a) {
                        using A = std::decay_t<decltype(a)>;
                        if constexpr (std::is_same_v<A, LlmArgs>) return ref::runLlm(p.shape, a, opt, *out, error);
                        if constexpr (std::is_same_v<A, PagedArgs>) return ref::runPaged(p.shape, a, opt, *out, error);
                        if constexpr (std::is_same_v<A, PagedRaggedArgs>)
                            return ref::runPagedRagged(p.shape, a, opt, *out, error);
                        if constexpr (std::is_same_v<A, VitArgs>) return ref::runVit(p.shape, a, opt, *out, error);
                        return false;
                    });
}

bool bf16Output(ProblemSpec const& s) {
    return s.dtype == DataType::kBF16 || (s.dtype == DataType::kFP8 && s.bf16Out);
}

double fp8ScoreErr(HostProblem const& p, std::string const& family) {
    if (family != "sm90" || p.spec.dtype != DataType::kFP8) return 0.0;
    int32_t const D = p.spec.headDim;
    double maxRowQ = 0, maxK = 0;
    for (size_t r = 0; r + static_cast<size_t>(D) <= p.q.size(); r += static_cast<size_t>(D)) {
        double sum = 0;
        for (int32_t d = 0; d < D; ++d) sum += std::fabs(ref::loadElement(p.q.data(), static_cast<int64_t>(r) + d, DataType::kFP8));
        if (std::isfinite(sum)) maxRowQ = std::max(maxRowQ, sum);
    }
    for (size_t i = 0; i < p.k.size(); ++i) {  // NaN-poisoned slots are never keys
        double const k = std::fabs(ref::loadElement(p.k.data(), static_cast<int64_t>(i), DataType::kFP8));
        if (std::isfinite(k)) maxK = std::max(maxK, k);
    }
    return kFp8ScoreRelErr * attentionScaleOf(p.spec) * p.qScale * p.kScale * maxRowQ * maxK;
}

Verdict compare(HostProblem const& p, GpuResult const& gpu, ref::Result const& exact, ref::Result const& lowp,
                double extraBound) {
    Verdict v;
    bool const bf16 = bf16Output(p.spec);  // the output's type: its rounding and decoding
    double const range = maxAbsV(p.spec);  // (|O| and its error terms scale with max |V|)
    double const atol = (bf16 ? 4e-3 : 1e-3) * range;
    double const scoreErr = fp8ScoreErr(p, gpu.family);
    double const scoreBound = std::expm1(2.0 * scoreErr) * range;  // O, from the scores' error
    // 16-bit P: the kernels round P relative to a reference max that may lag the row's maximum
    // (up to 8 base-2 units, docs/SEMANTICS.md), so the top key's P is rounded as well, where the
    // same-precision reference (the exact max) gives it exactly 1: each weight may carry the P
    // type's unit roundoff (BF16 2^-8, FP16 2^-11), O up to that times max|V| more. (Seen at
    // 0.0188 against 0.0183 on a peaked BF16 row: fmha fuzz --seed 252 --case 236.) The Hopper
    // family's FP8 P (E4M3) keeps its own terms.
    bool const fp16P = p.spec.dtype == DataType::kHALF || (p.spec.dtype == DataType::kFP8 && gpu.family != "sm90");
    double const unitP = p.spec.dtype == DataType::kBF16 ? 0x1p-8 : fp16P ? 0x1p-11 : 0.0;
    double const pRound = unitP * range;
    // O's float32 accumulator: the tensor cores add each instruction's products (16 keys and up)
    // into it rounding toward zero, so that O loses up to a unit in its last place (2^-23
    // relative), 2^-24 on average, an addition: a bias that grows with the key count, 2.6e-4 of
    // O at 128k keys with all V = 1 (FP16, H200); 2^-15 of max|V| at 4k keys.
    int32_t keys = 0;
    for (int32_t l : p.spec.lk.empty() ? p.spec.lq : p.spec.lk) keys = std::max(keys, l);
    double const accMax = std::ceil(keys / 16.0) * 0x1p-23 * range;
    double sumErr = 0, sumErrLowp = 0;
    for (int64_t i = 0; i < p.oElems; ++i) {
        uint16_t const bits = gpu.o[static_cast<size_t>(i)];
        double const got = bf16 ? num::bf16ToFloat(bits) : num::halfToFloat(bits);
        double const want = exact.o[static_cast<size_t>(i)];
        double const lp = std::fabs(lowp.o[static_cast<size_t>(i)] - want);
        if (!std::isfinite(got)) {
            ++v.unwritten;
            continue;
        }
        double const err = std::fabs(got - want);
        v.maxErr = std::max(v.maxErr, err);
        v.maxErrLowp = std::max(v.maxErrLowp, lp);
        sumErr += err;
        sumErrLowp += lp;
    }
    int64_t const n = std::max<int64_t>(1, p.oElems);
    v.meanErr = sumErr / n;
    double const meanLowp = sumErrLowp / n;
    v.bound = 2 * v.maxErrLowp + atol + pRound + accMax + extraBound + scoreBound;
    double const meanBound = 2 * meanLowp + 0.25 * atol + accMax / 2 + extraBound + scoreBound;
    int64_t lseBad = 0;
    if (p.spec.withLse) {
        for (size_t i = 0; i < gpu.lse.size(); ++i) {
            double const got = gpu.lse[i], want = exact.lse[i];
            if (std::isinf(want) && want < 0) {
                if (!(std::isinf(got) && got < 0)) ++lseBad;
                continue;
            }
            double const err = std::fabs(got - want);
            if (!(err <= 2e-3 * (1 + std::fabs(want)) + extraBound * 4 + scoreErr)) ++lseBad;
            if (std::isfinite(err)) v.maxLseErr = std::max(v.maxLseErr, err);
            else ++lseBad;
        }
    }
    v.pass = v.unwritten == 0 && v.maxErr <= v.bound && v.meanErr <= meanBound && lseBad == 0;
    std::ostringstream os;
    os << "max_err=" << v.maxErr << " (bound " << v.bound << ", same-precision ref " << v.maxErrLowp
       << ") mean_err=" << v.meanErr << " (bound " << meanBound << ") lse_max_err=" << v.maxLseErr
       << " lse_bad=" << lseBad << " non_finite=" << v.unwritten;
    if (scoreErr > 0) os << " fp8_score_err_bound=" << scoreErr;
    v.detail = os.str();
    return v;
}

double countFlops(HostProblem const& p) {
    ProblemSpec const& s = p.spec;
    double pairs = 0;
    for (size_t b = 0; b < s.lk.size(); ++b) {
        int64_t const lq = s.lq[b], lk = s.lk[b], off = lk - lq;
        bool const causal = s.mode != Mode::kVit && !(s.mode == Mode::kPaged && !s.causal);
        for (int64_t i = 0; i < lq; ++i) {
            int64_t lo = 0, hi = lk - 1;
            if (causal) {
                hi = std::min(hi, i + off);
                if (s.window != INT_MAX) lo = std::max<int64_t>(0, i + off - s.window);
            }
            int64_t cnt = std::max<int64_t>(0, hi - lo + 1);
            if (!p.bidirBegin.empty()) {
                int64_t const bb = p.bidirBegin[b * s.lq[0] + i], be = std::min<int64_t>(p.bidirEnd[b * s.lq[0] + i], lk - 1);
                if (bb >= 0 && be >= bb) {
                    int64_t const ilo = std::max(lo, bb), ihi = std::min(hi, be);
                    cnt += (be - bb + 1) - std::max<int64_t>(0, ihi - ilo + 1);
                }
            }
            pairs += static_cast<double>(cnt);
        }
    }
    return pairs * s.numQHeads * 4.0 * s.headDim;
}

}  // namespace fmha::harness

namespace fmha::harness {

// Where sequence b's rows and keys lie under the documented clamps (docs/SEMANTICS.md,
// "Device-side data the host cannot check"); the identity on valid metadata.
SeqGeometry seqGeometry(HostProblem const& p, int32_t b) {
    ProblemSpec const& s = p.spec;
    auto clamp = [](int64_t v, int64_t lo, int64_t hi) { return std::min(std::max(v, lo), hi); };
    SeqGeometry g;
    bool const batchedQ = s.mode == Mode::kLlm || s.mode == Mode::kPaged;
    int64_t const capacity = s.mode == Mode::kVit ? p.totalQ : p.shape.kvCacheCapacity;
    if (batchedQ) {
        g.qBegin = int64_t{b} * p.shape.seqLenQ;
        g.lq = p.shape.seqLenQ;
        g.rows = g.lq;
    } else {
        g.qBegin = clamp(p.cuQ[b], 0, p.totalQ);
        g.lq = clamp(p.cuQ[b + 1], g.qBegin, p.totalQ) - g.qBegin;
        g.rows = std::min<int64_t>(g.lq, p.maxQ);  // rows past maxQSeqLen are not computed
    }
    if (s.mode == Mode::kVit) {
        g.kvBegin = clamp(p.cuKV[b], 0, capacity);
        g.lk = clamp(p.cuKV[b + 1], g.kvBegin, capacity) - g.kvBegin;
    } else {
        g.lk = clamp(int64_t{p.cuKV[b + 1]} - p.cuKV[b], 0, capacity);
    }
    return g;
}

void naiveAttention(HostProblem const& p, ref::Result* out, std::vector<int32_t>* coverage,
                    std::vector<double>* fp8Tol) {
    // E4M3 rounding of the Hopper family's P (scaled by kPScale): 2^-4 relative (3 mantissa
    // bits), or 2^-10 absolute of the scaled value below E4M3's normal range.
    constexpr double kE4m3HalfUlp = 1.0 / 16;
    constexpr double kE4m3HalfSubnormal = 1.0 / 1024 / sm90::TileSm90<128, 1>::kPScale;
    ProblemSpec const& s = p.spec;
    int32_t const B = static_cast<int32_t>(s.lk.size()), Hq = s.numQHeads, Hkv = s.numKVHeads, D = s.headDim;
    int32_t const group = Hq / Hkv;
    DataType const t = s.dtype;
    double const scale = attentionScaleOf(s);
    bool const batchedQ = s.mode == Mode::kLlm || s.mode == Mode::kPaged;
    int32_t const sq = batchedQ ? s.lq[0] : 0;
    int64_t const oRows = p.oElems / (int64_t{Hq} * D);
    out->o.assign(static_cast<size_t>(p.oElems), 0.0);
    out->lse.assign(static_cast<size_t>(p.lseElems), -INFINITY);
    if (coverage) coverage->assign(static_cast<size_t>(oRows), 0);
    if (fp8Tol) fp8Tol->assign(static_cast<size_t>(p.oElems), 0.0);
    auto elem = [&](std::vector<uint8_t> const& buf, int64_t idx) { return ref::loadElement(buf.data(), idx, t); };
    for (int32_t b = 0; b < B; ++b) {
        SeqGeometry const geo = seqGeometry(p, b);
        int64_t const lq = geo.lq, lk = geo.lk, rows = geo.rows, qRow0 = geo.qBegin;
        if (coverage)
            for (int64_t i = 0; i < rows; ++i) ++(*coverage)[static_cast<size_t>(qRow0 + i)];
        for (int32_t h = 0; h < Hq; ++h) {
            int32_t const hk = h / group;
            auto kIndex = [&](int64_t j, int which) -> int64_t {  // element index of K/V row j; -1: reads as zero
                switch (s.mode) {
                case Mode::kLlm: return (((int64_t{b} * 2 + which) * Hkv + hk) * p.shape.kvCacheCapacity + j) * D;
                case Mode::kVit: return ((geo.kvBegin + j) * Hkv + hk) * D;
                default: {
                    int32_t const T = s.pageSize;
                    int64_t const page = p.pageTable[(int64_t{b} * 2 + which) * p.maxPagesPerSeq + j / T];
                    if (page < 0 || page >= p.numPages) return -1;  // outside the pool: zeros
                    return ((page * T + j % T) * Hkv + hk) * D;
                }
                }
            };
            auto kvElem = [&](std::vector<uint8_t> const& buf, int64_t base, int32_t d) {
                return base < 0 ? 0.0 : elem(buf, base + d);
            };
            std::vector<uint8_t> const& vbuf = s.mode == Mode::kVit ? p.v : p.k;
            // Score and mask matrices.
            std::vector<double> S(static_cast<size_t>(rows * lk));
            std::vector<double> absS(fp8Tol ? static_cast<size_t>(rows * lk) : 0);  // scale * sum_d |q_d k_d|
            std::vector<char> M(static_cast<size_t>(rows * lk));
            bool const causal = s.mode != Mode::kVit && !(s.mode == Mode::kPaged && !s.causal);
            for (int64_t i = 0; i < rows; ++i)
                for (int64_t j = 0; j < lk; ++j) {
                    bool ok = !causal || j <= i + (lk - lq);
                    if (causal && s.window != INT_MAX && j < i + (lk - lq) - s.window) ok = false;
                    if (!p.bidirBegin.empty()) {
                        int32_t const bb = p.bidirBegin[int64_t{b} * sq + i], be = p.bidirEnd[int64_t{b} * sq + i];
                        if (bb >= 0 && j >= bb && j <= be) ok = true;
                    }
                    M[i * lk + j] = ok;
                    int64_t const kb = kIndex(j, 0);
                    double dot = 0, absDot = 0;
                    for (int32_t d = 0; d < D; ++d) {
                        double const x = elem(p.q, ((qRow0 + i) * Hq + h) * D + d) * p.qScale * (kvElem(p.k, kb, d) * p.kScale);
                        dot += x;
                        absDot += std::fabs(x);
                    }
                    S[i * lk + j] = dot * scale;
                    if (fp8Tol) absS[static_cast<size_t>(i * lk + j)] = absDot * scale;
                }
            for (int64_t i = 0; i < rows; ++i) {
                double mx = -INFINITY;
                for (int64_t j = 0; j < lk; ++j)
                    if (M[i * lk + j]) mx = std::max(mx, S[i * lk + j]);
                int64_t const oRow = ((qRow0 + i) * Hq + h) * D;
                int64_t const lseIdx = batchedQ ? (int64_t{b} * Hq + h) * sq + i : int64_t{h} * p.totalQ + qRow0 + i;
                for (int32_t d = 0; d < D; ++d) out->o[static_cast<size_t>(oRow + d)] = 0.0;
                if (mx == -INFINITY) continue;  // O stays 0, LSE -inf
                double sum = 0;
                for (int64_t j = 0; j < lk; ++j)
                    if (M[i * lk + j]) sum += std::exp(S[i * lk + j] - mx);
                double delta = 0;  // the row's score error bound (fp8Tol)
                if (fp8Tol)
                    for (int64_t j = 0; j < lk; ++j)
                        if (M[i * lk + j]) delta = std::max(delta, kFp8ScoreRelErr * absS[static_cast<size_t>(i * lk + j)]);
                std::vector<double> maxV(fp8Tol ? static_cast<size_t>(D) : 0, 0.0);
                for (int64_t j = 0; j < lk; ++j) {
                    if (!M[i * lk + j]) continue;
                    double const w = std::exp(S[i * lk + j] - mx) / sum;
                    int64_t const vb = kIndex(j, 1);
                    for (int32_t d = 0; d < D; ++d) {
                        double const v = kvElem(vbuf, vb, d) * p.vScale;
                        out->o[static_cast<size_t>(oRow + d)] += w * v;
                        if (fp8Tol) {  // E4M3 P: half an ulp of w, or of the subnormal step below
                            (*fp8Tol)[static_cast<size_t>(oRow + d)] += (w * kE4m3HalfUlp + kE4m3HalfSubnormal / sum) * std::fabs(v);
                            maxV[static_cast<size_t>(d)] = std::max(maxV[static_cast<size_t>(d)], std::fabs(v));
                        }
                    }
                }
                if (fp8Tol)
                    for (int32_t d = 0; d < D; ++d)
                        (*fp8Tol)[static_cast<size_t>(oRow + d)] += std::expm1(2.0 * delta) * maxV[static_cast<size_t>(d)];
                out->lse[static_cast<size_t>(lseIdx)] = mx + std::log(sum);
            }
        }
    }
}

}  // namespace fmha::harness
