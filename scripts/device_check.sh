#!/usr/bin/env bash
# The GPU check for a machine with no internet (issue 7). Everything it needs that the machine lacks
# comes along as .device/site.tar.xz (build it here first: scripts/device_bundle.sh).
#
# With the device tool:  run(command="bash scripts/device_check.sh", carry=[".device"], timeout_s=480)
# It runs the GPU tests, then scripts/device_check.py (head-permutation race on the GPU, launcher
# overhead, bandwidth), then scripts/device_corpus.py (the corpus on the GPU), well under 10 minutes
# on an H200; outputs also land in $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-/tmp/tilecheck_device_check}"
mkdir -p "$out"
py="${PYTHON:-python3}"
if [ -f .device/site.tar.xz ]; then
    site=/tmp/tilecheck_site
    rm -rf "$site" && mkdir -p "$site" && tar -xJf .device/site.tar.xz -C "$site" || exit 2
    export PYTHONPATH="$site:$PWD"
    # ct.launch compiles with the bundle's tileiras (CUDA 13.4), which finds ptxas beside itself and
    # libnvvm under CUDA_HOME; the machine's own CUDA 13.0 pieces do not work with it.
    export PATH="$site/nvidia/cu13/bin:$PATH" CUDA_HOME="$site/nvidia/cu13"
else
    echo "note: no .device/site.tar.xz; using the packages already installed" >&2
    export PYTHONPATH="$PWD"
fi
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | tee "$out/gpu.txt"
"$py" -c "import cuda.tile, z3, numpy, networkx; from cuda.bindings import driver; print('imports ok')" || exit 2
"$py" -c "from cuda.tile._compile import _find_compiler_bin as f; print('tileiras:', f())" 2>&1 | tee "$out/tileiras.txt"
status=0
timeout 150 "$py" -m pytest -q -p no:cacheprovider -rs -m gpu tests/runtime/test_cuda_gpu.py 2>&1 \
    | tee "$out/gpu_tests.txt" || status=1
timeout 200 "$py" scripts/device_check.py "$@" 2>&1 | tee "$out/device_check.md" || status=1
# the corpus on the device: race-free labels must give one outcome (a spin-lock kernel that hangs
# costs only the rows after it: each row is printed, and written to the JSON, as it finishes)
timeout 150 "$py" scripts/device_corpus.py --runs 20 --json "$out/device_corpus.json" 2>&1 \
    | tee "$out/device_corpus.md" || status=1
exit $status
