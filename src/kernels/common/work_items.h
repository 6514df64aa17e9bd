// The work items of a persistent launch (the Hopper family's TileShape::kPersistent): which
// row tiles, of which head and sequence, a CTA walks. Host and device code (the launch sizes
// its grid from it; the CPU tests check that the items cover every tile once).
#pragma once

#include <cstdint>

#include "params.h"

#if defined(__CUDACC__)
#define FMHA_HOST_DEVICE __host__ __device__
#else
#define FMHA_HOST_DEVICE
#endif

namespace fmha {

// A unit is one head (or pack-GQA head group) of one sequence; an item is one of its row
// tiles, or under a causal mask a pair of them, the unit's k-th highest and k-th lowest, so
// that every item holds about the same key tiles (rowTiles + 1) and CTAs taking items c,
// c + grid, ... get equal shares. Sections of p.persistUnits consecutive units (head fastest)
// follow each other; inside a section the items go step by step (the highest row tiles
// first) across the section's units, so that the section's K/V is reread from L2.
// clusterCtas > 1 (CTA pairs: 2): a cluster of that many CTAs takes each item, CTA r of the
// cluster the tiles of unit clusterCtas * u + r (the units of a cluster: neighbouring heads of
// one KV head, launchPersistent); units, unitsAll and sectionUnits then count clusters' units.
struct PersistentTiles {
    int32_t items;  // below 2^31 (heuristics.cpp: tileShapeFor)
    int32_t rowTiles, units, unitsAll, sectionUnits, perUnit, clusterCtas;
    bool paired;

    FMHA_HOST_DEVICE PersistentTiles(FmhaParams const& p, int blockM, int ctasPerItem = 1) {
        int64_t const rows = static_cast<int64_t>(p.maxSeqLenQ) << p.packLog2;
        rowTiles = static_cast<int32_t>((rows + blockM - 1) / blockM);
        clusterCtas = ctasPerItem > 1 ? ctasPerItem : 1;
        units = (p.numQHeads >> p.packLog2) / clusterCtas;
        unitsAll = units * p.batch;
        sectionUnits = p.persistUnits < unitsAll ? p.persistUnits : unitsAll;
        sectionUnits = sectionUnits > 1 ? sectionUnits : 1;
        paired = p.causal;
        perUnit = paired ? (rowTiles + 1) / 2 : rowTiles;
        items = unitsAll * perUnit;
    }

    // Row tile `half` (0, then 1 for the lower tile of a pair) of item w < items, for the
    // cluster's CTA `rank`: its row tile mBlock, unit (head group within the sequence) and
    // sequence b; false where the item has no such tile.
    FMHA_HOST_DEVICE bool decode(int w, int half, int* mBlock, int* unit, int* b, int rank = 0) const {
        unsigned const perSection = static_cast<unsigned>(sectionUnits) * static_cast<unsigned>(perUnit);
        unsigned const section = static_cast<unsigned>(w) / perSection;
        unsigned const r = static_cast<unsigned>(w) - section * perSection;
        unsigned const first = section * static_cast<unsigned>(sectionUnits);
        unsigned const left = static_cast<unsigned>(unitsAll) - first;
        unsigned const here = left < static_cast<unsigned>(sectionUnits) ? left : static_cast<unsigned>(sectionUnits);
        unsigned const step = r / here, u = first + (r - step * here);
        int const hi = rowTiles - 1 - static_cast<int>(step), lo = static_cast<int>(step);
        if (half == 1 && (!paired || lo >= hi)) return false;
        *mBlock = half == 0 ? hi : lo;
        *unit = static_cast<int>(u % static_cast<unsigned>(units)) * clusterCtas + rank;
        *b = static_cast<int>(u / static_cast<unsigned>(units));
        return true;
    }
};

}  // namespace fmha
