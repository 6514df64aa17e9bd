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

// Device counters for FmhaParams::skipStats (FmhaParams::kSkipStats of them), set by tests and
// the benchmark (null: none, the default); returns the previous pointer. While they are set,
// skip-softmax calls on the Hopper family launch their instance's counting kernel.
unsigned long long* setSkipStats(unsigned long long* counters);

// Whether the Hopper family's kernels are launched as programmatic dependents of the kernel
// before them on the stream (kernels/common/launch.h: their blocks are scheduled while that
// kernel's last blocks run, and wait for it before touching memory): yes, unless
// FMHA_DEPENDENT_LAUNCH=0 in the environment (measurement).
bool dependentLaunch();

// The L2 eviction priority of a Hopper launch's K/V loads (its TMA cache hint). kFirst where every
// K/V tile is read by one CTA (of each split-KV part): one row tile of blockM rows holds every
// query row of a KV head (its query heads packed whole, every query of the longest sequence),
// so that streaming the cache does not push out what the launch reads again (the parts' partial
// rows); kLast where the row tiles of other CTAs read the tile again. FMHA_KV_HINT=last, first
// or normal in the environment sets one for every launch (measurement).
enum class KvCachePriority { kLast, kFirst, kNormal };
KvCachePriority kvCachePriority(FmhaParams const& p, int blockM);

// Whether the Hopper family's pairable launches (sm90 TileSm90::kPairable, contiguous or paged KV,
// persistent or not; neighbouring heads of one KV head's group) run as CTA pairs that share their K/V loads: yes,
// unless FMHA_KV_PAIRS=0 in the environment (measurement) or a test sets 0 here (-1:
// automatic); returns the previous setting. noteKvPairs: what the launch on this thread chose
// (the launch record's pairedKv), reset before each launch.
bool kvPairs();
int setKvPairs(int mode);
void noteKvPairs(bool paired);
bool lastKvPairs();
// The CTAs a cluster of a pairable launch (gridY: its tiles of 1 << p.packLog2 query heads a
// sequence, grid.y or a persistent launch's units; kvTma: the launch has K/V TMA descriptors): 2
// where neighbours 2k, 2k + 1 are query heads of one KV head and pairs are on (kvPairs), else 1.
unsigned kvClusterCtas(FmhaParams const& p, bool kvTma, unsigned gridY);

// The Hopper tile shape for p (filled params; the shapes built: dispatch.h): the default, or
// one that measured faster on problems like p. FMHA_TILE_SHAPE=default / wide-keys /
// one-warpgroup / persistent / three-warpgroups in the environment forces one where it is built (measurement;
// persistent not under a bidirectional mask); tests set it here (-1: automatic); returns the
// previous setting.
TileShape tileShapeFor(FmhaParams const& p);
int setTileShape(int shape);

// The packLog2 for p on a family whose tiles hold blockM rows, under the setting above.
int choosePackLog2(FmhaParams const& p, int blockM);

// The portable walk's section size for p (FmhaParams::walkUnits): 1 (no walk) unless p is a
// causal launch without window of at most 512 queries.
int32_t walkUnits(FmhaParams const& p);

// Fills p.packLog2, p.walkUnits and p.skipStats for the kernel ops will launch.
void planLaunch(KernelOps const& ops, FmhaParams* p);

// CTAs of ops's kernel one SM holds at once, on a device whose blocks get smemPerBlock bytes.
int residentCtas(KernelOps const& ops, int smemPerBlock);

// The automatic split-KV part count for p (after planLaunch) on a device of smCount SMs:
// 1 unless p is a paged launch without skip-softmax whose grid leaves SMs idle; otherwise
// the fewest parts whose last wave is within 85% of the best fill (one-warpgroup tiles: of one
// CTA an SM), with at most twice the device's resident CTAs in all (so the workspace bound of
// splitRowsBound holds) and parts of at least kMinTilesPerPart key tiles of the cache capacity.
int32_t splitParts(FmhaParams const& p, KernelOps const& ops, int smCount, int smemPerBlock);
constexpr int kMinTilesPerPart = 4;

// CTAs of p's unsplit launch on ops's kernel.
int64_t unsplitCtas(FmhaParams const& p, KernelOps const& ops);

// Workspace rows (one per part, query row and head) that any automatic choice of
// splitParts can need on ops's kernel: parts * ctas <= 2 * resident CTAs, and a CTA holds
// at most blockM rows.
int64_t splitRowsBound(KernelOps const& ops, int smCount, int smemPerBlock);

// Whether a launch of p in `parts` split-KV parts on ops's kernel merges them in the kernel
// (KernelOps::combinesSplits: the last part of each row tile merges the tile's rows with its
// consumer warps) rather than with the combine kernel: where rows a warp times batches of 8
// parts is at most 2 (measured; since a row's first 16 parts load together this counts more
// round trips than there are, and re-measured it still holds). FMHA_SPLIT_MERGE=kernel or
// combine forces one or the other (measurement).
bool mergeInKernel(FmhaParams const& p, KernelOps const& ops, int64_t parts);

}  // namespace fmha::detail
