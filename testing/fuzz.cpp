// Fuzzer implementation: the problem generator, the metadata corruptions and the verdicts.
#include "fuzz.h"

#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <random>
#include <cstring>
#include <sstream>

#include "internals.h"

namespace fmha::harness {
namespace {

uint64_t splitmix(uint64_t x) {
    x += 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}

struct Rng {
    std::mt19937_64 gen;
    explicit Rng(uint64_t seed) : gen(seed) {}
    int range(int lo, int hi) { return lo + static_cast<int>(gen() % static_cast<uint64_t>(hi - lo + 1)); }  // [lo, hi]
    bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(gen) < p; }
    template <class T>
    T pick(std::vector<T> const& v) {
        return v[gen() % v.size()];
    }
};

// A length that has broken kernels before: 0, 1, a tile edge +-1, short, long.
int pickLength(Rng& r, bool allowZero) {
    double const u = std::uniform_real_distribution<double>(0, 1)(r.gen);
    if (u < 0.12 && allowZero) return 0;
    if (u < 0.22) return 1;
    if (u < 0.50) return std::max(allowZero ? 0 : 1, r.pick<int>({16, 32, 64, 128, 192, 256}) + r.range(-1, 1));
    if (u < 0.85) return r.range(2, 300);
    return r.range(300, 1500);
}

// Multiply-adds of the float64 reference: Hq x sum over sequences of Lq x Lk x D.
double referenceWork(ProblemSpec const& s) {
    double pairs = 0;
    for (size_t b = 0; b < s.lk.size(); ++b) {
        double const lq = s.mode == Mode::kLlm || s.mode == Mode::kPaged ? s.lq[0] : s.lq[b];
        pairs += lq * std::max(1, s.lk[b]);
    }
    return pairs * s.numQHeads * s.headDim;
}

ProblemSpec randomSpec(Rng& r, FuzzFilter const& f) {
    ProblemSpec s;
    s.mode = f.mode >= 0 ? static_cast<Mode>(f.mode)
                         : r.pick<Mode>({Mode::kLlm, Mode::kPaged, Mode::kPagedRagged, Mode::kVit});
    s.dtype = f.dtype >= 0 ? static_cast<DataType>(f.dtype)
                           : r.pick<DataType>({DataType::kHALF, DataType::kBF16, DataType::kFP8});
    bool const paged = s.mode == Mode::kPaged || s.mode == Mode::kPagedRagged;
    s.headDim = r.pick(headDims(paged));
    s.numKVHeads = r.pick<int>({1, 1, 2, 3, 4});
    int const group = s.mode == Mode::kVit ? 1 : r.pick<int>({1, 1, 2, 3, 4, 5, 6, 7, 8, 16, 32});
    s.numQHeads = s.numKVHeads * group;
    if (s.mode == Mode::kVit) s.numKVHeads = s.numQHeads;
    double const u = std::uniform_real_distribution<double>(0, 1)(r.gen);
    int const batch = u < 0.4 ? r.range(1, 2) : u < 0.7 ? r.range(3, 8) : u < 0.9 ? r.range(9, 24) : r.range(25, 64);
    bool const oneLq = s.mode == Mode::kLlm || s.mode == Mode::kPaged;
    int const sharedLq = pickLength(r, false);
    for (int b = 0; b < batch; ++b) {
        int const lq = oneLq ? sharedLq : pickLength(r, true);
        int lk;
        switch (s.mode) {
        case Mode::kVit: lk = lq; break;
        case Mode::kPagedRagged:  // the history includes the new tokens, except where Lq > Lk is the point
            lk = r.chance(0.2) ? pickLength(r, true) : lq + pickLength(r, true);
            break;
        default: lk = pickLength(r, true); break;
        }
        s.lq.push_back(lq);
        s.lk.push_back(lk);
    }
    if (!oneLq && std::all_of(s.lq.begin(), s.lq.end(), [](int v) { return v == 0; })) {
        s.lq[0] = 1;  // the packed total must be positive
        if (s.mode == Mode::kVit) s.lk[0] = 1;
    }
    // Keep the reference's work bounded (20,000 cases in minutes): shrink the lengths.
    double const budget = f.maxWork;
    for (double w = referenceWork(s); w > budget; w = referenceWork(s)) {
        double const f2 = std::sqrt(budget / w) * 0.9;
        for (size_t b = 0; b < s.lq.size(); ++b) {
            s.lq[b] = s.lq[b] == 0 ? 0 : std::max(1, static_cast<int>(s.lq[b] * f2));
            s.lk[b] = s.mode == Mode::kVit ? s.lq[b] : static_cast<int>(s.lk[b] * f2);
        }
    }
    if (s.mode == Mode::kLlm) {
        int const maxLk = *std::max_element(s.lk.begin(), s.lk.end());
        s.capacity = std::max(1, maxLk + r.pick<int>({0, 5, 100}));
    }
    s.pageSize = r.pick<int>({16, 32, 64, 128, 256});
    s.sparepages = r.pick<int>({0, 3, 17});
    s.causal = s.mode == Mode::kPaged ? r.chance(0.75) : s.mode != Mode::kVit;
    bool const windowed = s.causal && r.chance(0.4);
    if (windowed) {
        int const maxLk = *std::max_element(s.lk.begin(), s.lk.end());
        double const w = std::uniform_real_distribution<double>(0, 1)(r.gen);
        s.window = w < 0.15  ? 0
                   : w < 0.3  ? 1
                   : w < 0.55 ? r.range(2, 40)
                   : w < 0.8  ? r.range(41, 300)
                              : maxLk + r.range(0, 5000);
    }
    s.bidirectional = s.mode == Mode::kPaged && r.chance(0.25);
    s.skip = 0.0F;
    if ((s.mode == Mode::kLlm || s.mode == Mode::kPaged) && s.dtype == DataType::kHALF && s.causal && !windowed &&
        !s.bidirectional && r.chance(0.3))
        s.skip = r.pick<float>({1e-3F, 0.01F, 0.1F});
    s.withLse = r.chance(0.7);
    double const sc = std::uniform_real_distribution<double>(0, 1)(r.gen);
    s.attentionScale = sc < 0.75 ? 0.0F : sc < 0.9 ? 4.0F / std::sqrt(static_cast<float>(s.headDim)) : 12.0F;
    s.valueRange = r.chance(0.8) ? 1.0F : 4.0F;
    s.seed = r.gen();
    // One case in five goes through the C API's struct functions (which carry every option);
    // drawn from the seed, so that the problems stay those of earlier versions of the generator.
    s.cApi = splitmix(s.seed ^ 0xC0FFEEULL) % 5 == 0;
    // BF16 and FP8 take skip-softmax as FP16 does (three cases in ten where the mask allows
    // it), drawn from the seed for the same reason.
    uint64_t const skipDraw = splitmix(s.seed ^ 0x5C1BULL);
    if ((s.mode == Mode::kLlm || s.mode == Mode::kPaged) &&
        (s.dtype == DataType::kBF16 || s.dtype == DataType::kFP8) && s.causal && !windowed && !s.bidirectional &&
        skipDraw % 10 < 3)
        s.skip = std::array<float, 3>{1e-3F, 0.01F, 0.1F}[skipDraw / 10 % 3];
    // One case in three forces the Hopper persistent kernel, one in six another tile shape
    // (where not built for the case, the default tiles run), also from the seed.
    uint64_t const shapeDraw = splitmix(s.seed ^ 0x5AA9EULL);
    constexpr std::array<TileShape, 4> kOthers{TileShape::kDefault, TileShape::kWideKeys, TileShape::kOneWarpGroup,
                                               TileShape::kThreeWarpGroups};
    s.tileShape = shapeDraw % 6 < 2   ? static_cast<int32_t>(TileShape::kPersistent)
                  : shapeDraw % 6 == 2 ? static_cast<int32_t>(kOthers[shapeDraw / 6 % 4])
                                       : -1;
    // One FP8 case in three asks for BF16 output (also from the seed).
    s.bf16Out = s.dtype == DataType::kFP8 && splitmix(s.seed ^ 0xBF16ULL) % 3 == 0;
    // Split-KV, drawn from the seed the same way: a paged case forces a part count one time in
    // three (the automatic choice otherwise), and one in four becomes a decode step (1-8 new
    // queries a sequence over a long history; parts then outnumber a short sequence's tiles).
    // Half the forced counts run twice on one runner, poisoned between (the row-tile counters
    // must be back at zero).
    if (paged) {
        uint64_t const h = splitmix(s.seed ^ 0x5B1173ULL);
        if (h % 3 == 0) s.splits = std::vector<int>{2, 3, 4, 7, 16, 64}[(h / 3) % 6];
        if (h % 3 == 0 && (h >> 40) % 2 == 0) s.runs = 2;
        if ((h >> 16) % 4 == 0) {
            Rng d(h);
            int const shared = d.range(1, 8);
            for (size_t b = 0; b < s.lq.size(); ++b) {
                s.lq[b] = oneLq ? shared : d.range(b == 0 ? 1 : 0, 8);
                s.lk[b] = s.lq[b] + (d.chance(0.2) ? d.range(0, 40) : d.range(500, 6000));
            }
            for (int i = 0; i < 40 && referenceWork(s) > budget; ++i)
                for (int32_t& lk : s.lk) lk = static_cast<int>(lk * 0.8);
        }
    }
    return s;
}

// Vision runs at the sequence edges, several a sequence, some reaching past Lk.
void edgeBidir(Rng& r, HostProblem& p) {
    int32_t const sq = p.shape.seqLenQ;
    for (size_t b = 0; b < p.spec.lk.size(); ++b) {
        int32_t const lk = p.spec.lk[b], off = lk - sq;
        int32_t* begin = p.bidirBegin.data() + b * sq;
        int32_t* end = p.bidirEnd.data() + b * sq;
        std::fill(begin, begin + sq, -1);
        std::fill(end, end + sq, -1);
        int row = r.chance(0.5) ? 0 : r.range(0, std::max(0, sq - 1));
        while (row < sq) {
            int const len = r.chance(0.3) ? sq - row : r.range(1, std::max(1, sq / 3));
            int const r1 = std::min(sq - 1, row + len - 1);
            int const lo = std::max(0, row + off - r.range(0, 3));
            int const hi = r1 + off + (r.chance(0.3) ? r.range(1, 400) : 0);
            if (hi >= lo)
                for (int i = row; i <= r1; ++i) {
                    begin[i] = lo;
                    end[i] = hi;
                }
            row = r1 + 1 + r.range(0, 3);
        }
    }
}

// Corrupts what the host cannot see (device metadata); returns what it did.
std::string corrupt(Rng& r, HostProblem& p) {
    std::ostringstream what;
    bool const packedQ = p.spec.mode == Mode::kPagedRagged || p.spec.mode == Mode::kVit;
    bool const paged = !p.pageTable.empty();
    int const kinds = 1 + (packedQ ? 2 : 0) + (paged ? 1 : 0) + (p.bidirBegin.empty() ? 0 : 1);
    int const n = r.range(1, 3);
    for (int k = 0; k < n; ++k) {
        int kind = r.range(0, kinds - 1);
        std::vector<int32_t>& cuKV = p.spec.mode == Mode::kVit ? p.cuQ : p.cuKV;
        if (kind == 0) {  // KV prefix sums: decreasing, negative, past the capacity
            size_t const i = static_cast<size_t>(r.range(0, static_cast<int>(cuKV.size()) - 1));
            int32_t const v = r.pick<int32_t>({-5, -1000, INT32_MIN, INT32_MAX, 1 << 30, cuKV.back() + 7, 0});
            what << "cuKV[" << i << "]=" << v << " ";
            cuKV[i] = v;
        } else if (packedQ && kind <= 2) {
            if (kind == 1) {  // Q prefix sums: swapped, negative, past the total
                size_t const i = static_cast<size_t>(r.range(0, static_cast<int>(p.cuQ.size()) - 1));
                int32_t const v = r.pick<int32_t>({-3, INT32_MIN, INT32_MAX, p.totalQ + 5, p.totalQ / 2, 0});
                what << "cuQ[" << i << "]=" << v << " ";
                p.cuQ[i] = v;
            } else {  // maxQSeqLen below the longest sequence
                p.maxQ = std::max(1, p.maxQ / r.range(2, 4));
                what << "maxQ=" << p.maxQ << " ";
            }
        } else if (paged && kind == (packedQ ? 3 : 1)) {  // page ids outside the pool
            int const count = r.range(1, 4);
            for (int c = 0; c < count; ++c) {
                size_t const i = static_cast<size_t>(r.range(0, static_cast<int>(p.pageTable.size()) - 1));
                int32_t const v = r.pick<int32_t>({-1, -7, INT32_MIN, p.numPages, p.numPages + 1000, INT32_MAX});
                what << "page[" << i << "]=" << v << " ";
                p.pageTable[i] = v;
            }
        } else if (!p.bidirBegin.empty()) {  // bidirectional bounds out of range
            int const count = r.range(1, 6);
            for (int c = 0; c < count; ++c) {
                size_t const i = static_cast<size_t>(r.range(0, static_cast<int>(p.bidirBegin.size()) - 1));
                p.bidirBegin[i] = r.pick<int32_t>({-5, 0, 1 << 20, INT32_MAX, INT32_MIN});
                p.bidirEnd[i] = r.pick<int32_t>({-1, 3, 1 << 20, INT32_MAX, INT32_MIN});
                what << "bidir[" << i << "]=" << p.bidirBegin[i] << ".." << p.bidirEnd[i] << " ";
            }
        }
    }
    if (p.spec.mode == Mode::kVit) p.cuKV = p.cuQ;  // one prefix array for Q and K/V
    std::string s = what.str();
    if (!s.empty()) s.pop_back();
    return s;
}

// A malformed problem, judged by the documented clamps (docs/SEMANTICS.md): a row exactly one
// sequence computes matches the naive evaluation of the clamped metadata (atol: the output
// type's rounding and the kernels' 16-bit P on values of at most valueRange, plus
// skip-softmax's bound, plus for the Hopper family's FP8 path naiveAttention's fp8Tol: E4M3 P
// and the scores' error); a row no sequence computes is written as zeros; rows two sequences
// claim (a decreasing prefix array) may hold either's result, or zeros where a zero-filled
// range overlaps them, and are not judged. Every row must be written.
bool judgeMalformed(HostProblem const& p, GpuResult const& gpu, std::string* why) {
    ref::Result naive;
    std::vector<int32_t> coverage;
    std::vector<double> fp8Tol;  // the Hopper family's FP8 path: E4M3 P and its scores' error
    bool const fp8Hopper = p.spec.dtype == DataType::kFP8 && gpu.family == "sm90";
    naiveAttention(p, &naive, &coverage, fp8Hopper ? &fp8Tol : nullptr);
    std::vector<char> zeroed(coverage.size(), 0);  // rows the packed-Q kernels zero-fill
    if (p.spec.mode == Mode::kPagedRagged || p.spec.mode == Mode::kVit) {
        int32_t const B = static_cast<int32_t>(p.spec.lk.size());
        auto mark = [&](int64_t lo, int64_t hi) {
            for (int64_t r = lo; r < hi; ++r) zeroed[static_cast<size_t>(r)] = 1;
        };
        for (int32_t b = 0; b < B; ++b) {
            SeqGeometry const g = seqGeometry(p, b);
            mark(g.qBegin + g.rows, g.qBegin + g.lq);
            if (b == 0) mark(0, g.qBegin);
            if (b == B - 1) mark(g.qBegin + g.lq, p.totalQ);
        }
    }
    int64_t const rowElems = p.oElems / std::max<int64_t>(1, static_cast<int64_t>(coverage.size()));
    bool const bf16 = bf16Output(p.spec);
    double const atol = ((bf16 ? 4e-2 : 1e-2) + 2.0 * p.spec.skip) * p.spec.valueRange;
    for (size_t row = 0; row < coverage.size(); ++row) {
        bool const ambiguous = coverage[row] > 1 || (coverage[row] == 1 && zeroed[row]);
        for (int64_t e = 0; e < rowElems; ++e) {
            size_t const i = row * static_cast<size_t>(rowElems) + static_cast<size_t>(e);
            double const got = bf16 ? num::bf16ToFloat(gpu.o[i]) : num::halfToFloat(gpu.o[i]);
            std::ostringstream os;
            os << "row " << row << " element " << e << ": ";
            if (std::isnan(got)) {
                *why = os.str() + "left unwritten";
                return false;
            }
            if (ambiguous) continue;
            double const want = coverage[row] == 0 ? 0.0 : naive.o[i];
            double const tol = coverage[row] == 0 ? 0.0 : atol + (fp8Hopper ? fp8Tol[i] : 0.0);
            if (!(std::fabs(got - want) <= tol)) {
                os << "got " << got << ", want " << want << (coverage[row] == 0 ? " (no sequence computes it)" : "");
                *why = os.str();
                return false;
            }
        }
    }
    return true;
}

// Under corrupted lengths, cache slots that held NaN (past a sequence's keys) can become keys
// of a sequence: the storage gets finite values, so that the clamped problem is well defined.
void finiteStorage(std::vector<uint8_t>& buf, DataType t, Rng& r) {
    std::uniform_real_distribution<float> uni(-1.0F, 1.0F);
    if (t == DataType::kFP8) {
        for (uint8_t& b : buf)
            if ((b & 0x7F) == 0x7F) b = num::floatToE4m3(uni(r.gen) * 100.0F);
        return;
    }
    for (size_t i = 0; i + 1 < buf.size(); i += 2) {
        uint16_t bits;
        std::memcpy(&bits, &buf[i], 2);
        double const v = t == DataType::kBF16 ? num::bf16ToFloat(bits) : num::halfToFloat(bits);
        if (!std::isnan(v)) continue;
        bits = t == DataType::kBF16 ? num::floatToBf16(uni(r.gen)) : num::floatToHalf(uni(r.gen));
        std::memcpy(&buf[i], &bits, 2);
    }
}

}  // namespace

FuzzCase makeFuzzCase(uint64_t seed, uint64_t index, FuzzFilter const& filter) {
    Rng r(splitmix(seed ^ splitmix(index + 0x51ED270B)));
    FuzzCase c;
    c.seed = seed;
    c.index = index;
    ProblemSpec const spec = randomSpec(r, filter);
    c.problem = makeProblem(spec);
    if (spec.bidirectional && r.chance(0.5)) edgeBidir(r, c.problem);
    if (filter.malformed) {
        finiteStorage(c.problem.k, spec.dtype, r);
        finiteStorage(c.problem.v, spec.dtype, r);
        c.corruption = corrupt(r, c.problem);
    }
    return c;
}

std::string fuzzRepro(uint64_t seed, uint64_t index, FuzzFilter const& f) {
    std::ostringstream os;
    os << "fmha fuzz --seed " << seed << " --case " << index;
    if (f.mode >= 0) os << " --mode " << modeName(static_cast<Mode>(f.mode));
    if (f.dtype >= 0) os << " --dtype " << dataTypeName(static_cast<DataType>(f.dtype));
    if (f.malformed) os << " --malformed";
    if (f.maxWork != FuzzFilter{}.maxWork) os << " --max-work " << f.maxWork;
    return os.str();
}

FuzzVerdict runFuzzCase(FuzzCase const& c) {
    FuzzVerdict v;
    HostProblem const& p = c.problem;
    std::ostringstream detail;
    detail << p.describe();
    if (p.spec.attentionScale > 0) detail << " scale=" << p.spec.attentionScale;
    if (!c.corruption.empty()) detail << " corrupted: " << c.corruption;
    std::string unavailable;
    if (!kernelAvailable(p.spec, &unavailable)) {  // D=512 under a 99 KB budget, say
        v.pass = true;
        v.skipped = true;
        v.detail = detail.str() + " skipped: " + unavailable;
        return v;
    }
    ref::Result exact, lowp;
    bool haveRef = false;
    float lowpScale = 0.0F;  // the lowp reference's pE4m3Scale
    v.pass = true;
    bool const previous = detail::setForcePortable(false);
    for (bool portable : {false, true}) {
        detail::setForcePortable(portable);
        GpuResult gpu;
        std::string err;
        if (!runGpu(p, &gpu, &err)) {
            v.pass = false;
            detail << " [" << (portable ? "portable" : "default") << "] run failed: " << err;
            break;
        }
        v.families.push_back(gpu.family);
        std::string why;
        if (!c.corruption.empty()) {
            if (!judgeMalformed(p, gpu, &why)) {
                v.pass = false;
                detail << " [" << gpu.family << "] " << why;
            }
        } else {
            // Skip-softmax is judged against the dense result with its documented bound; the
            // lowp reference rounds P as the family that ran does (computed again where that
            // differs from the previous family's).
            HostProblem dense = p;
            dense.spec.skip = 0.0F;
            ref::Options const lowpOpt = lowpOptions(dense, gpu.family);
            if (!haveRef || lowpOpt.pE4m3Scale != lowpScale) {
                if ((!haveRef && !runReference(dense, {}, &exact, &err)) ||
                    !runReference(dense, lowpOpt, &lowp, &err)) {
                    v.pass = false;
                    detail << " reference failed: " << err;
                    break;
                }
                haveRef = true;
                lowpScale = lowpOpt.pE4m3Scale;
            }
            double const extra = p.spec.skip > 0 ? 2.0 * p.spec.skip * p.spec.valueRange : 0.0;
            Verdict const verdict = compare(p, gpu, exact, lowp, extra);
            if (!verdict.pass) {
                v.pass = false;
                detail << " [" << gpu.family << "] " << verdict.detail;
            }
        }
        if (!v.pass || gpu.family == "sm80") break;  // the portable family ran: nothing else to run
    }
    detail::setForcePortable(previous);
    v.detail = detail.str();
    return v;
}

}  // namespace fmha::harness
