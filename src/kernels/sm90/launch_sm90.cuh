// Definitions behind launch_sm90.h: grid shape, shared memory and the launch itself.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdlib>

#include "heuristics.h"
#include "kernels/common/launch.h"
#include "kernels/sm90/fwd_kernel_sm90.cuh"
#include "kernels/sm90/launch_sm90.h"

namespace fmha::sm90 {

// The instance's kernel: the persistent one for TileShape::kPersistent; kStats, a skip-softmax
// instance's counting variant (fwdKernelSm90).
template <ElementKind kElem, int kHeadDim, KvAddressing kKv, bool kSkip, TileShape kShape, bool kStats = false>
constexpr auto kernelOf() {
    if constexpr (TileOf<kElem, kHeadDim, kKv, kShape, kSkip>::kPersistent)
        return &fwdKernelSm90Persistent<kElem, kHeadDim, kKv, kSkip, kShape>;
    else
        return &fwdKernelSm90<kElem, kHeadDim, kKv, kSkip, kShape, kStats>;
}

// The kernels of an instance: its own and, for skip-softmax, the counting variant.
template <ElementKind kElem, int kHeadDim, KvAddressing kKv, bool kSkip, TileShape kShape>
constexpr int kKernelsOf = kSkip && !TileOf<kElem, kHeadDim, kKv, kShape, kSkip>::kPersistent ? 2 : 1;
template <ElementKind kElem, int kHeadDim, KvAddressing kKv, bool kSkip, TileShape kShape>
void const* kernelAt(int k) {
    if constexpr (kKernelsOf<kElem, kHeadDim, kKv, kSkip, kShape> == 2)
        if (k == 1) return reinterpret_cast<void const*>(kernelOf<kElem, kHeadDim, kKv, kSkip, kShape, true>());
    return reinterpret_cast<void const*>(kernelOf<kElem, kHeadDim, kKv, kSkip, kShape>());
}

// The CTAs a cluster of a launch over `heads` tiles of query heads (grid.y; a persistent
// launch's units of a sequence): 2 where its tiles pair (Tile::kPairable, over contiguous or
// paged KV, under detail::kvClusterCtas's rule), else 1. Noted for the launch record.
template <class Tile>
unsigned clusterCtas(FmhaParams const& p, TmaDescs const& tma, unsigned heads) {
    unsigned ctas = 1;
    if constexpr (Tile::kPairable) ctas = detail::kvClusterCtas(p, tma.kvOk != 0, heads);
    detail::noteKvPairs(ctas > 1);
    return ctas;
}

// The clusters of `ctas` CTAs of `kernel` that `device` holds at once
// (cudaOccupancyMaxActiveClusters), kept in cache[device] (0: not asked yet) for the devices
// below kCachedDevices.
constexpr int kCachedDevices = 16;
inline cudaError_t maxClusters(void const* kernel, int device, unsigned ctas, unsigned threads, size_t smem,
                               std::atomic<int>* cache, int* clusters) {
    if (device >= 0 && device < kCachedDevices) {
        *clusters = cache[device].load(std::memory_order_relaxed);
        if (*clusters > 0) return cudaSuccess;
    }
    cudaLaunchAttribute attr{};
    attr.id = cudaLaunchAttributeClusterDimension;
    attr.val.clusterDim.x = ctas;
    attr.val.clusterDim.y = 1;
    attr.val.clusterDim.z = 1;
    cudaLaunchConfig_t config{};
    config.gridDim = dim3(ctas);
    config.blockDim = dim3(threads);
    config.dynamicSmemBytes = smem;
    config.attrs = &attr;
    config.numAttrs = 1;
    cudaError_t const err = cudaOccupancyMaxActiveClusters(clusters, kernel, &config);
    if (err != cudaSuccess) return err;
    if (device >= 0 && device < kCachedDevices && *clusters > 0)
        cache[device].store(*clusters, std::memory_order_relaxed);
    return cudaSuccess;
}

// An instance's cache for maxClusters (its pairs' resident clusters a device).
template <ElementKind kElem, int kHeadDim, KvAddressing kKv, bool kSkip, TileShape kShape>
std::atomic<int>* clusterCacheOf() {
    static std::atomic<int> cache[kCachedDevices]{};
    return cache;
}

// A persistent launch: one CTA an SM (or an item). Sections of one unit by default: each
// unit's tiles in turn, the order of the non-persistent grid, so that the CTAs at work share
// few units' K/V. L2-sized sections (about half the L2 of units' K/V, highest row tiles first
// across them) measured 2-6% slower on non-causal 4k rows and alike on causal ones
// (bench/results/2026-12-01_persistent-order_ab.txt); FMHA_PERSIST_UNITS=N sets N
// (measurement).
template <class Tile>
cudaError_t launchPersistent(void const* kernel, FmhaParams p, TmaDescs& tma, cudaStream_t stream,
                             std::atomic<int>* clusterCache) {
    int device = 0, sms = 0;
    cudaError_t err = cudaGetDevice(&device);
    if (err == cudaSuccess) err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    if (err != cudaSuccess) return err;
    static int const forcedUnits = [] {
        char const* env = std::getenv("FMHA_PERSIST_UNITS");
        return env != nullptr ? std::atoi(env) : 0;
    }();
    p.persistUnits = std::max(1, forcedUnits);
    // CTA pairs (clusterCtas' rule over the units of a sequence): a cluster of two CTAs an item,
    // each with one of the two query heads of a KV head that the item's unit pair holds; as many
    // clusters as the SMs hold.
    unsigned const ctas = clusterCtas<Tile>(p, tma, static_cast<unsigned>(p.numQHeads >> p.packLog2));
    PersistentTiles tiles(p, Tile::kBlockM, static_cast<int>(ctas));
    int resident = sms;  // clusters the device holds at once: pairs need two SMs of one GPC
    if (ctas > 1) {
        err = maxClusters(kernel, device, ctas, Tile::kNThreads, Tile::kSmemBytes, clusterCache, &resident);
        if (err != cudaSuccess) return err;
        if (resident <= 0) resident = sms / static_cast<int>(ctas);
    }
    int const clusters = std::clamp(tiles.items, 1, std::max(resident, 1));
    dim3 const grid(static_cast<unsigned>(clusters) * ctas);
    void* args[] = {&p, &tma, &tiles};
    return launchKernel(kernel, grid, dim3(Tile::kNThreads), Tile::kSmemBytes, stream, args, detail::dependentLaunch(),
                        dim3(ctas, 1, 1));
}

template <ElementKind kElem, int kHeadDim, KvAddressing kKv, bool kSkip, TileShape kShape>
cudaError_t KernelSm90<kElem, kHeadDim, kKv, kSkip, kShape>::launch(FmhaParams const& p, cudaStream_t stream) {
    using Tile = TileOf<kElem, kHeadDim, kKv, kShape, kSkip>;
    TmaDescs tma;
    makeTmaDescs(p, Tile::kBlockM, Tile::kBlockN, Tile::kSwizzleBytes, &tma, Tile::kPersistent);
    // Skip-softmax: the counting variant where counters are set (tests, the benchmark's untimed run).
    void const* kernel = kernelAt<kElem, kHeadDim, kKv, kSkip, kShape>(kSkip && p.skipStats != nullptr ? 1 : 0);
    if constexpr (Tile::kPersistent) {
        return launchPersistent<Tile>(kernel, p, tma, stream, clusterCacheOf<kElem, kHeadDim, kKv, kSkip, kShape>());
    } else {
        // (Row tiles x split-KV parts) x (query heads, or KV heads when GQA is packed) x sequences.
        int64_t const rows = static_cast<int64_t>(p.maxSeqLenQ) << p.packLog2;
        dim3 const grid(static_cast<unsigned>((rows + Tile::kBlockM - 1) / Tile::kBlockM * p.numSplits),
                        static_cast<unsigned>(p.numQHeads >> p.packLog2), static_cast<unsigned>(p.batch));
        // This launch's error alone (see KernelSm80::launch).
        void* args[] = {const_cast<FmhaParams*>(&p), &tma};
        return launchKernel(kernel, grid, dim3(Tile::kNThreads), Tile::kSmemBytes, stream, args,
                            detail::dependentLaunch(), dim3(1, clusterCtas<Tile>(p, tma, grid.y), 1));
    }
}

template <ElementKind kElem, int kHeadDim, KvAddressing kKv, bool kSkip, TileShape kShape>
cudaError_t KernelSm90<kElem, kHeadDim, kKv, kSkip, kShape>::prepare() {
    using Tile = TileOf<kElem, kHeadDim, kKv, kShape, kSkip>;
    constexpr int kKernels = kKernelsOf<kElem, kHeadDim, kKv, kSkip, kShape>;
    cudaError_t err = cudaSuccess;
    for (int k = 0; k < kKernels && err == cudaSuccess; ++k) {
        void const* kernel = kernelAt<kElem, kHeadDim, kKv, kSkip, kShape>(k);
        err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Tile::kSmemBytes);
        // Two CTAs an SM need the whole carveout as shared memory.
        if (err == cudaSuccess && Tile::kMinBlocks > 1)
            err = cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared);
    }
    if constexpr (Tile::kPersistent && Tile::kPairable) {
        // The pairs' resident clusters, asked here (preflight, outside any capture) for the launches.
        int device = 0, clusters = 0;
        if (err == cudaSuccess) err = cudaGetDevice(&device);
        if (err == cudaSuccess)
            err = maxClusters(reinterpret_cast<void const*>(kernelOf<kElem, kHeadDim, kKv, kSkip, kShape>()), device, 2,
                              Tile::kNThreads, Tile::kSmemBytes, clusterCacheOf<kElem, kHeadDim, kKv, kSkip, kShape>(),
                              &clusters);
    }
    return err;
}

template <ElementKind kElem, int kHeadDim, KvAddressing kKv, bool kSkip, TileShape kShape>
cudaError_t KernelSm90<kElem, kHeadDim, kKv, kSkip, kShape>::probe() {
    cudaFuncAttributes attr;
    cudaError_t err = cudaSuccess;
    for (int k = 0; k < kKernelsOf<kElem, kHeadDim, kKv, kSkip, kShape> && err == cudaSuccess; ++k)
        err = cudaFuncGetAttributes(&attr, kernelAt<kElem, kHeadDim, kKv, kSkip, kShape>(k));
    return err;
}

template <ElementKind kElem, int kHeadDim, KvAddressing kKv, bool kSkip, TileShape kShape>
int KernelSm90<kElem, kHeadDim, kKv, kSkip, kShape>::smemBytes() {
    return TileOf<kElem, kHeadDim, kKv, kShape, kSkip>::kSmemBytes;
}

template <ElementKind kElem, int kHeadDim, KvAddressing kKv, bool kSkip, TileShape kShape>
int KernelSm90<kElem, kHeadDim, kKv, kSkip, kShape>::blockM() {
    return TileOf<kElem, kHeadDim, kKv, kShape, kSkip>::kBlockM;
}

template <ElementKind kElem, int kHeadDim, KvAddressing kKv, bool kSkip, TileShape kShape>
int KernelSm90<kElem, kHeadDim, kKv, kSkip, kShape>::blockN() {
    return TileOf<kElem, kHeadDim, kKv, kShape, kSkip>::kBlockN;
}

}  // namespace fmha::sm90
