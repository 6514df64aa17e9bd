// Online softmax over accumulator fragments: kRows rows per thread, each row spread over
// the 4 lanes of a quad (the mma.sync and wgmma accumulator layouts both do this).
// Scores are raw Q.K; exponentials are exp2((s - max) * scaleLog2) with the scale folded in.
#pragma once

#include <cmath>

namespace fmha {

// 2^x on the SFU, flushing subnormal results to zero (exp2f adds a range fix-up of three
// instructions per call for them; a probability below 2^-126 changes no FP32 row sum).
__device__ inline float fastExp2(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

template <int kRows>
struct OnlineSoftmax {
    float rowMax[kRows];
    float rowSum[kRows];  // per-thread partial sums; reduced across the quad in finalize()

    __device__ void init() {
#pragma unroll
        for (int r = 0; r < kRows; ++r) {
            rowMax[r] = -INFINITY;
            rowSum[r] = 0.0F;
        }
    }

    __device__ static float quadMax(float v) {
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
        return fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
    }
    __device__ static float quadSum(float v) {
        v += __shfl_xor_sync(0xffffffffu, v, 1);
        return v + __shfl_xor_sync(0xffffffffu, v, 2);
    }

    // The rows' maxima over this thread's columns only; -inf where it holds no allowed key.
    template <int kCols>
    __device__ static void threadMax(float const (&s)[kRows][kCols], float (&m)[kRows]) {
#pragma unroll
        for (int r = 0; r < kRows; ++r) {
            float v = -INFINITY;
#pragma unroll
            for (int c = 0; c < kCols; ++c) v = fmaxf(v, s[r][c]);
            m[r] = v;
        }
    }

    // The tile's row maxima (quad-reduced); -inf where a row has no allowed key.
    template <int kCols>
    __device__ static void tileMax(float const (&s)[kRows][kCols], float (&m)[kRows]) {
        threadMax(s, m);
#pragma unroll
        for (int r = 0; r < kRows; ++r) m[r] = quadMax(m[r]);
    }

    // Skip-softmax test for one row: its tile max is below the running max by more than
    // log2(lambda) in base-2 units. NaN (both -inf) compares false: never skipped. With this
    // thread's maxima, the test of every lane of a row's quad holds exactly when the row's holds.
    __device__ bool rowNegligible(int r, float tileRowMax, float scaleLog2, float thresholdLog2) const {
        return lead(r, tileRowMax, scaleLog2) < thresholdLog2;
    }
    // How far a tile's row max lies above row r's reference max, in base-2 units (the skip test
    // and updateWarp's move compare it). -inf reference, finite maximum: +inf; both -inf: NaN.
    __device__ float lead(int r, float tileRowMax, float scaleLog2) const {
        return (tileRowMax - rowMax[r]) * scaleLog2;
    }
    // updateWarp's move test of one row's lead (NaN: no move).
    template <int kSlack8>
    __device__ static bool grows(float lead) {
        return lead > static_cast<float>(kSlack8) / 8.0F;
    }

    // One row's scores to probabilities exp2(s * scaleLog2 - mRef); returns their sum.
    template <int kCols>
    __device__ static float exponentiate(float (&row)[kCols], float scaleLog2, float mRef) {
        float sum = 0.0F;
#pragma unroll
        for (int c = 0; c < kCols; ++c) {
            row[c] = fastExp2(fmaf(row[c], scaleLog2, -mRef));
            sum += row[c];
        }
        return sum;
    }

    // Turns s into unnormalised probabilities and returns, per row, the factor the running
    // output must be multiplied by. kPLog2 > 0: the probabilities come out multiplied by
    // 2^kPLog2 (so do the row sums; finalize() takes the same kPLog2).
    template <int kCols, int kPLog2 = 0>
    __device__ void update(float (&s)[kRows][kCols], float const (&tileRowMax)[kRows], float scaleLog2,
                           float (&rescale)[kRows]) {
#pragma unroll
        for (int r = 0; r < kRows; ++r) {
            float const mNew = fmaxf(rowMax[r], tileRowMax[r]);
            // A row that has seen no key yet keeps max -inf; use 0 so that -inf - -inf never appears.
            float const mRef = mNew == -INFINITY ? 0.0F : mNew * scaleLog2;
            rescale[r] = rowMax[r] == -INFINITY ? 0.0F : fastExp2(rowMax[r] * scaleLog2 - mRef);
            rowMax[r] = mNew;
            rowSum[r] = rowSum[r] * rescale[r] + exponentiate(s[r], scaleLog2, mRef - static_cast<float>(kPLog2));
        }
    }

    // update() for the rows of one warp, which decide together, from this thread's row maxima
    // (threadMax()): the reference max (rowMax) moves only when some row's tile max exceeds it
    // by more than kSlack8 / 8 (base-2 units), which holds exactly when some lane's own maximum
    // does, so the quad reduction runs only when the reference moves (off the common path).
    // Otherwise the probabilities reach at most 2^(kSlack8 / 8) (times 2^kPLog2, as update())
    // and the output needs no rescale. rowMax then lags the running max by up to kSlack8 / 8,
    // so rowNegligible() skips only tiles that the exact running max would skip too. Returns
    // whether the warp's rescale holds anything but 1.
    template <int kSlack8, int kPLog2 = 0, int kCols = 0>
    __device__ bool updateWarp(float (&s)[kRows][kCols], float const (&threadRowMax)[kRows], float scaleLog2,
                               float (&rescale)[kRows]) {
        static_assert(kSlack8 >= 0 && kSlack8 <= 64, "probabilities must stay in FP16/BF16 range");
        if constexpr (kSlack8 == 0) {  // the exact running max (deciding first spilled more at D=64)
            float m[kRows];
#pragma unroll
            for (int r = 0; r < kRows; ++r) m[r] = quadMax(threadRowMax[r]);
            update<kCols, kPLog2>(s, m, scaleLog2, rescale);
            bool moved = false;
#pragma unroll
            for (int r = 0; r < kRows; ++r) moved = moved || rescale[r] != 1.0F;
            return __any_sync(0xffffffffu, moved);
        } else {
            bool grow = false;
#pragma unroll
            for (int r = 0; r < kRows; ++r) grow = grow || grows<kSlack8>(lead(r, threadRowMax[r], scaleLog2));
            bool const move = __any_sync(0xffffffffu, grow);
            moveWarp<kSlack8>(threadRowMax, scaleLog2, rescale, move);
            exponentiateRows<kPLog2>(s, scaleLog2);
            return move;
        }
    }

    // updateWarp's first half, its move decided by the caller (move: some lane of the warp has a
    // row whose grows(lead) holds): the reference max moved or not, rescale the factor for the
    // output's rows, the row sums rescaled.
    template <int kSlack8>
    __device__ void moveWarp(float const (&threadRowMax)[kRows], float scaleLog2, float (&rescale)[kRows], bool move) {
        static_assert(kSlack8 > 0 && kSlack8 <= 64, "a lagging reference; probabilities in FP16/BF16 range");
        if (move) {  // one warp-uniform branch for all rows (a branch a row: ~1% of a D=128 kernel's ncu samples)
#pragma unroll
            for (int r = 0; r < kRows; ++r) {
                float const mNew = fmaxf(rowMax[r], quadMax(threadRowMax[r]));
                rescale[r] = rowMax[r] == -INFINITY ? 0.0F : fastExp2((rowMax[r] - mNew) * scaleLog2);
                rowMax[r] = mNew;
                rowSum[r] *= rescale[r];
            }
        } else {
#pragma unroll
            for (int r = 0; r < kRows; ++r) rescale[r] = 1.0F;
        }
    }
    // updateWarp's second half: the scores to probabilities against the reference max, added
    // to the row sums.
    template <int kPLog2, int kCols>
    __device__ void exponentiateRows(float (&s)[kRows][kCols], float scaleLog2) {
#pragma unroll
        for (int r = 0; r < kRows; ++r) {
            // A row that has seen no key yet keeps max -inf; use 0 so that -inf - -inf never appears.
            float const mRef = rowMax[r] == -INFINITY ? 0.0F : rowMax[r] * scaleLog2;
            rowSum[r] += exponentiate(s[r], scaleLog2, mRef - static_cast<float>(kPLog2));
        }
    }

    // Final row sums across the quad; returns 1/sum (0 for a row with no key) and the LSE
    // in natural log units (-inf for a row with no key).
    template <int kPLog2 = 0>
    __device__ void finalize(float scale, float (&invSum)[kRows], float (&lse)[kRows]) {
#pragma unroll
        for (int r = 0; r < kRows; ++r) {
            float const sum = quadSum(rowSum[r]);
            bool const none = sum == 0.0F || rowMax[r] == -INFINITY;
            invSum[r] = none ? 0.0F : 1.0F / sum;
            // The sums hold 2^kPLog2 times the probabilities.
            lse[r] = none ? -INFINITY : rowMax[r] * scale + (logf(sum) - static_cast<float>(kPLog2) * 0.6931471805599453F);
        }
    }
};

}  // namespace fmha
