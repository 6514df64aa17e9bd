// Global -> shared tile loads shared by both kernel families: cp.async (zero-filling) for
// 16-bit input, dequantising register loads for FP8. The shared-memory layout (padded rows,
// 128-byte swizzle) is the caller's: dst(row, chunk) gives the address of 8 elements.
#pragma once

#include <cstdint>

#include <cute/arch/copy_sm80.hpp>

#include "kernels/common/elem.cuh"

namespace fmha {

// Loads rows [0, kRows) x chunks [0, kChunks) of 8 elements. rowPtr(r) gives the row's
// first byte or null (zeros); chunk c reads global chunk chunk0 + c and is zero past
// validChunks. fallback is any valid global address, handed to zero-filling cp.async so
// that no wild address is ever formed. tid < kNThreads. kUnroll: all batches unrolled
// (branch-free where rowPtr is), for loads on a consumer's critical path; otherwise one
// batch at a time, for register-starved producer warps.
template <class Elem, int kRows, int kChunks, int kNThreads, bool kUnroll = false, class RowPtr, class Dst>
__device__ inline void loadTile(RowPtr const& rowPtr, Dst const& dst, int chunk0, int validChunks,
                                void const* fallback, int tid) {
    constexpr int kTotal = kRows * kChunks;
    constexpr int kPerThread = (kTotal + kNThreads - 1) / kNThreads;
    // Batches: the row addresses of a batch (page-table reads for paged KV) are all in flight
    // before the first copy depends on one. Rolled, FP8 loads (through registers) go one at a
    // time.
    constexpr int kBatch = kUnroll ? (kPerThread < 4 ? kPerThread : 4) : (ElemTraits<Elem>::kBytes == 2 ? 4 : 1);
    // One batch: element idx(k) of the tile for k < kBatch, where in(k).
    auto batch = [&](auto const& idx, auto const& in) {
        char const* row[kBatch];
#pragma unroll
        for (int k = 0; k < kBatch; ++k) row[k] = in(k) ? rowPtr(static_cast<int>(idx(k) / kChunks)) : nullptr;
#pragma unroll
        for (int k = 0; k < kBatch; ++k) {
            if (!in(k)) break;
            int const r = static_cast<int>(idx(k) / kChunks), c = static_cast<int>(idx(k) % kChunks);
            int const gc = chunk0 + c;
            bool const valid = row[k] != nullptr && gc < validChunks;
            void* d = dst(r, c);
            if constexpr (ElemTraits<Elem>::kBytes == 2) {
                auto const* src = reinterpret_cast<cute::uint128_t const*>(valid ? row[k] + gc * 16 : fallback);
                cute::SM80_CP_ASYNC_CACHEGLOBAL_ZFILL<cute::uint128_t>::copy(
                    *src, *reinterpret_cast<cute::uint128_t*>(d), valid);
            } else {
                uint4 out = make_uint4(0, 0, 0, 0);
                if (valid) {
                    uint2 const raw = *reinterpret_cast<uint2 const*>(row[k] + gc * 8);
                    uint32_t const words[2] = {raw.x, raw.y};
                    uint32_t* o = &out.x;
#pragma unroll
                    for (int w = 0; w < 2; ++w) {
                        __half2_raw lo = __nv_cvt_fp8x2_to_halfraw2(
                            static_cast<__nv_fp8x2_storage_t>(words[w] & 0xFFFFu), __NV_E4M3);
                        __half2_raw hi = __nv_cvt_fp8x2_to_halfraw2(
                            static_cast<__nv_fp8x2_storage_t>(words[w] >> 16), __NV_E4M3);
                        o[2 * w] = static_cast<uint32_t>(lo.x) | (static_cast<uint32_t>(lo.y) << 16);
                        o[2 * w + 1] = static_cast<uint32_t>(hi.x) | (static_cast<uint32_t>(hi.y) << 16);
                    }
                }
                *reinterpret_cast<uint4*>(d) = out;
            }
        }
    };
    if constexpr (kUnroll) {
        // Lets the compiler see each copy's row as tid's first row plus a constant, so that
        // row-dependent choices (the run of a paged tile) resolve at compile time.
        __builtin_assume(tid >= 0 && tid < kNThreads);
        auto const t = static_cast<unsigned>(tid);  // unsigned: the divisions by kChunks stay shifts
#pragma unroll
        for (int base = 0; base < kPerThread; base += kBatch)
            batch([&](int k) { return t + (base + k) * kNThreads; },
                  [&](int k) {
                      return base + k < kPerThread && (kTotal % kNThreads == 0 || t + (base + k) * kNThreads < kTotal);
                  });
    } else {
#pragma unroll 1
        for (int base = tid; base < kTotal; base += kBatch * kNThreads)
            batch([&](int k) { return base + k * kNThreads; }, [&](int k) { return base + k * kNThreads < kTotal; });
    }
}

// loadTile() for rows that are 8-byte aligned only (FP8 rows of 72 bytes: no 16-byte
// chunks): 8-byte zero-filling cp.async pieces, global piece q of row r at shared piece
// q + shift, piece s at dst(r, s / 2) + 8 (s % 2). Every shared piece of the row is written:
// those outside [shift, shift + validPieces) and the rows with a null rowPtr as zeros. Thread
// tid keeps shared piece tid % (2 kChunks) and steps down the rows, its row addresses four at
// a time in flight before their copies (page-table reads). tid < kNThreads.
template <int kRows, int kChunks, int kNThreads, class RowPtr, class Dst>
__device__ inline void loadTile8(RowPtr const& rowPtr, Dst const& dst, int validPieces, int shift,
                                 void const* fallback, int tid) {
    constexpr int kPieces = 2 * kChunks, kRowStep = kNThreads / kPieces, kPerThread = kRows / kRowStep;
    static_assert(kNThreads % kPieces == 0 && kRows % kRowStep == 0, "whole rows per pass");
    constexpr int kBatch = kPerThread < 4 ? kPerThread : 4;
    static_assert(kPerThread % kBatch == 0, "whole batches");
    int const sp = tid % kPieces, q = sp - shift, r0 = tid / kPieces;
    bool const inRow = q >= 0 && q < validPieces;
#pragma unroll 1
    for (int base = 0; base < kPerThread; base += kBatch) {
        char const* row[kBatch];
#pragma unroll
        for (int k = 0; k < kBatch; ++k) row[k] = inRow ? rowPtr(r0 + (base + k) * kRowStep) : nullptr;
#pragma unroll
        for (int k = 0; k < kBatch; ++k) {
            int const r = r0 + (base + k) * kRowStep;
            bool const valid = row[k] != nullptr;
            auto const* src = reinterpret_cast<uint64_t const*>(valid ? row[k] + q * 8 : fallback);
            auto* d = reinterpret_cast<uint64_t*>(reinterpret_cast<char*>(dst(r, sp / 2)) + (sp % 2) * 8);
            cute::SM80_CP_ASYNC_CACHEALWAYS_ZFILL<uint64_t>::copy(*src, *d, valid);
        }
    }
}

// A tile of 16-bit elements in kRuns runs of kRows / kRuns rows each: run q's row i at
// baseOf(q) + i * stride (a null base reads as zeros); tile rows [rows, kRows) read as zeros.
// Each run is copied by its own kNThreads / kRuns threads, so that a thread forms one run
// address (with kRuns = the CTA's warps, a warp-uniform one); a thread keeps one 16-byte
// column and steps down its rows, one 64-bit add a copy (loadTile's per-copy row address
// costs ~17 instructions a copy at D=128).
template <class Elem, int kRows, int kRuns, int kChunks, int kNThreads, class BaseOf, class Dst>
__device__ inline void loadRuns(BaseOf const& baseOf, int64_t stride, int rows, Dst const& dst, int chunk0,
                                int validChunks, void const* fallback, int tid) {
    static_assert(ElemTraits<Elem>::kBytes == 2, "16-bit elements");
    constexpr int kLanes = kChunks <= 1 ? 1 : 1 << (32 - __builtin_clz(kChunks - 1));
    constexpr int kRunThreads = kNThreads / kRuns;
    static_assert(kNThreads % kRuns == 0 && kRunThreads % kLanes == 0, "whole rows per pass of a run");
    constexpr int kStep = kRunThreads / kLanes;  // rows per pass
    constexpr int kRunRows = kRows / kRuns;
    static_assert(kRunRows % kStep == 0, "whole passes per run");
    __builtin_assume(tid >= 0 && tid < kNThreads);
    int const q = tid / kRunThreads, c = tid % kLanes;
    int const r0 = q * kRunRows + (tid % kRunThreads) / kLanes;  // the thread's first tile row
    if (kChunks != kLanes && c >= kChunks) return;
    int const gc = chunk0 + c;
    char const* const base = baseOf(q);
    bool const ok = base != nullptr && gc < validChunks;
    // Zero-filling copies read nothing; they are handed a valid address all the same.
    char const* src = ok ? base + (r0 - q * kRunRows) * stride + gc * 16 : static_cast<char const*>(fallback);
    if (rows >= kRows) {  // every row valid: all tiles but the one holding Lk's end
        int64_t const step = ok ? kStep * stride : 0;
#pragma unroll
        for (int i = 0; i < kRunRows / kStep; ++i) {
            cute::SM80_CP_ASYNC_CACHEGLOBAL_ZFILL<cute::uint128_t>::copy(
                *reinterpret_cast<cute::uint128_t const*>(src),
                *reinterpret_cast<cute::uint128_t*>(dst(r0 + i * kStep, c)), ok);
            src += step;
        }
    } else {
#pragma unroll
        for (int i = 0; i < kRunRows / kStep; ++i) {
            bool const valid = ok && r0 + i * kStep < rows;
            cute::SM80_CP_ASYNC_CACHEGLOBAL_ZFILL<cute::uint128_t>::copy(
                *reinterpret_cast<cute::uint128_t const*>(valid ? src : static_cast<char const*>(fallback)),
                *reinterpret_cast<cute::uint128_t*>(dst(r0 + i * kStep, c)), valid);
            if (valid) src += kStep * stride;
        }
    }
}

// loadTile() for a tile whose rows are one run: row r at base + r * stride; rows [rows,
// kRows) and a null base read as zeros. 16-bit elements go through loadRuns() (one run),
// FP8 through loadTile().
template <class Elem, int kRows, int kChunks, int kNThreads, class Dst>
__device__ inline void loadRun(char const* base, int64_t stride, int rows, Dst const& dst, int chunk0,
                               int validChunks, void const* fallback, int tid) {
    if constexpr (ElemTraits<Elem>::kBytes != 2) {
        loadTile<Elem, kRows, kChunks, kNThreads, true>(
            [=](int r) -> char const* { return r < rows && base != nullptr ? base + r * stride : nullptr; }, dst,
            chunk0, validChunks, fallback, tid);
    } else {
        loadRuns<Elem, kRows, 1, kChunks, kNThreads>([base](int) { return base; }, stride, rows, dst, chunk0,
                                                     validChunks, fallback, tid);
    }
}

}  // namespace fmha
