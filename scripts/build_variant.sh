#!/usr/bin/env bash
# Builds a measurement variant of a finished build tree in a minute or two: a new tree
# configured like BASE with extra CUDA flags (a -D setting of src/kernels/sm90/tile_sm90.h, say),
# BASE's objects copied in and marked up to date, and only the kernel instances whose object
# names match REGEX recompiled with the flags; then `fmha` and `fmha_gpu_tests` linked. Only
# for settings that leave every other instance's code unchanged (the caller's claim:
# scripts/sass_diff.sh BASE NEW shows which instances differ). For device measurements, not CI.
# usage: scripts/build_variant.sh BASE_BUILD NEW_BUILD "CUDA_FLAGS" REGEX
#   e.g. scripts/build_variant.sh build build-s "-DFMHA_SM90_SLACK8=0" '_(fp16|bf16)_.*_skip\.cu\.o$'
set -euo pipefail
base=${1:?base build dir}
new=${2:?new build dir}
flags=${3?CUDA flags}
regex=${4:?instance object regex}
src="$(cd "$(dirname "$0")/.." && pwd)"
# (a value CMake wrote with leading or trailing blanks is quoted in the cache: the quotes go)
cache() { sed -n "s/^$1:[A-Z]*=//p" "$base/CMakeCache.txt" | sed "s/^'\(.*\)'\$/\1/"; }
[ -f "$base/CMakeCache.txt" ] || { echo "build_variant.sh: $base is not a configured build tree" >&2; exit 2; }
rm -rf "$new"
cfg=$(mktemp)
cmake -S "$src" -B "$new" -DCMAKE_BUILD_TYPE="$(cache CMAKE_BUILD_TYPE)" -DFMHA_CUDA_ARCHS="$(cache FMHA_CUDA_ARCHS)" \
  "-DCMAKE_CUDA_FLAGS=$(cache CMAKE_CUDA_FLAGS) $flags" > "$cfg" 2>&1 || { cat "$cfg"; exit 1; }
rm -f "$cfg"
# BASE's objects, newer than everything the new tree's rules compare them with (sources,
# flags.make), so that make keeps them; then the matching instances removed to be rebuilt.
(cd "$base" && find . -path '*CMakeFiles*' -name '*.o') | while read -r o; do
  mkdir -p "$new/$(dirname "$o")"
  cp "$base/$o" "$new/$o"
done
sleep 1
find "$new" -path '*CMakeFiles*' -name '*.o' -exec touch {} +
n=0
for o in "$new"/CMakeFiles/fmha_kernels*.dir/generated/inst/*.o; do
  if basename "$o" | grep -qE "$regex"; then rm "$o"; n=$((n + 1)); fi
done
[ "$n" -gt 0 ] || { echo "build_variant.sh: no instance object matches '$regex'" >&2; exit 2; }
echo "$new: $n instances recompiled with '$flags'"
# A BASE that is itself a variant passes its flags on: say which, so that no setting rides along unseen.
inherited=$(cache CMAKE_CUDA_FLAGS)
[ -z "${inherited// /}" ] || echo "build_variant.sh: BASE's CUDA flags are in the new tree too: '$inherited'" >&2
cmake --build "$new" -j"$(nproc)" --target fmha_cli fmha_gpu_tests > "$new/build_variant.log" 2>&1 ||
  { tail -20 "$new/build_variant.log"; exit 1; }
grep -oE "function '[^']+', [0-9]+ bytes spill stores, [0-9]+ bytes spill loads" "$new/build_variant.log" || true
