// Definitions behind launch_sm80.h: grid shape, shared memory and the launch itself.
#pragma once

#include "kernels/sm80/fwd_kernel_sm80.cuh"
#include "kernels/sm80/launch_sm80.h"

namespace fmha::sm80 {

template <ElementKind kElem, int kHeadDim, KvAddressing kKv>
cudaError_t KernelSm80<kElem, kHeadDim, kKv>::launch(FmhaParams const& p, cudaStream_t stream) {
    using Tile = TileSm80<kHeadDim>;
    dim3 const grid((p.maxSeqLenQ + Tile::kBlockM - 1) / Tile::kBlockM, p.numQHeads, p.batch * Tile::kVSplits);
    fwdKernelSm80<kElem, kHeadDim, kKv><<<grid, Tile::kNThreads, Tile::kSmemBytes, stream>>>(p);
    return cudaGetLastError();
}

template <ElementKind kElem, int kHeadDim, KvAddressing kKv>
cudaError_t KernelSm80<kElem, kHeadDim, kKv>::prepare() {
    return cudaFuncSetAttribute(fwdKernelSm80<kElem, kHeadDim, kKv>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                TileSm80<kHeadDim>::kSmemBytes);
}

template <ElementKind kElem, int kHeadDim, KvAddressing kKv>
cudaError_t KernelSm80<kElem, kHeadDim, kKv>::probe() {
    cudaFuncAttributes attr;
    return cudaFuncGetAttributes(&attr, fwdKernelSm80<kElem, kHeadDim, kKv>);
}

template <ElementKind kElem, int kHeadDim, KvAddressing kKv>
int KernelSm80<kElem, kHeadDim, kKv>::smemBytes() {
    return TileSm80<kHeadDim>::kSmemBytes;
}

}  // namespace fmha::sm80
