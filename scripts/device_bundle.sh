#!/usr/bin/env bash
# Builds .device/site.tar.xz: the Python packages scripts/device_check.sh needs that the GPU machine
# lacks (cuda-tile, its tileiras compiler, z3), installed for that machine's Python 3.12 / x86-64.
# The machine has no internet, and a device call carries at most 64 MiB; the wheels are ~80 MB,
# an xz'd install ~41 MB. Run here (with internet), then call the device tool with carry [".device"].
set -euo pipefail
cd "$(dirname "$0")/.."
site=.device/site
rm -rf "$site" && mkdir -p "$site"
python3 -m pip install -q --no-deps --no-compile --target "$site" --only-binary=:all: \
    --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 \
    "cuda-tile==1.7.0" "nvidia-cuda-tileiras==13.4.92" "z3-solver==5.4.1.0"
rm -rf "$site"/bin "$site"/*.dist-info/RECORD
tar -cf - -C "$site" . | xz -6 -T2 > .device/site.tar.xz
rm -rf "$site"
ls -la .device/site.tar.xz
