// Tile rows under pack GQA (FmhaParams::packLog2): the kernels' row mapping and their epilogue's.
#pragma once

#include <cstdint>

#include "params.h"

namespace fmha {

// A sequence's tile rows under pack GQA (FmhaParams::packLog2; 0: tile rows are query
// rows): row i is query row i >> log2 of query head (the tile's first head) + (i mod 2^log2).
struct PackedRows {
    int log2;
    __device__ explicit PackedRows(FmhaParams const& p) : log2(p.packLog2) {}
    __device__ int count(int lq) const { return lq << log2; }  // tile rows of a sequence of lq queries
    __device__ int query(int i) const { return i >> log2; }
    __device__ int head(int i) const { return i & ((1 << log2) - 1); }
    // Elements from the sequence's first Q/O row at the tile's first head to row i.
    __device__ int64_t offset(int i, int64_t rowStride, int headDim) const {
        return query(i) * rowStride + head(i) * headDim;
    }
};

}  // namespace fmha
