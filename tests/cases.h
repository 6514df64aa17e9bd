// The test matrix shared by the reference tests and the GPU tests: every mode x mask x dtype x
// head dim on random shapes, plus the shapes that have broken real kernels (STYLE.md).
#pragma once

#include <random>
#include <string>
#include <vector>

#include "problems.h"

namespace fmha::testing {

struct Case {
    std::string name;
    harness::ProblemSpec spec;
};

inline std::string dtypeTag(DataType t) { return t == DataType::kHALF ? "fp16" : t == DataType::kBF16 ? "bf16" : "fp8"; }

// Kernel head dims of a mode: 512 only in the paged modes.
inline std::vector<int> headDims(Mode m) {
    std::vector<int> d = {64, 72, 80, 96, 128, 256};
    if (m == Mode::kPaged || m == Mode::kPagedRagged) d.push_back(512);
    return d;
}

// scale < 1 shrinks the lengths (the reference tests run a float64 naive formula too).
inline std::vector<Case> matrixCases(double scale) {
    std::vector<Case> cases;
    auto len = [scale](int n) { return std::max(1, static_cast<int>(n * scale)); };
    DataType const types[] = {DataType::kHALF, DataType::kBF16, DataType::kFP8};
    uint64_t seed = 100;
    for (DataType t : types) {
        for (Mode m : {Mode::kLlm, Mode::kPaged, Mode::kPagedRagged, Mode::kVit}) {
            for (int d : headDims(m)) {
                struct Mask { std::string tag; bool causal; int window; bool bidir; };
                std::vector<Mask> masks = {{"causal", true, INT_MAX, false}, {"window", true, len(70), false}};
                if (m == Mode::kPaged) {
                    masks.push_back({"noncausal", false, INT_MAX, false});
                    masks.push_back({"bidir", true, INT_MAX, true});
                }
                if (m == Mode::kVit) masks = {{"full", false, INT_MAX, false}};
                for (auto const& mk : masks) {
                    Case c;
                    auto& s = c.spec;
                    s.mode = m;
                    s.dtype = t;
                    s.headDim = d;
                    s.numQHeads = d >= 256 ? 4 : 6;
                    s.numKVHeads = d >= 256 ? 2 : 3;
                    s.causal = mk.causal;
                    s.window = mk.window;
                    s.bidirectional = mk.bidir;
                    s.pageSize = (d % 3 == 0) ? 32 : 64;
                    s.seed = ++seed;
                    switch (m) {
                    case Mode::kLlm:
                    case Mode::kPaged:
                        s.lq = {len(173), len(173)};
                        s.lk = {len(301), len(190)};
                        break;
                    case Mode::kPagedRagged:
                        s.lq = {len(150), 0, len(37), 1};
                        s.lk = {len(260), len(40), len(37), len(129)};
                        break;
                    case Mode::kVit:
                        s.numKVHeads = s.numQHeads;
                        s.lq = {len(200), 0, len(77), 1};
                        s.lk = s.lq;
                        break;
                    }
                    c.name = std::string(modeName(m)) + "_" + dtypeTag(t) + "_d" + std::to_string(d) + "_" + mk.tag;
                    cases.push_back(c);
                }
            }
        }
    }
    return cases;
}

inline Case edge(std::string name, Mode m, int d, std::vector<int> lq, std::vector<int> lk, int hq = 4, int hkv = 4) {
    Case c;
    c.name = name;
    c.spec.mode = m;
    c.spec.headDim = d;
    c.spec.numQHeads = hq;
    c.spec.numKVHeads = hkv;
    c.spec.lq = std::move(lq);
    c.spec.lk = std::move(lk);
    return c;
}

inline std::vector<Case> edgeCases(double scale) {
    auto len = [scale](int n) { return std::max(1, static_cast<int>(n * scale)); };
    std::vector<Case> v;
    v.push_back(edge("llm_1x1", Mode::kLlm, 128, {1}, {1}));
    v.push_back(edge("llm_239x1", Mode::kLlm, 128, {239}, {1}));
    v.push_back(edge("llm_113x203", Mode::kLlm, 64, {113, 113}, {203, 150}));
    v.push_back(edge("llm_1023x1024", Mode::kLlm, 128, {len(1023)}, {len(1024)}, 2, 1));
    v.push_back(edge("llm_lk_lt_lq", Mode::kLlm, 64, {200, 200}, {100, 3}));
    v.push_back(edge("vit_113x113", Mode::kVit, 80, {113, 64, 1}, {113, 64, 1}));
    v.push_back(edge("vit_1023", Mode::kVit, 72, {len(1023)}, {len(1023)}, 2, 2));
    for (int ratio : {1, 4, 8, 7}) {
        v.push_back(edge("llm_gqa" + std::to_string(ratio), Mode::kLlm, 128, {77}, {190}, ratio * 2, 2));
        v.push_back(edge("ragged_gqa" + std::to_string(ratio), Mode::kPagedRagged, 64, {65, 3}, {200, 64},
                         ratio, 1));
    }
    // Mixed chunk lengths of chunked prefill, as a new user first called it: rows of the second
    // and third sequences were left unwritten (Hopper pack GQA; both families).
    for (int page : {64, 128}) {
        Case a = edge("ragged_mixed_window_p" + std::to_string(page), Mode::kPagedRagged, 128, {129, 64}, {900, 64}, 16, 2);
        a.spec.window = 255;
        a.spec.pageSize = page;
        v.push_back(a);
        Case b = edge("ragged_mixed_three_p" + std::to_string(page), Mode::kPagedRagged, 64, {77, 200, 3}, {1077, 200, 700},
                      12, 2);
        b.spec.pageSize = page;
        v.push_back(b);
    }
    for (int page : {16, 32, 64, 128, 256}) {
        Case c = edge("paged_page" + std::to_string(page), Mode::kPaged, 128, {97}, {len(700)}, 4, 2);
        c.spec.pageSize = page;
        v.push_back(c);
        Case r = edge("ragged_page" + std::to_string(page), Mode::kPagedRagged, 128, {40, 0, 129}, {len(600), 17, 129}, 4, 2);
        r.spec.pageSize = page;
        v.push_back(r);
    }
    for (int w : {0, 1, 63, 64, 65, 127}) {
        Case c = edge("llm_window" + std::to_string(w), Mode::kLlm, 64, {150}, {400});
        c.spec.window = w;
        v.push_back(c);
    }
    // Windows around the 32-key compute chunks of the 64-key tiles (D=80..128), also with
    // fewer keys than queries, where whole chunks lie outside every row of a warp.
    for (int w : {0, 31, 32, 33, 95}) {
        Case c = edge("llm_d128_window" + std::to_string(w), Mode::kLlm, 128, {150, 170}, {400, 90}, 4, 2);
        c.spec.window = w;
        v.push_back(c);
    }
    {
        Case c = edge("paged_bidir_d512", Mode::kPaged, 512, {130}, {300}, 2, 1);
        c.spec.bidirectional = true;
        c.spec.pageSize = 128;
        v.push_back(c);
        Case w = edge("paged_bidir_window", Mode::kPaged, 128, {150, 150}, {260, 150}, 4, 2);
        w.spec.bidirectional = true;
        w.spec.window = 20;
        v.push_back(w);
    }
    return v;
}

}  // namespace fmha::testing
