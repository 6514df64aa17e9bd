// The FmhaParams a run of each mode launches, from the runner's shape and the arguments, with
// no validation and before the launch plan (packLog2, walkUnits: heuristics.h). The runner
// launches exactly these; tests compare them field by field.
#pragma once

#include "fmha/fmha.h"
#include "params.h"

namespace fmha::detail {

FmhaParams paramsFor(FmhaRunner const& r, LlmArgs const& a);
FmhaParams paramsFor(FmhaRunner const& r, PagedArgs const& a);
FmhaParams paramsFor(FmhaRunner const& r, PagedRaggedArgs const& a);
FmhaParams paramsFor(FmhaRunner const& r, VitArgs const& a);

}  // namespace fmha::detail
