// Definitions behind launch_sm90.h: grid shape, shared memory and the launch itself.
#pragma once

#include <climits>
#include <cstdlib>
#include <cstring>

#include "kernels/sm90/fwd_kernel_sm90.cuh"
#include "kernels/sm90/launch_sm90.h"

namespace fmha::sm90 {

// Persistent grid (one CTA per SM) unless FMHA_SM90_PERSISTENT=0: a tuning switch for
// measurements; read once.
inline bool persistentGrid() {
    static bool const on = [] {
        char const* v = std::getenv("FMHA_SM90_PERSISTENT");
        return v == nullptr || std::strcmp(v, "0") != 0;
    }();
    return on;
}

template <ElementKind kElem, int kHeadDim, KvAddressing kKv>
cudaError_t KernelSm90<kElem, kHeadDim, kKv>::launch(FmhaParams const& p, cudaStream_t stream) {
    using Tile = TileSm90<kHeadDim>;
    TileScheduler const sched = TileScheduler::make(p, Tile::kBlockM);
    int64_t grid = sched.gridSize(p.smCount, persistentGrid());
    if (grid == 0) return cudaSuccess;  // no query rows: nothing to write
    if (grid > INT_MAX) grid = sched.gridSize(p.smCount, true);
    TmaDescs tma;
    makeTmaDescs(p, Tile::kBlockM, Tile::kBlockN, &tma);
    fwdKernelSm90<kElem, kHeadDim, kKv><<<static_cast<unsigned>(grid), Tile::kNThreads, Tile::kSmemBytes, stream>>>(p, tma, sched);
    return cudaGetLastError();
}

template <ElementKind kElem, int kHeadDim, KvAddressing kKv>
cudaError_t KernelSm90<kElem, kHeadDim, kKv>::prepare() {
    return cudaFuncSetAttribute(fwdKernelSm90<kElem, kHeadDim, kKv>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                TileSm90<kHeadDim>::kSmemBytes);
}

template <ElementKind kElem, int kHeadDim, KvAddressing kKv>
cudaError_t KernelSm90<kElem, kHeadDim, kKv>::probe() {
    cudaFuncAttributes attr;
    return cudaFuncGetAttributes(&attr, fwdKernelSm90<kElem, kHeadDim, kKv>);
}

template <ElementKind kElem, int kHeadDim, KvAddressing kKv>
int KernelSm90<kElem, kHeadDim, kKv>::smemBytes() {
    return TileSm90<kHeadDim>::kSmemBytes;
}

}  // namespace fmha::sm90
