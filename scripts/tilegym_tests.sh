#!/usr/bin/env bash
# NVIDIA TileGym's own cuTile tests on a CPU-only machine under --tilecheck-cpu-device (issue 21:
# at most 20 minutes, no failure inside tilecheck): every launch checked, then run on the
# interpreter. The files of issue 15; the performance benchmarks (test_perf) and TileGym's Triton
# parametrisations deselected. Memory is capped (ulimit -v, default 16 GB) so that a run that
# would outgrow the machine fails its test instead of bringing the machine down.
#
#   scripts/tilegym_tests.sh TILEGYM_SRC [extra pytest args]
set -uo pipefail
src=${1:?usage: scripts/tilegym_tests.sh TILEGYM_SRC [pytest args]}
shift
python=${PYTHON:-$(dirname "$0")/../.venv/bin/python}
python="$(cd "$(dirname "$python")" && pwd)/$(basename "$python")"
cd "$src"
ulimit -v "${TILEGYM_MEMORY_KB:-16000000}"
start=$(date +%s)
TILECHECK_NO_CACHE=1 PYTHONPATH="$src/src:$src" "$python" -m pytest -q -p no:cacheprovider --timeout 900 \
  --tilecheck-cpu-device -k "not test_perf and not triton" \
  tests/ops/activation tests/ops/test_rms_norm.py tests/ops/test_moe.py \
  tests/suites/liger/test_cross_entropy.py tests/suites/liger/test_grpo_loss.py \
  tests/suites/liger/test_swiglu.py tests/suites/liger/test_layer_norm.py \
  tests/suites/unsloth/test_grouped_gemm.py "$@"
rc=$?
echo "=== rc=$rc $(( $(date +%s) - start ))s"
exit $rc
