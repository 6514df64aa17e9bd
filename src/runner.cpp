// The runner: validates every argument on the host, fills the one FmhaParams, picks the
// kernel instance and launches it. Nothing is launched (and nothing written) on an error.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "device.h"
#include "dispatch.h"
#include "error.h"
#include "heuristics.h"
#include "fmha/fmha.h"
#include "kernels/common/combine.h"
#include "params.h"
#include "runner_params.h"
#include "support_table.h"

namespace fmha {

namespace detail {

// Device memory for split-KV parts: oAccum (rows x headDim floats) then lseAccum (rows), NaN
// when allocated; and the Hopper family's row-tile counters (FmhaParams::splitCounters), zeroed
// when allocated and left at zero by every launch.
struct SplitWorkspace {
    int32_t setting = 0;  // FmhaRunner::setSplitKv
    float* buffer = nullptr;
    int64_t floats = 0;
    int device = -1;
    int32_t* counters = nullptr;
    int64_t counterCount = 0;
    int counterDevice = -1;

    SplitWorkspace() = default;
    SplitWorkspace(SplitWorkspace const&) = delete;
    SplitWorkspace& operator=(SplitWorkspace const&) = delete;
    ~SplitWorkspace() {
        release();
        releaseCounters();
    }
    bool holds(int64_t want, int dev) const { return buffer != nullptr && device == dev && floats >= want; }
    bool holdsCounters(int64_t want, int dev) const {
        return counters != nullptr && counterDevice == dev && counterCount >= want;
    }
    void release() {
        freeOn(device, buffer);
        buffer = nullptr;
        floats = 0;
        device = -1;
    }
    void releaseCounters() {
        freeOn(counterDevice, counters);
        counters = nullptr;
        counterCount = 0;
        counterDevice = -1;
    }

private:
    static void freeOn(int dev, void* ptr) {
        if (ptr == nullptr) return;
        int current = -1;
        cudaGetDevice(&current);
        if (current != dev) cudaSetDevice(dev);
        cudaFree(ptr);
        if (current != dev && current >= 0) cudaSetDevice(current);
        cudaGetLastError();  // a context already torn down (process exit) is not our caller's error
    }
};

}  // namespace detail

namespace {

using detail::fail;
static_assert(FmhaRunner::kMaxSplits <= 64, "the combine kernel merges at most 64 parts");

constexpr float kLog2e = 1.4426950408889634F;
constexpr int32_t kMaxGridYZ = 65535;
// Key positions are int32 in the kernels, including one tile past the last key.
constexpr int64_t kMaxKeys = INT32_MAX - 1024;

template <class... Ts>
std::string cat(Ts const&... parts) {
    std::ostringstream os;
    (os << ... << parts);
    return os.str();
}

bool pagedMode(Mode mode) { return mode == Mode::kPaged || mode == Mode::kPagedRagged; }

// The head dims of the support table (tools/generate_kernels.py) that a mode takes.
bool headDimSupported(Mode mode, int32_t d) {
    support::HeadDim const* h = support::find(d);
    return h != nullptr && (!h->pagedOnly || pagedMode(mode));
}

std::string headDimList(Mode mode) {
    std::string list;
    for (support::HeadDim const& h : support::kHeadDims)
        if (!h.pagedOnly || pagedMode(mode)) list += (list.empty() ? "" : ", ") + std::to_string(h.api);
    return list;
}

bool toElement(DataType t, ElementKind* e) {
    switch (t) {
    case DataType::kHALF: *e = ElementKind::kFp16; return true;
    case DataType::kBF16: *e = ElementKind::kBf16; return true;
    case DataType::kFP8: *e = ElementKind::kFp8; return true;
    default: return false;
    }
}

KvAddressing addressingOf(Mode mode) { return pagedMode(mode) ? KvAddressing::kPaged : KvAddressing::kStrided; }

bool positiveFinite(float v) { return std::isfinite(v) && v > 0.0F; }
bool aligned(void const* p, uintptr_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

// Checks shared by every mode: heads, head dim, dtype, scales, window, skip-softmax.
struct Common {
    Mode mode;
    int32_t numQHeads, numKVHeads, headDim;
    DataType inputType;
    float attentionScale, qScale, kScale, vScale;
    int32_t window;
    float skip;
    bool causal;
    bool bidirectional;
    bool bf16Output;
};

bool checkVariant(Common const& c, bool checkScales) {
    char const* mode = modeName(c.mode);
    if (c.numQHeads <= 0 || c.numKVHeads <= 0)
        return fail(cat(mode, ": numQHeads (", c.numQHeads, ") and numKVHeads (", c.numKVHeads, ") must be positive"));
    if (c.numQHeads % c.numKVHeads != 0)
        return fail(cat(mode, ": numQHeads (", c.numQHeads, ") must be a multiple of numKVHeads (", c.numKVHeads, ")"));
    if (c.numQHeads > kMaxGridYZ)
        return fail(cat(mode, ": numQHeads (", c.numQHeads, ") exceeds ", kMaxGridYZ));
    if (!headDimSupported(c.mode, c.headDim))
        return fail(cat(mode, ": head dim ", c.headDim, " is not supported (supported: ", headDimList(c.mode), ")"));
    ElementKind e;
    if (!toElement(c.inputType, &e))
        return fail(cat(mode, ": input data type ", dataTypeName(c.inputType),
                        " is not supported (supported: fp16, bf16, fp8e4m3)"));
    if (checkScales && !positiveFinite(c.attentionScale))
        return fail(cat(mode, ": attentionScale (", c.attentionScale, ") must be finite and > 0"));
    if (checkScales && c.inputType == DataType::kFP8 &&
        !(positiveFinite(c.qScale) && positiveFinite(c.kScale) && positiveFinite(c.vScale)))
        return fail(cat(mode, ": FP8 scales (q ", c.qScale, ", k ", c.kScale, ", v ", c.vScale,
                        ") must be finite and > 0"));
    if (c.window != INT_MAX && c.window < 0)
        return fail(cat(mode, ": slidingWindowSize (", c.window, ") must be >= 0 or INT_MAX (disabled)"));
    if (c.window != INT_MAX && !c.causal)
        return fail(cat(mode, ": a sliding window needs the causal mask (isCausal = true)"));
    if (c.bf16Output && c.inputType != DataType::kFP8)
        return fail(cat(mode, ": bf16Output selects BF16 output for FP8 input; ", dataTypeName(c.inputType),
                        " input writes O in its own type"));
    if (!std::isfinite(c.skip) || c.skip < 0.0F)
        return fail(cat(mode, ": skipSoftmaxScaleFactor (", c.skip, ") must be finite and >= 0 (0 disables it)"));
    if (c.skip > 0.0F) {
        if (!c.causal) return fail(cat(mode, ": skip-softmax needs the causal mask"));
        if (c.window != INT_MAX) return fail(cat(mode, ": skip-softmax does not combine with a sliding window"));
        if (c.bidirectional) return fail(cat(mode, ": skip-softmax does not combine with bidirectional blocks"));
    }
    return true;
}

bool checkPaging(char const* mode, char const* numPagesName, int32_t numPages, int32_t maxPagesPerSeq,
                 int32_t tokensPerPage, int32_t kvCacheCapacity) {
    if (numPages <= 0) return fail(cat(mode, ": ", numPagesName, " (", numPages, ") must be positive"));
    if (maxPagesPerSeq <= 0) return fail(cat(mode, ": maxPagesPerSeq (", maxPagesPerSeq, ") must be positive"));
    if (tokensPerPage < FmhaRunner::kMinPageSize || tokensPerPage > FmhaRunner::kMaxPageSize ||
        (tokensPerPage & (tokensPerPage - 1)) != 0)
        return fail(cat(mode, ": tokensPerPage (", tokensPerPage, ") must be a power of two in [",
                        FmhaRunner::kMinPageSize, ", ", FmhaRunner::kMaxPageSize, "]"));
    int64_t const capacity = static_cast<int64_t>(maxPagesPerSeq) * tokensPerPage;
    if (capacity > kMaxKeys)
        return fail(cat(mode, ": maxPagesPerSeq * tokensPerPage (", capacity, ") exceeds ", kMaxKeys));
    if (capacity != kvCacheCapacity)
        return fail(cat(mode, ": kvCacheCapacity (", kvCacheCapacity, ") must equal maxPagesPerSeq * tokensPerPage (",
                        capacity, ")"));
    return true;
}

using Named = std::pair<char const*, void const*>;

bool checkPointers(char const* mode, std::vector<Named> const& ptrs) {
    for (auto const& [name, p] : ptrs)
        if (p == nullptr) return fail(cat(mode, ": ", name, " is null"));
    return true;
}

// Tensors are read in 16-byte vectors, index arrays (cu*, page list, bidirectional bounds)
// and the LSE as 4-byte words.
bool checkAligned(char const* mode, uintptr_t bytes, std::vector<Named> const& ptrs) {
    for (auto const& [name, p] : ptrs)
        if (!aligned(p, bytes)) return fail(cat(mode, ": ", name, " must be ", bytes, "-byte aligned"));
    return true;
}

// Whether the stream is being captured; false with the error where it cannot be asked.
bool streamCapturing(char const* mode, cudaStream_t stream, bool* capturing) {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    cudaError_t const err = cudaStreamIsCapturing(stream, &status);
    if (err != cudaSuccess) {
        cudaGetLastError();  // this call's own error
        return fail(cat(mode, ": ", detail::isStickyError(err) ? detail::stickyMessage(err)
                                                              : "invalid stream: " + detail::errorText(err)));
    }
    *capturing = status != cudaStreamCaptureStatusNone;
    return true;
}

// The kernel for this variant on the current device (of the Hopper tile shape wanted, where
// built), its shared memory prepared once.
bool selectKernel(Common const& c, detail::KernelOps* ops, cudaStream_t stream, bool preflight,
                  TileShape shape = TileShape::kDefault) {
    char const* mode = modeName(c.mode);
    ElementKind element = ElementKind::kFp16;
    toElement(c.inputType, &element);
    detail::DeviceInfo dev;
    if (!detail::currentDevice(&dev)) return false;
    if (dev.smVersion < 80)
        return fail(cat(mode, ": device ", dev.name, " is sm_", dev.smVersion, "; the kernels need sm_80 or newer"));
    int const budget = detail::smemBudget(dev.maxSmemOptin);
    bool const skip = c.skip > 0.0F;
    if (!detail::findKernel(element, c.headDim, addressingOf(c.mode), dev.smVersion, budget, skip, ops, shape)) {
        detail::KernelOps any;
        if (detail::findKernel(element, c.headDim, addressingOf(c.mode), dev.smVersion, INT_MAX, skip, &any))
            return fail(cat(mode, ": no kernel configuration for ", dataTypeName(c.inputType), " head dim ",
                            c.headDim, " fits the ", budget, " bytes of shared memory a block gets on ", dev.name,
                            " (the smallest needs ", any.smemBytes, ")"));
        return fail(cat(mode, ": no kernel built for ", dataTypeName(c.inputType), " head dim ", c.headDim));
    }
    if (preflight) {
        bool capturing = false;
        if (!streamCapturing(mode, stream, &capturing)) return false;
        if (capturing) return fail(cat(mode, ": preflight must not be called while the stream is being captured"));
    }
    static std::mutex mutex;
    static std::set<std::pair<void*, int>> prepared;
    std::string problem;  // reported after the lock is released (the log callback may call back in)
    {
        std::lock_guard<std::mutex> lock(mutex);
        auto key = std::make_pair(reinterpret_cast<void*>(ops->launch), dev.ordinal);
        if (prepared.count(key) == 0) {
            cudaError_t err = ops->probe();
            if (err != cudaSuccess) {
                cudaGetLastError();  // this call's own error
                problem = detail::isStickyError(err)
                              ? detail::stickyMessage(err)
                              : cat("this build has no code for ", dev.name, " (sm_", dev.smVersion, "; built for ",
                                    detail::buildCudaArchs(), "): ", detail::errorText(err));
            } else if ((err = ops->prepare()) != cudaSuccess) {
                cudaGetLastError();
                problem = detail::isStickyError(err) ? detail::stickyMessage(err)
                                                     : "could not configure the kernel: " + detail::errorText(err);
            } else {
                prepared.insert(key);
            }
        }
    }
    if (!problem.empty()) return fail(cat(mode, ": ", problem));
    return true;
}

// `bytes` of device memory with every byte `value`, the fill waited for here, so that a
// launch on any stream sees it; null where the allocation or the fill fails (cleared).
void* allocFilled(size_t bytes, int value) {
    void* buffer = nullptr;
    if (cudaMalloc(&buffer, bytes) != cudaSuccess) {
        cudaGetLastError();
        return nullptr;
    }
    if (cudaMemsetAsync(buffer, value, bytes, cudaStreamLegacy) != cudaSuccess ||
        cudaStreamSynchronize(cudaStreamLegacy) != cudaSuccess) {
        cudaGetLastError();
        cudaFree(buffer);
        return nullptr;
    }
    return buffer;
}

// Makes ws hold at least `floats` floats on device `device`: allocates (outside stream capture
// only), never shrinks. False where it cannot (capturing, or out of memory: cleared). NaN
// (all-ones bits) until written: a part a launch reads without writing poisons its rows.
bool growWorkspace(detail::SplitWorkspace& ws, int64_t floats, int device, bool capturing) {
    if (ws.holds(floats, device)) return true;
    if (capturing) return false;
    int64_t const keep = ws.device == device ? ws.floats : 0;
    ws.release();
    int64_t const want = std::max(floats, keep);
    void* buffer = allocFilled(static_cast<size_t>(want) * sizeof(float), 0xFF);
    if (buffer == nullptr) return false;
    ws.buffer = static_cast<float*>(buffer);
    ws.floats = want;
    ws.device = device;
    return true;
}

// The row-tile counters (FmhaParams::splitCounters) of n, zeroed, on device: false where they
// would need an allocation during capture, or it fails.
bool growCounters(detail::SplitWorkspace& ws, int64_t n, int device, bool capturing) {
    if (ws.holdsCounters(n, device)) return true;
    if (capturing || n <= 0) return false;
    int64_t const keep = ws.counterDevice == device ? ws.counterCount : 0;
    ws.releaseCounters();
    int64_t const want = std::max(n, keep);
    void* buffer = allocFilled(static_cast<size_t>(want) * sizeof(int32_t), 0);
    if (buffer == nullptr) return false;
    ws.counters = static_cast<int32_t*>(buffer);
    ws.counterCount = want;
    ws.counterDevice = device;
    return true;
}

// Row tiles of a launch of p on ops's kernel, times its query-head units and sequences: the
// Hopper family's split-KV counters (one a row tile of the grid).
int64_t rowTileCount(FmhaParams const& p, detail::KernelOps const& ops) {
    int64_t const rows = static_cast<int64_t>(p.maxSeqLenQ) << p.packLog2;
    return (rows + ops.blockM - 1) / ops.blockM * (p.numQHeads >> p.packLog2) * p.batch;
}

// Workspace floats of `parts` parts of p: rows of headDim floats and one LSE each. -1 when
// the product leaves int64's safe range.
int64_t splitFloats(FmhaParams const& p, int64_t parts) {
    int64_t const rows = static_cast<int64_t>(p.batch) * p.maxSeqLenQ * p.numQHeads;
    if (rows <= 0 || rows > (int64_t{1} << 40) / (p.headDim + 1) / parts) return -1;
    return parts * rows * (p.headDim + 1);
}

// Split-KV for this launch (heuristics.h), on the runner's workspace: p.numSplits and the
// workspace pointers. A forced count the workspace cannot hold fails; an automatic one shrinks
// to what it holds.
bool planSplits(char const* mode, detail::KernelOps const& ops, detail::SplitWorkspace& ws, cudaStream_t stream,
                FmhaParams* p) {
    p->numSplits = 1;
    if (p->kvAddressing != KvAddressing::kPaged || p->skipFactor > 0.0F || ws.setting == 1) return true;
    detail::DeviceInfo dev;
    if (!detail::currentDevice(&dev)) return false;
    int64_t parts = ws.setting > 1 ? ws.setting
                                   : detail::splitParts(*p, ops, dev.smCount, detail::smemBudget(dev.maxSmemOptin));
    if (parts <= 1) return true;
    int64_t const floats = splitFloats(*p, parts);
    bool capturing = false;
    if (floats < 0 || !ws.holds(floats, dev.ordinal)) {
        if (!streamCapturing(mode, stream, &capturing)) return false;
    }
    if (floats < 0 || !growWorkspace(ws, floats, dev.ordinal, capturing)) {
        int64_t const held = ws.device == dev.ordinal ? ws.floats : 0;
        if (ws.setting > 1)
            return fail(cat(mode, ": split-KV in ", parts, " parts needs ", floats < 0 ? -1 : floats * 4,
                            " bytes of workspace and the runner holds ", held * 4,
                            capturing ? " (the stream is being captured: call preflight* before capture)"
                                      : " (allocation failed)"));
        int64_t const one = splitFloats(*p, 1);
        parts = one > 0 ? std::min(parts, held / one) : 1;
        if (parts <= 1) return true;
    }
    // The merge in the kernel where its rule says so and the counters are there (or can be
    // allocated: not during capture); the combine kernel otherwise.
    if (detail::mergeInKernel(*p, ops, parts)) {
        int64_t const tiles = rowTileCount(*p, ops);
        if (!ws.holdsCounters(tiles, dev.ordinal) && !capturing && !streamCapturing(mode, stream, &capturing))
            return false;
        if (growCounters(ws, tiles, dev.ordinal, capturing)) p->splitCounters = ws.counters;
    }
    p->numSplits = static_cast<int32_t>(parts);
    p->oAccum = ws.buffer;
    p->lseAccum = ws.buffer + splitFloats(*p, parts) / (p->headDim + 1) * p->headDim;
    return true;
}

bool launch(detail::KernelOps const& ops, FmhaParams const& p, cudaStream_t stream, char const* mode,
            LaunchRecord* record) {
    // The launch returns its own error only: an earlier, unrelated pending error stays pending
    // for its owner and is not blamed on this call.
    detail::noteKvPairs(false);
    cudaError_t err = ops.launch(p, stream);
    if (err == cudaSuccess && p.numSplits > 1 && p.splitCounters == nullptr)
        err = launchCombine(p, stream, ops.triggersDependents);
    if (err != cudaSuccess) {
        cudaGetLastError();  // clears this launch's error (it replaced any earlier one)
        return fail(cat(mode, ": ", detail::isStickyError(err) ? detail::stickyMessage(err)
                                                              : "kernel launch failed: " + detail::errorText(err)));
    }
    detail::setLastKernelFamily(ops.family);
    if (record != nullptr) {
        record->family = ops.family;
        record->packedHeads = 1 << p.packLog2;
        record->blockM = ops.blockM;
        record->blockN = ops.blockN;
        record->splits = p.numSplits;
        record->persistent = ops.shape == TileShape::kPersistent;
        record->mergedInKernel = p.numSplits > 1 && p.splitCounters != nullptr;
        record->pairedKv = detail::lastKvPairs();
    }
    return true;
}

void fillCommon(FmhaParams& p, Common const& c) {
    toElement(c.inputType, &p.element);
    p.kvAddressing = addressingOf(c.mode);
    p.headDim = c.headDim;
    p.numQHeads = c.numQHeads;
    p.numKVHeads = c.numKVHeads;
    p.headGroup = c.numQHeads / c.numKVHeads;
    bool const fp8 = c.inputType == DataType::kFP8;
    float const scale = c.attentionScale * (fp8 ? c.qScale * c.kScale : 1.0F);
    p.scale = scale;
    p.scaleLog2 = scale * kLog2e;
    p.outScale = fp8 ? c.vScale : 1.0F;
    p.outBf16 = fp8 && c.bf16Output;
    p.causal = c.causal;
    p.window = c.window;
    p.skipFactor = c.skip;
}

void fillPaged(FmhaParams& p, void const* pool, int32_t const* table, int32_t numPages, int32_t maxPages,
               int32_t tokensPerPage) {
    p.k = pool;
    p.v = pool;
    p.pageTable = table;
    p.numPages = numPages;
    p.maxPagesPerSeq = maxPages;
    int log2 = 0;
    while ((1 << log2) < tokensPerPage) ++log2;
    p.pageSizeLog2 = log2;
    p.maxKvLen = maxPages * tokensPerPage;
}

}  // namespace

FmhaRunner::FmhaRunner(int32_t numQHeads, int32_t numKVHeads, int32_t headDim, int32_t batchSize, int32_t seqLenQ,
                       int32_t kvCacheCapacity)
    : mNumQHeads(numQHeads),
      mNumKVHeads(numKVHeads),
      mHeadDim(headDim),
      mBatchSize(batchSize),
      mSeqLenQ(seqLenQ),
      mKvCacheCapacity(kvCacheCapacity),
      mSplit(std::make_unique<detail::SplitWorkspace>()) {}

FmhaRunner::~FmhaRunner() = default;

namespace {

// The buffers of the paged modes, in the order they are reported: Q, the pool, the page list,
// O and the mode's prefix arrays must be set; Q, the pool and O 16-byte aligned; the LSE, the
// page list, the prefix arrays and the optional int32 arrays 4-byte aligned.
bool checkPagedBuffers(char const* mode, void const* q, void const* pool, int32_t const* pages, void const* o,
                       float const* lse, std::initializer_list<Named> prefixes, std::initializer_list<Named> optional) {
    std::vector<Named> required = {{"qPtr", q}, {"pagedKVPoolPtr", pool}, {"kvCachePageList", pages}, {"oPtr", o}};
    std::vector<Named> words = {{"lse", lse}, {"kvCachePageList", pages}};
    required.insert(required.end(), prefixes.begin(), prefixes.end());
    words.insert(words.end(), prefixes.begin(), prefixes.end());
    words.insert(words.end(), optional.begin(), optional.end());
    return checkPointers(mode, required) &&
           checkAligned(mode, 16, {{"qPtr", q}, {"pagedKVPoolPtr", pool}, {"oPtr", o}}) &&
           checkAligned(mode, 4, words);
}

bool checkBatch(char const* mode, int32_t batch, int32_t splits) {
    if (batch <= 0) return fail(cat(mode, ": batchSize (", batch, ") must be positive"));
    if (batch > kMaxGridYZ / splits) return fail(cat(mode, ": batchSize (", batch, ") exceeds ", kMaxGridYZ / splits));
    return true;
}
int32_t vSplits(int32_t headDim) { return headDim > 256 ? 2 : 1; }

// Batched Q (LLM and paged modes): B sequences of the constructor's seqLenQ rows; LSE [B, Hq, S_q].
void fillBatchedQ(FmhaRunner const& r, void const* q, void* o, int32_t const* cuKV, float* lse, FmhaParams& p) {
    p.batch = r.batchSize();
    p.q = q;
    p.o = o;
    p.seqLenQ = r.seqLenQ();
    p.maxSeqLenQ = r.seqLenQ();
    p.cuKV = cuKV;
    p.lse = lse;
    p.lseBatchStride = static_cast<int64_t>(r.numQHeads()) * r.seqLenQ();
    p.lseHeadStride = r.seqLenQ();
}

// One description per mode; the run and preflight paths below are shared. Each states what
// differs: its variant (Common), its own argument checks in order (after the variant's and
// before the kernel is chosen) and its part of FmhaParams.
struct LlmMode {
    using Args = LlmArgs;
    static Common common(FmhaRunner const& r, Args const& a, bool) {
        return {Mode::kLlm, r.numQHeads(), r.numKVHeads(), r.headDim(), a.inputType, a.attentionScale, a.qScale,
                a.kScale, a.vScale, a.slidingWindowSize, a.skipSoftmaxScaleFactor, true, false, a.bf16Output};
    }
    static bool check(FmhaRunner const& r, Args const& a) {
        char const* mode = "llm";
        if (!checkBatch(mode, r.batchSize(), vSplits(r.headDim()))) return false;
        if (r.seqLenQ() <= 0) return fail(cat(mode, ": seqLenQ (", r.seqLenQ(), ") must be positive"));
        int32_t const cap = r.kvCacheCapacity();
        if (cap <= 0) return fail(cat(mode, ": kvCacheCapacity (", cap, ") must be positive"));
        if (cap > kMaxKeys) return fail(cat(mode, ": kvCacheCapacity (", cap, ") exceeds ", kMaxKeys));
        return checkPointers(mode, {{"qPtr", a.q}, {"kvPtr", a.kv}, {"oPtr", a.o}, {"cuKVSeqLens", a.cuKVSeqLens}}) &&
               checkAligned(mode, 16, {{"qPtr", a.q}, {"kvPtr", a.kv}, {"oPtr", a.o}}) &&
               checkAligned(mode, 4, {{"lse", a.lse}, {"cuKVSeqLens", a.cuKVSeqLens}});
    }
    static void fill(FmhaRunner const& r, Args const& a, FmhaParams& p) {
        int64_t const elemBytes = a.inputType == DataType::kFP8 ? 1 : 2;
        int64_t const kvHeadStride = static_cast<int64_t>(r.kvCacheCapacity()) * r.headDim();
        fillBatchedQ(r, a.q, a.o, a.cuKVSeqLens, a.lse, p);
        p.maxKvLen = r.kvCacheCapacity();
        p.k = a.kv;
        p.v = static_cast<char const*>(a.kv) + r.numKVHeads() * kvHeadStride * elemBytes;
        p.kvBatchStride = 2 * r.numKVHeads() * kvHeadStride;
        p.kvRowStride = r.headDim();
        p.kvHeadStride = kvHeadStride;
    }
};

struct PagedMode {
    using Args = PagedArgs;
    static Common common(FmhaRunner const& r, Args const& a, bool bidirectional) {
        return {Mode::kPaged, r.numQHeads(), r.numKVHeads(), r.headDim(), a.inputType, a.attentionScale, a.qScale,
                a.kScale, a.vScale, a.slidingWindowSize, a.skipSoftmaxScaleFactor, a.isCausal, bidirectional,
                a.bf16Output};
    }
    static bool check(FmhaRunner const& r, Args const& a, DataType kvDataType) {
        char const* mode = "paged";
        if (kvDataType != a.inputType)
            return fail(cat(mode, ": kvDataType (", dataTypeName(kvDataType), ") does not match the input type (",
                            dataTypeName(a.inputType), "; fp8Input selects fp8e4m3)"));
        if (!checkBatch(mode, r.batchSize(), vSplits(r.headDim()))) return false;
        if (r.seqLenQ() <= 0) return fail(cat(mode, ": seqLenQ (", r.seqLenQ(), ") must be positive"));
        return checkPaging(mode, "numPages", a.numPages, a.maxPagesPerSeq, a.tokensPerPage, r.kvCacheCapacity()) &&
               checkPagedBuffers(mode, a.q, a.pool, a.pageList, a.o, a.lse, {{"cuKVSeqLens", a.cuKVSeqLens}},
                                 {{"bidirectionalBlockBegin", a.bidirectionalBlockBegin},
                                  {"bidirectionalBlockEnd", a.bidirectionalBlockEnd}});
    }
    static void fill(FmhaRunner const& r, Args const& a, FmhaParams& p) {
        fillBatchedQ(r, a.q, a.o, a.cuKVSeqLens, a.lse, p);
        fillPaged(p, a.pool, a.pageList, a.numPages, a.maxPagesPerSeq, a.tokensPerPage);
        p.bidirBegin = a.bidirectionalBlockBegin;
        p.bidirEnd = a.bidirectionalBlockEnd;
    }
};

struct RaggedMode {
    using Args = PagedRaggedArgs;
    static Common common(FmhaRunner const& r, Args const& a, bool) {
        return {Mode::kPagedRagged, r.numQHeads(), r.numKVHeads(), r.headDim(), a.inputType, a.attentionScale,
                a.qScale, a.kScale, a.vScale, a.slidingWindowSize, 0.0F, true, false, a.bf16Output};
    }
    static bool check(FmhaRunner const& r, Args const& a) {
        char const* mode = "ragged";
        if (!checkBatch(mode, r.batchSize(), vSplits(r.headDim()))) return false;
        if (a.totalQSeqLen <= 0) return fail(cat(mode, ": totalQSeqLen (", a.totalQSeqLen, ") must be positive"));
        if (a.maxQSeqLen <= 0 || a.maxQSeqLen > a.totalQSeqLen)
            return fail(cat(mode, ": maxQSeqLen (", a.maxQSeqLen, ") must be in [1, totalQSeqLen = ", a.totalQSeqLen,
                            "]"));
        return checkPaging(mode, "numFlatPages", a.numFlatPages, a.maxPagesPerSeq, a.tokensPerPage,
                           r.kvCacheCapacity()) &&
               checkPagedBuffers(mode, a.q, a.pool, a.pageList, a.o, a.lse,
                                 {{"cuQSeqLens", a.cuQSeqLens}, {"cuKVSeqLens", a.cuKVSeqLens}}, {});
    }
    static void fill(FmhaRunner const& r, Args const& a, FmhaParams& p) {
        p.batch = r.batchSize();
        p.q = a.q;
        p.o = a.o;
        p.cuQ = a.cuQSeqLens;
        p.totalQ = a.totalQSeqLen;
        p.maxSeqLenQ = a.maxQSeqLen;
        p.cuKV = a.cuKVSeqLens;
        fillPaged(p, a.pool, a.pageList, a.numFlatPages, a.maxPagesPerSeq, a.tokensPerPage);
        p.lse = a.lse;
        p.lseHeadStride = a.totalQSeqLen;
        p.lsePacked = true;
    }
};

struct VitMode {
    using Args = VitArgs;
    static Common common(FmhaRunner const& r, Args const& a, bool) {
        return {Mode::kVit, r.numQHeads(), r.numKVHeads(), r.headDim(), a.inputType, a.attentionScale, a.qScale,
                a.kScale, a.vScale, INT_MAX, 0.0F, false, false, a.bf16Output};
    }
    // A rule of the variant (run and preflight): Q, K and V share one head count.
    static bool checkVariantHeads(FmhaRunner const& r) {
        if (r.numKVHeads() != r.numQHeads())
            return fail(cat("vit: Q, K and V share one head count; numKVHeads (", r.numKVHeads(),
                            ") must equal numQHeads (", r.numQHeads(), ")"));
        return true;
    }
    static bool check(FmhaRunner const&, Args const& a) {
        char const* mode = "vit";
        if (!checkBatch(mode, a.batchSize, 1)) return false;
        if (a.totalSeqLen <= 0) return fail(cat(mode, ": totalSeqLen (", a.totalSeqLen, ") must be positive"));
        if (a.totalSeqLen > kMaxKeys)
            return fail(cat(mode, ": totalSeqLen (", a.totalSeqLen, ") exceeds ", kMaxKeys));
        if (a.maxSeqLen <= 0 || a.maxSeqLen > a.totalSeqLen)
            return fail(cat(mode, ": maxSeqLen (", a.maxSeqLen, ") must be in [1, totalSeqLen = ", a.totalSeqLen,
                            "]"));
        return checkPointers(mode,
                             {{"qPtr", a.q}, {"kPtr", a.k}, {"vPtr", a.v}, {"oPtr", a.o}, {"cuSeqLens", a.cuSeqLens}}) &&
               checkAligned(mode, 16, {{"qPtr", a.q}, {"kPtr", a.k}, {"vPtr", a.v}, {"oPtr", a.o}}) &&
               checkAligned(mode, 4, {{"lse", a.lse}, {"cuSeqLens", a.cuSeqLens}});
    }
    static void fill(FmhaRunner const& r, Args const& a, FmhaParams& p) {
        p.batch = a.batchSize;
        p.q = a.q;
        p.o = a.o;
        p.cuQ = a.cuSeqLens;
        p.totalQ = a.totalSeqLen;
        p.maxSeqLenQ = a.maxSeqLen;
        p.cuKV = a.cuSeqLens;
        p.maxKvLen = a.totalSeqLen;
        p.k = a.k;
        p.v = a.v;
        p.kvRowsFromCu = true;
        p.kvRowStride = static_cast<int64_t>(r.numQHeads()) * r.headDim();
        p.kvHeadStride = r.headDim();
        p.lse = a.lse;
        p.lseHeadStride = a.totalSeqLen;
        p.lsePacked = true;
    }
};

// Rules of the variant beyond the common ones (ViT's head count).
template <class M>
bool checkVariantOf(FmhaRunner const& r) {
    if constexpr (std::is_same_v<M, VitMode>) return M::checkVariantHeads(r);
    return true;
}

template <class M>
FmhaParams paramsOf(FmhaRunner const& r, typename M::Args const& a, Common const& c) {
    FmhaParams p;
    fillCommon(p, c);
    M::fill(r, a, p);
    return p;
}

// The one run path: the variant's rules, the mode's own, the kernel, the params, the launch
// plan (pack GQA, the portable walk, split-KV), the launch.
template <class M, class... Extra>
bool runMode(FmhaRunner const& r, detail::SplitWorkspace& ws, typename M::Args const& a, LaunchRecord* record,
             bool bidirectional, Extra... extra) {
    detail::clearError();
    Common const c = M::common(r, a, bidirectional);
    if (!checkVariant(c, true) || !checkVariantOf<M>(r) || !M::check(r, a, extra...)) return false;
    detail::KernelOps ops;
    FmhaParams p = paramsOf<M>(r, a, c);
    if (!selectKernel(c, &ops, a.stream, false, detail::tileShapeFor(p))) return false;
    detail::planLaunch(ops, &p);
    if (!planSplits(modeName(c.mode), ops, ws, a.stream, &p)) return false;
    if (ops.shape == TileShape::kPersistent && p.numSplits > 1) {
        // The persistent kernel runs unsplit launches only: split ones take the default tiles.
        if (!selectKernel(c, &ops, a.stream, false, TileShape::kDefault)) return false;
        detail::planLaunch(ops, &p);
        if (!planSplits(modeName(c.mode), ops, ws, a.stream, &p)) return false;
    }
    return launch(ops, p, a.stream, modeName(c.mode), record);
}

// The split-KV workspace a paged mode's runs can need (FmhaRunner::setSplitKv): for the
// constructor's batch and seqLenQ where both are set, within the bound of the automatic
// choice (heuristics.h), and a forced count's whole need.
bool preflightSplits(FmhaRunner const& r, Common const& c, detail::KernelOps const& ops, detail::SplitWorkspace& ws) {
    if (!pagedMode(c.mode) || c.skip > 0.0F || ws.setting == 1) return true;
    detail::DeviceInfo dev;
    if (!detail::currentDevice(&dev)) return false;
    int const smem = detail::smemBudget(dev.maxSmemOptin);
    int64_t rows = detail::splitRowsBound(ops, dev.smCount, smem);
    int64_t const perPart = static_cast<int64_t>(r.batchSize()) * r.seqLenQ() * r.numQHeads();
    if (perPart > 0) {
        rows = std::min(rows, perPart * FmhaRunner::kMaxSplits);
        if (ws.setting > 1) rows = std::max(rows, perPart * ws.setting);
    }
    if (!growWorkspace(ws, rows * (r.headDim() + 1), dev.ordinal, false))
        return fail(cat(modeName(c.mode), ": could not allocate the split-KV workspace (",
                        rows * (r.headDim() + 1) * 4, " bytes)"));
    // The row-tile counters: at most one a row of a part (a row tile holds at least one row).
    int64_t const tiles = perPart > 0 ? perPart : rows;
    if (!ops.combinesSplits || growCounters(ws, tiles, dev.ordinal, false)) return true;
    return fail(cat(modeName(c.mode), ": could not allocate the split-KV row-tile counters (", tiles * 4, " bytes)"));
}

template <class M>
bool preflightMode(FmhaRunner const& r, detail::SplitWorkspace& ws, typename M::Args const& a, bool bidirectional) {
    detail::clearError();
    Common const c = M::common(r, a, bidirectional);
    detail::KernelOps ops, shaped;
    if (!checkVariant(c, false) || !checkVariantOf<M>(r) || !selectKernel(c, &ops, a.stream, true)) return false;
    // Every tile shape a run may pick is prepared here, outside any capture.
    for (TileShape shape :
         {TileShape::kWideKeys, TileShape::kOneWarpGroup, TileShape::kPersistent, TileShape::kThreeWarpGroups})
        if (!selectKernel(c, &shaped, a.stream, true, shape)) return false;
    return preflightSplits(r, c, ops, ws);
}

}  // namespace

bool FmhaRunner::run(LlmArgs const& a, LaunchRecord* record) {
    return runMode<LlmMode>(*this, *mSplit, a, record, false);
}
bool FmhaRunner::preflight(LlmArgs const& a) { return preflightMode<LlmMode>(*this, *mSplit, a, false); }

bool FmhaRunner::runPaged(PagedArgs const& a, DataType kvDataType, LaunchRecord* record) {
    if ((a.bidirectionalBlockBegin == nullptr) != (a.bidirectionalBlockEnd == nullptr)) {
        detail::clearError();
        return fail("paged: bidirectionalBlockBegin and bidirectionalBlockEnd must both be set or both be null");
    }
    return runMode<PagedMode>(*this, *mSplit, a, record, a.bidirectionalBlockBegin != nullptr, kvDataType);
}
bool FmhaRunner::preflight(PagedArgs const& a, bool useBidirectional) {
    return preflightMode<PagedMode>(*this, *mSplit, a, useBidirectional);
}

bool FmhaRunner::run(PagedRaggedArgs const& a, LaunchRecord* record) {
    return runMode<RaggedMode>(*this, *mSplit, a, record, false);
}
bool FmhaRunner::preflight(PagedRaggedArgs const& a) { return preflightMode<RaggedMode>(*this, *mSplit, a, false); }

bool FmhaRunner::run(VitArgs const& a, LaunchRecord* record) {
    return runMode<VitMode>(*this, *mSplit, a, record, false);
}
bool FmhaRunner::preflight(VitArgs const& a) { return preflightMode<VitMode>(*this, *mSplit, a, false); }

bool FmhaRunner::setSplitKv(int32_t parts) {
    detail::clearError();
    if (parts < 0 || parts > kMaxSplits)
        return fail(cat("setSplitKv: parts (", parts, ") must be 0 (automatic), 1 (never split) or up to ",
                        kMaxSplits));
    mSplit->setting = parts;
    return true;
}
int32_t FmhaRunner::splitKv() const { return mSplit->setting; }
size_t FmhaRunner::workspaceBytes() const {
    return static_cast<size_t>(mSplit->floats) * sizeof(float) + static_cast<size_t>(mSplit->counterCount) * sizeof(int32_t);
}

namespace detail {

FmhaParams paramsFor(FmhaRunner const& r, LlmArgs const& a) {
    return paramsOf<LlmMode>(r, a, LlmMode::common(r, a, false));
}
FmhaParams paramsFor(FmhaRunner const& r, PagedArgs const& a) {
    return paramsOf<PagedMode>(r, a, PagedMode::common(r, a, a.bidirectionalBlockBegin != nullptr));
}
FmhaParams paramsFor(FmhaRunner const& r, PagedRaggedArgs const& a) {
    return paramsOf<RaggedMode>(r, a, RaggedMode::common(r, a, false));
}
FmhaParams paramsFor(FmhaRunner const& r, VitArgs const& a) {
    return paramsOf<VitMode>(r, a, VitMode::common(r, a, false));
}

}  // namespace detail

// ---------------------------------------------------------------- static predicates

bool FmhaRunner::canImplementMode(Mode mode, DataType inputType, int32_t headSize, int32_t smVersion) {
    ElementKind element = ElementKind::kFp16;
    detail::KernelOps ops;
    // The dispatcher's own answer for that SM class's shared memory a block.
    return smVersion >= 80 && detail::buildCoversSm(smVersion) && headDimSupported(mode, headSize) &&
           toElement(inputType, &element) &&
           detail::findKernel(element, headSize, addressingOf(mode), smVersion, detail::smemPerBlockOfSm(smVersion),
                              false, &ops);
}

bool FmhaRunner::canImplementPagedRaggedImpl(int32_t numQHeads, int32_t numKVHeads, int32_t headSize,
                                             int32_t smVersion, DataType inputType, MaskType maskType) {
    return numQHeads > 0 && numKVHeads > 0 && numQHeads % numKVHeads == 0 && numQHeads <= kMaxGridYZ &&
           (maskType == MaskType::kCAUSAL || maskType == MaskType::kSLIDING_CAUSAL) &&
           canImplementMode(Mode::kPagedRagged, inputType, headSize, smVersion);
}

}  // namespace fmha
