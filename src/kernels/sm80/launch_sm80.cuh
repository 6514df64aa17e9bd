// Definitions behind launch_sm80.h: grid shape, shared memory and the launch itself.
#pragma once

#include <climits>
#include <cstdint>

#include "kernels/sm80/fwd_kernel_sm80.cuh"
#include "kernels/sm80/launch_sm80.h"

namespace fmha::sm80 {

// The walking kernel exists for D=128 over contiguous KV. Causal prefill of short sequences
// makes short CTAs of uneven length (query tile i of M sees i + 1 of the M tiles' keys); up to
// 512 queries the CTAs walk sections of about 16 MiB of K/V, each section's top query tiles
// first. On the H200, causal, 16 heads: +5% at D=128 S=512 (B=32), -1% to -2% at S=1024 (B=8)
// and no change at S=2048 (B=8); at D=64 S=512 the same walk lost 5%.
template <int kHeadDim, KvAddressing kKv, bool kCompact>
constexpr bool kHasWalk = kHeadDim == 128 && kKv == KvAddressing::kStrided && !kCompact;

// Units a section: 16 MiB over one unit's K/V at maxKvLen keys (the cache capacity in LLM
// mode, so a cache larger than its sequences makes sections smaller, never wrong).
inline int32_t walkUnits(FmhaParams const& p) {
    if (!p.causal || p.window != INT32_MAX || p.maxSeqLenQ > 512) return 1;
    int64_t const elemBytes = p.element == ElementKind::kFp8 ? 1 : 2;
    int64_t const unitBytes = 2 * elemBytes * p.headDim * (p.maxKvLen > 0 ? p.maxKvLen : 1);
    int64_t const units = (int64_t{16} << 20) / unitBytes;
    return static_cast<int32_t>(units < 1 ? 1 : units > INT32_MAX ? INT32_MAX : units);
}

template <ElementKind kElem, int kHeadDim, KvAddressing kKv, bool kCompact>
cudaError_t KernelSm80<kElem, kHeadDim, kKv, kCompact>::launch(FmhaParams const& p, cudaStream_t stream) {
    using Tile = TileSm80<kHeadDim, kCompact>;
    dim3 const grid((p.maxSeqLenQ + Tile::kBlockM - 1) / Tile::kBlockM, p.numQHeads, p.batch * Tile::kVSplits);
    // cudaLaunchKernel returns this launch's error alone (the <<<>>> form needs a
    // cudaGetLastError, which would also take, and blame us for, an earlier pending error).
    auto go = [&](void const* kernel, FmhaParams const& params) {
        void* args[] = {const_cast<FmhaParams*>(&params)};
        return cudaLaunchKernel(kernel, grid, dim3(Tile::kNThreads), args, Tile::kSmemBytes, stream);
    };
    if constexpr (kHasWalk<kHeadDim, kKv, kCompact>) {
        int32_t const units = walkUnits(p);
        if (units > 1) {
            FmhaParams walked = p;
            walked.walkUnits = units;
            return go(reinterpret_cast<void const*>(&fwdKernelSm80<kElem, kHeadDim, kKv, true, kCompact>), walked);
        }
    }
    return go(reinterpret_cast<void const*>(&fwdKernelSm80<kElem, kHeadDim, kKv, false, kCompact>), p);
}

template <ElementKind kElem, int kHeadDim, KvAddressing kKv, bool kCompact>
cudaError_t KernelSm80<kElem, kHeadDim, kKv, kCompact>::prepare() {
    int const bytes = TileSm80<kHeadDim, kCompact>::kSmemBytes;
    if constexpr (kHasWalk<kHeadDim, kKv, kCompact>) {
        cudaError_t const e = cudaFuncSetAttribute(fwdKernelSm80<kElem, kHeadDim, kKv, true, kCompact>,
                                                   cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
        if (e != cudaSuccess) return e;
    }
    return cudaFuncSetAttribute(fwdKernelSm80<kElem, kHeadDim, kKv, false, kCompact>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                bytes);
}

template <ElementKind kElem, int kHeadDim, KvAddressing kKv, bool kCompact>
cudaError_t KernelSm80<kElem, kHeadDim, kKv, kCompact>::probe() {
    cudaFuncAttributes attr;
    return cudaFuncGetAttributes(&attr, fwdKernelSm80<kElem, kHeadDim, kKv, false, kCompact>);
}

template <ElementKind kElem, int kHeadDim, KvAddressing kKv, bool kCompact>
int KernelSm80<kElem, kHeadDim, kKv, kCompact>::smemBytes() {
    return TileSm80<kHeadDim, kCompact>::kSmemBytes;
}

template <ElementKind kElem, int kHeadDim, KvAddressing kKv, bool kCompact>
int KernelSm80<kElem, kHeadDim, kKv, kCompact>::blockM() {
    return TileSm80<kHeadDim, kCompact>::kBlockM;
}

template <ElementKind kElem, int kHeadDim, KvAddressing kKv, bool kCompact>
int KernelSm80<kElem, kHeadDim, kKv, kCompact>::blockN() {
    return TileSm80<kHeadDim, kCompact>::kBlockN;
}

}  // namespace fmha::sm80
