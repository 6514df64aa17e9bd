// Definitions behind launch_sm90.h: grid shape, shared memory and the launch itself.
#pragma once

#include "kernels/sm90/fwd_kernel_sm90.cuh"
#include "kernels/sm90/launch_sm90.h"

namespace fmha::sm90 {

template <ElementKind kElem, int kHeadDim, KvAddressing kKv>
cudaError_t KernelSm90<kElem, kHeadDim, kKv>::launch(FmhaParams const& p, cudaStream_t stream) {
    using Tile = TileSm90<kHeadDim>;
    dim3 const grid((p.maxSeqLenQ + Tile::kBlockM - 1) / Tile::kBlockM, p.numQHeads, p.batch);
    TmaDescs tma;
    makeTmaDescs(p, Tile::kBlockM, Tile::kBlockN, &tma);
    fwdKernelSm90<kElem, kHeadDim, kKv><<<grid, Tile::kNThreads, Tile::kSmemBytes, stream>>>(p, tma);
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
