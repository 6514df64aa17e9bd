// Scoped test settings: each restores what it changed when it goes out of scope, so a failing
// assertion (which returns from the test) cannot leak a setting or memory into later tests.
#pragma once

#include <cstddef>

#include <cuda_runtime_api.h>

#include "internals.h"

namespace fmha::testing {

// Forces the portable family (true) or the default dispatch (false).
class ScopedFamily {
public:
    explicit ScopedFamily(bool portable) : previous_(detail::setForcePortable(portable)) {}
    ~ScopedFamily() { detail::setForcePortable(previous_); }
    void set(bool portable) const { detail::setForcePortable(portable); }
    ScopedFamily(ScopedFamily const&) = delete;
    ScopedFamily& operator=(ScopedFamily const&) = delete;

private:
    bool previous_;
};

// An integer setting of detail:: (kSet stores a value and returns the previous one) held for
// the guard's scope.
template <int (*kSet)(int)>
class ScopedSetting {
public:
    explicit ScopedSetting(int value) : previous_(kSet(value)) {}
    ~ScopedSetting() { kSet(previous_); }
    ScopedSetting(ScopedSetting const&) = delete;
    ScopedSetting& operator=(ScopedSetting const&) = delete;

private:
    int previous_;
};

// The Hopper tile shape: -1 the heuristic, else a TileShape forced where it is built.
using ScopedTileShape = ScopedSetting<&detail::setTileShape>;
using ScopedKvPairs = ScopedSetting<&detail::setKvPairs>;
// The pack-GQA setting: -1 the heuristic, 1 always, 0 never.
using ScopedPackGqa = ScopedSetting<&detail::setPackGqa>;

// Skip-softmax counters (FmhaParams::skipStats) for the launches in its scope: the Hopper
// family's (warpgroup, key tile) steps and the P.V products it skipped, its (warp, key tile)
// steps and the tiles its warps dropped.
struct SkipCounts {
    unsigned long long visited = 0, skipped = 0, warpVisited = 0, warpDropped = 0;
};
class ScopedSkipStats {
public:
    static constexpr int kCounters = FmhaParams::kSkipStats;
    ScopedSkipStats() {
        if (cudaMalloc(reinterpret_cast<void**>(&counters_), kCounters * sizeof(unsigned long long)) != cudaSuccess ||
            cudaMemset(counters_, 0, kCounters * sizeof(unsigned long long)) != cudaSuccess)
            counters_ = nullptr;
        previous_ = detail::setSkipStats(counters_);
    }
    ~ScopedSkipStats() {
        detail::setSkipStats(previous_);
        if (counters_ != nullptr) cudaFree(counters_);
    }
    ScopedSkipStats(ScopedSkipStats const&) = delete;
    ScopedSkipStats& operator=(ScopedSkipStats const&) = delete;
    bool ok() const { return counters_ != nullptr; }
    // The counts so far (after the device work that adds them); false where they cannot be read.
    bool read(SkipCounts* c) const {
        unsigned long long h[kCounters] = {};
        if (counters_ == nullptr || cudaDeviceSynchronize() != cudaSuccess ||
            cudaMemcpy(h, counters_, sizeof(h), cudaMemcpyDeviceToHost) != cudaSuccess)
            return false;
        *c = {h[0], h[1], h[2], h[3]};
        return true;
    }

private:
    unsigned long long* counters_ = nullptr;
    unsigned long long* previous_ = nullptr;
};

// Device memory freed with its scope; ptr is null when the allocation failed.
class DeviceMemory {
public:
    explicit DeviceMemory(size_t bytes) {
        if (cudaMalloc(&ptr_, bytes) != cudaSuccess) ptr_ = nullptr;
    }
    ~DeviceMemory() {
        if (ptr_ != nullptr) cudaFree(ptr_);
    }
    DeviceMemory(DeviceMemory const&) = delete;
    DeviceMemory& operator=(DeviceMemory const&) = delete;
    void* get() const { return ptr_; }
    template <class T>
    T* as() const {
        return static_cast<T*>(ptr_);
    }

private:
    void* ptr_ = nullptr;
};

}  // namespace fmha::testing
