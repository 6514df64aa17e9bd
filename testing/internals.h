// The testing interface to the library's internals: the one header through which the tests,
// the fuzzer and the CLI reach what the public API does not show (the dispatcher and its
// test settings, device queries, the support table, the reference's number formats).
// Nothing under tools/ or tests/ includes a src/ header otherwise.
#pragma once

#include "c_args.h"             // detail::toC (C++ argument structs to the C API's)
#include "device.h"             // detail::currentDevice, DeviceInfo
#include "dispatch.h"           // detail::findKernel, setForcePortable, setSmemBudgetCap, ...
#include "heuristics.h"         // detail::setPackGqa, setSkipStats, choosePackLog2, walkUnits
#include "runner_params.h"      // detail::paramsFor
#include "reference/numeric.h"  // num:: FP16 / BF16 / E4M3 conversions
#include "support_table.h"      // support::kHeadDims
#include "kernels/sm90/tile_sm90.h"  // the Hopper family's FP8 P scale (TileSm90::kPScale)
#include "kernels/common/work_items.h"  // PersistentTiles (the persistent kernel's work items)
