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

    gn = load(root, f"{EXAMPLES}/normalization/group_norm.py")
    n, c, h, w, groups = 2, 8, 16, 16, 4
    x = torch.randn(n, c, h, w)
    weight, bias = torch.randn(c), torch.randn(c)
    out = torch.zeros(n, groups, c // groups * h * w)
    args = (x.view(n, groups, -1), out, weight, bias, groups, c // groups, h, w, 1e-5, n * groups, 256)
    check("group norm (persistent)", gn.group_norm_kernel, args, (5, 1, 1),
          torch.nn.functional.group_norm(x, groups, weight, bias, 1e-5).view(n, groups, -1), out, 1e-3)

    ap = load(root, f"{EXAMPLES}/pooling/avgpool3d.py")
    n, c, d, h, w = 1, 2, 6, 6, 6
    x = torch.rand(n, c, d, h, w)
    out = torch.zeros(n, c, d, h, w)  # kernel 3, stride 1, padding 1: same spatial size
    args = (x, out, c, d, h, w, 3, 3, 3, 4, 4, 4, 1, 1, 1, 1, 1, 1, d, h, w, n * c * d * h * w)
    check("avg pool 3-D (gather windows, persistent)", ap.avgpool3d_kernel, args, (16, 1, 1),
          torch.nn.functional.avg_pool3d(x, 3, 1, 1, count_include_pad=True), out, 1e-5)

    cv = load(root, f"{EXAMPLES}/convolution/conv2d_with_bias_dilation_groups.py")
    conv = torch.nn.Conv2d(16, 32, (3, 3), dilation=(2, 1))
    model_bias = torch.rand(32)
    x = torch.rand(8, 16, 8, 8)
    out = torch.zeros(8, 32, 4, 6)
    m_total, k_total = 8 * 4 * 6, 16 * 9
    tm, tn, tk, gsm = cv._select_tile_config_2d(m_total, 32, k_total, 32)
    gsm = cv._adjust_group_size(-(-m_total // tm), gsm)
    args = (x, conv.weight.data.reshape(32, k_total).contiguous(), conv.bias.data, model_bias, out, 8, 8, 8, 4, 6,
            32, 3, 3, 1, 1, 0, 0, 2, 1, 16, 32, m_total, k_total, tm, tn, tk, gsm)
    with torch.no_grad():
        want = torch.relu(conv(x)) + model_bias.view(32, 1, 1)
    check("conv2d implicit GEMM (dilation, persistent)", cv.conv2d_implicit_gemm_kernel, args, (4, 1, 1), want,
          out, 1e-3)

    sm = load(root, f"{TRITON}/02_softmax/cutile_kernel.py")
    x = torch.randn(64, 200)
    out = torch.empty_like(x)
    check("softmax", sm.softmax_kernel, (out, x, 64, 256, 200), (16, 1, 1), torch.softmax(x, dim=1), out, 1e-4)

    fa = load(root, f"{TRITON}/05_attention/cutile_kernel.py")
    for causal in (False, True):
        q = torch.randn(1, 4, 128, 64, dtype=torch.float16)
        k, v = torch.randn(1, 2, 128, 64, dtype=torch.float16), torch.randn(1, 2, 128, 64, dtype=torch.float16)
        out = torch.empty_like(q)
        scale = 1.0 / 8.0
        args = (q, k, v, out, scale, 0, 64, 4, 64, 32, 2, causal, True)
        want = torch.nn.functional.scaled_dot_product_attention(
            q.float(), k.float().repeat_interleave(2, 1), v.float().repeat_interleave(2, 1), is_causal=causal,
            scale=scale)
        check(f"flash attention (GQA, causal={causal})", fa.fmha_kernel, args, (2, 4, 1), want, out, 2e-2)

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
