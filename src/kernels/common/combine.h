// Host-side face of the split-KV combine kernel (split_kv.cuh).
#pragma once

#include <cuda_runtime_api.h>

#include "params.h"

namespace fmha {

// Merges the p.numSplits parts in p.oAccum / p.lseAccum into p.o and p.lse (at most 64
// parts). Returns the launch's own error.
cudaError_t launchCombine(FmhaParams const& p, cudaStream_t stream);

}  // namespace fmha
