// C API: thin forwarding to the C++ runner; no exception crosses it.
#include "fmha/fmha_c.h"

#include <new>

#include "error.h"
#include "fmha/fmha.h"

struct fmha_runner {
    fmha::FmhaRunner runner;
};

namespace {
cudaStream_t asStream(void* s) { return static_cast<cudaStream_t>(s); }
bool nullRunner() { return fmha::detail::fail("runner is null"); }
fmha::DataType asType(int32_t t) { return static_cast<fmha::DataType>(t); }
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

}  // extern "C"
