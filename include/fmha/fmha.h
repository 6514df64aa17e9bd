// Public C++ API: the attention runner (four modes), its argument structs, masks and errors.
// Plain C++ with the CUDA runtime types only; no CUTLASS/CuTe here.
#pragma once

#include <climits>
#include <cstddef>
#include <cstdint>
#include <memory>

#include <cuda_runtime_api.h>

#include "fmha/data_type.h"
#include "fmha/export.h"
#include "fmha/version.h"

namespace fmha {

// Mask families a kernel variant can apply (see docs/SEMANTICS.md).
enum class MaskType : int32_t {
    kCAUSAL = 0,          // bottom-right aligned causal
    kSLIDING_CAUSAL = 1,  // causal plus a sliding window
    kNON_CAUSAL = 2,      // every valid key
    kBIDIRECTIONAL = 3,   // causal/window united with per-row bidirectional blocks
};

enum class Mode : int32_t { kLlm = 0, kPaged = 1, kPagedRagged = 2, kVit = 3 };

FMHA_API char const* modeName(Mode m);

// The reason of the last failed call on this thread; "" after a call that succeeded.
// A failed launch names its CUDA error; a sticky context error (an earlier kernel's fault) is
// named as such. A run* call of a loaded variant (after preflight*, or a first run) neither
// clears nor reports a CUDA error already pending on the thread from unrelated work.
FMHA_API char const* lastError();

// The kernel family of this thread's last successful run* call: "sm90" (Hopper wgmma
// kernels) or "sm80" (the portable mma.sync kernels); "" before any.
FMHA_API char const* lastKernelFamily();

// What a successful run* launched (optional out-parameter of the struct-based run calls).
struct LaunchRecord {
    char const* family = "";   // "sm90" (Hopper wgmma kernels) or "sm80" (portable mma.sync kernels)
    int32_t packedHeads = 1;   // query heads packed into one tile of rows (pack GQA; 1: none)
    int32_t blockM = 0;        // the tile: query rows (of packed rows under pack GQA)
    int32_t blockN = 0;        // and keys
    int32_t splits = 1;        // split-KV parts (1: unsplit; FmhaRunner::setSplitKv)
    bool persistent = false;   // one CTA an SM walking several tiles (the Hopper family's persistent kernel)
    bool mergedInKernel = false;  // split-KV parts merged by the forward kernel itself (no combine kernel)
    bool pairedKv = false;  // CTA pairs of two query heads sharing each K/V tile's loads (the Hopper family)
};

// Optional sink for every error message (any thread). Pass nullptr to remove it.
using LogCallback = void (*)(char const* message, void* user);
FMHA_API void setLogCallback(LogCallback callback, void* user);

// Mode 1: batched Q [B, S_q, Hq, D] over a contiguous KV cache [B, 2, Hkv, Cap, D].
struct LlmArgs {
    void const* q = nullptr;
    void const* kv = nullptr;
    void* o = nullptr;
    int32_t const* cuKVSeqLens = nullptr;  // [B+1]
    cudaStream_t stream = nullptr;
    float attentionScale = 0.0F;
    int32_t slidingWindowSize = INT_MAX;
    DataType inputType = DataType::kHALF;  // kHALF, kBF16 or kFP8
    float qScale = 1.0F;
    float kScale = 1.0F;
    float vScale = 1.0F;
    float skipSoftmaxScaleFactor = 0.0F;
    float* lse = nullptr;  // optional float32 [B, Hq, S_q], natural log
    bool bf16Output = false;  // FP8 input: O in BF16 instead of FP16 (16-bit input: O in its type)
};

// Mode 2: batched Q over a paged NHD pool [numPages, tokensPerPage, Hkv, D].
struct PagedArgs {
    void const* q = nullptr;
    void const* pool = nullptr;
    int32_t const* pageList = nullptr;  // [B, 2, maxPagesPerSeq]: K pages then V pages
    void* o = nullptr;
    int32_t const* cuKVSeqLens = nullptr;
    int32_t numPages = 0;
    int32_t maxPagesPerSeq = 0;
    int32_t tokensPerPage = 0;
    cudaStream_t stream = nullptr;
    float attentionScale = 0.0F;
    int32_t slidingWindowSize = INT_MAX;
    DataType inputType = DataType::kHALF;
    float qScale = 1.0F;
    float kScale = 1.0F;
    float vScale = 1.0F;
    bool isCausal = true;
    float skipSoftmaxScaleFactor = 0.0F;
    int32_t const* bidirectionalBlockBegin = nullptr;  // [B, S_q], inclusive, -1 = none
    int32_t const* bidirectionalBlockEnd = nullptr;
    float* lse = nullptr;  // optional float32 [B, Hq, S_q]
    bool bf16Output = false;  // FP8 input: O in BF16 instead of FP16
};

// Mode 3: packed ragged Q [totalQSeqLen, Hq, D] over a paged pool; causal or sliding-causal.
struct PagedRaggedArgs {
    void const* q = nullptr;
    void const* pool = nullptr;
    int32_t const* pageList = nullptr;
    void* o = nullptr;
    int32_t const* cuQSeqLens = nullptr;
    int32_t const* cuKVSeqLens = nullptr;
    int32_t totalQSeqLen = 0;
    int32_t maxQSeqLen = 0;
    int32_t numFlatPages = 0;
    int32_t maxPagesPerSeq = 0;
    int32_t tokensPerPage = 0;
    cudaStream_t stream = nullptr;
    float attentionScale = 0.0F;
    int32_t slidingWindowSize = INT_MAX;
    DataType inputType = DataType::kHALF;
    float qScale = 1.0F;
    float kScale = 1.0F;
    float vScale = 1.0F;
    float* lse = nullptr;  // optional float32 [Hq, totalQSeqLen]
    bool bf16Output = false;  // FP8 input: O in BF16 instead of FP16
};

// Mode 4: packed varlen Q, K, V, O [totalSeqLen, H, D]; every token sees its whole sequence.
struct VitArgs {
    void const* q = nullptr;
    void const* k = nullptr;
    void const* v = nullptr;
    void* o = nullptr;
    int32_t const* cuSeqLens = nullptr;
    int32_t totalSeqLen = 0;
    int32_t maxSeqLen = 0;
    int32_t batchSize = 0;
    cudaStream_t stream = nullptr;
    float attentionScale = 0.0F;
    DataType inputType = DataType::kHALF;
    float qScale = 1.0F;
    float kScale = 1.0F;
    float vScale = 1.0F;
    float* lse = nullptr;  // optional float32 [H, totalSeqLen]
    bool bf16Output = false;  // FP8 input: O in BF16 instead of FP16
};

namespace detail {
struct SplitWorkspace;
}

class FMHA_API FmhaRunner {
public:
    FmhaRunner(int32_t numQHeads, int32_t numKVHeads, int32_t headDim, int32_t batchSize = 0,
               int32_t seqLenQ = 0, int32_t kvCacheCapacity = 0);
    ~FmhaRunner();
    FmhaRunner(FmhaRunner const&) = delete;
    FmhaRunner& operator=(FmhaRunner const&) = delete;

    // ---- The original runner's API (same names, parameter order and defaults). ----
    bool preflightLlm(cudaStream_t stream, int32_t slidingWindowSize = INT_MAX, bool fp8Input = false,
                      float skipSoftmaxScaleFactor = 0.0F) {
        LlmArgs a;
        a.stream = stream;
        a.slidingWindowSize = slidingWindowSize;
        a.inputType = fp8Input ? DataType::kFP8 : DataType::kHALF;
        a.skipSoftmaxScaleFactor = skipSoftmaxScaleFactor;
        return preflight(a);
    }

    bool preflightPaged(cudaStream_t stream, int32_t slidingWindowSize = INT_MAX, bool fp8Input = false,
                        bool isCausal = true, float skipSoftmaxScaleFactor = 0.0F, bool useBidirectional = false) {
        PagedArgs a;
        a.stream = stream;
        a.slidingWindowSize = slidingWindowSize;
        a.inputType = fp8Input ? DataType::kFP8 : DataType::kHALF;
        a.isCausal = isCausal;
        a.skipSoftmaxScaleFactor = skipSoftmaxScaleFactor;
        return preflight(a, useBidirectional);
    }

    bool preflightPagedRagged(cudaStream_t stream, int32_t slidingWindowSize = INT_MAX,
                              ApiDataType inputDataType = ApiDataType::kHALF) {
        PagedRaggedArgs a;
        a.stream = stream;
        a.slidingWindowSize = slidingWindowSize;
        a.inputType = toDataType(inputDataType);
        return preflight(a);
    }

    bool preflightViT(cudaStream_t stream) {
        VitArgs a;
        a.stream = stream;
        return preflight(a);
    }

    bool run(void const* qPtr, void const* kvPtr, void* oPtr, int32_t const* cuKVSeqLens, cudaStream_t stream,
             float attentionScale, int32_t slidingWindowSize = INT_MAX, bool fp8Input = false, float qScale = 1.0F,
             float kScale = 1.0F, float vScale = 1.0F, float skipSoftmaxScaleFactor = 0.0F) {
        LlmArgs a;
        a.q = qPtr;
        a.kv = kvPtr;
        a.o = oPtr;
        a.cuKVSeqLens = cuKVSeqLens;
        a.stream = stream;
        a.attentionScale = attentionScale;
        a.slidingWindowSize = slidingWindowSize;
        a.inputType = fp8Input ? DataType::kFP8 : DataType::kHALF;
        a.qScale = qScale;
        a.kScale = kScale;
        a.vScale = vScale;
        a.skipSoftmaxScaleFactor = skipSoftmaxScaleFactor;
        return run(a);
    }

    bool runPaged(void const* qPtr, void const* pagedKVPoolPtr, int32_t const* kvCachePageList, void* oPtr,
                  int32_t const* cuKVSeqLens, int32_t numPages, int32_t maxPagesPerSeq, int32_t tokensPerPage,
                  ApiDataType kvDataType, cudaStream_t stream, float attentionScale,
                  int32_t slidingWindowSize = INT_MAX, bool fp8Input = false, float qScale = 1.0F,
                  float kScale = 1.0F, float vScale = 1.0F, bool isCausal = true,
                  float skipSoftmaxScaleFactor = 0.0F, int32_t const* bidirectionalBlockBegin = nullptr,
                  int32_t const* bidirectionalBlockEnd = nullptr) {
        PagedArgs a;
        a.q = qPtr;
        a.pool = pagedKVPoolPtr;
        a.pageList = kvCachePageList;
        a.o = oPtr;
        a.cuKVSeqLens = cuKVSeqLens;
        a.numPages = numPages;
        a.maxPagesPerSeq = maxPagesPerSeq;
        a.tokensPerPage = tokensPerPage;
        a.stream = stream;
        a.attentionScale = attentionScale;
        a.slidingWindowSize = slidingWindowSize;
        a.inputType = fp8Input ? DataType::kFP8 : DataType::kHALF;
        a.qScale = qScale;
        a.kScale = kScale;
        a.vScale = vScale;
        a.isCausal = isCausal;
        a.skipSoftmaxScaleFactor = skipSoftmaxScaleFactor;
        a.bidirectionalBlockBegin = bidirectionalBlockBegin;
        a.bidirectionalBlockEnd = bidirectionalBlockEnd;
        return runPaged(a, toDataType(kvDataType));
    }

    bool runPagedRagged(void const* qPtr, void const* pagedKVPoolPtr, int32_t const* kvCachePageList, void* oPtr,
                        int32_t const* cuQSeqLens, int32_t const* cuKVSeqLens, int32_t totalQSeqLen,
                        int32_t maxQSeqLen, int32_t numFlatPages, int32_t maxPagesPerSeq, int32_t tokensPerPage,
                        cudaStream_t stream, float attentionScale, int32_t slidingWindowSize = INT_MAX,
                        ApiDataType inputDataType = ApiDataType::kHALF, float qScale = 1.0F, float kScale = 1.0F,
                        float vScale = 1.0F) {
        PagedRaggedArgs a;
        a.q = qPtr;
        a.pool = pagedKVPoolPtr;
        a.pageList = kvCachePageList;
        a.o = oPtr;
        a.cuQSeqLens = cuQSeqLens;
        a.cuKVSeqLens = cuKVSeqLens;
        a.totalQSeqLen = totalQSeqLen;
        a.maxQSeqLen = maxQSeqLen;
        a.numFlatPages = numFlatPages;
        a.maxPagesPerSeq = maxPagesPerSeq;
        a.tokensPerPage = tokensPerPage;
        a.stream = stream;
        a.attentionScale = attentionScale;
        a.slidingWindowSize = slidingWindowSize;
        a.inputType = toDataType(inputDataType);
        a.qScale = qScale;
        a.kScale = kScale;
        a.vScale = vScale;
        return run(a);
    }

    bool run(void const* qPtr, void const* kPtr, void const* vPtr, void* oPtr, int32_t const* cuSeqLens,
             int32_t totalSeqLen, int32_t maxSeqLen, int32_t batchSize, cudaStream_t stream, float attentionScale,
             bool fp8Input = false, float qScale = 1.0F, float kScale = 1.0F, float vScale = 1.0F) {
        VitArgs a;
        a.q = qPtr;
        a.k = kPtr;
        a.v = vPtr;
        a.o = oPtr;
        a.cuSeqLens = cuSeqLens;
        a.totalSeqLen = totalSeqLen;
        a.maxSeqLen = maxSeqLen;
        a.batchSize = batchSize;
        a.stream = stream;
        a.attentionScale = attentionScale;
        a.inputType = fp8Input ? DataType::kFP8 : DataType::kHALF;
        a.qScale = qScale;
        a.kScale = kScale;
        a.vScale = vScale;
        return run(a);
    }

    // LLM mode, FP16 input, on SM version smVersion (major*10+minor).
    static bool canImplement(int32_t headSize, int32_t smVersion) {
        return canImplementMode(Mode::kLlm, DataType::kHALF, headSize, smVersion);
    }
    static bool canImplementPagedRagged(int32_t numQHeads, int32_t numKVHeads, int32_t headSize, int32_t smVersion,
                                        ApiDataType inputDataType, MaskType maskType) {
        return canImplementPagedRaggedImpl(numQHeads, numKVHeads, headSize, smVersion, toDataType(inputDataType),
                                           maskType);
    }
    static bool canImplementViT(int32_t headSize, int32_t smVersion) {
        return canImplementMode(Mode::kVit, DataType::kHALF, headSize, smVersion);
    }

    // ---- Extensions: every option (BF16 input, LSE output) through one struct per mode. ----
    // record (optional) receives what was launched.
    bool run(LlmArgs const& args, LaunchRecord* record = nullptr);
    bool runPaged(PagedArgs const& args, LaunchRecord* record = nullptr) {
        return runPaged(args, args.inputType, record);
    }
    bool run(PagedRaggedArgs const& args, LaunchRecord* record = nullptr);
    bool run(VitArgs const& args, LaunchRecord* record = nullptr);
    bool preflight(LlmArgs const& variant);
    bool preflight(PagedArgs const& variant, bool useBidirectional);
    bool preflight(PagedRaggedArgs const& variant);
    bool preflight(VitArgs const& variant);

    // Whether this build has a kernel for (mode, dtype, head dim) on SM version smVersion.
    static bool canImplementMode(Mode mode, DataType inputType, int32_t headSize, int32_t smVersion);
    static bool canImplementPagedRaggedImpl(int32_t numQHeads, int32_t numKVHeads, int32_t headSize,
                                            int32_t smVersion, DataType inputType, MaskType maskType);
    // Page sizes the paged modes accept: powers of two in [kMinPageSize, kMaxPageSize].
    static constexpr int32_t kMinPageSize = 16;
    static constexpr int32_t kMaxPageSize = 256;

    // ---- Split-KV (the paged and ragged modes). ----
    // Few row tiles over long contexts (decode, small chunks) leave most SMs idle; split-KV
    // cuts each tile's keys into parts that run as CTAs of their own and merges their results
    // with the LSE formula. parts: 0 (the default) lets the runner choose from the grid, the
    // SM count and kvCacheCapacity (no split where the grid fills the GPU); 1 never splits;
    // 2..kMaxSplits forces that many parts. False (nothing changed) for other values.
    // Skip-softmax calls never split (its per-row rule needs the whole row's running max).
    //
    // The parts' results go to a workspace this runner owns: preflightPaged and
    // preflightPagedRagged allocate it for the constructor's batchSize and seqLenQ (and,
    // where those are 0, for the largest launch the automatic choice can make). A run that
    // needs more grows it, outside stream capture; while its stream is being captured it
    // runs with the parts the workspace holds (automatic), or fails with the sizes (forced).
    // Runs of one runner on different streams share the workspace: order them, or use one
    // runner per stream.
    static constexpr int32_t kMaxSplits = 64;
    bool setSplitKv(int32_t parts);
    int32_t splitKv() const;
    size_t workspaceBytes() const;  // device memory held for split-KV

    int32_t numQHeads() const { return mNumQHeads; }
    int32_t numKVHeads() const { return mNumKVHeads; }
    int32_t headDim() const { return mHeadDim; }
    int32_t batchSize() const { return mBatchSize; }
    int32_t seqLenQ() const { return mSeqLenQ; }
    int32_t kvCacheCapacity() const { return mKvCacheCapacity; }

private:
    bool runPaged(PagedArgs const& args, DataType kvDataType, LaunchRecord* record = nullptr);

    int32_t mNumQHeads;
    int32_t mNumKVHeads;
    int32_t mHeadDim;
    int32_t mBatchSize;
    int32_t mSeqLenQ;
    int32_t mKvCacheCapacity;
    std::unique_ptr<detail::SplitWorkspace> mSplit;
};

}  // namespace fmha

// The original's names.
using CuteDslFMHARunner = fmha::FmhaRunner;
using CuteDslFMHAMaskType = fmha::MaskType;
