#!/usr/bin/env bash
# Liger-Kernel's own op tests on a CPU-only machine, every Triton launch checked by tilecheck and run
# on its interpreter (issue 24, "real kernels"): the pytest plugin intercepts kernel[grid](...).
#
#   scripts/liger_tests.sh LIGER_SRC [op ...]
#
# LIGER_SRC: an export of github.com/linkedin/Liger-Kernel (its src/ and test/; the tests' helpers
# need transformers and tokenizers: transformers 4.57.1, as newer ones raise their own errors in the
# rope tests before any launch). The tests run under --tilecheck-cpu-device: torch.cuda answers as
# an H100, so Liger's infer_device() says "cuda" and its CUDA-only branches (bf16 cases, the SM
# count some launches size their grid by) run as on a GPU, with device="cuda" tensors in host
# memory. Each test file runs with a limit of LIGER_TIMEOUT seconds (default 420); the summary per
# file says how many launches were verified, refused (a race or an unknown) or decided at their launch.
#
# "extra" among the ops runs scripts/liger_extra (the kernels Liger's tests do not launch here).
# LIGER_IS_CUDA_SHIM=1 makes Tensor.is_cuda answer True to Liger's own code only (a pytest plugin
# made here, measurement only): LigerMLPFunction asserts input.is_cuda, which the CPU tensors standing
# in for CUDA ones cannot satisfy, so test_mlp.py fails before any launch without it.
set -uo pipefail
src=${1:?usage: scripts/liger_tests.sh LIGER_SRC [op ...]}
shift
# every test file of Liger's Triton ops (its cute, cutedsl and cutile variants and the model-level
# tests left out), the quick ones first
ops=${*:-softmax sparsemax relu_squared dyt tvd swiglu geglu layer_norm group_norm poly_norm embedding rope \
  fused_add_rms_norm qwen2vl_mrope llama4_rope multi_token_attention fused_neighborhood_attention mm_int8int2 \
  modulated_rms_norm mhc attn_res grpo_loss tiled_mlp fused_moe fused_linear_jsd fused_linear_cross_entropy \
  fused_linear_scaled_cross_entropy kl_div jsd rms_norm cross_entropy mlp extra}
python=${PYTHON:-$(dirname "$0")/../.venv/bin/python}
python="$(cd "$(dirname "$python")" && pwd)/$(basename "$python")"  # absolute, the venv's own link
limit=${LIGER_TIMEOUT:-420}
extra="$(cd "$(dirname "$0")" && pwd)/liger_extra"
cd "$src"
kernels=$(mktemp)  # every file's per-kernel verdict lines, summed up at the end
shim=$(mktemp -d)
trap 'rm -rf "$kernels" "$shim"' EXIT
plugins=()
if [ "${LIGER_IS_CUDA_SHIM:-0}" = 1 ]; then
  cat > "$shim/liger_is_cuda_shim.py" <<'PY'
import sys
import torch
_plain = torch.Tensor.is_cuda
torch.Tensor.is_cuda = property(lambda self: True if sys._getframe(1).f_globals.get("__name__", "").startswith(
    "liger_kernel") else _plain.__get__(self))
PY
  plugins=(-p liger_is_cuda_shim)
fi
for op in $ops; do
  start=$(date +%s)
  target="test/transformers/test_$op.py"
  [ "$op" = extra ] && target="$extra"
  out=$(TILECHECK_NO_CACHE=1 PYTHONPATH="$shim:$src/src:$src" timeout -s INT -k 60 "$limit" "$python" -m pytest -q -p no:cacheprovider \
        "${plugins[@]}" "$target" --tilecheck-cpu-device 2>&1)
  rc=$?
  echo "=== $op rc=$rc $(( $(date +%s) - start ))s"
  echo "$out" | grep -v "^  autotuned:" | grep -E "passed|failed|skipped|error|verified|refused|unknown|at-launch|launch check" | tail -12
  echo "$out" | grep -E "^[A-Za-z_][A-Za-z_0-9]*: [0-9]+ " >> "$kernels"
done
echo "=== per kernel, over the files run (launches: verdicts)"
sort "$kernels"
