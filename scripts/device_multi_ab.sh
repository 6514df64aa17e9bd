#!/usr/bin/env bash
# Timing of several builds against one base on the GPU machine: every build over the same
# `fmha bench` argument strings, in rounds whose order rotates (base first, then the variants;
# reversed in odd rounds), so that the card's drift within a call falls on all alike; then,
# for each variant, bench/ab_summary.py of the base's runs against its own (device_ab.sh's
# summary: per row each side's median over the rounds and the variant's speed against the base).
#
# usage: device_multi_ab.sh ROUNDS BASE_DIR VARIANT_DIR... -- ARGS...
#   BASE_DIR, VARIANT_DIR   folders holding an `fmha` binary; a variant is named by its folder
#   ARGS                    each one `fmha bench` argument string, quoted
#   MULTI_ONLY_k="DIR ..."  (k: an argument string's index) the builds that run string k, where
#                           not all (a setting that leaves FP8 alone, say); the base always runs
#   STEP_LIMIT              seconds a run may take (default 400)
#   MULTI_FIRST_ROUND=R     number the rounds from R (default 0), so that a second invocation
#                           adds rounds to the first's: each summary takes every round in $OUT/runs
# Writes $OUT/runs/r<round>_<name>_<k>.json, $OUT/multi_ab.log (the runs' console output) and
# $OUT/ab_<base>_<variant>.txt per variant.
set -u
rounds=${1:?rounds}
shift
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "device_multi_ab.sh: ROUNDS must be a positive whole number" >&2; exit 2; }
dirs=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do dirs+=("$1"); shift; done
[ $# -gt 1 ] || { echo "device_multi_ab.sh: BASE_DIR VARIANT_DIR... -- ARGS..." >&2; exit 2; }
shift
[ ${#dirs[@]} -ge 2 ] || { echo "device_multi_ab.sh: a base and at least one variant" >&2; exit 2; }
for d in "${dirs[@]}"; do [ -x "$d/fmha" ] || { echo "device_multi_ab.sh: no fmha binary in $d" >&2; exit 2; }; done
name() { basename "$1"; }
names=$(for d in "${dirs[@]}"; do name "$d"; done | sort | uniq -d)
[ -z "$names" ] || { echo "device_multi_ab.sh: two builds named $names" >&2; exit 2; }
out=${OUT:-out}
mkdir -p "$out/runs"
limit=${STEP_LIMIT:-400}
status=0
first=${MULTI_FIRST_ROUND:-0}
[[ "$first" =~ ^[0-9]+$ ]] || { echo "device_multi_ab.sh: MULTI_FIRST_ROUND must be a whole number" >&2; exit 2; }
for ((r = first; r < first + rounds; ++r)); do
  k=0
  for args in "$@"; do
    only_var="MULTI_ONLY_$k"
    order=("${dirs[@]}")
    if ((r % 2 == 1)); then order=(); for ((i = ${#dirs[@]} - 1; i >= 0; --i)); do order+=("${dirs[$i]}"); done; fi
    for d in "${order[@]}"; do
      if [ -n "${!only_var:-}" ] && [ "$d" != "${dirs[0]}" ] && [[ " ${!only_var} " != *" $d "* ]]; then continue; fi
      echo "== round $r, $(name "$d"): fmha bench $args" >> "$out/multi_ab.log"
      # shellcheck disable=SC2086  # the argument string splits on purpose
      timeout -k 5 "$limit" "$d/fmha" bench $args --json "$out/runs/r${r}_$(name "$d")_$k.json" \
        >> "$out/multi_ab.log" 2>&1 || status=1
    done
    k=$((k + 1))
  done
done
base=$(name "${dirs[0]}")
for d in "${dirs[@]:1}"; do
  v=$(name "$d")
  tmp=$(mktemp -d)
  for f in "$out"/runs/r*_"$base"_*.json; do
    g=$(basename "$f" .json); round=${g%%_*}; k=${g##*_}
    [ -f "$out/runs/${round}_${v}_$k.json" ] || continue  # a string this variant did not run
    cp "$f" "$tmp/x_${round}_A_$k.json"
    cp "$out/runs/${round}_${v}_$k.json" "$tmp/x_${round}_B_$k.json"
  done
  python3 "$(dirname "$0")/../bench/ab_summary.py" --a "$base" --b "$v" "$tmp"/*.json > "$out/ab_${base}_$v.txt" 2>&1 || status=1
  cat "$out/ab_${base}_$v.txt"
  rm -rf "$tmp"
done
exit $status
