// Error reporting shared by the runner and the C API: thread-local last error plus an optional callback.
#pragma once

#include <string>

#include <cuda_runtime_api.h>

namespace fmha::detail {

// Records msg as this thread's last error, sends it to the log callback, returns false.
bool fail(std::string const& msg);
void clearError();
// "cudaErrorName: description".
std::string errorText(cudaError_t err);
// Errors that leave the CUDA context unusable (an earlier kernel's fault): every later call
// of the process on that context returns them.
bool isStickyError(cudaError_t err);
// The message for a sticky error met by one of our calls: it names the error as the
// context's, from earlier work, not as a fault of this call.
std::string stickyMessage(cudaError_t err);
void setLastKernelFamily(char const* family);

}  // namespace fmha::detail
