// CPU reference: gathers each (sequence, KV head) into float64 arrays, then computes the
// masked softmax attention row by row (two passes: max, then exp-sum), multithreaded.
#include "reference/reference.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <thread>

#include "reference/numeric.h"

namespace fmha::ref {
namespace {

constexpr double kLog2e = 1.4426950408889634;

// How one mode lays out its tensors; each function maps logical indices to element offsets.
struct Layout {
    int32_t batch = 0;
    DataType type = DataType::kHALF;
    void const* q = nullptr;
    void const* k = nullptr;
    void const* v = nullptr;
    std::function<int64_t(int32_t b)> qRowBegin;  // first packed Q/O row of sequence b
    std::function<int32_t(int32_t b)> lq;
    std::function<int32_t(int32_t b)> lk;
    std::function<int64_t(int32_t b, int32_t j, int32_t hkv)> kOffset;  // element offset of K row j
    std::function<int64_t(int32_t b, int32_t j, int32_t hkv)> vOffset;
    std::function<int64_t(int32_t b, int32_t hq, int32_t i)> lseIndex;
    int32_t const* bidirBegin = nullptr;  // [B, S_q]
    int32_t const* bidirEnd = nullptr;
    int32_t bidirStride = 0;
    bool causal = true;
    int64_t window = INT_MAX;
    double scale = 1.0;                      // softmax scale applied to dequantized Q.K
    double qScale = 1.0, kScale = 1.0, vScale = 1.0;
    double skipFactor = 0.0;
    int64_t oRows = 0;
    int64_t lseSize = 0;
};

// The two inner loops, in float64 with a fixed order of operations (deterministic). They
// inline into attendOne, which on x86-64 is built for AVX2/FMA and for the baseline
// (chosen at load time).
typedef double V4 __attribute__((vector_size(32)));
#if defined(__x86_64__) && defined(__GNUC__)
#define FMHA_HOST_SIMD_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define FMHA_HOST_SIMD_CLONES
#endif

__attribute__((always_inline)) inline double dot(double const* a, double const* b, int32_t n) {
    V4 s0 = {0, 0, 0, 0}, s1 = {0, 0, 0, 0};
    int32_t i = 0;
    for (; i + 8 <= n; i += 8) {
        V4 a0, a1, b0, b1;
        std::memcpy(&a0, a + i, 32);
        std::memcpy(&a1, a + i + 4, 32);
        std::memcpy(&b0, b + i, 32);
        std::memcpy(&b1, b + i + 4, 32);
        s0 += a0 * b0;
        s1 += a1 * b1;
    }
    V4 const t = s0 + s1;
    double r = (t[0] + t[1]) + (t[2] + t[3]);
    for (; i < n; ++i) r += a[i] * b[i];
    return r;
}

__attribute__((always_inline)) inline void axpy(double* __restrict o, double p, double const* __restrict v,
                                                int32_t n) {
    for (int32_t d = 0; d < n; ++d) o[d] += p * v[d];
}

double roundLike(double p, DataType t) {
    float f = static_cast<float>(p);
    return t == DataType::kBF16 ? num::roundToBf16(f) : num::roundToHalf(f);
}

double roundE4m3Scaled(double p, float scale) {
    return static_cast<double>(num::e4m3ToFloat(num::floatToE4m3(static_cast<float>(p) * scale))) / scale;
}

FMHA_HOST_SIMD_CLONES void attendOne(
    Shape const& s, Layout const& L, Options const& opt, int32_t b, int32_t hkv, Result& out,
    std::atomic<int64_t>& skipped) {
    int32_t const D = s.headDim, Hq = s.numQHeads, group = s.numQHeads / s.numKVHeads;
    int32_t const lq = L.lq(b), lk = L.lk(b);
    if (lq <= 0) return;
    int64_t const off = static_cast<int64_t>(lk) - lq;
    std::vector<double> K(static_cast<size_t>(lk) * D), V(static_cast<size_t>(lk) * D);
    for (int32_t j = 0; j < lk; ++j) {
        int64_t ko = L.kOffset(b, j, hkv), vo = L.vOffset(b, j, hkv);
        for (int32_t d = 0; d < D; ++d) {
            K[static_cast<size_t>(j) * D + d] = loadElement(L.k, ko + d, L.type) * L.kScale;
            V[static_cast<size_t>(j) * D + d] = loadElement(L.v, vo + d, L.type) * L.vScale;
        }
    }
    bool const skipOn = L.skipFactor > 0.0 && L.skipFactor / lk < 1.0;
    double const skipLog2 = skipOn ? std::log2(L.skipFactor / lk) : 0.0;
    int32_t const tileN = std::max(1, opt.skipTileN), groupRows = std::max(1, opt.skipGroupRows);
    int32_t const numTiles = (lk + tileN - 1) / tileN;

    // Rows are processed in groups (the skip-softmax groups): each K and V row is then read
    // once per group rather than once per query row, which keeps the work in cache.
    std::vector<double> gQ(static_cast<size_t>(groupRows) * D);
    std::vector<std::vector<double>> gScore(groupRows);  // scores, then probabilities
    std::vector<std::vector<char>> gAllowed(groupRows);
    std::vector<double> rowMax(groupRows), rowSum(groupRows);
    for (int32_t hq = hkv * group; hq < (hkv + 1) * group; ++hq) {
        for (int32_t i0 = 0; i0 < lq; i0 += groupRows) {
            int32_t const rows = std::min(groupRows, lq - i0);
            for (int32_t r = 0; r < rows; ++r) {
                int32_t const i = i0 + r;
                int64_t const qRow = L.qRowBegin(b) + i;
                for (int32_t d = 0; d < D; ++d)
                    gQ[static_cast<size_t>(r) * D + d] =
                        loadElement(L.q, (qRow * Hq + hq) * D + d, L.type) * L.qScale;
                int64_t lo = 0, hi = lk - 1;  // causal/window range of keys
                if (L.causal) {
                    hi = std::min<int64_t>(hi, i + off);
                    if (L.window != INT_MAX) lo = std::max<int64_t>(0, i + off - L.window);
                }
                int64_t bb = -1, be = -1;
                if (L.bidirBegin) {
                    bb = L.bidirBegin[static_cast<int64_t>(b) * L.bidirStride + i];
                    be = L.bidirEnd[static_cast<int64_t>(b) * L.bidirStride + i];
                }
                gScore[r].assign(static_cast<size_t>(lk), 0.0);
                gAllowed[r].assign(static_cast<size_t>(lk), 0);
                for (int32_t j = 0; j < lk; ++j)
                    gAllowed[r][j] = (j >= lo && j <= hi) || (bb >= 0 && j >= bb && j <= be);
            }
            for (int32_t j = 0; j < lk; ++j) {
                double const* kj = &K[static_cast<size_t>(j) * D];
                for (int32_t r = 0; r < rows; ++r) {
                    if (!gAllowed[r][j]) continue;
                    gScore[r][j] = dot(&gQ[static_cast<size_t>(r) * D], kj, D) * L.scale;
                }
            }
            // Skip-softmax: visit tiles from the last to the first, as the kernels do; a
            // tile is dropped for the group when every row's tile max sits below its
            // running max by more than log2(lambda) (in log2 units of the scaled score).
            if (skipOn) {
                std::vector<double> runMax(rows, -INFINITY);
                for (int32_t t = numTiles - 1; t >= 0; --t) {
                    int32_t const j0 = t * tileN, j1 = std::min(lk, j0 + tileN);
                    std::vector<double> tileMax(rows, -INFINITY);
                    for (int32_t r = 0; r < rows; ++r)
                        for (int32_t j = j0; j < j1; ++j)
                            if (gAllowed[r][j]) tileMax[r] = std::max(tileMax[r], gScore[r][j]);
                    bool skip = true;
                    for (int32_t r = 0; r < rows; ++r) {
                        double diff = (tileMax[r] - runMax[r]) * kLog2e;  // NaN when both are -inf
                        if (!(diff < skipLog2)) skip = false;
                    }
                    if (skip) {
                        skipped.fetch_add(1, std::memory_order_relaxed);
                        for (int32_t r = 0; r < rows; ++r)
                            std::fill(gAllowed[r].begin() + j0, gAllowed[r].begin() + j1, 0);
                    } else {
                        for (int32_t r = 0; r < rows; ++r) runMax[r] = std::max(runMax[r], tileMax[r]);
                    }
                }
            }
            // Probabilities relative to each row's maximum; the sum uses the unrounded values.
            for (int32_t r = 0; r < rows; ++r) {
                auto& sc = gScore[r];
                auto const& al = gAllowed[r];
                double m = -INFINITY;
                for (int32_t j = 0; j < lk; ++j)
                    if (al[j]) m = std::max(m, sc[j]);
                double l = 0.0;
                if (m != -INFINITY) {
                    for (int32_t j = 0; j < lk; ++j) {
                        if (!al[j]) continue;
                        double const p = std::exp(sc[j] - m);
                        l += p;
                        sc[j] = !opt.roundP              ? p
                                : opt.pE4m3Scale > 0.0F ? roundE4m3Scaled(p, opt.pE4m3Scale)
                                                        : roundLike(p, L.type);
                    }
                }
                rowMax[r] = m;
                rowSum[r] = l;
            }
            auto oRow = [&](int32_t r) {
                int64_t const oBase = ((L.qRowBegin(b) + i0 + r) * Hq + hq) * static_cast<int64_t>(D);
                return &out.o[static_cast<size_t>(oBase)];
            };
            for (int32_t r = 0; r < rows; ++r) std::fill(oRow(r), oRow(r) + D, 0.0);
            for (int32_t j = 0; j < lk; ++j) {
                double const* vj = &V[static_cast<size_t>(j) * D];
                for (int32_t r = 0; r < rows; ++r) {
                    if (!gAllowed[r][j] || rowMax[r] == -INFINITY) continue;
                    axpy(oRow(r), gScore[r][j], vj, D);
                }
            }
            for (int32_t r = 0; r < rows; ++r) {
                int32_t const i = i0 + r;
                bool const empty = rowMax[r] == -INFINITY;  // no allowed key: O = 0, LSE = -inf
                double* o = oRow(r);
                if (!empty)
                    for (int32_t d = 0; d < D; ++d) o[d] /= rowSum[r];
                if (!out.lse.empty())
                    out.lse[static_cast<size_t>(L.lseIndex(b, hq, i))] = empty ? -INFINITY : rowMax[r] + std::log(rowSum[r]);
            }
        }
    }
}

bool execute(Shape const& s, Layout const& L, Options const& opt, bool wantLse, Result& out, std::string* error) {
    if (s.numQHeads <= 0 || s.numKVHeads <= 0 || s.numQHeads % s.numKVHeads != 0 || s.headDim <= 0) {
        if (error) *error = "reference: bad head configuration";
        return false;
    }
    out.o.assign(static_cast<size_t>(L.oRows * s.numQHeads * s.headDim), 0.0);
    out.lse.assign(wantLse ? static_cast<size_t>(L.lseSize) : 0, -INFINITY);
    std::atomic<int64_t> skipped{0};
    std::atomic<int64_t> next{0};
    int64_t const tasks = static_cast<int64_t>(L.batch) * s.numKVHeads;
    int32_t threads = opt.threads > 0 ? opt.threads : static_cast<int32_t>(std::thread::hardware_concurrency());
    threads = static_cast<int32_t>(std::max<int64_t>(1, std::min<int64_t>(threads, tasks)));
    auto worker = [&] {
        for (int64_t t = next.fetch_add(1); t < tasks; t = next.fetch_add(1))
            attendOne(s, L, opt, static_cast<int32_t>(t / s.numKVHeads), static_cast<int32_t>(t % s.numKVHeads),
                      out, skipped);
    };
    std::vector<std::thread> pool;
    for (int32_t i = 1; i < threads; ++i) pool.emplace_back(worker);
    worker();
    for (auto& th : pool) th.join();
    out.skippedTiles = skipped.load();
    return true;
}

void setScales(Layout& L, DataType t, float attentionScale, float qs, float ks, float vs) {
    L.type = t;
    L.scale = attentionScale;
    if (t == DataType::kFP8) {
        L.qScale = qs;
        L.kScale = ks;
        L.vScale = vs;
    }
}

int32_t diff(int32_t const* cu, int32_t b) { return cu[b + 1] - cu[b]; }

}  // namespace

double loadElement(void const* base, int64_t idx, DataType t) {
    switch (t) {
    case DataType::kHALF: return num::halfToFloat(static_cast<uint16_t const*>(base)[idx]);
    case DataType::kBF16: return num::bf16ToFloat(static_cast<uint16_t const*>(base)[idx]);
    case DataType::kFP8: return num::e4m3ToFloat(static_cast<uint8_t const*>(base)[idx]);
    default: return NAN;
    }
}

bool runLlm(Shape const& s, LlmArgs const& a, Options const& opt, Result& out, std::string* error) {
    Layout L;
    int64_t const Hkv = s.numKVHeads, D = s.headDim, cap = s.kvCacheCapacity, sq = s.seqLenQ;
    L.batch = s.batchSize;
    L.q = a.q;
    L.k = a.kv;
    L.v = a.kv;
    L.qRowBegin = [sq](int32_t b) { return b * sq; };
    L.lq = [sq](int32_t) { return static_cast<int32_t>(sq); };
    L.lk = [cu = a.cuKVSeqLens](int32_t b) { return diff(cu, b); };
    L.kOffset = [=](int32_t b, int32_t j, int32_t h) { return (((b * 2 + 0) * Hkv + h) * cap + j) * D; };
    L.vOffset = [=](int32_t b, int32_t j, int32_t h) { return (((b * 2 + 1) * Hkv + h) * cap + j) * D; };
    L.lseIndex = [=, hq = s.numQHeads](int32_t b, int32_t h, int32_t i) { return (b * int64_t{hq} + h) * sq + i; };
    L.window = a.slidingWindowSize;
    L.skipFactor = a.skipSoftmaxScaleFactor;
    L.oRows = s.batchSize * sq;
    L.lseSize = L.oRows * s.numQHeads;
    setScales(L, a.inputType, a.attentionScale, a.qScale, a.kScale, a.vScale);
    return execute(s, L, opt, a.lse != nullptr, out, error);
}

namespace {
void pagedKv(Layout& L, Shape const& s, int32_t const* table, int32_t maxPages, int32_t T) {
    int64_t const Hkv = s.numKVHeads, D = s.headDim;
    auto at = [=](int32_t b, int32_t which, int32_t j, int32_t h) {
        int64_t page = table[(static_cast<int64_t>(b) * 2 + which) * maxPages + j / T];
        return ((page * T + j % T) * Hkv + h) * D;
    };
    L.kOffset = [at](int32_t b, int32_t j, int32_t h) { return at(b, 0, j, h); };
    L.vOffset = [at](int32_t b, int32_t j, int32_t h) { return at(b, 1, j, h); };
}
}  // namespace

bool runPaged(Shape const& s, PagedArgs const& a, Options const& opt, Result& out, std::string* error) {
    Layout L;
    int64_t const sq = s.seqLenQ;
    L.batch = s.batchSize;
    L.q = a.q;
    L.k = a.pool;
    L.v = a.pool;
    L.qRowBegin = [sq](int32_t b) { return b * sq; };
    L.lq = [sq](int32_t) { return static_cast<int32_t>(sq); };
    L.lk = [cu = a.cuKVSeqLens](int32_t b) { return diff(cu, b); };
    pagedKv(L, s, a.pageList, a.maxPagesPerSeq, a.tokensPerPage);
    L.lseIndex = [=, hq = s.numQHeads](int32_t b, int32_t h, int32_t i) { return (b * int64_t{hq} + h) * sq + i; };
    L.causal = a.isCausal;
    L.window = a.isCausal ? a.slidingWindowSize : INT_MAX;
    if ((a.bidirectionalBlockBegin == nullptr) != (a.bidirectionalBlockEnd == nullptr)) {
        if (error) *error = "reference: one bidirectional pointer is null";
        return false;
    }
    L.bidirBegin = a.bidirectionalBlockBegin;
    L.bidirEnd = a.bidirectionalBlockEnd;
    L.bidirStride = s.seqLenQ;
    L.skipFactor = a.skipSoftmaxScaleFactor;
    L.oRows = s.batchSize * sq;
    L.lseSize = L.oRows * s.numQHeads;
    setScales(L, a.inputType, a.attentionScale, a.qScale, a.kScale, a.vScale);
    return execute(s, L, opt, a.lse != nullptr, out, error);
}

bool runPagedRagged(Shape const& s, PagedRaggedArgs const& a, Options const& opt, Result& out,
                    std::string* error) {
    Layout L;
    int64_t const total = a.totalQSeqLen;
    L.batch = s.batchSize;
    L.q = a.q;
    L.k = a.pool;
    L.v = a.pool;
    L.qRowBegin = [cu = a.cuQSeqLens](int32_t b) { return static_cast<int64_t>(cu[b]); };
    L.lq = [cu = a.cuQSeqLens](int32_t b) { return diff(cu, b); };
    L.lk = [cu = a.cuKVSeqLens](int32_t b) { return diff(cu, b); };
    pagedKv(L, s, a.pageList, a.maxPagesPerSeq, a.tokensPerPage);
    L.lseIndex = [total, cu = a.cuQSeqLens](int32_t b, int32_t h, int32_t i) { return h * total + cu[b] + i; };
    L.window = a.slidingWindowSize;
    L.oRows = total;
    L.lseSize = total * s.numQHeads;
    setScales(L, a.inputType, a.attentionScale, a.qScale, a.kScale, a.vScale);
    return execute(s, L, opt, a.lse != nullptr, out, error);
}

bool runVit(Shape const& s, VitArgs const& a, Options const& opt, Result& out, std::string* error) {
    Layout L;
    int64_t const total = a.totalSeqLen, H = s.numQHeads, D = s.headDim;
    if (s.numKVHeads != s.numQHeads) {
        if (error) *error = "reference: ViT mode needs numKVHeads == numQHeads";
        return false;
    }
    L.batch = a.batchSize;
    L.q = a.q;
    L.k = a.k;
    L.v = a.v;
    L.qRowBegin = [cu = a.cuSeqLens](int32_t b) { return static_cast<int64_t>(cu[b]); };
    L.lq = [cu = a.cuSeqLens](int32_t b) { return diff(cu, b); };
    L.lk = L.lq;
    auto kv = [=, cu = a.cuSeqLens](int32_t b, int32_t j, int32_t h) { return ((cu[b] + int64_t{j}) * H + h) * D; };
    L.kOffset = kv;
    L.vOffset = kv;
    L.lseIndex = [total, cu = a.cuSeqLens](int32_t b, int32_t h, int32_t i) { return h * total + cu[b] + i; };
    L.causal = false;
    L.oRows = total;
    L.lseSize = total * H;
    setScales(L, a.inputType, a.attentionScale, a.qScale, a.kScale, a.vScale);
    return execute(s, L, opt, a.lse != nullptr, out, error);
}

}  // namespace fmha::ref
