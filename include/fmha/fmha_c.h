/* C API of the attention runner, for callers without C++ (ctypes, Rust, ...).
 * The seed-order functions mirror the C++ runner's signatures (same parameters, same order);
 * the *_args functions take every option through a struct. Data types are the
 * int32 values of fmha::DataType (1 = FP16, 6 = FP8 E4M3, 7 = BF16) and streams pass as void*.
 * Functions returning bool report failures through fmha_last_error(). */
#ifndef FMHA_FMHA_C_H
#define FMHA_FMHA_C_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fmha/export.h"
#include "fmha/version.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fmha_runner fmha_runner;

/* NULL when the runner cannot be allocated. Shape errors surface at the first call. */
FMHA_API fmha_runner* fmha_runner_create(int32_t num_q_heads, int32_t num_kv_heads, int32_t head_dim,
                                         int32_t batch_size, int32_t seq_len_q, int32_t kv_cache_capacity);
FMHA_API void fmha_runner_destroy(fmha_runner* runner);

/* Split-KV in the paged modes (fmha::FmhaRunner::setSplitKv): 0 lets the runner choose (the
 * default), 1 never splits, 2..64 forces that many parts. */
FMHA_API bool fmha_runner_set_split_kv(fmha_runner* runner, int32_t parts);
/* Device memory the runner holds for split-KV partial results (allocated by the paged modes'
 * preflight, or by a run outside stream capture). */
FMHA_API size_t fmha_runner_workspace_bytes(const fmha_runner* runner);

/* The library's version, MAJOR * 10000 + MINOR * 100 + PATCH (FMHA_VERSION_NUMBER of the
 * headers it was built with). */
FMHA_API int32_t fmha_version(void);

/* The reason of this thread's last failure; never NULL, "" when the last call succeeded. */
FMHA_API const char* fmha_last_error(void);

FMHA_API bool fmha_run_llm(fmha_runner* runner, const void* q, const void* kv, void* o, const int32_t* cu_kv_seq_lens,
                           void* stream, float attention_scale, int32_t sliding_window_size, bool fp8_input,
                           float q_scale, float k_scale, float v_scale, float skip_softmax_scale_factor);

FMHA_API bool fmha_run_paged(fmha_runner* runner, const void* q, const void* paged_kv_pool,
                             const int32_t* kv_cache_page_list, void* o, const int32_t* cu_kv_seq_lens,
                             int32_t num_pages, int32_t max_pages_per_seq, int32_t tokens_per_page,
                             int32_t kv_data_type, void* stream, float attention_scale, int32_t sliding_window_size,
                             bool fp8_input, float q_scale, float k_scale, float v_scale, bool is_causal,
                             float skip_softmax_scale_factor, const int32_t* bidirectional_block_begin,
                             const int32_t* bidirectional_block_end);

FMHA_API bool fmha_run_paged_ragged(fmha_runner* runner, const void* q, const void* paged_kv_pool,
                                    const int32_t* kv_cache_page_list, void* o, const int32_t* cu_q_seq_lens,
                                    const int32_t* cu_kv_seq_lens, int32_t total_q_seq_len, int32_t max_q_seq_len,
                                    int32_t num_flat_pages, int32_t max_pages_per_seq, int32_t tokens_per_page,
                                    void* stream, float attention_scale, int32_t sliding_window_size,
                                    int32_t input_data_type, float q_scale, float k_scale, float v_scale);

FMHA_API bool fmha_run_vit(fmha_runner* runner, const void* q, const void* k, const void* v, void* o,
                           const int32_t* cu_seq_lens, int32_t total_seq_len, int32_t max_seq_len, int32_t batch_size,
                           void* stream, float attention_scale, bool fp8_input, float q_scale, float k_scale,
                           float v_scale);

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

/* ---- Every option through one struct per mode (BF16, LSE, bidirectional blocks, any page
 * size), mirroring the C++ *Args structs. struct_size comes first: set it to sizeof(the
 * struct) as your header declares it, or call fmha_*_args_init, which sets it and the
 * defaults. A struct from an older header (smaller, at least the first version's size) reads
 * its missing fields as their defaults; one from a newer header is accepted when the fields
 * this library does not know are zero. input_data_type takes the int32 of fmha::DataType
 * (1 FP16, 6 FP8 E4M3, 7 BF16); output is FP16 for FP16/FP8 input, BF16 for BF16, and BF16
 * for FP8 input where bf16_output is non-zero (0.4; a 0.3 struct, which ends at lse, reads
 * it as 0). lse, where not NULL, receives the float32 log-sum-exp ([B, Hq, S_q], or [Hq,
 * total] packed). */

typedef struct fmha_llm_args {
    size_t struct_size;
    const void* q;
    const void* kv;
    void* o;
    const int32_t* cu_kv_seq_lens;
    void* stream;
    float attention_scale;
    int32_t sliding_window_size; /* INT32_MAX: none */
    int32_t input_data_type;
    float q_scale, k_scale, v_scale;
    float skip_softmax_scale_factor;
    float* lse;
    int32_t bf16_output; /* FP8 input: O in BF16 instead of FP16 */
} fmha_llm_args;

typedef struct fmha_paged_args {
    size_t struct_size;
    const void* q;
    const void* paged_kv_pool;
    const int32_t* kv_cache_page_list;
    void* o;
    const int32_t* cu_kv_seq_lens;
    int32_t num_pages;
    int32_t max_pages_per_seq;
    int32_t tokens_per_page; /* a power of two in [16, 256] */
    void* stream;
    float attention_scale;
    int32_t sliding_window_size;
    int32_t input_data_type;
    float q_scale, k_scale, v_scale;
    bool is_causal;
    float skip_softmax_scale_factor;
    const int32_t* bidirectional_block_begin; /* [B, S_q], both or neither */
    const int32_t* bidirectional_block_end;
    float* lse;
    int32_t bf16_output;
} fmha_paged_args;

typedef struct fmha_paged_ragged_args {
    size_t struct_size;
    const void* q;
    const void* paged_kv_pool;
    const int32_t* kv_cache_page_list;
    void* o;
    const int32_t* cu_q_seq_lens;
    const int32_t* cu_kv_seq_lens;
    int32_t total_q_seq_len;
    int32_t max_q_seq_len;
    int32_t num_flat_pages;
    int32_t max_pages_per_seq;
    int32_t tokens_per_page;
    void* stream;
    float attention_scale;
    int32_t sliding_window_size;
    int32_t input_data_type;
    float q_scale, k_scale, v_scale;
    float* lse;
    int32_t bf16_output;
} fmha_paged_ragged_args;

typedef struct fmha_vit_args {
    size_t struct_size;
    const void* q;
    const void* k;
    const void* v;
    void* o;
    const int32_t* cu_seq_lens;
    int32_t total_seq_len;
    int32_t max_seq_len;
    int32_t batch_size;
    void* stream;
    float attention_scale;
    int32_t input_data_type;
    float q_scale, k_scale, v_scale;
    float* lse;
    int32_t bf16_output;
} fmha_vit_args;

/* Zero pointers, FP16, no window, scales 1, causal: the defaults of the C++ structs. */
FMHA_API void fmha_llm_args_init(fmha_llm_args* args);
FMHA_API void fmha_paged_args_init(fmha_paged_args* args);
FMHA_API void fmha_paged_ragged_args_init(fmha_paged_ragged_args* args);
FMHA_API void fmha_vit_args_init(fmha_vit_args* args);

FMHA_API bool fmha_run_llm_args(fmha_runner* runner, const fmha_llm_args* args);
FMHA_API bool fmha_run_paged_args(fmha_runner* runner, const fmha_paged_args* args);
FMHA_API bool fmha_run_paged_ragged_args(fmha_runner* runner, const fmha_paged_ragged_args* args);
FMHA_API bool fmha_run_vit_args(fmha_runner* runner, const fmha_vit_args* args);

/* The variant the matching run would select (pointers are not read; use_bidirectional as
 * the bidirectional pointers of the run will be). */
FMHA_API bool fmha_preflight_llm_args(fmha_runner* runner, const fmha_llm_args* args);
FMHA_API bool fmha_preflight_paged_args(fmha_runner* runner, const fmha_paged_args* args, bool use_bidirectional);
FMHA_API bool fmha_preflight_paged_ragged_args(fmha_runner* runner, const fmha_paged_ragged_args* args);
FMHA_API bool fmha_preflight_vit_args(fmha_runner* runner, const fmha_vit_args* args);

#ifdef __cplusplus
}
#endif

#endif /* FMHA_FMHA_C_H */
