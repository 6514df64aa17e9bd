// Host-side face of the split-KV combine kernel (split_kv.cuh).
#pragma once

#include <cuda_runtime_api.h>

#include "params.h"

namespace fmha {

// Merges the p.numSplits parts in p.oAccum / p.lseAccum into p.o and p.lse (at most 64
// parts). Returns the launch's own error. dependent: the forward kernel just launched on the
// stream signals programmatic dependent launch (sm_90), so the combine is launched as its
// programmatic dependent: its blocks are scheduled while the forward kernel's last blocks
// run, and wait (griddepcontrol.wait) for its completion and memory before reading.
cudaError_t launchCombine(FmhaParams const& p, cudaStream_t stream, bool dependent);

}  // namespace fmha
