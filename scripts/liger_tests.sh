#!/usr/bin/env bash
# Liger-Kernel's own op tests on a CPU-only machine, every Triton launch checked by tilecheck and run
# on its interpreter (issue 24, "real kernels"): the pytest plugin intercepts kernel[grid](...).
#
#   scripts/liger_tests.sh LIGER_SRC [op ...]
#
# LIGER_SRC: an export of github.com/linkedin/Liger-Kernel (its src/ and test/; the tests' helpers
# need transformers and tokenizers). The tests run under --tilecheck-cpu-device: torch.cuda answers as
# an H100, so Liger's infer_device() says "cuda" and its CUDA-only branches (bf16 cases, the SM
# count some launches size their grid by) run as on a GPU, with device="cuda" tensors in host
# memory. Each test file runs with a limit of LIGER_TIMEOUT seconds (default 420); the summary per
# file says how many launches were verified, refused (a race or an unknown) or decided at their launch.
set -uo pipefail
src=${1:?usage: scripts/liger_tests.sh LIGER_SRC [op ...]}
shift
ops=${*:-softmax sparsemax relu_squared kl_div jsd tvd swiglu geglu rms_norm layer_norm group_norm poly_norm dyt cross_entropy embedding rope fused_add_rms_norm}
python=${PYTHON:-$(dirname "$0")/../.venv/bin/python}
python="$(cd "$(dirname "$python")" && pwd)/$(basename "$python")"  # absolute, the venv's own link
limit=${LIGER_TIMEOUT:-420}
cd "$src"
for op in $ops; do
  start=$(date +%s)
  out=$(TILECHECK_NO_CACHE=1 PYTHONPATH="$src/src:$src" timeout -s INT -k 60 "$limit" "$python" -m pytest -q -p no:cacheprovider \
        "test/transformers/test_$op.py" --tilecheck-cpu-device 2>&1)
  rc=$?
  echo "=== $op rc=$rc $(( $(date +%s) - start ))s"
  echo "$out" | grep -v "^  autotuned:" | grep -E "passed|failed|skipped|error|verified|refused|unknown|at-launch|launch check" | tail -12
done
