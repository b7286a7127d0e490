"""Spot-check tilecheck on NVIDIA/TileGym example kernels (needs torch and a TileGym checkout).

Run: python scripts/tilegym_spotcheck.py /path/to/TileGym
Compiles, verifies and runs each kernel on the CPU interpreter with torch CPU tensors, comparing the
result with torch. Arguments are rebuilt from each example's host wrapper (no GPU needed). Not part
of CI: it depends on torch and on a checkout that is not in this repository.
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import torch

import tilecheck

EXAMPLES = "skills/tilegym-cutile-python/examples"
TRITON = "skills/tilegym-converting-cutile-to-triton/examples"


def load(root: Path, rel: str):
    spec = importlib.util.spec_from_file_location(Path(rel).stem, root / rel)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def check(name: str, kernel, args, grid, want, got, tol: float) -> None:
    report = tilecheck.verify(kernel, args, grid)
    kinds = sorted({f.kind for f in report.findings})
    tilecheck.launch(grid, kernel, args, unsafe=True)
    close = torch.allclose(got.float(), want.float(), atol=tol, rtol=tol)
    print(f"{name:48s} {report.status:9s} {kinds!s:28s} {'matches' if close else 'DIFFERS from'} torch")
    if report.status == "race":
        print("   ", str(report.findings[0]).splitlines()[-1].strip())


def main(root: Path) -> None:
    torch.manual_seed(0)
    cs = load(root, f"{EXAMPLES}/scan/cumsum_cumprod_blocking.py")
    x = torch.rand(128, 256, dtype=torch.float16)
    y = torch.zeros_like(x)
    check("cumsum (persistent, ct.cumsum)", cs.kernel_cumsum, (x, y, 2, 64, 256), (2,),
          torch.cumsum(x.float(), dim=1), y, 5e-2)

    sk = load(root, f"{EXAMPLES}/matmul/split_k_gemm.py")
    a, b = torch.rand(256, 256, dtype=torch.float16), torch.rand(256, 256, dtype=torch.float16)
    c = torch.zeros(256, 256)
    check("split-K GEMM (float atomics)", sk.split_gemm, (a, b, c, 2, 2, 4, 1, 16, 128, 128, 64, 2), (8, 1, 1),
          a.float() @ b.float(), c, 1e-2)

    mv = load(root, f"{EXAMPLES}/matmul/matrix_vector_multiplication.py")
    a, v = torch.rand(1024, 1024, dtype=torch.float16), torch.rand(1024, dtype=torch.float16)
    out = torch.zeros(1024, dtype=torch.float16)
    check("GEMV (persistent)", mv.cutile_gemv_kernel, (a, v, out, 1024, 64, 128), (8, 1), a.float() @ v.float(),
          out, 0.5)

    sm = load(root, f"{TRITON}/02_softmax/cutile_kernel.py")
    x = torch.randn(64, 200)
    out = torch.empty_like(x)
    check("softmax", sm.softmax_kernel, (out, x, 64, 256, 200), (16, 1, 1), torch.softmax(x, dim=1), out, 1e-4)

    ln = load(root, f"{TRITON}/03_layernorm/cutile_kernel.py")
    for cols in (256, 300):
        x, w, bias = torch.randn(32, cols), torch.randn(cols), torch.randn(cols)
        y, mean, rstd = torch.empty_like(x), torch.empty(32), torch.empty(32)
        block = 1 << (cols - 1).bit_length()  # what the example's wrapper picks
        args = (x.reshape(-1), y.reshape(-1), w, bias, mean, rstd, cols, 1, 1, cols, 1, 1e-5, 0.0, block, 1)
        check(f"layer norm, C={cols}", ln.layer_norm_fwd_kernel, args, (32, 1, 1),
              torch.nn.functional.layer_norm(x, (cols,), w, bias, 1e-5), y, 1e-4)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(Path(sys.argv[1]))
