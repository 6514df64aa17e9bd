#!/usr/bin/env bash
# Runs on the GPU machine over binaries built elsewhere: GPU tests, compute-sanitizer,
# `fmha run`, and the benchmark with the cuDNN/FA2 comparison. Logs go to $OUT (or ./out).
# usage: device_check.sh BIN_DIR [tests] [capped] [fuzz] [fuzz-memcheck] [sass] [memcheck] [memcheck-portable]
#                          [racecheck] [synccheck] [racecheck-portable] [run] [bench|quickbench] [portbench] [decode] [splits] [fa3-splits] [skip] [ncu] [ncu-decode]
#                          [python] [tables]
# capped: the GPU suite under the shared-memory budgets of the 99 KB and 163 KB GPU classes
# (FMHA_SMEM_BUDGET), so that their kernel configurations run here. fuzz: FUZZ_CASES (default
# 20000) cases of `fmha fuzz` in 8 parallel shards, valid and malformed metadata, then
# FUZZ_CAP_CASES (default 2000) under each capped budget. fuzz-memcheck: FUZZ_MEMCHECK_CASES (default 500) under memcheck.
# memcheck, memcheck-portable: the whole GPU suite under memcheck in MEMCHECK_SHARDS (default 8)
# gtest shards run at once (one process took longer than a call; six shards ran 298 tests in 270 s on
# an H100); a shard that does not finish within STEP_LIMIT fails the step.
# decode: `fmha bench --decode` (automatic split-KV) and, where the fa3-fwd wheel is at
# FA3_WHEEL (default devbin/whl/fa3_fwd-0.0.3-*.whl), bench/decode_peers.py with FA3 and cuDNN.
# splits: decode rows SPLIT_ROWS at forced split-KV part counts SPLIT_COUNTS (0: the heuristic's).
# fa3-splits: FA3 alone on decode rows FA3_SPLIT_ROWS at forced num_splits FA3_SPLIT_COUNTS.
# ncu-decode: one launch of ours, FA3 and cuDNN on decode rows NCU_DECODE_ROWS, memory sections.
# skip: the skip-softmax sweeps in SKIP_DTYPES at SKIP_FACTORS, JSON and PERF's table rows.
# python: the wheel in PY_WHEEL (default devbin/wheel, from `pip wheel . -w devbin/wheel`) installed
# into a folder on PYTHONPATH beside the machine's PyTorch (with the pytest wheels there too,
# where the machine has no pytest), then python/tests and examples/python_example.py against
# the installed package.
# tables: the quick sweep in FP16, BF16 and FP8 with cuDNN and FA2 (compare_sdpa.py) and FA3
# BF16/FP8 (peers_fa3.py at FA3_PEERS, default devbin/peers_fa3.py, over the wheel at FA3_WHEEL),
# then bench/perf_tables.py: docs/PERF.md's tables and plot (FP16, every peer) from one call.
# ncu profiles the quick-sweep rows named in NCU_ROWS (indices; default "1 5 13"), one
# kernel launch each, with the Hopper family and (row 5) the portable one. ROUNDS=N (N > 1)
# times every benchmark row N times, ours and SDPA in turn (compare_sdpa.py --rounds), and
# every decode row, ours, FA3 and cuDNN in turn (decode_peers.py --rounds).
# LAUNCHES=K sets the launches a timed sample (fmha bench --launches; SDPA follows the rows).
set -u
bin=${1:?binary folder}
shift
# fmha and fmha_gpu_tests may come xz-compressed (about 135 MB each, 15 MB compressed, against a
# device call's 64 MiB carry): unpacked beside themselves once.
for f in "$bin/fmha.xz" "$bin/fmha_gpu_tests.xz"; do
  if [ -f "$f" ] && [ ! -f "${f%.xz}" ]; then xz -d -k "$f" && chmod +x "${f%.xz}"; fi
done
out=${OUT:-out}
mkdir -p "$out"
commit=$(cat "$bin/COMMIT" 2>/dev/null || echo unknown)
status=0
step() { echo "== $*"; }
# A hung kernel (a pipeline that never completes) must not eat the whole call: every GPU
# command runs under a limit, in seconds (STEP_LIMIT, default 400).
limit=${STEP_LIMIT:-400}
t() { timeout -k 5 "$limit" "$@"; }
rounds=""
[ "${ROUNDS:-1}" -gt 1 ] && rounds="--rounds $ROUNDS --fmha $bin/fmha"
launches=""
[ -n "${LAUNCHES:-}" ] && launches="--launches $LAUNCHES"
# sanitize TOOL LOG FILTER: one compute-sanitizer tool over a subset of the GPU tests.
sanitize() {
  t compute-sanitizer --tool "$1" --error-exitcode 9 "$bin/fmha_gpu_tests" --gtest_brief=1 --gtest_filter="$3:-*DeathTest*:ErrorPaths.*" \
    > "$out/$2.log" 2>&1 || status=1
  grep -E "RACECHECK SUMMARY|ERROR SUMMARY|^\[  (PASSED|FAILED)|tests ran" "$out/$2.log" | tail -5
}
# memcheckShards LOG [ENV=VALUE...]: the GPU suite under memcheck in $MEMCHECK_SHARDS gtest shards at
# once (LOG_0.log ...), the deliberate-error tests left out; each shard's summary printed.
memcheckShards() {
  local log=$1 n=${MEMCHECK_SHARDS:-8} s
  shift
  for s in $(seq 0 $((n - 1))); do
    t env "$@" GTEST_TOTAL_SHARDS=$n GTEST_SHARD_INDEX=$s compute-sanitizer --tool memcheck \
      --error-exitcode 9 "$bin/fmha_gpu_tests" --gtest_brief=1 --gtest_filter='-*DeathTest*:ErrorPaths.*' \
      > "$out/${log}_$s.log" 2>&1 &
  done
  wait
  for s in $(seq 0 $((n - 1))); do
    echo "-- shard $s of $n"
    grep -E "ERROR SUMMARY|^\[  (PASSED|FAILED)|tests ran" "$out/${log}_$s.log" | tail -3
    if ! grep -q "ERROR SUMMARY: 0 errors" "$out/${log}_$s.log" || grep -q "FAILED" "$out/${log}_$s.log"; then
      echo "shard $s: errors, failures, or not finished within ${limit} s"
      status=1
    fi
  done
}
# At most 8 files come back: the benchmark artefacts stay, every log goes into one archive,
# after each step (a call cut short still returns what finished).
logdir=$(mktemp -d)
# An earlier invocation's archive in the same $OUT is kept: its logs join this one's.
[ -f "$out/logs.tgz" ] && tar xzf "$out/logs.tgz" -C "$logdir"
pack() {
  for f in $(cd "$out" && ls | grep -vE '^(bench\.json|bench\.md|bench\.png|bench_portable\.json|bench_portable\.md|decode\.json|decode\.md|tables\.tgz|logs\.tgz)$'); do
    mv "$out/$f" "$logdir/"
  done
  tar czf "$out/logs.tgz" -C "$logdir" .
}
# unpackFa3: the fa3-fwd wheel at FA3_WHEEL unpacked into $fa3, once an invocation; fails
# (and leaves $fa3 empty) where there is no wheel.
fa3=""
unpackFa3() {
  [ -n "$fa3" ] && return 0
  local wheel
  wheel=$(ls ${FA3_WHEEL:-devbin/whl/fa3_fwd-0.0.3-*.whl} 2>/dev/null | head -1)
  [ -n "$wheel" ] || return 1
  fa3=$(mktemp -d)
  python3 -m zipfile -e "$wheel" "$fa3"
}
for what in "$@"; do
  pack
  case $what in
    tests)
      step "GPU tests"
      nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$out/smi.txt"
      "$bin/fmha" info | tee "$out/info.txt"
      t "$bin/fmha_gpu_tests" --gtest_brief=1 > "$out/gpu_tests.log" 2>&1 || status=1
      echo "-- default dispatch (Hopper family where it covers the shape)"
      grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED|tests ran|test seed|Hopper family" "$out/gpu_tests.log" | head -40
      echo "-- FMHA_KERNEL_FAMILY=portable"
      FMHA_KERNEL_FAMILY=portable t "$bin/fmha_gpu_tests" --gtest_brief=1 > "$out/gpu_tests_portable.log" 2>&1 || status=1
      grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED|tests ran|test seed" "$out/gpu_tests_portable.log" | head -40
      ;;
    capped)
      for cap in 101376 166912; do
        step "GPU suite, shared-memory budget capped at $cap bytes"
        FMHA_SMEM_BUDGET=$cap t "$bin/fmha_gpu_tests" --gtest_brief=1 > "$out/gpu_tests_cap$cap.log" 2>&1 || status=1
        grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED|tests ran" "$out/gpu_tests_cap$cap.log" | head -20
      done
      ;;
    fuzz)
      n=${FUZZ_CASES:-20000}
      shard=$(( (n + 7) / 8 ))
      step "fmha fuzz: $n valid cases and $n malformed, 8 shards each"
      for kind in valid malformed; do
        flag=""; [ $kind = malformed ] && flag="--malformed"
        for s in 0 1 2 3 4 5 6 7; do
          t "$bin/fmha" fuzz --seed 1 --start $((s * shard)) --cases $shard $flag > "$out/fuzz_${kind}_$s.log" 2>&1 &
        done
        wait
        for s in 0 1 2 3 4 5 6 7; do tail -1 "$out/fuzz_${kind}_$s.log"; grep -A1 "FAIL" "$out/fuzz_${kind}_$s.log" | head -4; done
        grep -q FAIL "$out"/fuzz_${kind}_*.log && status=1
      done
      nc=${FUZZ_CAP_CASES:-2000}
      for cap in 101376 166912; do
        step "fmha fuzz under a $cap-byte budget: $nc cases"
        for s in 0 1 2 3; do
          FMHA_SMEM_BUDGET=$cap t "$bin/fmha" fuzz --seed 2 --start $((s * nc / 4)) --cases $((nc / 4)) \
            > "$out/fuzz_cap${cap}_$s.log" 2>&1 &
        done
        wait
        for s in 0 1 2 3; do tail -1 "$out/fuzz_cap${cap}_$s.log"; grep -A1 "FAIL" "$out/fuzz_cap${cap}_$s.log" | head -4; done
        grep -q FAIL "$out"/fuzz_cap${cap}_*.log && status=1
      done
      ;;
    fuzz-memcheck)
      n=${FUZZ_MEMCHECK_CASES:-500}
      shard=$(( (n + 3) / 4 ))
      step "compute-sanitizer memcheck over fmha fuzz: $n valid and $n malformed cases, 4 shards each"
      for kind in valid malformed; do
        flag=""; [ $kind = malformed ] && flag="--malformed"
        for s in 0 1 2 3; do
          t compute-sanitizer --tool memcheck --error-exitcode 9 "$bin/fmha" fuzz --seed 3 --start $((s * shard)) \
            --cases $shard $flag > "$out/fuzz_memcheck_${kind}_$s.log" 2>&1 &
        done
        wait
        for s in 0 1 2 3; do
          grep -E "cases passed|FAIL|ERROR SUMMARY" "$out/fuzz_memcheck_${kind}_$s.log" | tail -2
        done
        grep -qE "FAIL|ERROR SUMMARY: [1-9]" "$out"/fuzz_memcheck_${kind}_*.log && status=1
      done
      ;;
    sass)
      step "SASS: wgmma/mma instructions and local memory per kernel family"
      cuobjdump --dump-sass "$bin/fmha" > "$out/sass.txt" 2>&1
      echo "HGMMA: $(grep -c HGMMA "$out/sass.txt")  HMMA: $(grep -c 'HMMA\.' "$out/sass.txt")  LDL/STL: $(grep -cE '\b(LDL|STL)\b' "$out/sass.txt")"
      rm -f "$out/sass.txt"
      ;;
    memcheck)
      step "compute-sanitizer memcheck, whole GPU suite, ${MEMCHECK_SHARDS:-8} shards at once"
      memcheckShards memcheck
      ;;
    memcheck-portable)
      step "compute-sanitizer memcheck, whole GPU suite, portable family, ${MEMCHECK_SHARDS:-8} shards at once"
      memcheckShards memcheck_portable FMHA_KERNEL_FAMILY=portable
      ;;
    racecheck)
      step "compute-sanitizer racecheck, subset"
      sanitize racecheck racecheck \
        '*llm_fp16_d128_causal*:*paged_bf16_d64_bidir*:*ragged_fp8_d256_window*:*vit_fp16_d80*:*paged_fp16_d512_causal*:*llm_long_fp16_d64*:*SkipSoftmax.*'
      ;;
    synccheck)
      step "compute-sanitizer synccheck, subset"
      sanitize synccheck synccheck '*llm_fp16_d128_causal*:*paged_bf16_d64_bidir*:*vit_fp16_d64*:*llm_long_fp16_d64*:Families.*'
      ;;
    racecheck-portable)
      step "compute-sanitizer racecheck, subset, portable family"
      FMHA_KERNEL_FAMILY=portable sanitize racecheck racecheck_portable \
        '*llm_fp16_d128_causal*:*paged_bf16_d64_bidir*:*vit_fp16_d80*:*llm_long_fp16_d64*'
      ;;
    run)
      step "fmha run --device gpu --mode all"
      t "$bin/fmha" run --device gpu --mode all 2>&1 | tee "$out/run.log" || status=1
      t "$bin/fmha" run --device gpu --mode all --dtype fp8 2>&1 | tee -a "$out/run.log" || status=1
      ;;
    bench|quickbench)
      step "benchmark (default dispatch)"
      flag=""; [ "$what" = quickbench ] && flag="--quick"
      t "$bin/fmha" bench $flag $launches --commit "$commit" --json "$out/ours.json" | tee "$out/bench.log" || status=1
      python3 bench/compare_sdpa.py "$out/ours.json" "$out/bench.json" --md "$out/bench.md" --png "$out/bench.png" $rounds \
        2>&1 | tee -a "$out/bench.log" || status=1
      ;;
    portbench)
      step "benchmark (portable family, quick sweep)"
      FMHA_KERNEL_FAMILY=portable t "$bin/fmha" bench --quick $launches --commit "$commit" --json "$out/ours_portable.json" \
        | tee "$out/bench_portable.log" || status=1
      FMHA_KERNEL_FAMILY=portable python3 bench/compare_sdpa.py "$out/ours_portable.json" "$out/bench_portable.json" \
        --md "$out/bench_portable.md" $rounds \
        2>&1 | tee -a "$out/bench_portable.log" || status=1
      ;;
    decode)
      step "decode sweep (paged decode steps, automatic split-KV)"
      t "$bin/fmha" bench --decode $launches --commit "$commit" --json "$out/decode_ours.json" | tee "$out/decode.log" || status=1
      if unpackFa3; then
        t python3 bench/decode_peers.py "$fa3" "$out/decode_ours.json" "$out/decode.json" --md "$out/decode.md" \
          $rounds 2>&1 | tee -a "$out/decode.log" || status=1
      else
        echo "no fa3-fwd wheel at ${FA3_WHEEL:-devbin/whl}: ours only"
        cp "$out/decode_ours.json" "$out/decode.json"
      fi
      ;;
    skip)
      # The skip-softmax sweeps (fmha bench --skip-sweep) in SKIP_DTYPES (default fp16 bf16 fp8),
      # factors SKIP_FACTORS (default the sweep's own), each as JSON and as PERF's table rows.
      for dt in ${SKIP_DTYPES:-fp16 bf16 fp8}; do
        step "skip-softmax sweep, $dt"
        t "$bin/fmha" bench --skip-sweep --dtype "$dt" ${SKIP_FACTORS:+--skip-factors "$SKIP_FACTORS"} $launches \
          --commit "$commit" --json "$out/skip_$dt.json" > "$out/skip_$dt.log" 2>&1 || status=1
        python3 bench/skip_table.py "$out/skip_$dt.json" > "$out/skip_$dt.md" 2>&1 || status=1
        cat "$out/skip_$dt.md"
      done
      ;;
    splits)
      # Forced split-KV part counts against the heuristic's (0) on decode rows, one process a
      # count: rows SPLIT_ROWS (default 3 4 6 1: 8 x 32k, 32 x 8k, one sequence of 32k and 128k).
      step "decode rows with forced split-KV part counts"
      for r in ${SPLIT_ROWS:-3 4 6 1}; do
        for n in ${SPLIT_COUNTS:-0 1 2 3 4 6 8 12 16 24 32 48 64}; do
          echo "row $r splits $n | $(t "$bin/fmha" bench --decode --row "$r" --splits "$n" $launches 2>&1 | tail -1)"
        done
      done | tee "$out/splits.log"
      grep -qE "error|\| *$" "$out/splits.log" && status=1  # a failed run, or none printed (the limit)
      ;;
    fa3-splits)
      # FA3 alone at forced num_splits FA3_SPLIT_COUNTS (0: its heuristic) on decode rows
      # FA3_SPLIT_ROWS (default 1 3 4 6: 1 x 128k, 8 x 32k, 32 x 8k, 1 x 32k): the most the peer's
      # kernel reaches on each, beside what its heuristic picks.
      step "FA3 decode at forced num_splits"
      if ! unpackFa3; then
        echo "no fa3-fwd wheel at ${FA3_WHEEL:-devbin/whl}"; status=1
      else
        # The rows' shapes: the decode step's table where it ran before in this $OUT, else a sweep of ours.
        rowsJson=$(mktemp --suffix .json)
        if [ -f "$out/decode.json" ]; then
          cp "$out/decode.json" "$rowsJson"
        else
          t "$bin/fmha" bench --decode $launches --commit "$commit" --json "$rowsJson" > "$out/fa3_splits_ours.log" 2>&1 || status=1
        fi
        rows=$(echo ${FA3_SPLIT_ROWS:-1 3 4 6} | tr ' ' ',')
        for n in ${FA3_SPLIT_COUNTS:-0 1 2 3 4 8 12 16 24 32}; do
          t python3 bench/decode_peers.py "$fa3" "$rowsJson" "$out/fa3_splits_$n.json" --only fa3 --rows "$rows" \
            --fa3-splits "$n" > "$out/fa3_splits_$n.log" 2>&1 || status=1
          sed "s/^/num_splits $n | /" "$out/fa3_splits_$n.log" | tee -a "$out/fa3_splits.log"
        done
      fi
      ;;
    ncu-decode)
      # One launch of ours on each decode row NCU_DECODE_ROWS (default 3 4 6), then two of FA3's and
      # of cuDNN's kernels (a split's forward and combine) on the same rows (bench/decode_peers.py
      # --only; matched on their demangled names, template arguments included): DRAM throughput,
      # L2 hit rates, occupancy and issue stalls beside each other.
      step "ncu: decode rows, ours and the peers"
      sections="--section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy --section LaunchStats"
      for r in ${NCU_DECODE_ROWS:-3 4 6}; do
        t ncu $sections -k regex:fwd --launch-skip 2 --launch-count 1 --import-source no \
          "$bin/fmha" bench --decode --row "$r" --iters 3 > "$out/ncu_decode_$r.log" 2>&1 || status=1
        if unpackFa3; then
          t "$bin/fmha" bench --decode --row "$r" --iters 3 --json "$out/ncu_row_$r.json" > /dev/null 2>&1
          for peer in fa3 cudnn; do
            t ncu $sections --kernel-name-base demangled -k regex:"${NCU_PEER_KERNEL:-flash|cudnn|sdpa}" --launch-skip 2 \
              --launch-count 2 --import-source no \
              python3 bench/decode_peers.py "$fa3" "$out/ncu_row_$r.json" /dev/null --only $peer --iters 1 \
              > "$out/ncu_decode_${r}_$peer.log" 2>&1 || status=1
          done
        fi
        for f in "$out/ncu_decode_$r.log" "$out/ncu_decode_${r}"_*.log; do
          [ -f "$f" ] || continue
          echo "-- $(basename "$f")"
          grep -E "^  [a-zA-Z_].*\(|Duration|DRAM Throughput|Memory Throughput|L2 Hit Rate|L1/TEX Hit|Achieved Occupancy|Registers Per|Warp Cycles Per Issued|No Eligible|Stall|stalled" "$f" | head -40
        done
      done
      ;;
    ncu)
      step "ncu: one launch per profiled row"
      for r in ${NCU_ROWS:-1 5 13} port5; do
        fam=""; row=$r
        [ "${r#port}" != "$r" ] && fam=portable && row=${r#port}
        FMHA_KERNEL_FAMILY=$fam t ncu --set full -k regex:fwd --launch-skip 2 --launch-count 1 --import-source no \
          "$bin/fmha" bench --quick --row "$row" --iters 3 > "$out/ncu_$r.log" 2>&1 || status=1
        grep -E "fwd|Duration|Throughput|Registers Per|Issue Slots|No Eligible|Warp Cycles Per Issued|Hit Rate|Ipc Active|Local Memory|Bank Conflicts" \
          "$out/ncu_$r.log" | head -60
      done
      ;;
    tables)
      step "PERF tables: quick sweeps in FP16, BF16 and FP8 with cuDNN, FA2 and FA3, one call"
      tdir=$(mktemp -d)
      for dt in fp16 bf16 fp8; do
        t "$bin/fmha" bench --quick --dtype $dt $launches --commit "$commit" --json "$tdir/ours_$dt.json" \
          > "$tdir/bench_$dt.log" 2>&1 || status=1
      done
      for dt in fp16 bf16; do
        t python3 bench/compare_sdpa.py "$tdir/ours_$dt.json" "$tdir/sdpa_$dt.json" --md "$tdir/sdpa_$dt.md" \
          >> "$tdir/bench_$dt.log" 2>&1 || status=1
      done
      if [ -f "${FA3_PEERS:-devbin/peers_fa3.py}" ] && unpackFa3; then
        t python3 "${FA3_PEERS:-devbin/peers_fa3.py}" "$fa3" "$tdir/sdpa_fp16.json" "$tdir/tables_fp16.json" \
          >> "$tdir/bench_fp16.log" 2>&1 || status=1
      else
        echo "no FA3 wheel or peers_fa3.py: the tables lack FA3"; cp "$tdir/sdpa_fp16.json" "$tdir/tables_fp16.json"
      fi
      python3 bench/perf_tables.py "$tdir/tables_fp16.json" "$tdir/sdpa_bf16.json" "$tdir/ours_fp8.json" \
        --png "$tdir/bench.png" > "$tdir/tables.md" 2>&1 || status=1
      cat "$tdir/tables.md"
      tar czf "$out/tables.tgz" -C "$tdir" .
      ;;
    python)
      step "Python package: install the wheel, its tests, the example"
      # Installed into a folder of its own on PYTHONPATH, over the machine's own PyTorch.
      pkgs=$(mktemp -d)
      python3 -m pip install --no-deps --no-index --target "$pkgs" "$(ls ${PY_WHEEL:-devbin/wheel}/fmha-*.whl | head -1)" \
        > "$out/python.log" 2>&1 || status=1
      python3 -c "import pytest" 2>/dev/null ||
        python3 -m pip install --no-deps --no-index --target "$pkgs" ${PY_WHEEL:-devbin/wheel}/*.whl >> "$out/python.log" 2>&1
      # The installed package (with its own libfmha.so), not the source tree's.
      run_py() { (unset FMHA_LIBRARY; PYTHONPATH="$pkgs" FMHA_TEST_INSTALLED=1 t python3 "$@"); }
      (cd /tmp && run_py -c "import fmha, torch; print('fmha', fmha.version(), 'at', fmha.__file__, 'torch', torch.__version__)") \
        2>&1 | tee -a "$out/python.log"
      run_py -m pytest -v -p no:cacheprovider python/tests >> "$out/python.log" 2>&1 || status=1
      grep -E "passed|failed|FAILED|ERROR" "$out/python.log" | tail -15
      run_py examples/python_example.py 2>&1 | tee "$out/python_example.log" || status=1
      ;;
    *) echo "unknown step $what"; status=2 ;;
  esac
done
pack
exit $status
