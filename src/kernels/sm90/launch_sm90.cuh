// Definitions behind launch_sm90.h: grid shape, shared memory and the launch itself.
#pragma once

#include "kernels/sm90/fwd_kernel_sm90.cuh"
#include "kernels/sm90/launch_sm90.h"

namespace fmha::sm90 {

template <ElementKind kElem, int kHeadDim, KvAddressing kKv, bool kSkip, TileShape kShape>
cudaError_t KernelSm90<kElem, kHeadDim, kKv, kSkip, kShape>::launch(FmhaParams const& p, cudaStream_t stream) {
    using Tile = TileOf<kElem, kHeadDim, kShape>;
    // (Row tiles x split-KV parts) x (query heads, or KV heads when GQA is packed) x sequences.
    int64_t const rows = static_cast<int64_t>(p.maxSeqLenQ) << p.packLog2;
    dim3 const grid(static_cast<unsigned>((rows + Tile::kBlockM - 1) / Tile::kBlockM * p.numSplits),
                    static_cast<unsigned>(p.numQHeads >> p.packLog2), static_cast<unsigned>(p.batch));
    TmaDescs tma;
    makeTmaDescs(p, Tile::kBlockM, Tile::kBlockN, Tile::kSwizzleBytes, &tma);
    // This launch's error alone (see KernelSm80::launch).
    void* args[] = {const_cast<FmhaParams*>(&p), &tma};
    return cudaLaunchKernel(reinterpret_cast<void const*>(&fwdKernelSm90<kElem, kHeadDim, kKv, kSkip, kShape>), grid,
                            dim3(Tile::kNThreads), args, Tile::kSmemBytes, stream);
}

template <ElementKind kElem, int kHeadDim, KvAddressing kKv, bool kSkip, TileShape kShape>
cudaError_t KernelSm90<kElem, kHeadDim, kKv, kSkip, kShape>::prepare() {
    using Tile = TileOf<kElem, kHeadDim, kShape>;
    cudaError_t const err = cudaFuncSetAttribute(fwdKernelSm90<kElem, kHeadDim, kKv, kSkip, kShape>,
                                                 cudaFuncAttributeMaxDynamicSharedMemorySize, Tile::kSmemBytes);
    if (err != cudaSuccess || Tile::kMinBlocks == 1) return err;
    // Two CTAs an SM need the whole carveout as shared memory.
    return cudaFuncSetAttribute(fwdKernelSm90<kElem, kHeadDim, kKv, kSkip, kShape>,
                                cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared);
}

template <ElementKind kElem, int kHeadDim, KvAddressing kKv, bool kSkip, TileShape kShape>
cudaError_t KernelSm90<kElem, kHeadDim, kKv, kSkip, kShape>::probe() {
    cudaFuncAttributes attr;
    return cudaFuncGetAttributes(&attr, fwdKernelSm90<kElem, kHeadDim, kKv, kSkip, kShape>);
}

template <ElementKind kElem, int kHeadDim, KvAddressing kKv, bool kSkip, TileShape kShape>
int KernelSm90<kElem, kHeadDim, kKv, kSkip, kShape>::smemBytes() {
    return TileOf<kElem, kHeadDim, kShape>::kSmemBytes;
}

template <ElementKind kElem, int kHeadDim, KvAddressing kKv, bool kSkip, TileShape kShape>
int KernelSm90<kElem, kHeadDim, kKv, kSkip, kShape>::blockM() {
    return TileOf<kElem, kHeadDim, kShape>::kBlockM;
}

template <ElementKind kElem, int kHeadDim, KvAddressing kKv, bool kSkip, TileShape kShape>
int KernelSm90<kElem, kHeadDim, kKv, kSkip, kShape>::blockN() {
    return TileOf<kElem, kHeadDim, kShape>::kBlockN;
}

}  // namespace fmha::sm90
