// Error reporting shared by the runner and the C API: thread-local last error plus an optional callback.
#pragma once

#include <string>

namespace fmha::detail {

// Records msg as this thread's last error, sends it to the log callback, returns false.
bool fail(std::string const& msg);
void clearError();
void setLastKernelFamily(char const* family);
// Query heads the last run on this thread packed into one tile (pack GQA; 1: none).
void setLastPackedHeads(int heads);
int lastPackedHeads();

}  // namespace fmha::detail
