// Test/CLI/benchmark harness: builds a random problem of any mode in host memory (with NaN
// in every slot the kernels must not read), runs it on the GPU through the runner and on
// the CPU through the reference, and compares the two.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "fmha/fmha.h"
#include "reference/reference.h"

namespace fmha::harness {

struct ProblemSpec {
    Mode mode = Mode::kLlm;
    DataType dtype = DataType::kHALF;
    int32_t numQHeads = 8;
    int32_t numKVHeads = 8;
    int32_t headDim = 128;
    // Per sequence query / key counts. LLM and paged modes take lq[0] for every sequence
    // (one seqLenQ); ViT takes lk = lq.
    std::vector<int32_t> lq;
    std::vector<int32_t> lk;
    int32_t capacity = 0;       // LLM: cache capacity (0: largest Lk plus a few unused slots)
    int32_t pageSize = 64;      // paged modes
    int32_t sparepages = 3;     // unused pages in the pool (hold NaN)
    bool causal = true;         // paged mode only
    int32_t window = INT_MAX;
    float skip = 0.0F;
    bool bidirectional = false;  // paged mode: random vision runs
    bool withLse = true;
    bool bf16Out = false;  // FP8 input: O in BF16 (the runner's bf16Output)
    float attentionScale = 0.0F;  // 0: 1/sqrt(D)
    float valueRange = 1.0F;      // inputs uniform in [-valueRange, valueRange] (before quantisation)
    // V only: uniform in [valueOffset - valueRange, valueOffset + valueRange], so that O does not
    // average out to about zero (a bias of O relative to its size shows).
    float valueOffset = 0.0F;
    bool cApi = false;            // run through the C API's *_args functions instead of the C++ runner
    int32_t splits = 0;           // FmhaRunner::setSplitKv: 0 automatic, 1 never, 2..64 forced parts
    int32_t tileShape = -1;       // a Hopper TileShape forced for the run (detail::setTileShape), -1: the setting as it is
    // 0: a direct run; 1: preflight, then the run captured into a CUDA graph and the graph
    // replayed; 2: the same without preflight (C++ runner either way).
    int graph = 0;
    // Runs of the problem on one runner (or replays of its graph): the outputs are poisoned
    // again before each run after the first, so that every run must write them (split-KV's
    // row-tile counters must be back at zero after each).
    int runs = 1;
    // LLM and paged modes, 16-bit input, D > 64: queries and keys with the structure of an
    // LLM's attention (see makeProblem) instead of uniform noise; skip-softmax's tests and
    // benchmark. structuredPrev: the weight of the previous segment's vector in a query (its
    // scores there, relative to its own segment's: 0.35 puts them 15.7 base-2 units of the
    // softmax below at D=128, 0.55 10 units, so that small factors keep that segment);
    // structuredSegment: the segment length in key positions.
    bool structured = false;
    float structuredPrev = 0.35F;
    int structuredSegment = 1024;
    uint64_t seed = 1;
};

// The largest |V| a problem's V may hold (before quantisation).
inline float maxAbsV(ProblemSpec const& s) { return s.valueRange + std::fabs(s.valueOffset); }

struct HostProblem {
    ProblemSpec spec;
    ref::Shape shape;
    std::vector<uint8_t> q, k, v;  // LLM: k = kv cache; paged: k = pool; ViT: k and v
    std::vector<int32_t> cuQ, cuKV, pageTable, bidirBegin, bidirEnd;
    int32_t totalQ = 0, maxQ = 0, numPages = 0, maxPagesPerSeq = 0;
    float qScale = 1.0F, kScale = 1.0F, vScale = 1.0F;
    int64_t oElems = 0;
    int64_t lseElems = 0;
    std::string describe() const;
};

// The problem of spec: inputs uniform in [-valueRange, valueRange], or with spec.structured
// (LLM and paged modes, FP16/BF16, D > 64) scores q_i.k_j with an LLM's structure: high on the query's
// own segment of 1024 positions, lower on the previous segment, high on a few heavy-hitter
// key blocks every query attends to (the first 64 keys and three random blocks of 64), and
// near zero elsewhere; V uniform either way.
HostProblem makeProblem(ProblemSpec const& spec);

struct GpuResult {
    std::vector<uint16_t> o;  // FP16 or BF16 bits
    std::vector<float> lse;
    float medianMs = 0.0F;
    std::string family;  // kernel family that ran
    int packedHeads = 1;  // query heads it packed into one tile (pack GQA); 0 through the C API (no record)
    int splits = 1;       // split-KV parts it launched; 0 through the C API
    int blockM = 0, blockN = 0;  // its tile (query rows, keys); 0 through the C API
    bool persistent = false;     // the persistent kernel ran (false through the C API)
    bool mergedInKernel = false;  // split-KV merged by the forward kernel (false through the C API)
    bool pairedKv = false;        // CTA pairs shared K/V loads (false through the C API)
};

// Runs the problem through the runner (poisoned output first). timingIters > 0 also times
// that many samples after warm-up and reports the median time of one launch. A sample is one
// launch between two events (launchesPerSample = 1: the host's launch gap included), or
// launchesPerSample back-to-back launches behind one untimed launch, which keeps the GPU
// busy while the host queues them (the gap hidden; the time divided by the count). False
// with *error on failure.
bool runGpu(HostProblem const& p, GpuResult* out, std::string* error, int timingIters = 0,
            int launchesPerSample = 1);

bool runReference(HostProblem const& p, ref::Options const& opt, ref::Result* out, std::string* error);

// The options of the reference "of the kernel's precision" (P rounded as the family that ran
// rounds it: to the 16-bit type, or for the Hopper family's FP8 to E4M3 after its scale), the
// lowp reference compare() takes.
ref::Options lowpOptions(HostProblem const& p, std::string const& family);

struct Verdict {
    bool pass = false;
    double maxErr = 0.0, meanErr = 0.0;  // kernel vs float64 reference
    double maxErrLowp = 0.0;             // same-precision reference vs float64 reference
    double bound = 0.0;                  // the allowed max error
    double maxLseErr = 0.0;
    int64_t unwritten = 0;               // NaN outputs
    std::string detail;
};

// The Hopper family's FP8 scores: its tensor cores sum E4M3 products with less than FP32's
// precision. docs/SEMANTICS.md bounds a score's error, in the softmax's natural-log units, by
// kFp8ScoreRelErr * scale * sum_d |q_d k_d| (dequantized). fp8ScoreErr: that bound for any
// score of the problem (the largest sum_d |q_d| of a Q row times the largest |k|) where the
// family is "sm90" and the input FP8; 0 otherwise.
inline constexpr double kFp8ScoreRelErr = 1.0 / 8192;
double fp8ScoreErr(HostProblem const& p, std::string const& family);

// Tolerance (FA3-like): max error <= 2 x the same-precision reference's error + atol (+ the
// 16-bit P type's unit roundoff times max|V|: P rounded against a lagging max), mean likewise;
// LSE within 2e-3 relative; every output finite. extraBound widens the max error
// bound (skip-softmax's documented approximation error). Where fp8ScoreErr gives delta > 0,
// the LSE may be off by delta more and O by (e^(2 delta) - 1) max|V| more (every weight of
// the softmax within a factor e^(+-2 delta)).
Verdict compare(HostProblem const& p, GpuResult const& gpu, ref::Result const& exact, ref::Result const& lowp,
                double extraBound = 0.0);

// Whether the problem's O is BF16 (BF16 input, or FP8 input with bf16Out), else FP16.
bool bf16Output(ProblemSpec const& s);

// Sequence b's packed Q rows and keys as the kernels read them: the metadata clamped as
// docs/SEMANTICS.md documents for malformed device data (the identity on valid metadata).
struct SeqGeometry {
    int64_t qBegin = 0;   // first Q/O row
    int64_t lq = 0;       // queries (the causal offset is lk - lq)
    int64_t rows = 0;     // rows computed: lq, at most maxQSeqLen in the packed modes
    int64_t kvBegin = 0;  // ViT: first K/V row
    int64_t lk = 0;
};
SeqGeometry seqGeometry(HostProblem const& p, int32_t b);

// A second, naive evaluation of the same problem for cross-checking the reference:
// materialises each (sequence, head) score matrix and its mask matrix in float64. No
// skip-softmax, no precision emulation. O and LSE in the layouts of ref::Result. It reads
// the metadata through seqGeometry() and page ids outside the pool as zero keys, so it also
// judges malformed problems; coverage (optional): per output row, the sequences computing it.
// fp8Tol (optional): per O element, what the Hopper family's FP8 path may add to the error:
// P rounded to E4M3 after its scale of 256 (2^-4 relative, 2^-18 absolute below E4M3's
// normal range) and the score error of fp8ScoreErr's rate, over the keys the row sees.
void naiveAttention(HostProblem const& p, ref::Result* out, std::vector<int32_t>* coverage = nullptr,
                    std::vector<double>* fp8Tol = nullptr);

// FLOPs of the problem (4 * D per allowed (query, key) pair, counted exactly).
double countFlops(HostProblem const& p);

bool gpuAvailable(std::string* why);

// The API head dims of the support table (tools/generate_kernels.py) a mode takes, in the
// table's order; every mode's (no paged-only ones) where paged is false.
std::vector<int> headDims(bool paged);

// Whether the current GPU, under the dispatcher's shared-memory budget (which a test may cap
// below the device's), has a kernel for the problem; *why says why not.
bool kernelAvailable(ProblemSpec const& spec, std::string* why);

}  // namespace fmha::harness
