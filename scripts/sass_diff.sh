#!/usr/bin/env bash
# Compares the SASS of every kernel instance object of two build trees (e.g. before and after
# a refactor that must keep the kernels identical), without a GPU. cuobjdump and nvdisasm
# come from NVIDIA's PyPI wheels (nvidia-cuda-cuobjdump, nvidia-cuda-nvdisasm), fetched once
# into build/_deps/sass-tools.
# usage: scripts/sass_diff.sh BUILD_A BUILD_B      (exit 0: every instance identical)
set -euo pipefail
a=${1:?first build dir}
b=${2:?second build dir}
tools="$(cd "$(dirname "$0")/.." && pwd)/build/_deps/sass-tools"
if [ ! -x "$tools/nvidia/cu13/bin/cuobjdump" ] || [ ! -x "$tools/nvidia/cu13/bin/nvdisasm" ]; then
  mkdir -p "$tools/whl"
  python3 -m pip download --quiet --no-deps -d "$tools/whl" nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm
  for w in "$tools"/whl/*.whl; do python3 -m zipfile -e "$w" "$tools"; done
  chmod +x "$tools"/nvidia/cu13/bin/*
fi
export NVDISASM_PATH="$tools/nvidia/cu13/bin" PATH="$tools/nvidia/cu13/bin:$PATH"
dump() {  # the SASS of one object, without addresses and the source identifier
  cuobjdump --dump-sass "$1" | grep -vE "identifier|^\s*$" | sed -E 's#/\*[0-9a-f]{4,}\*/##; s#^\s+##'
}
same=0
differ=0
for oa in "$a"/CMakeFiles/fmha_kernels*.dir/generated/inst/*.o; do
  ob="$b/${oa#"$a"/}"
  if [ ! -f "$ob" ]; then echo "only in $a: ${oa#"$a"/}"; differ=$((differ + 1)); continue; fi
  if cmp -s <(dump "$oa") <(dump "$ob"); then same=$((same + 1)); else echo "differs: $(basename "$oa")"; differ=$((differ + 1)); fi
done
echo "$same identical, $differ different"
[ "$differ" -eq 0 ]
