// Thread-local last error and the process-wide log callback.
#include "error.h"

#include <atomic>
#include <mutex>

#include "fmha/fmha.h"

namespace fmha {
namespace {
thread_local std::string tLastError;
thread_local char const* tLastFamily = "";
std::mutex gLogMutex;
LogCallback gLog = nullptr;
void* gLogUser = nullptr;
}  // namespace

char const* lastError() { return tLastError.c_str(); }

char const* lastKernelFamily() { return tLastFamily; }

void setLogCallback(LogCallback callback, void* user) {
    std::lock_guard<std::mutex> lock(gLogMutex);
    gLog = callback;
    gLogUser = user;
}

char const* dataTypeName(DataType t) {
    switch (t) {
    case DataType::kFLOAT: return "fp32";
    case DataType::kHALF: return "fp16";
    case DataType::kINT8: return "int8";
    case DataType::kINT32: return "int32";
    case DataType::kBOOL: return "bool";
    case DataType::kUINT8: return "uint8";
    case DataType::kFP8: return "fp8e4m3";
    case DataType::kBF16: return "bf16";
    case DataType::kINT64: return "int64";
    case DataType::kINT4: return "int4";
    }
    return "unknown";
}

char const* modeName(Mode m) {
    switch (m) {
    case Mode::kLlm: return "llm";
    case Mode::kPaged: return "paged";
    case Mode::kPagedRagged: return "ragged";
    case Mode::kVit: return "vit";
    }
    return "unknown";
}

namespace detail {

bool fail(std::string const& msg) {
    tLastError = "fmha: " + msg;
    LogCallback log = nullptr;
    void* user = nullptr;
    {
        std::lock_guard<std::mutex> lock(gLogMutex);
        log = gLog;
        user = gLogUser;
    }
    // Called with no library lock held and on a copy of the message: the callback may call
    // back into the library (and fail again) without deadlocking or changing its argument.
    if (log) {
        std::string const copy = tLastError;
        log(copy.c_str(), user);
        tLastError = copy;  // this call's error, whatever the callback's own calls left
    }
    return false;
}

std::string errorText(cudaError_t err) { return std::string(cudaGetErrorName(err)) + ": " + cudaGetErrorString(err); }

bool isStickyError(cudaError_t err) {
    switch (err) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorAssert:
    case cudaErrorLaunchTimeout:
    case cudaErrorECCUncorrectable:
    case cudaErrorContextIsDestroyed:
    case cudaErrorTensorMemoryLeak:
        return true;
    default:
        return false;
    }
}

std::string stickyMessage(cudaError_t err) {
    return "the CUDA context holds a sticky error from earlier work (" + errorText(err) +
           "); nothing was launched, and the context must be recreated (cudaDeviceReset) before any further work";
}

void clearError() { tLastError.clear(); }

void setLastKernelFamily(char const* family) { tLastFamily = family; }

}  // namespace detail
}  // namespace fmha
