// The C API's argument structs filled from the C++ ones (every option has a field): the
// defaults of fmha_*_args_init are the C++ structs' (c_api.cpp), and the harness and the
// validation tests send C++ problems through the C API with them.
#pragma once

#include "fmha/fmha.h"
#include "fmha/fmha_c.h"

namespace fmha::detail {

inline fmha_llm_args toC(fmha::LlmArgs const& a) {
    fmha_llm_args c{};
    c.struct_size = sizeof(c);
    c.q = a.q, c.kv = a.kv, c.o = a.o, c.cu_kv_seq_lens = a.cuKVSeqLens, c.stream = a.stream;
    c.attention_scale = a.attentionScale, c.sliding_window_size = a.slidingWindowSize;
    c.input_data_type = static_cast<int32_t>(a.inputType), c.q_scale = a.qScale, c.k_scale = a.kScale;
    c.v_scale = a.vScale, c.skip_softmax_scale_factor = a.skipSoftmaxScaleFactor, c.lse = a.lse;
    c.bf16_output = a.bf16Output;
    return c;
}
inline fmha_paged_args toC(fmha::PagedArgs const& a) {
    fmha_paged_args c{};
    c.struct_size = sizeof(c);
    c.q = a.q, c.paged_kv_pool = a.pool, c.kv_cache_page_list = a.pageList, c.o = a.o, c.cu_kv_seq_lens = a.cuKVSeqLens;
    c.num_pages = a.numPages, c.max_pages_per_seq = a.maxPagesPerSeq, c.tokens_per_page = a.tokensPerPage;
    c.stream = a.stream, c.attention_scale = a.attentionScale, c.sliding_window_size = a.slidingWindowSize;
    c.input_data_type = static_cast<int32_t>(a.inputType), c.q_scale = a.qScale, c.k_scale = a.kScale;
    c.v_scale = a.vScale, c.is_causal = a.isCausal, c.skip_softmax_scale_factor = a.skipSoftmaxScaleFactor;
    c.bidirectional_block_begin = a.bidirectionalBlockBegin, c.bidirectional_block_end = a.bidirectionalBlockEnd;
    c.lse = a.lse, c.bf16_output = a.bf16Output;
    return c;
}
inline fmha_paged_ragged_args toC(fmha::PagedRaggedArgs const& a) {
    fmha_paged_ragged_args c{};
    c.struct_size = sizeof(c);
    c.q = a.q, c.paged_kv_pool = a.pool, c.kv_cache_page_list = a.pageList, c.o = a.o, c.cu_q_seq_lens = a.cuQSeqLens;
    c.cu_kv_seq_lens = a.cuKVSeqLens, c.total_q_seq_len = a.totalQSeqLen, c.max_q_seq_len = a.maxQSeqLen;
    c.num_flat_pages = a.numFlatPages, c.max_pages_per_seq = a.maxPagesPerSeq, c.tokens_per_page = a.tokensPerPage;
    c.stream = a.stream, c.attention_scale = a.attentionScale, c.sliding_window_size = a.slidingWindowSize;
    c.input_data_type = static_cast<int32_t>(a.inputType), c.q_scale = a.qScale, c.k_scale = a.kScale;
    c.v_scale = a.vScale, c.lse = a.lse, c.bf16_output = a.bf16Output;
    return c;
}
inline fmha_vit_args toC(fmha::VitArgs const& a) {
    fmha_vit_args c{};
    c.struct_size = sizeof(c);
    c.q = a.q, c.k = a.k, c.v = a.v, c.o = a.o, c.cu_seq_lens = a.cuSeqLens, c.total_seq_len = a.totalSeqLen;
    c.max_seq_len = a.maxSeqLen, c.batch_size = a.batchSize, c.stream = a.stream, c.attention_scale = a.attentionScale;
    c.input_data_type = static_cast<int32_t>(a.inputType), c.q_scale = a.qScale, c.k_scale = a.kScale;
    c.v_scale = a.vScale, c.lse = a.lse, c.bf16_output = a.bf16Output;
    return c;
}

}  // namespace fmha::detail
