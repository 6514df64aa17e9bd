// The runner: validates every argument on the host, fills the one FmhaParams, picks the
// kernel instance and launches it. Nothing is launched (and nothing written) on an error.
#include <cmath>
#include <cstdint>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <utility>

#include "device.h"
#include "dispatch.h"
#include "error.h"
#include "fmha/fmha.h"
#include "params.h"
#include "support_table.h"

namespace fmha {
namespace {

using detail::fail;

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
    for (support::HeadDim const& h : support::kHeadDims)
        if (h.api == d) return !h.pagedOnly || pagedMode(mode);
    return false;
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

KvAddressing addressingOf(Mode mode) {
    return (mode == Mode::kPaged || mode == Mode::kPagedRagged) ? KvAddressing::kPaged : KvAddressing::kStrided;
}

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
    if (!std::isfinite(c.skip) || c.skip < 0.0F)
        return fail(cat(mode, ": skipSoftmaxScaleFactor (", c.skip, ") must be finite and >= 0 (0 disables it)"));
    if (c.skip > 0.0F) {
        if (c.inputType != DataType::kHALF)
            return fail(cat(mode, ": skip-softmax supports FP16 input only (got ", dataTypeName(c.inputType), ")"));
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

bool checkPointers(char const* mode, std::initializer_list<std::pair<char const*, void const*>> ptrs) {
    for (auto const& [name, p] : ptrs)
        if (p == nullptr) return fail(cat(mode, ": ", name, " is null"));
    return true;
}

// Tensors are read in 16-byte vectors, index arrays (cu*, page list, bidirectional bounds)
// and the LSE as 4-byte words.
bool checkAligned(char const* mode, uintptr_t bytes,
                  std::initializer_list<std::pair<char const*, void const*>> ptrs) {
    for (auto const& [name, p] : ptrs)
        if (!aligned(p, bytes)) return fail(cat(mode, ": ", name, " must be ", bytes, "-byte aligned"));
    return true;
}

// The kernel for this variant on the current device, its shared memory prepared once.
bool selectKernel(Common const& c, detail::KernelOps* ops, cudaStream_t stream, bool preflight) {
    char const* mode = modeName(c.mode);
    ElementKind element = ElementKind::kFp16;
    toElement(c.inputType, &element);
    detail::DeviceInfo dev;
    if (!detail::currentDevice(&dev)) return false;
    if (dev.smVersion < 80)
        return fail(cat(mode, ": device ", dev.name, " is sm_", dev.smVersion, "; the kernels need sm_80 or newer"));
    int const budget = detail::smemBudget(dev.maxSmemOptin);
    bool const skip = c.skip > 0.0F;
    if (!detail::findKernel(element, c.headDim, addressingOf(c.mode), dev.smVersion, budget, skip, ops)) {
        detail::KernelOps any;
        if (detail::findKernel(element, c.headDim, addressingOf(c.mode), dev.smVersion, INT_MAX, skip, &any))
            return fail(cat(mode, ": no kernel configuration for ", dataTypeName(c.inputType), " head dim ",
                            c.headDim, " fits the ", budget, " bytes of shared memory a block gets on ", dev.name,
                            " (the smallest needs ", any.smemBytes, ")"));
        return fail(cat(mode, ": no kernel built for ", dataTypeName(c.inputType), " head dim ", c.headDim));
    }
    if (preflight) {
        cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
        cudaError_t const err = cudaStreamIsCapturing(stream, &status);
        if (err != cudaSuccess) {
            cudaGetLastError();  // this call's own error
            return fail(cat(mode, ": ", detail::isStickyError(err) ? detail::stickyMessage(err)
                                                                  : "invalid stream: " + detail::errorText(err)));
        }
        if (status != cudaStreamCaptureStatusNone)
            return fail(cat(mode, ": preflight must not be called while the stream is being captured"));
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

bool launch(detail::KernelOps const& ops, FmhaParams p, cudaStream_t stream, char const* mode) {
    p.packLog2 = ops.packLog2 != nullptr ? ops.packLog2(p) : 0;
    // The launch returns its own error only: an earlier, unrelated pending error stays pending
    // for its owner and is not blamed on this call.
    cudaError_t const err = ops.launch(p, stream);
    if (err != cudaSuccess) {
        cudaGetLastError();  // clears this launch's error (it replaced any earlier one)
        return fail(cat(mode, ": ", detail::isStickyError(err) ? detail::stickyMessage(err)
                                                              : "kernel launch failed: " + detail::errorText(err)));
    }
    detail::setLastKernelFamily(ops.family);
    detail::setLastPackedHeads(1 << p.packLog2);
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
      mKvCacheCapacity(kvCacheCapacity) {}

// ---------------------------------------------------------------- LLM (contiguous KV)

namespace {
Common llmCommon(FmhaRunner const& r, LlmArgs const& a) {
    return {Mode::kLlm, r.numQHeads(), r.numKVHeads(), r.headDim(), a.inputType, a.attentionScale, a.qScale,
            a.kScale, a.vScale, a.slidingWindowSize, a.skipSoftmaxScaleFactor, true, false};
}
bool checkBatch(char const* mode, int32_t batch, int32_t splits) {
    if (batch <= 0) return fail(cat(mode, ": batchSize (", batch, ") must be positive"));
    if (batch > kMaxGridYZ / splits) return fail(cat(mode, ": batchSize (", batch, ") exceeds ", kMaxGridYZ / splits));
    return true;
}
int32_t vSplits(int32_t headDim) { return headDim > 256 ? 2 : 1; }
}  // namespace

bool FmhaRunner::preflight(LlmArgs const& a) {
    detail::clearError();
    Common const c = llmCommon(*this, a);
    detail::KernelOps ops;
    return checkVariant(c, false) && selectKernel(c, &ops, a.stream, true);
}

bool FmhaRunner::run(LlmArgs const& a) {
    detail::clearError();
    char const* mode = "llm";
    Common const c = llmCommon(*this, a);
    if (!checkVariant(c, true)) return false;
    if (!checkBatch(mode, mBatchSize, vSplits(mHeadDim))) return false;
    if (mSeqLenQ <= 0) return fail(cat(mode, ": seqLenQ (", mSeqLenQ, ") must be positive"));
    if (mKvCacheCapacity <= 0) return fail(cat(mode, ": kvCacheCapacity (", mKvCacheCapacity, ") must be positive"));
    if (mKvCacheCapacity > kMaxKeys)
        return fail(cat(mode, ": kvCacheCapacity (", mKvCacheCapacity, ") exceeds ", kMaxKeys));
    if (!checkPointers(mode, {{"qPtr", a.q}, {"kvPtr", a.kv}, {"oPtr", a.o}, {"cuKVSeqLens", a.cuKVSeqLens}}) ||
        !checkAligned(mode, 16, {{"qPtr", a.q}, {"kvPtr", a.kv}, {"oPtr", a.o}}) ||
        !checkAligned(mode, 4, {{"lse", a.lse}, {"cuKVSeqLens", a.cuKVSeqLens}}))
        return false;
    detail::KernelOps ops;
    if (!selectKernel(c, &ops, a.stream, false)) return false;

    FmhaParams p;
    fillCommon(p, c);
    int64_t const elemBytes = a.inputType == DataType::kFP8 ? 1 : 2;
    int64_t const kvHeadStride = static_cast<int64_t>(mKvCacheCapacity) * mHeadDim;
    p.batch = mBatchSize;
    p.q = a.q;
    p.o = a.o;
    p.seqLenQ = mSeqLenQ;
    p.maxSeqLenQ = mSeqLenQ;
    p.cuKV = a.cuKVSeqLens;
    p.maxKvLen = mKvCacheCapacity;
    p.k = a.kv;
    p.v = static_cast<char const*>(a.kv) + mNumKVHeads * kvHeadStride * elemBytes;
    p.kvBatchStride = 2 * mNumKVHeads * kvHeadStride;
    p.kvRowStride = mHeadDim;
    p.kvHeadStride = kvHeadStride;
    p.lse = a.lse;
    p.lseBatchStride = static_cast<int64_t>(mNumQHeads) * mSeqLenQ;
    p.lseHeadStride = mSeqLenQ;
    return launch(ops, p, a.stream, mode);
}

// ---------------------------------------------------------------- paged

namespace {
Common pagedCommon(FmhaRunner const& r, PagedArgs const& a, bool bidirectional) {
    return {Mode::kPaged, r.numQHeads(), r.numKVHeads(), r.headDim(), a.inputType, a.attentionScale, a.qScale,
            a.kScale, a.vScale, a.slidingWindowSize, a.skipSoftmaxScaleFactor, a.isCausal, bidirectional};
}
}  // namespace

bool FmhaRunner::preflight(PagedArgs const& a, bool useBidirectional) {
    detail::clearError();
    Common const c = pagedCommon(*this, a, useBidirectional);
    detail::KernelOps ops;
    return checkVariant(c, false) && selectKernel(c, &ops, a.stream, true);
}

bool FmhaRunner::runPaged(PagedArgs const& a, DataType kvDataType) {
    detail::clearError();
    char const* mode = "paged";
    if ((a.bidirectionalBlockBegin == nullptr) != (a.bidirectionalBlockEnd == nullptr))
        return fail(cat(mode, ": bidirectionalBlockBegin and bidirectionalBlockEnd must both be set or both be null"));
    bool const bidir = a.bidirectionalBlockBegin != nullptr;
    Common const c = pagedCommon(*this, a, bidir);
    if (!checkVariant(c, true)) return false;
    if (kvDataType != a.inputType)
        return fail(cat(mode, ": kvDataType (", dataTypeName(kvDataType), ") does not match the input type (",
                        dataTypeName(a.inputType), "; fp8Input selects fp8e4m3)"));
    if (!checkBatch(mode, mBatchSize, vSplits(mHeadDim))) return false;
    if (mSeqLenQ <= 0) return fail(cat(mode, ": seqLenQ (", mSeqLenQ, ") must be positive"));
    if (!checkPaging(mode, "numPages", a.numPages, a.maxPagesPerSeq, a.tokensPerPage, mKvCacheCapacity))
        return false;
    if (!checkPointers(mode,
                       {{"qPtr", a.q},
                        {"pagedKVPoolPtr", a.pool},
                        {"kvCachePageList", a.pageList},
                        {"oPtr", a.o},
                        {"cuKVSeqLens", a.cuKVSeqLens}}) ||
        !checkAligned(mode, 16, {{"qPtr", a.q}, {"pagedKVPoolPtr", a.pool}, {"oPtr", a.o}}) ||
        !checkAligned(mode, 4, {{"lse", a.lse},
                                {"kvCachePageList", a.pageList},
                                {"cuKVSeqLens", a.cuKVSeqLens},
                                {"bidirectionalBlockBegin", a.bidirectionalBlockBegin},
                                {"bidirectionalBlockEnd", a.bidirectionalBlockEnd}}))
        return false;
    detail::KernelOps ops;
    if (!selectKernel(c, &ops, a.stream, false)) return false;

    FmhaParams p;
    fillCommon(p, c);
    p.batch = mBatchSize;
    p.q = a.q;
    p.o = a.o;
    p.seqLenQ = mSeqLenQ;
    p.maxSeqLenQ = mSeqLenQ;
    p.cuKV = a.cuKVSeqLens;
    fillPaged(p, a.pool, a.pageList, a.numPages, a.maxPagesPerSeq, a.tokensPerPage);
    p.bidirBegin = a.bidirectionalBlockBegin;
    p.bidirEnd = a.bidirectionalBlockEnd;
    p.lse = a.lse;
    p.lseBatchStride = static_cast<int64_t>(mNumQHeads) * mSeqLenQ;
    p.lseHeadStride = mSeqLenQ;
    return launch(ops, p, a.stream, mode);
}

// ---------------------------------------------------------------- paged, ragged Q

namespace {
Common raggedCommon(FmhaRunner const& r, PagedRaggedArgs const& a) {
    return {Mode::kPagedRagged, r.numQHeads(), r.numKVHeads(), r.headDim(), a.inputType, a.attentionScale,
            a.qScale, a.kScale, a.vScale, a.slidingWindowSize, 0.0F, true, false};
}
}  // namespace

bool FmhaRunner::preflight(PagedRaggedArgs const& a) {
    detail::clearError();
    Common const c = raggedCommon(*this, a);
    detail::KernelOps ops;
    return checkVariant(c, false) && selectKernel(c, &ops, a.stream, true);
}

bool FmhaRunner::run(PagedRaggedArgs const& a) {
    detail::clearError();
    char const* mode = "ragged";
    Common const c = raggedCommon(*this, a);
    if (!checkVariant(c, true)) return false;
    if (!checkBatch(mode, mBatchSize, vSplits(mHeadDim))) return false;
    if (a.totalQSeqLen <= 0) return fail(cat(mode, ": totalQSeqLen (", a.totalQSeqLen, ") must be positive"));
    if (a.maxQSeqLen <= 0 || a.maxQSeqLen > a.totalQSeqLen)
        return fail(cat(mode, ": maxQSeqLen (", a.maxQSeqLen, ") must be in [1, totalQSeqLen = ", a.totalQSeqLen, "]"));
    if (!checkPaging(mode, "numFlatPages", a.numFlatPages, a.maxPagesPerSeq, a.tokensPerPage, mKvCacheCapacity))
        return false;
    if (!checkPointers(mode,
                       {{"qPtr", a.q},
                        {"pagedKVPoolPtr", a.pool},
                        {"kvCachePageList", a.pageList},
                        {"oPtr", a.o},
                        {"cuQSeqLens", a.cuQSeqLens},
                        {"cuKVSeqLens", a.cuKVSeqLens}}) ||
        !checkAligned(mode, 16, {{"qPtr", a.q}, {"pagedKVPoolPtr", a.pool}, {"oPtr", a.o}}) ||
        !checkAligned(mode, 4, {{"lse", a.lse},
                                {"kvCachePageList", a.pageList},
                                {"cuQSeqLens", a.cuQSeqLens},
                                {"cuKVSeqLens", a.cuKVSeqLens}}))
        return false;
    detail::KernelOps ops;
    if (!selectKernel(c, &ops, a.stream, false)) return false;

    FmhaParams p;
    fillCommon(p, c);
    p.batch = mBatchSize;
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
    return launch(ops, p, a.stream, mode);
}

// ---------------------------------------------------------------- ViT

namespace {
Common vitCommon(FmhaRunner const& r, VitArgs const& a) {
    return {Mode::kVit, r.numQHeads(), r.numKVHeads(), r.headDim(), a.inputType, a.attentionScale, a.qScale,
            a.kScale, a.vScale, INT_MAX, 0.0F, false, false};
}
bool checkVitHeads(FmhaRunner const& r) {
    if (r.numKVHeads() != r.numQHeads())
        return fail(cat("vit: Q, K and V share one head count; numKVHeads (", r.numKVHeads(),
                        ") must equal numQHeads (", r.numQHeads(), ")"));
    return true;
}
}  // namespace

bool FmhaRunner::preflight(VitArgs const& a) {
    detail::clearError();
    Common const c = vitCommon(*this, a);
    detail::KernelOps ops;
    return checkVariant(c, false) && checkVitHeads(*this) && selectKernel(c, &ops, a.stream, true);
}

bool FmhaRunner::run(VitArgs const& a) {
    detail::clearError();
    char const* mode = "vit";
    Common const c = vitCommon(*this, a);
    if (!checkVariant(c, true) || !checkVitHeads(*this)) return false;
    if (!checkBatch(mode, a.batchSize, 1)) return false;
    if (a.totalSeqLen <= 0) return fail(cat(mode, ": totalSeqLen (", a.totalSeqLen, ") must be positive"));
    if (a.totalSeqLen > kMaxKeys) return fail(cat(mode, ": totalSeqLen (", a.totalSeqLen, ") exceeds ", kMaxKeys));
    if (a.maxSeqLen <= 0 || a.maxSeqLen > a.totalSeqLen)
        return fail(cat(mode, ": maxSeqLen (", a.maxSeqLen, ") must be in [1, totalSeqLen = ", a.totalSeqLen, "]"));
    if (!checkPointers(mode, {{"qPtr", a.q}, {"kPtr", a.k}, {"vPtr", a.v}, {"oPtr", a.o}, {"cuSeqLens", a.cuSeqLens}}) ||
        !checkAligned(mode, 16, {{"qPtr", a.q}, {"kPtr", a.k}, {"vPtr", a.v}, {"oPtr", a.o}}) ||
        !checkAligned(mode, 4, {{"lse", a.lse}, {"cuSeqLens", a.cuSeqLens}}))
        return false;
    detail::KernelOps ops;
    if (!selectKernel(c, &ops, a.stream, false)) return false;

    FmhaParams p;
    fillCommon(p, c);
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
    p.kvRowStride = static_cast<int64_t>(mNumQHeads) * mHeadDim;
    p.kvHeadStride = mHeadDim;
    p.lse = a.lse;
    p.lseHeadStride = a.totalSeqLen;
    p.lsePacked = true;
    return launch(ops, p, a.stream, mode);
}

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
