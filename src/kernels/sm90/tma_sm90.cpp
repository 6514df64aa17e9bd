// Host side of the Hopper family's TMA descriptors (cuTensorMapEncodeTiled through the
// runtime's driver entry point, so that nothing links against libcuda).
#include "kernels/sm90/tma_sm90.h"

#include <climits>
#include <cstdlib>
#include <cstring>

#include <cuda_runtime_api.h>

#include "heuristics.h"

namespace fmha::sm90 {
namespace {

using EncodeFn = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, cuuint64_t const*,
                              cuuint64_t const*, cuuint32_t const*, cuuint32_t const*, CUtensorMapInterleave,
                              CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

EncodeFn encoder() {
    static EncodeFn const fn = [] {
        void* f = nullptr;
        cudaDriverEntryPointQueryResult q{};
        if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault, &q) !=
                cudaSuccess ||
            q != cudaDriverEntryPointSuccess)
            return static_cast<EncodeFn>(nullptr);
        return reinterpret_cast<EncodeFn>(f);
    }();
    return fn;
}

// The TMA cache hint of a K/V priority.
uint64_t cacheHint(detail::KvCachePriority priority) {
    switch (priority) {
        case detail::KvCachePriority::kFirst: return kCacheHintEvictFirst;
        case detail::KvCachePriority::kNormal: return kCacheHintEvictNormal;
        default: return kCacheHintEvictLast;
    }
}

// One tensor of 16-bit (elemBytes 2) or 8-bit elements of rank dims, boxes swizzled by
// swizzleBytes (128 or 64: box[0] * elemBytes). strides: bytes, dims 1.. (dim 0 is contiguous).
template <int kRank>
bool encode(CUtensorMap* map, void const* base, cuuint64_t const (&dims)[kRank],
            cuuint64_t const (&strides)[kRank - 1], cuuint32_t const (&box)[kRank], int elemBytes, int swizzleBytes) {
    EncodeFn const fn = encoder();
    if (fn == nullptr || base == nullptr) return false;
    for (int i = 0; i < kRank; ++i)
        if (dims[i] == 0 || dims[i] > (cuuint64_t{1} << 32)) return false;
    for (int i = 0; i < kRank - 1; ++i)
        if (strides[i] % 16 != 0 || strides[i] >= (cuuint64_t{1} << 40)) return false;
    cuuint32_t elementStrides[kRank];
    for (int i = 0; i < kRank; ++i) elementStrides[i] = 1;
    return fn(map, elemBytes == 1 ? CU_TENSOR_MAP_DATA_TYPE_UINT8 : CU_TENSOR_MAP_DATA_TYPE_UINT16, kRank,
              const_cast<void*>(base), dims, strides, box,
              elementStrides, CU_TENSOR_MAP_INTERLEAVE_NONE,
              swizzleBytes == 64 ? CU_TENSOR_MAP_SWIZZLE_64B : CU_TENSOR_MAP_SWIZZLE_128B,
              CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

// Whether the environment sets name to value (the measurement knobs below, read once each).
bool envIs(char const* name, char const* value) {
    char const* env = std::getenv(name);
    return env != nullptr && std::strcmp(env, value) == 0;
}

// FMHA_PAGED_GATHER=cp-async: paged K/V tiles through the producer's cp.async gathers instead
// of one TMA box a page.
bool pagedGathersForced() {
    static bool const forced = envIs("FMHA_PAGED_GATHER", "cp-async");
    return forced;
}

// FMHA_OUTPUT_STORE=copies: the persistent kernels store O by the warps' copies instead of TMA
// stores.
bool outputCopiesForced() {
    static bool const forced = envIs("FMHA_OUTPUT_STORE", "copies");
    return forced;
}

}  // namespace

void makeTmaDescs(FmhaParams const& p, int blockM, int blockN, int swizzleBytes, TmaDescs* d, bool withO) {
    d->kvHint = cacheHint(detail::kvCachePriority(p, blockM));
    d->qOk = 0;
    d->kvOk = 0;
    d->kvRows = 0;
    d->oOk = 0;
    int const elemBytes = p.element == ElementKind::kFp8 ? 1 : 2;
    cuuint64_t const e = static_cast<cuuint64_t>(elemBytes), D = static_cast<cuuint64_t>(p.headDim);
    cuuint32_t const boxCols = static_cast<cuuint32_t>(swizzleBytes / elemBytes);  // one swizzle row
    // FP8 rows of D bytes that are no whole number of 16-byte units (D=72): no descriptor takes
    // a head stride of D bytes, but a token's KV heads side by side make one row that may.
    bool const rowView = elemBytes == 1 && p.headDim % 16 != 0 && swizzleBytes == 128;
    // Row coordinates are int32 in the kernel.
    int64_t const qRows = p.cuQ != nullptr ? p.totalQ : static_cast<int64_t>(p.batch) * p.seqLenQ;
    if (qRows > 0 && qRows <= INT32_MAX) {
        cuuint64_t const dims[3] = {D, static_cast<cuuint64_t>(p.numQHeads), static_cast<cuuint64_t>(qRows)};
        cuuint64_t const strides[2] = {D * e, static_cast<cuuint64_t>(p.numQHeads) * D * e};
        // Packed GQA: a box of 2^packLog2 heads x blockM / 2^packLog2 rows lands in shared
        // memory head-minor, the tile's row order.
        cuuint32_t const box[3] = {boxCols, 1u << p.packLog2, static_cast<cuuint32_t>(blockM >> p.packLog2)};
        d->qOk = encode<3>(&d->q, p.q, dims, strides, box, elemBytes, swizzleBytes);
        if (withO && !outputCopiesForced()) {  // 16-bit output rows in the same layout
            cuuint64_t const oStrides[2] = {D * 2, static_cast<cuuint64_t>(p.numQHeads) * D * 2};
            cuuint32_t const heads = 1u << (p.packLog2 < 4 ? p.packLog2 : 4);
            cuuint32_t const oBox[3] = {64, heads, 16 / heads};
            d->oOk = encode<3>(&d->o, p.o, dims, oStrides, oBox, 2, 128);
        }
    }
    if (p.kvAddressing == KvAddressing::kPaged) {
        int64_t const tokens = static_cast<int64_t>(p.numPages) << p.pageSizeLog2;
        int const boxMax = blockN & -blockN;  // a power of two dividing the tile (kBoxRowsMax)
        int const boxRows = (1 << p.pageSizeLog2) < boxMax ? (1 << p.pageSizeLog2) : boxMax;
        if (tokens > 0 && tokens <= INT32_MAX && !pagedGathersForced()) {
            cuuint64_t const dims[3] = {D, static_cast<cuuint64_t>(p.numKVHeads), static_cast<cuuint64_t>(tokens)};
            cuuint64_t const strides[2] = {D * e, static_cast<cuuint64_t>(p.numKVHeads) * D * e};
            cuuint32_t const box[3] = {boxCols, 1, static_cast<cuuint32_t>(boxRows)};
            d->kvOk = encode<3>(&d->k, p.k, dims, strides, box, elemBytes, swizzleBytes);
            if (!d->kvOk && rowView) {  // a token's KV heads as one row
                cuuint64_t const rowDims[2] = {static_cast<cuuint64_t>(p.numKVHeads) * D, static_cast<cuuint64_t>(tokens)};
                cuuint32_t const rowBox[2] = {boxCols, static_cast<cuuint32_t>(boxRows)};
                d->kvOk = d->kvRows = encode<2>(&d->k, p.k, rowDims, {strides[1]}, rowBox, elemBytes, swizzleBytes);
            }
        }
    } else if (p.maxKvLen > 0) {
        // Packed rows (cuKV offsets) have one batch; its stride is never used.
        cuuint64_t const batches = p.kvRowsFromCu ? 1 : static_cast<cuuint64_t>(p.batch);
        cuuint64_t const batchStride = p.kvRowsFromCu ? 16 : static_cast<cuuint64_t>(p.kvBatchStride) * e;
        cuuint64_t const dims[4] = {D, static_cast<cuuint64_t>(p.maxKvLen), static_cast<cuuint64_t>(p.numKVHeads),
                                    batches};
        cuuint64_t const strides[3] = {static_cast<cuuint64_t>(p.kvRowStride) * e,
                                       static_cast<cuuint64_t>(p.kvHeadStride) * e, batchStride};
        cuuint32_t const box[4] = {boxCols, static_cast<cuuint32_t>(blockN), 1, 1};
        d->kvOk = encode<4>(&d->k, p.k, dims, strides, box, elemBytes, swizzleBytes) &&
                  encode<4>(&d->v, p.v, dims, strides, box, elemBytes, swizzleBytes);
        if (!d->kvOk && rowView && p.kvHeadStride == p.headDim) {  // a token's KV heads side by side: one row
            cuuint64_t const rowDims[3] = {static_cast<cuuint64_t>(p.numKVHeads) * D,
                                           static_cast<cuuint64_t>(p.maxKvLen), batches};
            cuuint64_t const rowStrides[2] = {strides[0], batchStride};
            cuuint32_t const rowBox[3] = {boxCols, static_cast<cuuint32_t>(blockN), 1};
            d->kvOk = d->kvRows = encode<3>(&d->k, p.k, rowDims, rowStrides, rowBox, elemBytes, swizzleBytes) &&
                                  encode<3>(&d->v, p.v, rowDims, rowStrides, rowBox, elemBytes, swizzleBytes);
        }
    }
}

}  // namespace fmha::sm90
