#!/usr/bin/env bash
# Builds .device/site.tar.xz: what scripts/device_check.sh needs that the GPU machine lacks, for its
# Python (3.12, x86-64): cuda-tile, z3, and the Tile IR compiler ct.launch runs (tileiras, with the
# ptxas and libnvvm of the same CUDA 13.4 release; the machine's CUDA 13.0 ones do not work with it,
# and CUDA 13.1's tileiras has no sm_90). A device call carries at most 64 MiB, so only the files
# those need are kept (tileiras looks for ptxas beside itself and libnvvm in ../lib), z3 is
# stripped, and xz uses its x86 filter: about 65 MB.
# Run here, with internet:   bash scripts/device_bundle.sh [PYTHON_VERSION] [OUT_DIR]
# then call the device tool with carry [".device"] (docs/launcher.md, "Running the GPU check").
set -euo pipefail
cd "$(dirname "$0")/.."
pyver="${1:-3.12}"
out="${2:-.device}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
site="$work/site"
platforms=(--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64
           --platform manylinux2014_x86_64 --platform manylinux_2_12_x86_64 --platform manylinux2010_x86_64)
pip_opts=(-q --no-deps --only-binary=:all: --python-version "$pyver" --implementation cp "${platforms[@]}")
python3 -m pip install "${pip_opts[@]}" --no-compile --target "$site" "cuda-tile==1.7.0" "z3-solver==5.4.1.0"
python3 -m pip download "${pip_opts[@]}" -d "$work/wheels" \
    "nvidia-cuda-tileiras==13.4.92" "nvidia-cuda-nvcc==13.4.92" "nvidia-nvvm==13.4.92"
for wheel in "$work"/wheels/*.whl; do
    unzip -q -o "$wheel" 'nvidia_*.dist-info/METADATA' 'nvidia/cu13/bin/tileiras' 'nvidia/cu13/bin/ptxas' \
        'nvidia/cu13/lib/libnvvm.so.4' 'nvidia/cu13/nvvm/libdevice/*' -d "$site" 2>/dev/null || true
done
chmod +x "$site"/nvidia/cu13/bin/*
rm -rf "$site"/bin "$site"/*.dist-info/RECORD "$site"/z3/lib/libz3.so.* "$site"/z3/include
strip "$site"/z3/lib/libz3.so
for f in tileiras ptxas; do test -x "$site/nvidia/cu13/bin/$f"; done
test -f "$site/nvidia/cu13/lib/libnvvm.so.4"
mkdir -p "$out"
tar -cf - -C "$site" . | xz --x86 --lzma2=preset=9e,dict=128MiB -T1 > "$out/site.tar.xz"
ls -la "$out/site.tar.xz"
