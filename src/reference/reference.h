// CPU reference of every runner mode (docs/SEMANTICS.md), accumulating in float64.
// Independent of the GPU kernels: it shares the public argument structs, not code.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fmha/fmha.h"

namespace fmha::ref {

// What the runner's constructor takes.
struct Shape {
    int32_t numQHeads = 0;
    int32_t numKVHeads = 0;
    int32_t headDim = 0;
    int32_t batchSize = 0;
    int32_t seqLenQ = 0;
    int32_t kvCacheCapacity = 0;
};

struct Options {
    // Round each probability to the input's 16-bit type (FP16 for FP16/FP8, BF16 for BF16)
    // before the P*V product: a reference "of the kernel's precision" for error budgets.
    bool roundP = false;
    // With roundP, > 0: round P * pE4m3Scale to E4M3 instead (then divide by it), the
    // precision of the Hopper family's FP8 P.V (harness::lowpOptions).
    float pE4m3Scale = 0.0F;
    // Skip-softmax emulation: KV tile width and rows that decide together.
    int32_t skipTileN = 64;
    int32_t skipGroupRows = 16;
    int32_t threads = 0;  // 0: every hardware thread
};

// O in the runner's output layout ([rows, Hq, D]); LSE in the layout of the mode
// ([B, Hq, S_q] or [Hq, total]); rows with no allowed key hold O = 0, LSE = -inf.
struct Result {
    std::vector<double> o;
    std::vector<double> lse;
    int64_t skippedTiles = 0;  // (row group, KV tile) pairs dropped by skip-softmax
};

// All pointers in the argument structs are host pointers here. Returns false with a
// message for arguments the reference cannot interpret (it trusts valid shapes).
bool runLlm(Shape const& shape, LlmArgs const& args, Options const& opt, Result& out, std::string* error);
bool runPaged(Shape const& shape, PagedArgs const& args, Options const& opt, Result& out, std::string* error);
bool runPagedRagged(Shape const& shape, PagedRaggedArgs const& args, Options const& opt, Result& out,
                    std::string* error);
bool runVit(Shape const& shape, VitArgs const& args, Options const& opt, Result& out, std::string* error);

// Decode one stored element of type t (FP16, BF16 or FP8 E4M3) at index idx.
double loadElement(void const* base, int64_t idx, DataType t);

}  // namespace fmha::ref
