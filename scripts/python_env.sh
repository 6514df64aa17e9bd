#!/usr/bin/env bash
# A virtual environment for the Python package's tests on a machine without a GPU:
# scripts/python_env.sh [DIR] (default build/pyenv) installs python/requirements-ci.txt into
# it, pinned and without dependency resolution (see that file), and prints its python.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build/pyenv}
if [ ! -x "$dir/bin/python" ] || ! "$dir/bin/python" -c "import torch, pytest" 2> /dev/null; then
  python3 -m venv "$dir"
  "$dir/bin/pip" install --quiet --disable-pip-version-check --no-deps -r python/requirements-ci.txt >&2
fi
echo "$dir/bin/python"
