// Device queries (cached) and the build's CUDA target list.
#include "device.h"

#include <array>
#include <mutex>
#include <sstream>

#include "error.h"
#include "fmha_build_config.h"

namespace fmha::detail {

bool currentDevice(DeviceInfo* info) {
    static std::mutex mutex;
    static std::array<DeviceInfo, 64> cache;
    int dev = -1;
    cudaError_t err = cudaGetDevice(&dev);
    if (err != cudaSuccess || dev < 0) {
        cudaGetLastError();
        return fail(std::string("no CUDA device available: ") + cudaGetErrorString(err));
    }
    std::lock_guard<std::mutex> lock(mutex);
    if (dev < static_cast<int>(cache.size()) && cache[dev].ordinal == dev) {
        *info = cache[dev];
        return true;
    }
    DeviceInfo d;
    d.ordinal = dev;
    int major = 0, minor = 0;
    cudaDeviceProp prop{};
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&d.smCount, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&d.l2Bytes, cudaDevAttrL2CacheSize, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&d.maxSmemOptin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) != cudaSuccess ||
        cudaGetDeviceProperties(&prop, dev) != cudaSuccess) {
        cudaGetLastError();
        return fail("could not query CUDA device " + std::to_string(dev));
    }
    d.smVersion = major * 10 + minor;
    d.name = prop.name;
    if (dev < static_cast<int>(cache.size())) cache[dev] = d;
    *info = d;
    return true;
}

bool buildCoversSm(int sm) {
    std::stringstream list(FMHA_CUDA_ARCHS);
    std::string item;
    while (std::getline(list, item, ';')) {
        if (item.empty()) continue;
        bool const archSpecific = item.back() == 'a';
        int const arch = std::stoi(archSpecific ? item.substr(0, item.size() - 1) : item);
        // Plain targets embed SASS and PTX (JIT-compiled on newer GPUs); 'a' targets SASS only.
        if (archSpecific ? arch == sm : arch <= sm) return true;
    }
    return false;
}

char const* buildCudaArchs() { return FMHA_CUDA_ARCHS; }
char const* buildCutlassVersion() { return FMHA_CUTLASS_VERSION; }

}  // namespace fmha::detail
