// The fmha command line: `info` (build, device, support matrix), `run` (a realistic problem
// per mode, verified against the reference), `bench` (timed sweep, JSON rows) and `fuzz`
// (random problems through every kernel family against the reference).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "fmha/fmha.h"
#include "fmha_build_config.h"
#include "fuzz.h"
#include "internals.h"
#include "problems.h"

using namespace fmha;
using harness::HostProblem;
using harness::ProblemSpec;

namespace {

struct Flags {
    std::map<std::string, std::string> values;
    std::vector<std::string> errors;
    bool has(std::string const& k) const { return values.count(k) != 0; }
    std::string str(std::string const& k, std::string const& def) const {
        auto it = values.find(k);
        return it == values.end() ? def : it->second;
    }
    int integer(std::string const& k, int def) {
        auto it = values.find(k);
        if (it == values.end()) return def;
        char* end = nullptr;
        long v = std::strtol(it->second.c_str(), &end, 10);
        if (end == it->second.c_str() || *end != '\0') errors.push_back("--" + k + " needs an integer");
        return static_cast<int>(v);
    }
    float real(std::string const& k, float def) {
        auto it = values.find(k);
        if (it == values.end()) return def;
        char* end = nullptr;
        float v = std::strtof(it->second.c_str(), &end);
        if (end == it->second.c_str() || *end != '\0') errors.push_back("--" + k + " needs a number");
        return v;
    }
};

// One flag of a command: its name, whether it takes a value, its meaning and default.
struct FlagDef {
    char const* name;
    bool takesValue;
    char const* help;
};

struct Command {
    char const* name;
    char const* summary;
    std::vector<FlagDef> flags;
};

std::vector<Command> const& commands() {
    static std::vector<Command> const cmds = {
        {"info", "build, device, the kernel configuration per SM class and the support matrix", {}},
        {"run",
         "one realistic problem per mode on the GPU (or the CPU backend), verified against the reference",
         {{"mode", true, "llm, paged, ragged, vit or all (default all)"},
          {"device", true, "cpu or gpu (default: gpu where there is one)"},
          {"dtype", true, "fp16, bf16 or fp8 (default fp16)"},
          {"batch", true, "sequences (default: 1; ragged and vit 4)"},
          {"heads", true, "query heads (default 32; vit 16)"},
          {"kv-heads", true, "KV heads (default 8; vit: --heads)"},
          {"head-dim", true, "head dim (default 128; vit 80)"},
          {"seq-q", true, "queries per sequence, the longest in ragged/vit (default 2048; ragged and vit 1024)"},
          {"seq-kv", true, "keys per sequence (default 4096; ragged 3072; vit: --seq-q)"},
          {"page-size", true, "tokens per page in the paged modes (default 128)"},
          {"window", true, "sliding window W, keys i+off-W .. i+off (default: none)"},
          {"causal", false, "causal mask (the default)"},
          {"no-causal", false, "paged mode: no causal mask"},
          {"bidirectional", false, "paged mode: random bidirectional vision runs"},
          {"skip", true, "skip-softmax factor S, causal (default 0: off)"},
          {"seed", true, "input seed (default 1)"},
          {"no-verify", false, "CPU: time the reference alone, skip the naive cross-check"}}},
        {"bench",
         "the timed sweep (medians of CUDA-event samples after warm-up), one JSON row per problem",
         {{"quick", false, "the short sweep"},
          {"decode", false, "the decode sweep instead: paged decode steps over long contexts, in TB/s of K/V read"},
          {"skip-sweep", false,
           "skip-softmax instead: 16k causal prefill with structured scores at a range of factors: measured tile "
           "sparsity, speedup over dense, error against dense"},
          {"skip-factors", true,
           "with --skip-sweep: the factors S to time, comma-separated (default "
           "1e-30,1,2,4,8,16,64,256,1024,4096)"},
          {"page-size", true,
           "with --skip-sweep: the problems over a paged KV cache with pages of N tokens (a power of two, 16-256; "
           "default: contiguous KV)"},
          {"splits", true, "split-KV parts (FmhaRunner::setSplitKv): 0 automatic (default), 1 never, 2..64 forced"},
          {"row", true, "time one row of the sweep, by index"},
          {"seq", true,
           "with --row of a non-decode sweep: every sequence's queries and keys set to N, the batch scaled so that "
           "the row keeps its tokens (at least one sequence)"},
          {"dim", true,
           "with --row of a non-decode sweep: the head dim set to N (the heads kept), e.g. 72 for a SigLIP-like "
           "vision encoder"},
          {"json", true, "write the rows to this file"},
          {"iters", true, "timed samples a row (default 20)"},
          {"launches", true, "back-to-back launches a sample (default 10; 1: one launch, the host's gap included)"},
          {"commit", true, "commit recorded in the JSON (default unknown)"},
          {"dtype", true, "fp16, bf16 or fp8 (default fp16)"}}},
        {"fuzz",
         "random problems of every mode through every kernel family against the reference; stops at the "
         "first mismatch with a one-line reproduction",
         {{"cases", true, "cases to run (default 1000)"},
          {"seed", true, "run seed (default 1)"},
          {"start", true, "first case index (default 0): shards of one run"},
          {"case", true, "run this one case alone and print it"},
          {"mode", true, "llm, paged, ragged or vit only (default: all)"},
          {"dtype", true, "fp16, bf16 or fp8 only (default: all)"},
          {"malformed", false, "corrupt the device metadata; judge the documented clamping"},
          {"max-work", true, "the reference's multiply-adds a case at most (default 4e7); lengths shrink to fit"}}},
    };
    return cmds;
}

Command const* findCommand(std::string const& name) {
    for (Command const& c : commands())
        if (name == c.name) return &c;
    return nullptr;
}

void commandHelp(Command const& c) {
    std::printf("usage: fmha %s%s\n  %s\n", c.name, c.flags.empty() ? "" : " [flags]", c.summary);
    for (FlagDef const& f : c.flags)
        std::printf("  --%-14s %s\n", (std::string(f.name) + (f.takesValue ? " V" : "")).c_str(), f.help);
}

// Flags of command c from argv[first..]; an unknown flag, a stray argument or a missing value
// is an error (false, message on stderr).
bool parseFlags(Command const& c, int argc, char** argv, int first, Flags* f) {
    for (int i = first; i < argc; ++i) {
        std::string a = argv[i];
        if (a.rfind("--", 0) != 0) {
            std::fprintf(stderr, "fmha %s: unexpected argument '%s' (fmha %s --help lists the flags)\n", c.name,
                         a.c_str(), c.name);
            return false;
        }
        a = a.substr(2);
        FlagDef const* def = nullptr;
        for (FlagDef const& d : c.flags)
            if (a == d.name) def = &d;
        if (def == nullptr) {
            std::fprintf(stderr, "fmha %s: unknown flag --%s (fmha %s --help lists the flags)\n", c.name, a.c_str(),
                         c.name);
            return false;
        }
        if (!def->takesValue) {
            f->values[a] = "1";
        } else if (i + 1 < argc) {
            f->values[a] = argv[++i];
        } else {
            std::fprintf(stderr, "fmha %s: --%s needs a value\n", c.name, a.c_str());
            return false;
        }
    }
    return true;
}

bool parseMode(std::string const& s, Mode* m) {
    if (s == "llm") *m = Mode::kLlm;
    else if (s == "paged") *m = Mode::kPaged;
    else if (s == "ragged") *m = Mode::kPagedRagged;
    else if (s == "vit") *m = Mode::kVit;
    else return false;
    return true;
}

bool parseDtype(std::string const& s, DataType* t) {
    if (s == "fp16") *t = DataType::kHALF;
    else if (s == "bf16") *t = DataType::kBF16;
    else if (s == "fp8") *t = DataType::kFP8;
    else return false;
    return true;
}

void usage() {
    std::puts("usage: fmha <command> [flags]   (fmha <command> --help: the command's flags)\ncommands:");
    for (Command const& c : commands()) std::printf("  %-6s %s\n", c.name, c.summary);
}

int cmdInfo() {
    std::printf("fmha %s\n", FMHA_VERSION);
    std::printf("build: CUTLASS %s, CUDA targets %s\n", FMHA_CUTLASS_VERSION, FMHA_CUDA_ARCHS);
    std::string why;
    int sm = 0;
    if (harness::gpuAvailable(&why)) {
        detail::DeviceInfo d;
        if (detail::currentDevice(&d)) {
            std::printf("device %d: %s, sm_%d, %d SMs, %d KB shared memory per block\n", d.ordinal, d.name.c_str(),
                        d.smVersion, d.smCount, d.maxSmemOptin / 1024);
            sm = d.smVersion;
        }
    } else {
        std::printf("device: none (%s)\n", why.c_str());
    }
    std::vector<int> sms = {80, 86, 87, 89, 90, 100, 120};
    if (sm != 0 && std::find(sms.begin(), sms.end(), sm) == sms.end()) sms.push_back(sm);
    Mode const modes[] = {Mode::kLlm, Mode::kPaged, Mode::kPagedRagged, Mode::kVit};
    DataType const types[] = {DataType::kHALF, DataType::kBF16, DataType::kFP8};
    std::vector<int> const dims = harness::headDims(/*paged=*/true);
    std::printf("\ncanImplement (mode x dtype x head dim), for SM versions:");
    for (int s : sms) std::printf(" %d%s", s, s == sm ? "*" : "");
    std::printf("  (* this device)\n%-8s %-8s", "mode", "dtype");
    for (int d : dims) std::printf(" %6d", d);
    std::printf("\n");
    for (Mode m : modes)
        for (DataType t : types) {
            std::printf("%-8s %-8s", modeName(m), dataTypeName(t));
            for (int d : dims) {
                std::string cell;
                for (int s : sms) cell += FmhaRunner::canImplementMode(m, t, d, s) ? "y" : "-";
                std::printf(" %6s", cell.c_str());
            }
            std::printf("\n");
        }
    std::printf("page sizes (paged modes): powers of two in [%d, %d]\n", FmhaRunner::kMinPageSize,
                FmhaRunner::kMaxPageSize);
    // The configuration the dispatcher picks per SM class (its shared memory a block), paged
    // KV (contiguous KV takes the same tiles; D=512 exists for the paged modes only).
    std::printf("\nkernel configuration per SM class (paged KV): family rows x keys, shared memory in bytes\n");
    for (int s : sms) {
        int const budget = detail::smemPerBlockOfSm(s);
        for (ElementKind e : {ElementKind::kFp16, ElementKind::kFp8}) {
            std::printf("sm_%d %3d KB %-5s", s, budget / 1024, e == ElementKind::kFp8 ? "fp8" : "fp16");
            for (int d : dims) {
                detail::KernelOps ops;
                if (detail::findKernel(e, d, KvAddressing::kPaged, s, budget, false, &ops))
                    std::printf("  D=%d %s%s %dx%d %d", d, ops.family, ops.compact ? "c" : "", ops.blockM, ops.blockN,
                                ops.smemBytes);
                else
                    std::printf("  D=%d none", d);
            }
            std::printf("\n");
        }
    }
    std::printf("(sm80c: the portable family's compact tiles; FP16 and BF16 take the same configuration)\n");
    return 0;
}

// The default problem of each mode; shape flags override it. CPU problems are smaller.
bool buildSpec(Mode mode, bool cpu, Flags& f, ProblemSpec* s) {
    s->mode = mode;
    if (!parseDtype(f.str("dtype", "fp16"), &s->dtype)) {
        std::fprintf(stderr, "fmha: --dtype must be fp16, bf16 or fp8\n");
        return false;
    }
    int batch = 1, heads = 32, kvHeads = 8, dim = 128, sq = 2048, skv = 4096;
    s->pageSize = 128;
    switch (mode) {
    case Mode::kLlm:  // Llama-3-8B-like layer: chunked prefill of 2048 tokens onto 2048 cached
    case Mode::kPaged:
        if (cpu) { sq = 256; skv = 512; heads = 8; kvHeads = 2; }
        break;
    case Mode::kPagedRagged:  // several requests of different lengths onto different histories
        batch = 4;
        sq = cpu ? 128 : 1024;
        skv = cpu ? 384 : 3072;
        if (cpu) { heads = 8; kvHeads = 2; }
        break;
    case Mode::kVit:  // Qwen2.5-VL-like vision encoder: 16 heads, D=80, images of several sizes
        batch = 4;
        heads = kvHeads = 16;
        dim = 80;
        sq = skv = cpu ? 256 : 1024;
        if (cpu) heads = kvHeads = 4;
        break;
    }
    batch = f.integer("batch", batch);
    heads = f.integer("heads", heads);
    kvHeads = f.integer("kv-heads", mode == Mode::kVit ? heads : kvHeads);
    dim = f.integer("head-dim", dim);
    sq = f.integer("seq-q", sq);
    skv = f.integer("seq-kv", mode == Mode::kVit ? sq : skv);
    s->pageSize = f.integer("page-size", s->pageSize);
    s->window = f.integer("window", INT_MAX);
    s->skip = f.real("skip", 0.0F);
    s->seed = static_cast<uint64_t>(f.integer("seed", 1));
    s->causal = !f.has("no-causal");
    s->bidirectional = f.has("bidirectional");
    if (!f.errors.empty()) {
        for (auto& e : f.errors) std::fprintf(stderr, "fmha: %s\n", e.c_str());
        return false;
    }
    if (batch <= 0 || heads <= 0 || kvHeads <= 0 || sq <= 0 || skv < 0) {
        std::fprintf(stderr, "fmha: batch, heads, kv-heads and seq-q must be positive\n");
        return false;
    }
    s->numQHeads = heads;
    s->numKVHeads = kvHeads;
    s->headDim = dim;
    s->lq.clear();
    s->lk.clear();
    for (int b = 0; b < batch; ++b) {
        if (mode == Mode::kPagedRagged || mode == Mode::kVit) {
            // Varied lengths: the full length, then shorter ones (an image of 3/4, 1/2, ...).
            int const q = std::max(1, sq - (sq * (b % 4)) / 4 - 7 * b);
            s->lq.push_back(q);
            s->lk.push_back(mode == Mode::kVit ? q : std::max(q, skv - 13 * b));
        } else {
            s->lq.push_back(sq);
            s->lk.push_back(skv);
        }
    }
    return true;
}

int cmdRun(Flags& f) {
    std::string const modeArg = f.str("mode", "all");
    std::vector<Mode> modes;
    Mode one;
    if (modeArg == "all") modes = {Mode::kLlm, Mode::kPaged, Mode::kPagedRagged, Mode::kVit};
    else if (parseMode(modeArg, &one)) modes = {one};
    else {
        std::fprintf(stderr, "fmha: --mode must be llm, paged, ragged, vit or all\n");
        return 2;
    }
    std::string why;
    bool const haveGpu = harness::gpuAvailable(&why);
    std::string device = f.str("device", haveGpu ? "gpu" : "cpu");
    if (!f.has("device") && !haveGpu) std::printf("no GPU here (%s): running on the CPU backend\n", why.c_str());
    if (device != "cpu" && device != "gpu") {
        std::fprintf(stderr, "fmha: --device must be cpu or gpu\n");
        return 2;
    }
    if (device == "gpu" && !haveGpu) {
        std::fprintf(stderr, "fmha: --device gpu, but %s\n", why.c_str());
        return 1;
    }
    bool const cpu = device == "cpu";
    bool allPass = true;
    for (Mode mode : modes) {
        ProblemSpec spec;
        if (!buildSpec(mode, cpu, f, &spec)) return 2;
        HostProblem const p = harness::makeProblem(spec);
        ref::Options exactOpt;
        ref::Result exact, lowp;
        std::string err;
        auto t0 = std::chrono::steady_clock::now();
        bool ok = harness::runReference(p, exactOpt, &exact, &err);
        double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        std::string verdict, detail;
        double maxErr = 0;
        if (ok && cpu && f.has("no-verify")) {
            verdict = "UNVERIFIED";  // timing of the CPU backend alone
        } else if (ok && cpu) {
            // The CPU backend is the reference; it is checked against the naive evaluation.
            ref::Result naive;
            harness::naiveAttention(p, &naive);
            for (size_t i = 0; i < naive.o.size(); ++i)
                maxErr = std::max(maxErr, std::fabs(naive.o[i] - exact.o[i]));
            ok = maxErr <= 1e-9 && spec.skip == 0.0F;
            verdict = ok ? "PASS" : "FAIL";
            if (spec.skip != 0.0F) detail = " (skip-softmax is a GPU feature; use --device gpu)";
        } else if (ok) {
            harness::GpuResult gpu;
            ok = harness::runGpu(p, &gpu, &err, 10);
            if (ok) ok = harness::runReference(p, harness::lowpOptions(p, gpu.family), &lowp, &err);
            if (ok) {
                double extra = 0;
                if (spec.skip > 0) extra = 2.0 * spec.skip * spec.valueRange;
                harness::Verdict v = harness::compare(p, gpu, exact, lowp, extra);
                ok = v.pass;
                maxErr = v.maxErr;
                ms = gpu.medianMs;
                detail = " " + v.detail;
                double const tflops = harness::countFlops(p) / (ms * 1e-3) / 1e12;
                char buf[64];
                std::snprintf(buf, sizeof buf, " %.1f TFLOPS [%s]", tflops, gpu.family.c_str());
                detail = buf + detail;
            }
            verdict = ok ? "PASS" : "FAIL";
        }
        if (!err.empty()) {
            verdict = "FAIL";
            detail = " error: " + err;
            ok = false;
        }
        std::printf("%-7s %-3s %s  max_abs_err=%.3g  %s  %.3f ms%s\n", modeName(mode), cpu ? "cpu" : "gpu",
                    p.describe().c_str(), maxErr, verdict.c_str(), ms, detail.c_str());
        allPass = allPass && ok;
    }
    return allPass ? 0 : 1;
}

std::string today() {
    std::time_t t = std::time(nullptr);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%d", std::gmtime(&t));
    return buf;
}

struct BenchRow {
    ProblemSpec spec;
    std::string mask;
    int index = 0;  // position in its sweep (what --row takes)
};

// The published sweep: B*S = 16k tokens, H*D = 2048, per head dim and mask; then GQA,
// paged (page sizes), chunked-prefill, ViT varlen and D=96 rows.
std::vector<BenchRow> benchSweep(bool quick) {
    // B sequences of Lq queries over Lk keys, H / Hkv heads of dim D, no LSE.
    auto row = [](Mode mode, int h, int hkv, int d, int b, int lq, int lk, char const* mask) {
        BenchRow r;
        r.spec.mode = mode;
        r.spec.numQHeads = h;
        r.spec.numKVHeads = hkv;
        r.spec.headDim = d;
        r.spec.lq.assign(b, lq);
        r.spec.lk.assign(b, lk);
        r.spec.withLse = false;
        r.mask = mask;
        return r;
    };
    auto overPages = [](BenchRow r, int page) {  // the same row over a paged cache, no spare pages
        r.spec.mode = Mode::kPaged;
        r.spec.pageSize = page;
        r.spec.sparepages = 0;
        return r;
    };
    std::vector<BenchRow> rows;
    std::vector<int> const seqs = quick ? std::vector<int>{512, 4096} : std::vector<int>{512, 2048, 4096, 16384};
    for (int d : {64, 128, 256})
        for (bool causal : {false, true})
            for (int s : seqs)
                rows.push_back(row(causal ? Mode::kLlm : Mode::kVit, 2048 / d, 2048 / d, d, std::max(1, 16384 / s), s,
                                   s, causal ? "causal" : "none"));
    // GQA chunked prefill: 32 query / 8 KV heads, D=128, causal, S=8k; the same over pages.
    BenchRow const gqa = row(Mode::kLlm, 32, 8, 128, 2, 8192, 8192, "causal");
    rows.push_back(gqa);
    for (int page : {16, 64, 128, 256}) rows.push_back(overPages(gqa, page));
    // Chunked prefill over a paged cache: 16 sequences, each a chunk of 16 or 64 new queries
    // on an 8k context, 32/8 heads (pack GQA). Non-causal, so that SDPA (whose causal mask is
    // top-left aligned) runs the same pairs; a bottom-right causal mask changes < 1% of them.
    for (int chunk : {16, 64}) {
        BenchRow r = overPages(row(Mode::kLlm, 32, 8, 128, 16, chunk, 8192, "none"), 128);
        r.spec.causal = false;
        rows.push_back(r);
    }
    // ViT varlen: 8 sequences of 1024, 16 heads, D=128 and the Qwen2.5-VL-like D=80.
    rows.push_back(row(Mode::kVit, 16, 16, 128, 8, 1024, 1024, "none"));
    rows.push_back(row(Mode::kVit, 16, 16, 80, 8, 1024, 1024, "none"));
    // D=96 (Phi-3-mini-like: 32 heads), causal prefill of 2 x 4k; the same over 64-token pages.
    BenchRow const d96 = row(Mode::kLlm, 32, 32, 96, 2, 4096, 4096, "causal");
    rows.push_back(d96);
    rows.push_back(overPages(d96, 64));
    return rows;
}

// Decode steps over a paged cache: 32 query heads, D=128, causal, pages of 128 unless noted;
// the batch / context / new-query rows first, then page sizes 16 and 256, 8 new queries and
// GQA ratios 1 and 8 at 32k (the default 32/8 is ratio 4), then one KV head (MQA): 8 x 32k holds
// the bytes of one sequence of 32k over 8 KV heads and 64 x 32k those of 8 x 32k, in the same
// 128 CTAs, with each token's K and V rows contiguous (over 8 KV heads a head's row is 256 bytes
// of every 2 KB).
std::vector<BenchRow> decodeSweep() {
    auto row = [](int b, int lk, int lq, int hkv, int page) {
        BenchRow r;
        r.spec.mode = Mode::kPaged;
        r.spec.numQHeads = 32;
        r.spec.numKVHeads = hkv;
        r.spec.headDim = 128;
        r.spec.lq.assign(b, lq);
        r.spec.lk.assign(b, lk);
        r.spec.pageSize = page;
        r.spec.sparepages = 0;
        r.spec.withLse = false;
        r.mask = "causal";
        return r;
    };
    return {row(1, 8192, 1, 8, 128),    row(1, 131072, 1, 8, 128), row(1, 131072, 4, 8, 128),
            row(8, 32768, 1, 8, 128),   row(32, 8192, 1, 8, 128),  row(64, 4096, 1, 8, 128),
            row(1, 32768, 1, 8, 128),   row(1, 32768, 1, 8, 16),   row(1, 32768, 1, 8, 256),
            row(1, 32768, 4, 8, 128),   row(1, 32768, 8, 8, 128),  row(1, 32768, 1, 32, 128),
            row(1, 32768, 1, 4, 128),   row(4, 16384, 4, 8, 128),  row(8, 32768, 1, 1, 128),
            row(64, 32768, 1, 1, 128)};
}

// Bytes of K and V a problem's keys hold (what a decode step must read).
double kvBytes(ProblemSpec const& s) {
    double keys = 0;
    for (int32_t lk : s.lk) keys += lk;
    return keys * s.numKVHeads * s.headDim * 2 * (s.dtype == DataType::kFP8 ? 1 : 2);
}

// One structured problem of skipSweep (structuredPrev = prev, structuredSegment = segment;
// pageSize > 0: over a paged KV cache with pages of that many tokens): its rows appended to
// json; returns the failed runs.
int skipSweepOne(DataType dtype, float prev, int segment, int pageSize, std::vector<float> const& factors, int iters,
                 int launches, std::string const& commit, std::ostringstream& json, bool& first) {
    ProblemSpec s;
    s.mode = pageSize > 0 ? Mode::kPaged : Mode::kLlm;
    if (pageSize > 0) s.pageSize = pageSize;
    s.dtype = dtype;
    s.numQHeads = 32;
    s.numKVHeads = 8;
    s.headDim = 128;
    s.lq = {16384};
    s.lk = {16384};
    s.withLse = false;
    s.structured = true;
    s.structuredPrev = prev;
    s.structuredSegment = segment;
    s.splits = 1;
    HostProblem const p = harness::makeProblem(s);
    double const flops = harness::countFlops(p);
    unsigned long long* counters = nullptr;
    if (cudaMalloc(reinterpret_cast<void**>(&counters), FmhaParams::kSkipStats * sizeof(unsigned long long)) != cudaSuccess) {
        std::fprintf(stderr, "fmha bench --skip-sweep: cannot allocate the skip counters\n");
        return 1;
    }
    std::string err;
    harness::GpuResult dense;
    if (!harness::runGpu(p, &dense, &err, iters, launches)) {
        std::fprintf(stderr, "fmha bench --skip-sweep: dense run: %s\n", err.c_str());
        cudaFree(counters);
        return 1;
    }
    detail::DeviceInfo dev;
    detail::currentDevice(&dev);
    std::printf("%s: %s, structured scores (segments of %d keys, previous segment weight %.2f)\n", dev.name.c_str(),
                p.describe().c_str(), segment, prev);
    // dropped: the (warp, key tile) steps whose exponentials a warp skipped; P.V skipped: the
    // (warpgroup, key tile) steps whose P.V product was skipped (all four warps dropped the tile).
    std::printf("%10s %9s %9s %9s %8s %8s %10s %10s %s\n", "factor S", "dropped", "P.V skip", "ms", "TFLOPS",
                "speedup", "max err", "mean err", "family");
    std::printf("%10s %9s %9s %9.4f %8.1f %8.3f %10s %10s %s\n", "0 (dense)", "-", "-", dense.medianMs,
                flops / (dense.medianMs * 1e-3) / 1e12, 1.0, "-", "-", dense.family.c_str());
    int failures = 0;
    for (float S : factors) {
        HostProblem q = p;
        q.spec.skip = S;
        unsigned long long counts[FmhaParams::kSkipStats] = {};
        harness::GpuResult once, timed;
        cudaMemset(counters, 0, sizeof(counts));
        detail::setSkipStats(counters);
        bool ok = harness::runGpu(q, &once, &err);
        detail::setSkipStats(nullptr);
        ok = ok && cudaMemcpy(counts, counters, sizeof(counts), cudaMemcpyDeviceToHost) == cudaSuccess;
        ok = ok && harness::runGpu(q, &timed, &err, iters, launches);
        if (!ok) {
            std::printf("%10g error: %s\n", S, err.c_str());
            ++failures;
            continue;
        }
        double maxErr = 0, sumErr = 0;
        bool const bf16 = harness::bf16Output(q.spec);  // else FP16 (FP8 input writes FP16 by default)
        auto value = [&](uint16_t x) { return static_cast<double>(bf16 ? num::bf16ToFloat(x) : num::halfToFloat(x)); };
        for (size_t i = 0; i < dense.o.size(); ++i) {
            double const e = std::fabs(value(timed.o[i]) - value(dense.o[i]));
            maxErr = std::max(maxErr, e);
            sumErr += e;
        }
        double const meanErr = dense.o.empty() ? 0.0 : sumErr / static_cast<double>(dense.o.size());
        char dropped[16] = "-", skipped[16] = "-";
        auto share = [](char (&text)[16], unsigned long long part, unsigned long long whole) {  // "-" where nothing counted
            if (whole > 0) std::snprintf(text, sizeof text, "%.1f%%", 100.0 * static_cast<double>(part) / whole);
        };
        share(skipped, counts[1], counts[0]);
        share(dropped, counts[3], counts[2]);
        std::printf("%10g %9s %9s %9.4f %8.1f %8.3f %10.3g %10.3g %s\n", S, dropped, skipped, timed.medianMs,
                    flops / (timed.medianMs * 1e-3) / 1e12, dense.medianMs / timed.medianMs, maxErr, meanErr,
                    timed.family.c_str());
        json << (first ? "" : ",\n") << "  {\"sweep\": \"skip\", \"factor\": " << S << ", \"tiles_visited\": " << counts[0]
             << ", \"tiles_skipped\": " << counts[1] << ", \"warp_tiles_visited\": " << counts[2]
             << ", \"warp_tiles_dropped\": " << counts[3] << ", \"ms\": " << timed.medianMs << ", \"dense_ms\": "
             << dense.medianMs << ", \"speedup\": " << dense.medianMs / timed.medianMs << ", \"max_err\": " << maxErr
             << ", \"mean_err\": " << meanErr << ", \"family\": \"" << timed.family << "\", \"dense_family\": \""
             << dense.family << "\", \"structured_prev\": " << prev << ", \"structured_segment\": " << segment << ", \"device\": \"" << dev.name
             << "\", \"problem\": \"" << p.describe()
             << "\", \"date\": \"" << today() << "\", \"commit\": \"" << commit << "\"}";
        first = false;
    }
    cudaFree(counters);
    return failures;
}

// Skip-softmax on a 16k causal prefill (32/8 heads, D=128, FP16, BF16 or FP8) whose scores have an LLM's
// structure (harness::makeProblem's structured inputs), over contiguous KV or (pageSize > 0) a paged
// cache: the dense run, then each factor S with the kernel's skip counters read in an untimed run
// (Hopper family; "-" elsewhere), the time, and the output's error against the dense output.
int skipSweep(DataType dtype, int pageSize, std::vector<float> const& factors, int iters, int launches,
              std::string const& commit, std::ofstream* jsonOut) {
    std::ostringstream json;
    json << "[\n";
    int failures = 0;
    bool first = true;
    // The structured problem four times: its previous segment 15.7 base-2 units below a
    // query's own (dropped from S = 0.3 on), 10 units below (kept up to S = 15), and the latter
    // with segments of 1280 and 1536 keys: sparsities of about 89%, 79%, 76% and 74% at small S.
    for (auto [prev, segment] :
         {std::pair{0.35F, 1024}, std::pair{0.55F, 1024}, std::pair{0.55F, 1280}, std::pair{0.55F, 1536}})
        failures += skipSweepOne(dtype, prev, segment, pageSize, factors, iters, launches, commit, json, first);
    json << "\n]\n";
    if (jsonOut != nullptr) {
        *jsonOut << json.str();
        jsonOut->close();
        if (!*jsonOut) {
            std::fprintf(stderr, "fmha bench: writing the JSON failed\n");
            return 2;
        }
    }
    return failures == 0 ? 0 : 1;
}


int cmdBench(Flags& f) {
    std::string why;
    if (!harness::gpuAvailable(&why)) {
        std::fprintf(stderr, "fmha bench needs a GPU: %s\n", why.c_str());
        return 1;
    }
    int const iters = f.integer("iters", 20);
    int const launches = f.integer("launches", 10);
    if (!f.errors.empty() || iters < 1 || launches < 1) {
        std::fprintf(stderr, "fmha bench: --iters and --launches need a positive count\n");
        return 2;
    }
    std::string const jsonPath = f.str("json", "");
    std::string const commit = f.str("commit", "unknown");
    DataType dtype = DataType::kHALF;
    if (!parseDtype(f.str("dtype", "fp16"), &dtype)) {
        std::fprintf(stderr, "fmha bench: --dtype must be fp16, bf16 or fp8\n");
        return 2;
    }
    std::ofstream jsonOut;
    if (!jsonPath.empty()) {  // opened first: a sweep is not run for a file that cannot be written
        jsonOut.open(jsonPath);
        if (!jsonOut) {
            std::fprintf(stderr, "fmha bench: cannot open %s for writing\n", jsonPath.c_str());
            return 2;
        }
    }
    if ((f.has("skip-factors") || f.has("page-size")) && !f.has("skip-sweep")) {
        std::fprintf(stderr, "fmha bench: --skip-factors and --page-size go with --skip-sweep\n");
        return 2;
    }
    if (f.has("skip-sweep")) {
        std::vector<float> factors;
        std::stringstream list(f.str("skip-factors", "1e-30,1,2,4,8,16,64,256,1024,4096"));
        for (std::string item; std::getline(list, item, ',');) {
            char* end = nullptr;
            float const v = std::strtof(item.c_str(), &end);
            if (item.empty() || *end != '\0' || !(v > 0.0F) || !std::isfinite(v)) {
                std::fprintf(stderr, "fmha bench: --skip-factors takes positive finite numbers, comma-separated\n");
                return 2;
            }
            factors.push_back(v);
        }
        int const pageSize = f.integer("page-size", 0);
        bool const pageOk = pageSize >= 16 && pageSize <= 256 && (pageSize & (pageSize - 1)) == 0;
        if (!f.errors.empty() || (f.has("page-size") && !pageOk)) {
            std::fprintf(stderr, "fmha bench: --page-size takes a power of two from 16 to 256\n");
            return 2;
        }
        return skipSweep(dtype, pageSize, factors, iters, launches, commit, jsonPath.empty() ? nullptr : &jsonOut);
    }
    bool const quick = f.has("quick"), decode = f.has("decode");
    int const splits = f.integer("splits", 0);
    if (!f.errors.empty() || splits < 0 || splits > FmhaRunner::kMaxSplits) {
        std::fprintf(stderr, "fmha bench: --splits needs 0 (automatic), 1 (never) or up to %d\n",
                     FmhaRunner::kMaxSplits);
        return 2;
    }
    std::vector<BenchRow> rows = decode ? decodeSweep() : benchSweep(quick);
    for (size_t i = 0; i < rows.size(); ++i) rows[i].index = static_cast<int>(i);
    if (f.has("row")) {  // one row of the sweep (for a profiler, or a re-timing round)
        int const row = f.integer("row", 0);
        if (!f.errors.empty() || row < 0 || static_cast<size_t>(row) >= rows.size()) {
            std::fprintf(stderr, "fmha bench: --row needs an index below %zu\n", rows.size());
            return 2;
        }
        rows = {rows[static_cast<size_t>(row)]};
    }
    if (f.has("seq")) {  // the row at another length: queries and keys N, the same tokens
        int const seq = f.integer("seq", 0);
        if (!f.errors.empty() || seq < 1 || !f.has("row") || decode) {
            std::fprintf(stderr, "fmha bench: --seq needs --row of the prefill sweep and a length >= 1\n");
            return 2;
        }
        ProblemSpec& spec = rows.front().spec;
        int64_t tokens = 0;
        for (int lq : spec.lq) tokens += lq;
        size_t const batch = static_cast<size_t>(std::max<int64_t>(1, tokens / seq));
        spec.lq.assign(batch, seq);
        spec.lk.assign(batch, seq);
    }
    if (f.has("dim")) {  // the row at another head dim, its heads kept
        int const dim = f.integer("dim", 0);
        if (!f.errors.empty() || dim < 1 || dim > 512 || !f.has("row") || decode) {
            std::fprintf(stderr, "fmha bench: --dim needs --row of the prefill sweep and a head dim of 1-512\n");
            return 2;
        }
        rows.front().spec.headDim = dim;
    }
    detail::DeviceInfo dev;
    detail::currentDevice(&dev);
    std::ostringstream json;
    json << "[\n";
    std::printf("%-6s %-5s %4s %5s %3s %5s %6s %6s %-6s %5s %9s %8s %6s %6s %s\n", "mode", "dtype", "D", "H", "Hkv",
                "B", "Lq", "Lk", "mask", "page", "ms", "TFLOPS", "TB/s", "splits", "family");
    int failures = 0;
    // A row's identity in the JSON, with its result or its error after it.
    auto jsonRow = [&](BenchRow const& r, HostProblem const& p) {
        bool const paged = r.spec.mode == Mode::kPaged || r.spec.mode == Mode::kPagedRagged;
        json << (r.index != rows.front().index ? ",\n" : "") << "  {\"mode\": \"" << modeName(r.spec.mode)
             << "\", \"dtype\": \"" << dataTypeName(dtype) << "\", \"head_dim\": " << r.spec.headDim
             << ", \"heads\": " << r.spec.numQHeads << ", \"kv_heads\": " << r.spec.numKVHeads
             << ", \"batch\": " << r.spec.lk.size() << ", \"lq\": " << r.spec.lq[0] << ", \"lk\": " << r.spec.lk[0]
             << ", \"mask\": \"" << r.mask << "\", \"page_size\": " << (paged ? r.spec.pageSize : 0)
             << ", \"flops\": " << harness::countFlops(p) << ", \"device\": \"" << dev.name << "\", \"sweep\": \""
             << (decode ? "decode" : quick ? "quick" : "full") << "\", \"row\": " << r.index
             << ", \"kv_bytes\": " << kvBytes(r.spec) << ", \"launches\": " << launches
             << ", \"date\": \"" << today() << "\", \"commit\": \"" << commit << "\"";
    };
    for (size_t i = 0; i < rows.size(); ++i) {
        BenchRow& r = rows[i];
        r.spec.dtype = dtype;
        r.spec.splits = splits;
        std::fprintf(stderr, "[%zu/%zu] %s\r", i + 1, rows.size(), modeName(r.spec.mode));
        HostProblem const p = harness::makeProblem(r.spec);
        harness::GpuResult gpu;
        std::string err;
        if (!harness::runGpu(p, &gpu, &err, iters, launches)) {
            std::printf("%-6s error: %s\n", modeName(r.spec.mode), err.c_str());
            ++failures;
            jsonRow(r, p);
            std::string quoted;
            for (char ch : err) {
                if (ch == '"' || ch == '\\') quoted += '\\';
                quoted += static_cast<unsigned char>(ch) < 0x20 ? ' ' : ch;
            }
            json << ", \"error\": \"" << quoted << "\"}";
            continue;
        }
        double const tflops = harness::countFlops(p) / (gpu.medianMs * 1e-3) / 1e12;
        double const tbps = kvBytes(r.spec) / (gpu.medianMs * 1e-3) / 1e12;
        bool const paged = r.spec.mode == Mode::kPaged || r.spec.mode == Mode::kPagedRagged;
        std::string const family =
            gpu.packedHeads > 1 ? gpu.family + " packgqa" + std::to_string(gpu.packedHeads) : gpu.family;
        std::printf("%-6s %-5s %4d %5d %3d %5zu %6d %6d %-6s %5d %9.4f %8.1f %6.2f %6d %s\n", modeName(r.spec.mode),
                    dataTypeName(dtype), r.spec.headDim, r.spec.numQHeads, r.spec.numKVHeads, r.spec.lk.size(),
                    r.spec.lq[0], r.spec.lk[0], r.mask.c_str(), paged ? r.spec.pageSize : 0, gpu.medianMs, tflops,
                    tbps, gpu.splits, family.c_str());
        jsonRow(r, p);
        json << ", \"ours_ms\": " << gpu.medianMs << ", \"ours_tflops\": " << tflops << ", \"family\": \""
             << gpu.family << "\", \"packed_heads\": " << gpu.packedHeads << ", \"splits\": " << gpu.splits
             << ", \"ours_tbps\": " << tbps << ", \"block_m\": " << gpu.blockM << ", \"block_n\": " << gpu.blockN
             << ", \"persistent\": " << (gpu.persistent ? "true" : "false") << "}";
    }
    json << "\n]\n";
    std::fprintf(stderr, "\n");
    if (!jsonPath.empty()) {
        jsonOut << json.str();
        jsonOut.close();
        if (!jsonOut) {
            std::fprintf(stderr, "fmha bench: writing %s failed\n", jsonPath.c_str());
            return 2;
        }
        std::printf("wrote %s\n", jsonPath.c_str());
    }
    return failures == 0 ? 0 : 1;
}

// Random problems through every family against the reference (testing/fuzz.h).
int cmdFuzz(Flags& f) {
    std::string why;
    if (!harness::gpuAvailable(&why)) {
        std::fprintf(stderr, "fmha fuzz needs a GPU: %s\n", why.c_str());
        return 1;
    }
    harness::FuzzFilter filter;
    std::string const modeArg = f.str("mode", "all");
    if (modeArg != "all") {
        Mode m;
        if (!parseMode(modeArg, &m)) {
            std::fprintf(stderr, "fmha fuzz: --mode must be llm, paged, ragged or vit\n");
            return 2;
        }
        filter.mode = static_cast<int>(m);
    }
    if (f.has("dtype")) {
        DataType t;
        if (!parseDtype(f.str("dtype", ""), &t)) {
            std::fprintf(stderr, "fmha fuzz: --dtype must be fp16, bf16 or fp8\n");
            return 2;
        }
        filter.dtype = static_cast<int>(t);
    }
    filter.malformed = f.has("malformed");
    filter.maxWork = f.real("max-work", static_cast<float>(filter.maxWork));
    uint64_t const seed = std::strtoull(f.str("seed", "1").c_str(), nullptr, 10);
    long long const cases = f.integer("cases", 1000), start = f.integer("start", 0);
    long long const one = f.integer("case", -1);
    if (!f.errors.empty() || cases < 0 || start < 0) {
        for (auto& e : f.errors) std::fprintf(stderr, "fmha fuzz: %s\n", e.c_str());
        std::fprintf(stderr, "fmha fuzz: --cases, --start and --case need counts >= 0\n");
        return 2;
    }
    long long const first = one >= 0 ? one : start, last = one >= 0 ? one + 1 : start + cases;
    std::map<std::string, long long> families;
    auto t0 = std::chrono::steady_clock::now();
    auto lastReport = t0;
    for (long long i = first; i < last; ++i) {
        harness::FuzzCase const c = harness::makeFuzzCase(seed, static_cast<uint64_t>(i), filter);
        harness::FuzzVerdict const v = harness::runFuzzCase(c);
        for (std::string const& fam : v.families) ++families[fam];
        if (v.skipped) ++families["skipped (no kernel fits the budget)"];
        if (one >= 0 || !v.pass) std::printf("case %lld: %s %s\n", i, v.pass ? "PASS" : "FAIL", v.detail.c_str());
        if (!v.pass) {
            std::printf("reproduce: %s\n", harness::fuzzRepro(seed, static_cast<uint64_t>(i), filter).c_str());
            return 1;
        }
        auto now = std::chrono::steady_clock::now();
        if (i + 1 == last || std::chrono::duration<double>(now - lastReport).count() > 10) {
            lastReport = now;
            std::printf("fuzz seed %llu: %lld/%lld cases passed (", static_cast<unsigned long long>(seed),
                        i + 1 - first,
                        last - first);
            bool firstFam = true;
            for (auto const& [fam, n] : families) {
                std::printf("%s%s %lld", firstFam ? "" : ", ", fam.c_str(), n);
                firstFam = false;
            }
            std::printf("), %.0f s\n", std::chrono::duration<double>(now - t0).count());
            std::fflush(stdout);
        }
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "help")) {
        usage();
        return argc < 2 ? 2 : 0;
    }
    Command const* c = findCommand(argv[1]);
    if (c == nullptr) {
        std::fprintf(stderr, "fmha: unknown command '%s'\n", argv[1]);
        usage();
        return 2;
    }
    for (int i = 2; i < argc; ++i)
        if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) {
            commandHelp(*c);
            return 0;
        }
    Flags f;
    if (!parseFlags(*c, argc, argv, 2, &f)) return 2;
    std::string const cmd = c->name;
    if (cmd == "info") return cmdInfo();
    if (cmd == "run") return cmdRun(f);
    if (cmd == "bench") return cmdBench(f);
    return cmdFuzz(f);
}
