// Randomised differential fuzzing: seeded random problems over every mode, mask, dtype, head
// dim, page size, GQA ratio and length pattern, each run through every kernel family the GPU
// has and compared with the CPU reference; optionally with corrupted device metadata, judged
// against the documented clamping (docs/SEMANTICS.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "problems.h"

namespace fmha::harness {

struct FuzzFilter {
    int mode = -1;           // a Mode value, or -1 for every mode
    int dtype = -1;          // a DataType value, or -1 for FP16, BF16 and FP8
    bool malformed = false;  // corrupt the device metadata (prefix sums, page ids, bidirectional bounds)
    double maxWork = 4e7;    // the reference's multiply-adds a problem at most (lengths shrink to fit)
};

struct FuzzCase {
    uint64_t seed = 0;
    uint64_t index = 0;
    HostProblem problem;
    std::string corruption;  // what was corrupted; empty for a valid problem
};

// Case `index` of the run seeded `seed`: a pure function of (seed, index, filter), so that one
// case re-runs alone.
FuzzCase makeFuzzCase(uint64_t seed, uint64_t index, FuzzFilter const& filter);

// The command line that re-runs one case.
std::string fuzzRepro(uint64_t seed, uint64_t index, FuzzFilter const& filter);

struct FuzzVerdict {
    bool pass = false;
    bool skipped = false;               // no kernel fits the (capped) shared-memory budget
    std::vector<std::string> families;  // the kernel families that ran it
    std::string detail;                 // the problem and, on failure, what failed
};

// Runs the case through the default dispatch and, where that chose another family, the
// portable family too. A valid problem must match the reference within the error budget
// with every output written; a malformed one must run, write zeros to the rows that no
// sequence computes and match the naive evaluation under the documented clamps elsewhere.
FuzzVerdict runFuzzCase(FuzzCase const& c);

}  // namespace fmha::harness
