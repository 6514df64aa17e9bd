// Definitions behind launch_sm80.h: grid shape, shared memory and the launch itself.
#pragma once

#include <climits>
#include <cstdint>

#include "kernels/sm80/fwd_kernel_sm80.cuh"
#include "kernels/sm80/launch_sm80.h"

namespace fmha::sm80 {

// The walking kernel exists for D=128 over contiguous KV (heuristics.cpp says why); the
// runner sets FmhaParams::walkUnits (1: no walk).
template <int kHeadDim, KvAddressing kKv, bool kCompact>
constexpr bool kHasWalk = kHeadDim == 128 && kKv == KvAddressing::kStrided && !kCompact;

template <ElementKind kElem, int kHeadDim, KvAddressing kKv, bool kCompact>
cudaError_t KernelSm80<kElem, kHeadDim, kKv, kCompact>::launch(FmhaParams const& p, cudaStream_t stream) {
    using Tile = TileSm80<kHeadDim, kCompact>;
    // (Row tiles x split-KV parts) x query heads x (sequences x V halves).
    dim3 const grid((p.maxSeqLenQ + Tile::kBlockM - 1) / Tile::kBlockM * p.numSplits, p.numQHeads,
                    p.batch * Tile::kVSplits);
    // cudaLaunchKernel returns this launch's error alone (the <<<>>> form needs a
    // cudaGetLastError, which would also take, and blame us for, an earlier pending error).
    auto go = [&](void const* kernel) {
        void* args[] = {const_cast<FmhaParams*>(&p)};
        return cudaLaunchKernel(kernel, grid, dim3(Tile::kNThreads), args, Tile::kSmemBytes, stream);
    };
    if constexpr (kHasWalk<kHeadDim, kKv, kCompact>)
        if (p.walkUnits > 1)
            return go(reinterpret_cast<void const*>(&fwdKernelSm80<kElem, kHeadDim, kKv, true, kCompact>));
    return go(reinterpret_cast<void const*>(&fwdKernelSm80<kElem, kHeadDim, kKv, false, kCompact>));
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
bool KernelSm80<kElem, kHeadDim, kKv, kCompact>::walks() {
    return kHasWalk<kHeadDim, kKv, kCompact>;
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
