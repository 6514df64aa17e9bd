// Where KV row j of one sequence and KV head lives in device memory: batch/row strided
// (contiguous cache, packed varlen) or through the page table (NHD pool). Returns null for
// a page id outside the pool: such rows are read as zeros, never dereferenced.
#pragma once

#include <cstdint>

#include "kernels/common/seqlen.cuh"
#include "params.h"

namespace fmha {

template <KvAddressing kKv, int kElemBytes>
struct KvAddress;

template <int kElemBytes>
struct KvAddress<KvAddressing::kStrided, kElemBytes> {
    char const* kBase;
    char const* vBase;
    int64_t rowStrideBytes;

    __device__ KvAddress(FmhaParams const& p, SeqInfo const& s, int32_t b, int32_t hkv) {
        int64_t const off = (static_cast<int64_t>(b) * p.kvBatchStride + s.kvBegin * p.kvRowStride +
                             static_cast<int64_t>(hkv) * p.kvHeadStride) * kElemBytes;
        kBase = static_cast<char const*>(p.k) + off;
        vBase = static_cast<char const*>(p.v) + off;
        rowStrideBytes = p.kvRowStride * kElemBytes;
    }
    __device__ char const* row(bool isV, int32_t j) const { return (isV ? vBase : kBase) + j * rowStrideBytes; }

    // A run of rows from j0 is row(j0) + i * runStride(); every run is one here.
    __device__ static constexpr bool runCovers(int32_t) { return true; }
    __device__ int64_t runStride() const { return rowStrideBytes; }
};

template <int kElemBytes>
struct KvAddress<KvAddressing::kPaged, kElemBytes> {
    // Kept small: this state stays live across the whole mainloop.
    char const* base;       // pool + this KV head's offset
    int32_t const* pages;   // K page ids; V page ids follow after maxPages
    int32_t maxPages;
    int32_t tokenBytes;     // numKVHeads * headDim * element size (validated to fit)
    int32_t pageLog2;
    int32_t numPages;

    __device__ KvAddress(FmhaParams const& p, SeqInfo const&, int32_t b, int32_t hkv) {
        base = static_cast<char const*>(p.k) + static_cast<int64_t>(hkv) * p.headDim * kElemBytes;
        pages = p.pageTable + static_cast<int64_t>(b) * 2 * p.maxPagesPerSeq;
        maxPages = p.maxPagesPerSeq;
        tokenBytes = p.numKVHeads * p.headDim * kElemBytes;
        pageLog2 = p.pageSizeLog2;
        numPages = p.numPages;
    }
    __device__ char const* row(bool isV, int32_t j) const { return pageRow(pages[pageSlot(isV, j)], j); }
    // The page-table entry of key j, and key j's row given that entry (read ahead of time).
    __device__ int32_t pageSlot(bool isV, int32_t j) const { return (isV ? maxPages : 0) + (j >> pageLog2); }
    __device__ char const* pageRow(int32_t page, int32_t j) const {
        if (page < 0 || page >= numPages) return nullptr;
        int64_t const token = (static_cast<int64_t>(page) << pageLog2) + (j & ((1 << pageLog2) - 1));
        return base + token * tokenBytes;
    }

    // Rows j0 .. j0 + rows - 1 (j0 a multiple of rows, rows a power of two) lie in one page
    // when the page holds at least `rows` tokens: row(j0) + i * runStride(), one page-table
    // read for the run instead of one a row.
    __device__ bool runCovers(int32_t rows) const { return (1 << pageLog2) >= rows; }
    __device__ int64_t runStride() const { return tokenBytes; }
};

}  // namespace fmha
