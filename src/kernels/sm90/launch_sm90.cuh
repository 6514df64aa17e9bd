// Definitions behind launch_sm90.h: grid shape, shared memory and the launch itself.
#pragma once

#include <algorithm>
#include <cstdlib>

#include "heuristics.h"
#include "kernels/common/launch.h"
#include "kernels/sm90/fwd_kernel_sm90.cuh"
#include "kernels/sm90/launch_sm90.h"

namespace fmha::sm90 {

// The instance's kernel: the persistent one for TileShape::kPersistent.
template <ElementKind kElem, int kHeadDim, KvAddressing kKv, bool kSkip, TileShape kShape>
constexpr auto kernelOf() {
    if constexpr (TileOf<kElem, kHeadDim, kShape>::kPersistent)
        return &fwdKernelSm90Persistent<kElem, kHeadDim, kKv, kSkip, kShape>;
    else
        return &fwdKernelSm90<kElem, kHeadDim, kKv, kSkip, kShape>;
}

// A persistent launch: one CTA an SM (or an item). Sections of one unit by default: each
// unit's tiles in turn, the order of the non-persistent grid, so that the CTAs at work share
// few units' K/V. L2-sized sections (about half the L2 of units' K/V, highest row tiles first
// across them) measured 2-6% slower on non-causal 4k rows and alike on causal ones
// (bench/results/2026-12-01_persistent-order_ab.txt); FMHA_PERSIST_UNITS=N sets N
// (measurement).
template <class Tile>
cudaError_t launchPersistent(void const* kernel, FmhaParams p, TmaDescs& tma, cudaStream_t stream) {
    int device = 0, sms = 0;
    cudaError_t err = cudaGetDevice(&device);
    if (err == cudaSuccess) err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    if (err != cudaSuccess) return err;
    static int const forcedUnits = [] {
        char const* env = std::getenv("FMHA_PERSIST_UNITS");
        return env != nullptr ? std::atoi(env) : 0;
    }();
    p.persistUnits = std::max(1, forcedUnits);
    PersistentTiles tiles(p, Tile::kBlockM);
    dim3 const grid(static_cast<unsigned>(std::clamp(tiles.items, 1, std::max(sms, 1))));
    void* args[] = {&p, &tma, &tiles};
    return launchKernel(kernel, grid, dim3(Tile::kNThreads), Tile::kSmemBytes, stream, args, detail::dependentLaunch());
}

// The CTAs a cluster of a non-persistent launch: 2 where its tiles pair (Tile::kPairable, over
// contiguous or paged KV, under detail::kvClusterCtas's rule), else 1. Noted for the launch record.
template <class Tile>
unsigned clusterCtas(FmhaParams const& p, TmaDescs const& tma, dim3 grid) {
    unsigned ctas = 1;
    if constexpr (Tile::kPairable) ctas = detail::kvClusterCtas(p, tma.kvOk != 0, grid.y);
    detail::noteKvPairs(ctas > 1);
    return ctas;
}

template <ElementKind kElem, int kHeadDim, KvAddressing kKv, bool kSkip, TileShape kShape>
cudaError_t KernelSm90<kElem, kHeadDim, kKv, kSkip, kShape>::launch(FmhaParams const& p, cudaStream_t stream) {
    using Tile = TileOf<kElem, kHeadDim, kShape>;
    TmaDescs tma;
    makeTmaDescs(p, Tile::kBlockM, Tile::kBlockN, Tile::kSwizzleBytes, &tma, Tile::kPersistent);
    void const* kernel = reinterpret_cast<void const*>(kernelOf<kElem, kHeadDim, kKv, kSkip, kShape>());
    if constexpr (Tile::kPersistent) {
        return launchPersistent<Tile>(kernel, p, tma, stream);
    } else {
        // (Row tiles x split-KV parts) x (query heads, or KV heads when GQA is packed) x sequences.
        int64_t const rows = static_cast<int64_t>(p.maxSeqLenQ) << p.packLog2;
        dim3 const grid(static_cast<unsigned>((rows + Tile::kBlockM - 1) / Tile::kBlockM * p.numSplits),
                        static_cast<unsigned>(p.numQHeads >> p.packLog2), static_cast<unsigned>(p.batch));
        // This launch's error alone (see KernelSm80::launch).
        void* args[] = {const_cast<FmhaParams*>(&p), &tma};
        return launchKernel(kernel, grid, dim3(Tile::kNThreads), Tile::kSmemBytes, stream, args,
                            detail::dependentLaunch(), clusterCtas<Tile>(p, tma, grid));
    }
}

template <ElementKind kElem, int kHeadDim, KvAddressing kKv, bool kSkip, TileShape kShape>
cudaError_t KernelSm90<kElem, kHeadDim, kKv, kSkip, kShape>::prepare() {
    using Tile = TileOf<kElem, kHeadDim, kShape>;
    cudaError_t const err = cudaFuncSetAttribute(kernelOf<kElem, kHeadDim, kKv, kSkip, kShape>(),
                                                 cudaFuncAttributeMaxDynamicSharedMemorySize, Tile::kSmemBytes);
    if (err != cudaSuccess || Tile::kMinBlocks == 1) return err;
    // Two CTAs an SM need the whole carveout as shared memory.
    return cudaFuncSetAttribute(kernelOf<kElem, kHeadDim, kKv, kSkip, kShape>(),
                                cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared);
}

template <ElementKind kElem, int kHeadDim, KvAddressing kKv, bool kSkip, TileShape kShape>
cudaError_t KernelSm90<kElem, kHeadDim, kKv, kSkip, kShape>::probe() {
    cudaFuncAttributes attr;
    return cudaFuncGetAttributes(&attr, kernelOf<kElem, kHeadDim, kKv, kSkip, kShape>());
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
