// The test matrix shared by the reference tests and the GPU tests: every mode x mask x dtype x
// head dim on random shapes, plus the shapes that have broken real kernels (STYLE.md).
#pragma once

#include <ostream>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "params.h"  // TileShape
#include "problems.h"

namespace fmha::testing {

struct Case {
    std::string name;
    harness::ProblemSpec spec;
};
// gtest prints a parameter by its case name.
inline void PrintTo(Case const& c, std::ostream* os) { *os << c.name; }

inline std::string dtypeTag(DataType t) { return t == DataType::kHALF ? "fp16" : t == DataType::kBF16 ? "bf16" : "fp8"; }

// The head dims of a mode, from the support table: 512 only in the paged modes.
inline std::vector<int> headDims(Mode m) { return harness::headDims(m == Mode::kPaged || m == Mode::kPagedRagged); }

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
    // FP8 input with BF16 output, in every mode and both families' head dims (512 runs the
    // portable family everywhere), split-KV's combine included.
    {
        auto bf16Out = [&](Case c, int pageSize = 64, int splits = 0) {
            c.spec.dtype = DataType::kFP8;
            c.spec.bf16Out = true;
            c.spec.pageSize = pageSize;
            c.spec.splits = splits;
            v.push_back(c);
        };
        bf16Out(edge("llm_fp8_bf16out_d128", Mode::kLlm, 128, {len(300)}, {len(700)}, 8, 2));
        bf16Out(edge("paged_fp8_bf16out_d72", Mode::kPaged, 72, {77, 77}, {200, 333}, 4, 2));
        bf16Out(edge("paged_fp8_bf16out_d72_split", Mode::kPaged, 72, {3, 1}, {len(2500), 700}, 8, 2), 16, 6);
        bf16Out(edge("paged_fp8_bf16out_split", Mode::kPaged, 128, {4, 4}, {len(3000), 900}, 8, 2), 128, 8);
        bf16Out(edge("paged_fp8_bf16out_d512", Mode::kPaged, 512, {33}, {200}, 2, 1), 32);
        bf16Out(edge("ragged_fp8_bf16out_d256", Mode::kPagedRagged, 256, {65, 3}, {200, 64}, 4, 2), 16);
        bf16Out(edge("vit_fp8_bf16out_d80", Mode::kVit, 80, {113, 64, 1}, {113, 64, 1}, 2, 2));
    }
    return v;
}


// Longer sequences for the multi-tile paths of the two tile configurations.
inline std::vector<Case> longCases() {
    std::vector<Case> v;
    for (DataType t : {DataType::kHALF, DataType::kBF16, DataType::kFP8})
        for (int d : {64, 128, 256}) {
            Case c = edge("llm_long_" + dtypeTag(t) + "_d" + std::to_string(d), Mode::kLlm, d, {1100}, {2300}, 4, 1);
            c.spec.dtype = t;
            v.push_back(c);
        }
    Case w = edge("paged_long_window", Mode::kPaged, 128, {900}, {2000}, 8, 2);
    w.spec.window = 500;
    v.push_back(w);
    return v;
}

// A long context with V of mean 1 (uniform in [0.5, 1.5]) and small scores, so that 64k keys
// share the weight: O is about 1, and a bias of O or of the LSE that grows with the key count
// (an accumulator that loses bits as it grows, the divisor summed otherwise than O) shows in the
// mean error, where V of mean 0 would hide it.
inline std::vector<Case> longContextCases() {
    std::vector<Case> v;
    for (DataType t : {DataType::kHALF, DataType::kFP8})
        for (int d : {64, 128, 256}) {
            Case c = edge("llm_64k_v_mean_1_" + dtypeTag(t) + "_d" + std::to_string(d), Mode::kLlm, d, {64}, {65536}, 2, 1);
            c.spec.dtype = t;
            c.spec.valueRange = 0.5F;
            c.spec.valueOffset = 1.0F;
            v.push_back(c);
        }
    // The Hopper family's other FP8 tiles, forced (each promotes O in chunks of its own width,
    // TileSm90::kPromoteCols; elsewhere the default tiles run).
    std::pair<TileShape, char const*> const shapes[] = {{TileShape::kOneWarpGroup, "onewg"},
                                                        {TileShape::kWideKeys, "widekeys"},
                                                        {TileShape::kThreeWarpGroups, "threewg"},
                                                        {TileShape::kPersistent, "persistent"}};
    for (auto const& [shape, tag] : shapes) {
        Case c = edge(std::string("llm_64k_v_mean_1_fp8_d64_") + tag, Mode::kLlm, 64, {64}, {65536}, 2, 1);
        c.spec.dtype = DataType::kFP8;
        c.spec.valueRange = 0.5F;
        c.spec.valueOffset = 1.0F;
        c.spec.tileShape = static_cast<int>(shape);
        v.push_back(c);
    }
    return v;
}

// Scores spread wide (inputs in [-3, 3] and [-8, 8]): a row's max keeps rising over the key
// sweep, by less than 2^8 between chunks (the portable kernel's softmax reference then lags
// it, probabilities above 1) and by more (the reference moves mid-sequence).
inline std::vector<Case> wideScoreCases() {
    auto wide = [](std::string name, Mode m, int d, float range, DataType t) {
        Case c = edge("wide_" + name + "_" + dtypeTag(t) + "_d" + std::to_string(d) + "_r" +
                          std::to_string(static_cast<int>(range)),
                      m, d, {300}, {2300}, 4, 2);
        c.spec.dtype = t;
        c.spec.valueRange = range;
        return c;
    };
    std::vector<Case> v;
    for (int d : {64, 80, 128, 256})
        for (float range : {3.0F, 8.0F}) v.push_back(wide("llm", Mode::kLlm, d, range, DataType::kHALF));
    v.push_back(wide("llm", Mode::kLlm, 128, 8.0F, DataType::kBF16));
    v.push_back(wide("llm", Mode::kLlm, 128, 8.0F, DataType::kFP8));
    Case p = wide("paged_noncausal_p16", Mode::kPaged, 128, 8.0F, DataType::kHALF);
    p.spec.pageSize = 16;
    p.spec.causal = false;
    v.push_back(p);
    Case w = wide("vit", Mode::kVit, 96, 8.0F, DataType::kHALF);
    w.spec.lq = {700, 1500};
    w.spec.lk = w.spec.lq;
    w.spec.numKVHeads = 4;
    v.push_back(w);
    return v;
}

// More work tiles (query tile x head x sequence) than the GPU has SMs, with ragged, short
// and empty sequences among them: several waves of CTAs, many pipelines ending early.
inline std::vector<Case> manyTileCases() {
    std::vector<Case> v;
    auto lengths = [](int n, int lo, int hi, uint32_t seed) {
        std::vector<int> out;
        for (int i = 0; i < n; ++i) {
            seed = seed * 1664525u + 1013904223u;
            out.push_back(lo + static_cast<int>((seed >> 8) % static_cast<uint32_t>(hi - lo + 1)));
        }
        return out;
    };
    Case a = edge("many_llm_causal_d128", Mode::kLlm, 128, std::vector<int>(40, 200), lengths(40, 200, 420, 1), 4, 2);
    v.push_back(a);
    Case b = edge("many_paged_window_d64_p16", Mode::kPaged, 64, std::vector<int>(40, 190), lengths(40, 190, 600, 2),
                  4, 1);
    b.spec.pageSize = 16;
    b.spec.window = 150;
    v.push_back(b);
    Case c = edge("many_paged_bidir_d128_p256", Mode::kPaged, 128, std::vector<int>(24, 260), lengths(24, 260, 700, 3),
                  4, 4);
    c.spec.pageSize = 256;
    c.spec.bidirectional = true;
    v.push_back(c);
    Case d = edge("many_ragged_gqa7_d64", Mode::kPagedRagged, 64, lengths(48, 0, 200, 4), lengths(48, 200, 500, 5), 7, 1);
    d.spec.pageSize = 64;
    v.push_back(d);
    Case e = edge("many_vit_d128", Mode::kVit, 128, {}, {}, 4, 4);
    e.spec.lq = lengths(60, 0, 300, 6);
    e.spec.lk = e.spec.lq;
    v.push_back(e);
    Case f = edge("many_paged_noncausal_bf16_d256", Mode::kPaged, 256, std::vector<int>(40, 140), lengths(40, 1, 300, 7),
                  4, 4);
    f.spec.dtype = DataType::kBF16;
    f.spec.causal = false;
    f.spec.pageSize = 128;
    v.push_back(f);
    // The portable D=128 kernel over contiguous KV walks short causal launches in sections of
    // (head, sequence) units, about 16 MiB of K/V each: here about 65 units of 144 (in the
    // first case about 77 of 160), so the walk crosses sections and ends in a partial one.
    // FP8 runs it under either dispatch, the first case only with FMHA_KERNEL_FAMILY=portable.
    Case g = edge("many_llm_causal_fp8_d128", Mode::kLlm, 128, std::vector<int>(36, 300), lengths(36, 300, 1000, 8), 4,
                  2);
    g.spec.dtype = DataType::kFP8;
    v.push_back(g);
    return v;
}

// Pack GQA (Hopper family): the query heads of one KV head in one tile of rows. Short chunks
// pack by default; forcing it covers long, multi-tile sequences (causal diagonals and window
// edges inside packed tiles) too.
struct PackCase {
    Case c;
    int setting;  // setPackGqa: -1 default, 1 always, 0 never
    int packed;   // heads packed where the Hopper family runs (1 elsewhere)
};
inline void PrintTo(PackCase const& pc, std::ostream* os) { *os << pc.c.name; }

inline std::vector<PackCase> packGqaCases() {
    std::vector<PackCase> cases;
    auto add = [&](Case c, int setting, int packed) { cases.push_back({std::move(c), setting, packed}); };
    add(edge("llm_hg4", Mode::kLlm, 128, {40}, {300}, 8, 2), -1, 4);
    add(edge("llm_hg8_one_row", Mode::kLlm, 64, {1, 1}, {129, 64}, 16, 2), -1, 8);
    Case w = edge("llm_hg2_window_d256", Mode::kLlm, 256, {33}, {500}, 4, 2);
    w.spec.window = 100;
    add(w, -1, 2);
    Case p16 = edge("paged_hg4_p16", Mode::kPaged, 128, {50, 50}, {600, 300}, 8, 2);
    p16.spec.pageSize = 16;
    p16.spec.dtype = DataType::kBF16;
    add(p16, -1, 4);
    Case nc = edge("paged_hg16_noncausal", Mode::kPaged, 128, {8}, {1000}, 16, 1);
    nc.spec.causal = false;
    add(nc, -1, 16);
    Case bd = edge("paged_hg4_bidir", Mode::kPaged, 64, {60, 60}, {400, 250}, 4, 1);
    bd.spec.bidirectional = true;
    add(bd, -1, 4);
    add(edge("ragged_hg8", Mode::kPagedRagged, 128, {1, 17, 0, 90}, {300, 200, 50, 700}, 16, 2), -1, 8);
    add(edge("ragged_hg4_d80", Mode::kPagedRagged, 80, {30, 5}, {200, 90}, 4, 1), -1, 4);
    add(edge("llm_hg4_forced_long", Mode::kLlm, 128, {300, 300}, {700, 333}, 8, 2), 1, 4);
    Case fw = edge("paged_hg8_forced_window", Mode::kPaged, 64, {200}, {900}, 8, 1);
    fw.spec.window = 300;
    add(fw, 1, 8);
    // One KV head (MQA): groups of 32 and 64 packed whole into a row tile, decode steps (a long
    // history split into parts, one too short to split, one key) and two queries a sequence.
    Case m32 = edge("paged_hg32_mqa_decode", Mode::kPaged, 128, {1}, {6000, 70, 1}, 32, 1);
    m32.spec.pageSize = 128;
    add(m32, -1, 32);
    Case m32q = edge("paged_hg32_two_queries", Mode::kPaged, 128, {2}, {1500, 300}, 32, 1);
    m32q.spec.pageSize = 64;
    m32q.spec.dtype = DataType::kBF16;
    add(m32q, -1, 32);
    Case m64 = edge("paged_hg64_decode", Mode::kPaged, 128, {1}, {3000, 500}, 64, 1);
    m64.spec.pageSize = 128;
    add(m64, -1, 64);
    add(edge("ragged_hg32", Mode::kPagedRagged, 128, {1, 2, 0}, {900, 400, 30}, 32, 1), -1, 32);
    add(edge("llm_hg4_off", Mode::kLlm, 128, {40}, {300}, 8, 2), 0, 1);
    add(edge("llm_hg6_not_pow2", Mode::kLlm, 128, {20}, {300}, 12, 2), -1, 1);
    Case f8 = edge("llm_hg4_fp8", Mode::kLlm, 128, {40}, {300}, 8, 2);
    f8.spec.dtype = DataType::kFP8;
    add(f8, -1, 4);  // FP8 at D=128 runs in the Hopper family too (the portable one never packs)
    return cases;
}

// Split-KV with forced part counts (FmhaRunner::setSplitKv): decode steps and short chunks
// over long and short histories, sequences with fewer tiles than parts (and none), every mask
// the paged modes take, each dtype, page sizes, pack GQA and several row tiles.
inline std::vector<Case> splitKvCases() {
    std::vector<Case> v;
    auto add = [&](Case c, int splits, DataType t, int page) {
        c.spec.splits = splits;
        c.spec.dtype = t;
        c.spec.pageSize = page;
        c.name += "_s" + std::to_string(splits) + "_" + dtypeTag(t);
        v.push_back(std::move(c));
    };
    add(edge("paged_decode_d128_hg4", Mode::kPaged, 128, {1}, {3000, 17, 0, 700}, 8, 2), 8, DataType::kHALF, 16);
    add(edge("paged_decode_d128_hg32", Mode::kPaged, 128, {1}, {2500, 9, 0, 640}, 32, 1), 8, DataType::kHALF, 64);
    Case w = edge("paged_window_d64", Mode::kPaged, 64, {4}, {2500, 5}, 4, 4);
    w.spec.window = 100;
    add(w, 3, DataType::kBF16, 64);
    Case nc = edge("paged_noncausal_d256", Mode::kPaged, 256, {8}, {1500, 300}, 4, 2);
    nc.spec.causal = false;
    add(nc, 64, DataType::kFP8, 256);
    Case bd = edge("paged_bidir_d80", Mode::kPaged, 80, {6}, {900, 1200}, 4, 1);
    bd.spec.bidirectional = true;
    add(bd, 5, DataType::kHALF, 32);
    add(edge("paged_two_row_tiles_d128", Mode::kPaged, 128, {200}, {2000}, 4, 4), 4, DataType::kHALF, 128);
    add(edge("paged_one_key_d128", Mode::kPaged, 128, {1}, {1}, 4, 4), 64, DataType::kHALF, 16);
    add(edge("paged_d512", Mode::kPaged, 512, {2}, {1000, 50}, 2, 1), 7, DataType::kBF16, 64);
    Case nl = edge("paged_no_lse_d96", Mode::kPaged, 96, {3}, {1700}, 6, 2);
    nl.spec.withLse = false;
    add(nl, 2, DataType::kHALF, 16);
    add(edge("ragged_decode_mix_d128_hg8", Mode::kPagedRagged, 128, {1, 3, 70, 0}, {2000, 40, 900, 300}, 16, 2), 13,
        DataType::kHALF, 32);
    Case rw = edge("ragged_window_d96", Mode::kPagedRagged, 96, {8, 1}, {1800, 2600}, 4, 2);
    rw.spec.window = 37;
    add(rw, 2, DataType::kBF16, 16);
    add(edge("ragged_short_history_d128", Mode::kPagedRagged, 128, {2, 5}, {4000, 1}, 8, 1), 32, DataType::kFP8, 64);
    add(edge("ragged_d64_hg2", Mode::kPagedRagged, 64, {1, 1, 1}, {6000, 2, 129}, 8, 4), 16, DataType::kBF16, 256);
    return v;
}

// One problem per (mode, head dim, 16-bit dtype) that the Hopper family covers, for the
// family-agreement test.
inline std::vector<Case> familyCases() {
    std::vector<Case> cases;
    for (Mode m : {Mode::kLlm, Mode::kPaged, Mode::kPagedRagged, Mode::kVit})
        for (int d : {64, 80, 128, 256})
            for (DataType t : {DataType::kHALF, DataType::kBF16}) {
                bool const vit = m == Mode::kVit;
                Case c = edge(std::string(modeName(m)) + "_" + dtypeTag(t) + "_d" + std::to_string(d), m, d, {300, 130},
                              {vit ? 300 : 700, vit ? 130 : 200}, 4, vit ? 4 : 2);
                c.spec.dtype = t;
                cases.push_back(c);
            }
    // FP8 at D=72 (8-byte cp.async pieces in the Hopper family) and D=80 (TMA), every mode.
    for (Mode m : {Mode::kLlm, Mode::kPaged, Mode::kPagedRagged, Mode::kVit})
        for (int d : {72, 80}) {
            bool const vit = m == Mode::kVit;
            Case c = edge(std::string(modeName(m)) + "_fp8_d" + std::to_string(d), m, d, {300, 130},
                          {vit ? 300 : 700, vit ? 130 : 200}, 4, vit ? 4 : 2);
            c.spec.dtype = DataType::kFP8;
            c.spec.pageSize = 16;
            cases.push_back(c);
        }
    return cases;
}

}  // namespace fmha::testing
