// Host-only launch heuristics, computed before a launch from the filled FmhaParams and the
// chosen kernel: pack GQA (Hopper family) and the portable walk's section size. The launch
// wrappers read the result from the params; nothing calls back into dispatch.
#pragma once

#include "dispatch.h"
#include "params.h"

namespace fmha::detail {

// Pack GQA where a family can: 1 always (head groups of a power of two up to the tile's
// rows), 0 never, -1 where it fills the row tiles clearly better (the default; short-Q
// chunks). FMHA_PACK_GQA=0/1 in the environment sets it. Tests override it; returns the
// previous setting.
int setPackGqa(int mode);

// The packLog2 for p on a family whose tiles hold blockM rows, under the setting above.
int choosePackLog2(FmhaParams const& p, int blockM);

// The portable walk's section size for p (FmhaParams::walkUnits): 1 (no walk) unless p is a
// causal launch without window of at most 512 queries.
int32_t walkUnits(FmhaParams const& p);

// Fills p.packLog2 and p.walkUnits for the kernel ops will launch.
void planLaunch(KernelOps const& ops, FmhaParams* p);

}  // namespace fmha::detail
