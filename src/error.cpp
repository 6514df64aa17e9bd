// Thread-local last error and the process-wide log callback.
#include "error.h"

#include <atomic>
#include <mutex>

#include "fmha/fmha.h"

namespace fmha {
namespace {
thread_local std::string tLastError;
thread_local char const* tLastFamily = "";
thread_local int tLastPackedHeads = 1;
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
    std::lock_guard<std::mutex> lock(gLogMutex);
    if (gLog) gLog(tLastError.c_str(), gLogUser);
    return false;
}

void clearError() { tLastError.clear(); }

void setLastKernelFamily(char const* family) { tLastFamily = family; }

void setLastPackedHeads(int heads) { tLastPackedHeads = heads; }

int lastPackedHeads() { return tLastPackedHeads; }

}  // namespace detail
}  // namespace fmha
