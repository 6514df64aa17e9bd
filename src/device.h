// What the current CUDA device is and what this build carries code for.
#pragma once

#include <string>

#include <cuda_runtime_api.h>

namespace fmha::detail {

struct DeviceInfo {
    int ordinal = -1;
    int smVersion = 0;  // major * 10 + minor
    int smCount = 0;
    int l2Bytes = 0;
    int maxSmemOptin = 0;
    std::string name;
};

// The current device (cached per ordinal); false with an error message when there is none.
bool currentDevice(DeviceInfo* info);

// Whether the build's CUDA targets hold code that runs on smVersion (SASS of the same
// family or PTX of an older one).
bool buildCoversSm(int smVersion);

char const* buildCudaArchs();
char const* buildCutlassVersion();

}  // namespace fmha::detail
