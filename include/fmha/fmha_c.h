/* C API of the attention runner, for callers without C++ (ctypes, Rust, ...).
 * Every function mirrors the C++ runner (same parameters, same order); data types are the
 * int32 values of fmha::DataType (1 = FP16, 6 = FP8 E4M3, 7 = BF16) and streams pass as void*.
 * Functions returning bool report failures through fmha_last_error(). */
#ifndef FMHA_FMHA_C_H
#define FMHA_FMHA_C_H

#include <stdbool.h>
#include <stdint.h>

#include "fmha/export.h"
#include "fmha/version.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fmha_runner fmha_runner;

/* NULL when the runner cannot be allocated. Shape errors surface at the first call. */
FMHA_API fmha_runner* fmha_runner_create(int32_t num_q_heads, int32_t num_kv_heads, int32_t head_dim, int32_t batch_size,
                                int32_t seq_len_q, int32_t kv_cache_capacity);
FMHA_API void fmha_runner_destroy(fmha_runner* runner);

/* The library's version, MAJOR * 10000 + MINOR * 100 + PATCH (FMHA_VERSION_NUMBER of the
 * headers it was built with). */
FMHA_API int32_t fmha_version(void);

/* The reason of this thread's last failure; never NULL, "" when the last call succeeded. */
FMHA_API const char* fmha_last_error(void);

FMHA_API bool fmha_run_llm(fmha_runner* runner, const void* q, const void* kv, void* o, const int32_t* cu_kv_seq_lens,
                  void* stream, float attention_scale, int32_t sliding_window_size, bool fp8_input, float q_scale,
                  float k_scale, float v_scale, float skip_softmax_scale_factor);

FMHA_API bool fmha_run_paged(fmha_runner* runner, const void* q, const void* paged_kv_pool, const int32_t* kv_cache_page_list,
                    void* o, const int32_t* cu_kv_seq_lens, int32_t num_pages, int32_t max_pages_per_seq,
                    int32_t tokens_per_page, int32_t kv_data_type, void* stream, float attention_scale,
                    int32_t sliding_window_size, bool fp8_input, float q_scale, float k_scale, float v_scale,
                    bool is_causal, float skip_softmax_scale_factor, const int32_t* bidirectional_block_begin,
                    const int32_t* bidirectional_block_end);

FMHA_API bool fmha_run_paged_ragged(fmha_runner* runner, const void* q, const void* paged_kv_pool,
                           const int32_t* kv_cache_page_list, void* o, const int32_t* cu_q_seq_lens,
                           const int32_t* cu_kv_seq_lens, int32_t total_q_seq_len, int32_t max_q_seq_len,
                           int32_t num_flat_pages, int32_t max_pages_per_seq, int32_t tokens_per_page, void* stream,
                           float attention_scale, int32_t sliding_window_size, int32_t input_data_type, float q_scale,
                           float k_scale, float v_scale);

FMHA_API bool fmha_run_vit(fmha_runner* runner, const void* q, const void* k, const void* v, void* o,
                  const int32_t* cu_seq_lens, int32_t total_seq_len, int32_t max_seq_len, int32_t batch_size,
                  void* stream, float attention_scale, bool fp8_input, float q_scale, float k_scale, float v_scale);

FMHA_API bool fmha_preflight_llm(fmha_runner* runner, void* stream, int32_t sliding_window_size, bool fp8_input,
                        float skip_softmax_scale_factor);
FMHA_API bool fmha_preflight_paged(fmha_runner* runner, void* stream, int32_t sliding_window_size, bool fp8_input,
                          bool is_causal, float skip_softmax_scale_factor, bool use_bidirectional);
FMHA_API bool fmha_preflight_paged_ragged(fmha_runner* runner, void* stream, int32_t sliding_window_size,
                                 int32_t input_data_type);
FMHA_API bool fmha_preflight_vit(fmha_runner* runner, void* stream);

FMHA_API bool fmha_can_implement(int32_t head_size, int32_t sm_version);
FMHA_API bool fmha_can_implement_paged_ragged(int32_t num_q_heads, int32_t num_kv_heads, int32_t head_size,
                                     int32_t sm_version, int32_t input_data_type, int32_t mask_type);
FMHA_API bool fmha_can_implement_vit(int32_t head_size, int32_t sm_version);

#ifdef __cplusplus
}
#endif

#endif /* FMHA_FMHA_C_H */
