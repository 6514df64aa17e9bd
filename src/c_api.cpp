// C API: thin forwarding to the C++ runner; no exception crosses it.
#include "fmha/fmha_c.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <new>
#include <string>

#include "c_args.h"
#include "error.h"
#include "fmha/fmha.h"

struct fmha_runner {
    fmha::FmhaRunner runner;
};

namespace {
cudaStream_t asStream(void* s) { return static_cast<cudaStream_t>(s); }
bool nullRunner() { return fmha::detail::fail("runner is null"); }
fmha::DataType asType(int32_t t) { return static_cast<fmha::DataType>(t); }
// A caller's struct of type T, read by its struct_size: a struct from an older header (at
// least the first version's size: 0.3's, which ends at lse) gets the defaults for the fields
// it lacks; one from a newer header must leave the fields this library does not know zero.
template <class T>
bool readStruct(T const* in, char const* mode, char const* type, void (*init)(T*), T* out) {
    using fmha::detail::fail;
    std::string const where = std::string(mode) + ": " + type;
    if (in == nullptr) return fail(where + " is null");
    size_t const size = in->struct_size, first = offsetof(T, bf16_output);
    if (size < first)
        return fail(where + ".struct_size (" + std::to_string(size) + ") is below the first version's size (" +
                    std::to_string(first) + "); set it to sizeof(" + type + ") or call " + type + "_init");
    auto const* bytes = reinterpret_cast<unsigned char const*>(in);
    for (size_t i = sizeof(T); i < size; ++i)
        if (bytes[i] != 0)
            return fail(where + " sets fields this library (" + std::to_string(FMHA_VERSION_MAJOR) + "." +
                        std::to_string(FMHA_VERSION_MINOR) + ") does not know (struct_size " + std::to_string(size) +
                        ")");
    init(out);
    std::memcpy(out, in, std::min(size, sizeof(T)));
    return true;
}

bool toCpp(fmha_llm_args const* in, char const* mode, fmha::LlmArgs* a) {
    fmha_llm_args c;
    if (!readStruct(in, mode, "fmha_llm_args", fmha_llm_args_init, &c)) return false;
    a->q = c.q, a->kv = c.kv, a->o = c.o, a->cuKVSeqLens = c.cu_kv_seq_lens, a->stream = asStream(c.stream);
    a->attentionScale = c.attention_scale, a->slidingWindowSize = c.sliding_window_size;
    a->inputType = asType(c.input_data_type), a->qScale = c.q_scale, a->kScale = c.k_scale, a->vScale = c.v_scale;
    a->skipSoftmaxScaleFactor = c.skip_softmax_scale_factor, a->lse = c.lse, a->bf16Output = c.bf16_output != 0;
    return true;
}

bool toCpp(fmha_paged_args const* in, char const* mode, fmha::PagedArgs* a) {
    fmha_paged_args c;
    if (!readStruct(in, mode, "fmha_paged_args", fmha_paged_args_init, &c)) return false;
    a->q = c.q, a->pool = c.paged_kv_pool, a->pageList = c.kv_cache_page_list, a->o = c.o;
    a->cuKVSeqLens = c.cu_kv_seq_lens, a->numPages = c.num_pages, a->maxPagesPerSeq = c.max_pages_per_seq;
    a->tokensPerPage = c.tokens_per_page, a->stream = asStream(c.stream), a->attentionScale = c.attention_scale;
    a->slidingWindowSize = c.sliding_window_size, a->inputType = asType(c.input_data_type);
    a->qScale = c.q_scale, a->kScale = c.k_scale, a->vScale = c.v_scale, a->isCausal = c.is_causal;
    a->skipSoftmaxScaleFactor = c.skip_softmax_scale_factor;
    a->bidirectionalBlockBegin = c.bidirectional_block_begin, a->bidirectionalBlockEnd = c.bidirectional_block_end;
    a->lse = c.lse, a->bf16Output = c.bf16_output != 0;
    return true;
}

bool toCpp(fmha_paged_ragged_args const* in, char const* mode, fmha::PagedRaggedArgs* a) {
    fmha_paged_ragged_args c;
    if (!readStruct(in, mode, "fmha_paged_ragged_args", fmha_paged_ragged_args_init, &c)) return false;
    a->q = c.q, a->pool = c.paged_kv_pool, a->pageList = c.kv_cache_page_list, a->o = c.o;
    a->cuQSeqLens = c.cu_q_seq_lens, a->cuKVSeqLens = c.cu_kv_seq_lens, a->totalQSeqLen = c.total_q_seq_len;
    a->maxQSeqLen = c.max_q_seq_len, a->numFlatPages = c.num_flat_pages, a->maxPagesPerSeq = c.max_pages_per_seq;
    a->tokensPerPage = c.tokens_per_page, a->stream = asStream(c.stream), a->attentionScale = c.attention_scale;
    a->slidingWindowSize = c.sliding_window_size, a->inputType = asType(c.input_data_type);
    a->qScale = c.q_scale, a->kScale = c.k_scale, a->vScale = c.v_scale, a->lse = c.lse;
    a->bf16Output = c.bf16_output != 0;
    return true;
}

bool toCpp(fmha_vit_args const* in, char const* mode, fmha::VitArgs* a) {
    fmha_vit_args c;
    if (!readStruct(in, mode, "fmha_vit_args", fmha_vit_args_init, &c)) return false;
    a->q = c.q, a->k = c.k, a->v = c.v, a->o = c.o, a->cuSeqLens = c.cu_seq_lens, a->totalSeqLen = c.total_seq_len;
    a->maxSeqLen = c.max_seq_len, a->batchSize = c.batch_size, a->stream = asStream(c.stream);
    a->attentionScale = c.attention_scale, a->inputType = asType(c.input_data_type);
    a->qScale = c.q_scale, a->kScale = c.k_scale, a->vScale = c.v_scale, a->lse = c.lse;
    a->bf16Output = c.bf16_output != 0;
    return true;
}

}  // namespace

extern "C" {

fmha_runner* fmha_runner_create(int32_t num_q_heads, int32_t num_kv_heads, int32_t head_dim, int32_t batch_size,
                                int32_t seq_len_q, int32_t kv_cache_capacity) {
    fmha::detail::clearError();
    auto* r = new (std::nothrow)
        fmha_runner{fmha::FmhaRunner(num_q_heads, num_kv_heads, head_dim, batch_size, seq_len_q, kv_cache_capacity)};
    if (r == nullptr) fmha::detail::fail("out of host memory");
    return r;
}

void fmha_runner_destroy(fmha_runner* runner) { delete runner; }

bool fmha_runner_set_split_kv(fmha_runner* r, int32_t parts) {
    if (r == nullptr) return nullRunner();
    return r->runner.setSplitKv(parts);
}

size_t fmha_runner_workspace_bytes(const fmha_runner* r) { return r == nullptr ? 0 : r->runner.workspaceBytes(); }

int32_t fmha_version(void) { return FMHA_VERSION_NUMBER; }

const char* fmha_last_error(void) { return fmha::lastError(); }

bool fmha_run_llm(fmha_runner* r, const void* q, const void* kv, void* o, const int32_t* cu_kv, void* stream,
                  float scale, int32_t window, bool fp8, float qs, float ks, float vs, float skip) {
    if (r == nullptr) return nullRunner();
    return r->runner.run(q, kv, o, cu_kv, asStream(stream), scale, window, fp8, qs, ks, vs, skip);
}

bool fmha_run_paged(fmha_runner* r, const void* q, const void* pool, const int32_t* pages, void* o,
                    const int32_t* cu_kv, int32_t num_pages, int32_t max_pages, int32_t tokens_per_page,
                    int32_t kv_type, void* stream, float scale, int32_t window, bool fp8, float qs, float ks, float vs,
                    bool causal, float skip, const int32_t* bid_begin, const int32_t* bid_end) {
    if (r == nullptr) return nullRunner();
    return r->runner.runPaged(q, pool, pages, o, cu_kv, num_pages, max_pages, tokens_per_page, asType(kv_type),
                              asStream(stream), scale, window, fp8, qs, ks, vs, causal, skip, bid_begin, bid_end);
}

bool fmha_run_paged_ragged(fmha_runner* r, const void* q, const void* pool, const int32_t* pages, void* o,
                           const int32_t* cu_q, const int32_t* cu_kv, int32_t total_q, int32_t max_q,
                           int32_t num_pages, int32_t max_pages, int32_t tokens_per_page, void* stream, float scale,
                           int32_t window, int32_t input_type, float qs, float ks, float vs) {
    if (r == nullptr) return nullRunner();
    return r->runner.runPagedRagged(q, pool, pages, o, cu_q, cu_kv, total_q, max_q, num_pages, max_pages,
                                    tokens_per_page, asStream(stream), scale, window, asType(input_type), qs, ks, vs);
}

bool fmha_run_vit(fmha_runner* r, const void* q, const void* k, const void* v, void* o, const int32_t* cu,
                  int32_t total, int32_t max_len, int32_t batch, void* stream, float scale, bool fp8, float qs,
                  float ks, float vs) {
    if (r == nullptr) return nullRunner();
    return r->runner.run(q, k, v, o, cu, total, max_len, batch, asStream(stream), scale, fp8, qs, ks, vs);
}

bool fmha_preflight_llm(fmha_runner* r, void* stream, int32_t window, bool fp8, float skip) {
    if (r == nullptr) return nullRunner();
    return r->runner.preflightLlm(asStream(stream), window, fp8, skip);
}

bool fmha_preflight_paged(fmha_runner* r, void* stream, int32_t window, bool fp8, bool causal, float skip,
                          bool bidirectional) {
    if (r == nullptr) return nullRunner();
    return r->runner.preflightPaged(asStream(stream), window, fp8, causal, skip, bidirectional);
}

bool fmha_preflight_paged_ragged(fmha_runner* r, void* stream, int32_t window, int32_t input_type) {
    if (r == nullptr) return nullRunner();
    return r->runner.preflightPagedRagged(asStream(stream), window, asType(input_type));
}

bool fmha_preflight_vit(fmha_runner* r, void* stream) {
    if (r == nullptr) return nullRunner();
    return r->runner.preflightViT(asStream(stream));
}

bool fmha_can_implement(int32_t head_size, int32_t sm_version) {
    fmha::detail::clearError();
    return fmha::FmhaRunner::canImplement(head_size, sm_version);
}

bool fmha_can_implement_paged_ragged(int32_t num_q_heads, int32_t num_kv_heads, int32_t head_size,
                                     int32_t sm_version, int32_t input_type, int32_t mask_type) {
    fmha::detail::clearError();
    return fmha::FmhaRunner::canImplementPagedRagged(num_q_heads, num_kv_heads, head_size, sm_version,
                                                     asType(input_type), static_cast<fmha::MaskType>(mask_type));
}

bool fmha_can_implement_vit(int32_t head_size, int32_t sm_version) {
    fmha::detail::clearError();
    return fmha::FmhaRunner::canImplementViT(head_size, sm_version);
}

// The defaults are the C++ argument structs'.
void fmha_llm_args_init(fmha_llm_args* a) {
    if (a != nullptr) *a = fmha::detail::toC(fmha::LlmArgs{});
}

void fmha_paged_args_init(fmha_paged_args* a) {
    if (a != nullptr) *a = fmha::detail::toC(fmha::PagedArgs{});
}

void fmha_paged_ragged_args_init(fmha_paged_ragged_args* a) {
    if (a != nullptr) *a = fmha::detail::toC(fmha::PagedRaggedArgs{});
}

void fmha_vit_args_init(fmha_vit_args* a) {
    if (a != nullptr) *a = fmha::detail::toC(fmha::VitArgs{});
}

bool fmha_run_llm_args(fmha_runner* r, const fmha_llm_args* args) {
    fmha::LlmArgs a;
    return r == nullptr ? nullRunner() : toCpp(args, "llm", &a) && r->runner.run(a);
}

bool fmha_run_paged_args(fmha_runner* r, const fmha_paged_args* args) {
    fmha::PagedArgs a;
    return r == nullptr ? nullRunner() : toCpp(args, "paged", &a) && r->runner.runPaged(a);
}

bool fmha_run_paged_ragged_args(fmha_runner* r, const fmha_paged_ragged_args* args) {
    fmha::PagedRaggedArgs a;
    return r == nullptr ? nullRunner() : toCpp(args, "ragged", &a) && r->runner.run(a);
}

bool fmha_run_vit_args(fmha_runner* r, const fmha_vit_args* args) {
    fmha::VitArgs a;
    return r == nullptr ? nullRunner() : toCpp(args, "vit", &a) && r->runner.run(a);
}

bool fmha_preflight_llm_args(fmha_runner* r, const fmha_llm_args* args) {
    fmha::LlmArgs a;
    return r == nullptr ? nullRunner() : toCpp(args, "llm", &a) && r->runner.preflight(a);
}

bool fmha_preflight_paged_args(fmha_runner* r, const fmha_paged_args* args, bool use_bidirectional) {
    fmha::PagedArgs a;
    return r == nullptr ? nullRunner() : toCpp(args, "paged", &a) && r->runner.preflight(a, use_bidirectional);
}

bool fmha_preflight_paged_ragged_args(fmha_runner* r, const fmha_paged_ragged_args* args) {
    fmha::PagedRaggedArgs a;
    return r == nullptr ? nullRunner() : toCpp(args, "ragged", &a) && r->runner.preflight(a);
}

bool fmha_preflight_vit_args(fmha_runner* r, const fmha_vit_args* args) {
    fmha::VitArgs a;
    return r == nullptr ? nullRunner() : toCpp(args, "vit", &a) && r->runner.preflight(a);
}

}  // extern "C"
