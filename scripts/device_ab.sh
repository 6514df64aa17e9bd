#!/usr/bin/env bash
# A/B timing on the GPU machine: two builds (or two settings of one build) over the same
# `fmha bench` rows, in interleaved rounds (A then B in even rounds, B then A in odd ones, so
# that the card's drift within a call falls on both sides alike), then bench/ab_summary.py:
# per row each side's median over the rounds and B's speed against A's.
#
# usage: device_ab.sh A_DIR B_DIR ROUNDS ARGS...
#   A_DIR, B_DIR   folders holding an `fmha` binary (the same folder twice for one build)
#   ARGS           each one `fmha bench` argument string, quoted: "--quick --row 21 --dtype bf16",
#                  "--decode", "--skip-sweep --skip-factors 1e-30,1,2,16"
#   AB_ENV_A, AB_ENV_B   environment assignments for one side ("FMHA_TILE_SHAPE=three-warpgroups")
#   AB_LABEL       names the output files (default ab)
# Writes $OUT/<label>_r<round>_<side>_<k>.json (one `fmha bench --json` a run) and
# $OUT/<label>.txt (the summary); the runs' console output goes to $OUT/<label>.log.
set -u
a=${1:?A folder}
b=${2:?B folder}
rounds=${3:?rounds}
shift 3
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "device_ab.sh: ROUNDS must be a positive whole number, not '$rounds'" >&2; exit 2; }
[ $# -gt 0 ] || { echo "device_ab.sh: no fmha bench arguments" >&2; exit 2; }
for dir in "$a" "$b"; do [ -x "$dir/fmha" ] || { echo "device_ab.sh: no fmha binary in $dir" >&2; exit 2; }; done
out=${OUT:-out}
label=${AB_LABEL:-ab}
mkdir -p "$out"
rm -f "$out/${label}"_r*_[AB]_*.json "$out/$label.log"  # an earlier A/B of this label must not join the summary
limit=${STEP_LIMIT:-400}
status=0
one() {  # one SIDE ROUND K ARGS: a run of side A or B
  local side=$1 round=$2 k=$3 args=$4 dir env
  if [ "$side" = A ]; then dir=$a; env=${AB_ENV_A:-}; else dir=$b; env=${AB_ENV_B:-}; fi
  echo "== round $round, $side ($dir${env:+, $env}): fmha bench $args" >> "$out/$label.log"
  # shellcheck disable=SC2086  # the argument string and the assignments split on purpose
  env $env timeout -k 5 "$limit" "$dir/fmha" bench $args --json "$out/${label}_r${round}_${side}_$k.json" \
    >> "$out/$label.log" 2>&1 || status=1
}
for ((r = 0; r < rounds; ++r)); do
  k=0
  for args in "$@"; do
    if ((r % 2 == 0)); then one A "$r" "$k" "$args"; one B "$r" "$k" "$args"; else one B "$r" "$k" "$args"; one A "$r" "$k" "$args"; fi
    k=$((k + 1))
  done
done
python3 "$(dirname "$0")/../bench/ab_summary.py" --a "$a${AB_ENV_A:+ ($AB_ENV_A)}" --b "$b${AB_ENV_B:+ ($AB_ENV_B)}" \
  "$out/${label}"_r*_[AB]_*.json | tee "$out/$label.txt" || status=1
exit $status
