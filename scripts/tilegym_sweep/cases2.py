import math

import numpy as np
import torch
import torch.nn.functional as F
from harness import mod

OPS = "tilegym.ops.cutile."

def softmax_persistent():
    m = mod(OPS + "softmax")
    R, C = 20, 200
    x = torch.randn(R, C, dtype=torch.float16); out = torch.zeros_like(x)
    return {"kernel": m._softmax_kernel, "args": (out, x, R, 256, C), "grid": (6, 1, 1), "outs": out,
                "want": lambda: torch.softmax(x.float(), 1), "tol": 5e-3}

def softmax_multiwave():
    m = mod(OPS + "softmax")
    R, C = 8, 200
    x = torch.randn(R, C, dtype=torch.float16); out = torch.zeros_like(x)
    return {"kernel": m._softmax_kernel_multi_wave_full_row_reg_cached_ldg, "args": (out, x, C, 256), "grid": (R, 1, 1),
                "outs": out, "want": lambda: torch.softmax(x.float(), 1), "tol": 5e-3}

def softmax_tma():
    m = mod(OPS + "softmax")
    R, C = 20, 200
    x = torch.randn(R, C, dtype=torch.float16); out = torch.zeros_like(x)
    return {"kernel": m._softmax_kernel_tma, "args": (out, x, R, C, 256), "grid": (6, 1, 1), "outs": out,
                "want": lambda: torch.softmax(x.float(), 1), "tol": 5e-3}

def softmax_chunked():
    m = mod(OPS + "softmax")
    R, C = 10, 300
    x = torch.randn(R, C, dtype=torch.float16); out = torch.zeros_like(x)
    return {"kernel": m._softmax_kernel_chunked, "args": (out, x, R, C, 128), "grid": (4, 1, 1), "outs": out,
                "want": lambda: torch.softmax(x.float(), 1), "tol": 5e-3, "extra": "TILE_SIZE=128 (wrapper default 8192) to force 3 chunks"}

def layer_norm_legacy():
    m = mod(OPS + "layer_norm_legacy")
    M, N = 6, 300
    x = torch.randn(M, N, dtype=torch.float16); w = torch.randn(N, dtype=torch.float16); b = torch.randn(N, dtype=torch.float16)
    y = torch.zeros_like(x); mean = torch.zeros(M); rstd = torch.zeros(M)
    BLOCK = min(65536 // 2, 1 << (N.bit_length() - 1))  # 256
    return {"kernel": m._layer_norm_fwd_kernel, "args": (x, y, w, b, mean, rstd, N, 1e-5, 0.0, BLOCK), "grid": (M,),
                "outs": lambda: [y, mean, rstd],
                "want": lambda: [F.layer_norm(x.float(), (N,), w.float(), b.float(), 1e-5), x.float().mean(1),
                              torch.rsqrt(x.float().var(1, unbiased=False) + 1e-5)], "tol": 1e-2}

def layer_norm_persistent_bf16():
    m = mod(OPS + "layer_norm_legacy")
    N, D = 40, 96
    x = torch.randn(N, D, dtype=torch.bfloat16); w = torch.randn(D, dtype=torch.bfloat16); b = torch.randn(D, dtype=torch.bfloat16)
    y = torch.zeros_like(x); mean = torch.zeros(N); rstd = torch.zeros(N)
    BN, BD = 16, 128
    g = min(2, math.ceil(N / BN))
    return {"kernel": m._persistent_layer_norm_fwd_kernel,
                "args": (x, y, w, b, mean, rstd, N, D, 1e-5, D, D, 0, 1, BN, BD, 1, g), "grid": (g, 1, 1),
                "outs": lambda: [y, mean, rstd],
                "want": lambda: [F.layer_norm(x.float(), (D,), w.float(), b.float(), 1e-5), x.float().mean(1),
                              torch.rsqrt(x.float().var(1, unbiased=False) + 1e-5)], "tol": 2e-2,
                "extra": "kernel hard-codes astype(y, bfloat16): bf16 only"}

def rope():
    m = mod(OPS + "rope")
    B, HQ, HK, S, D = 2, 6, 2, 5, 64
    q = torch.randn(B, HQ, S, D, dtype=torch.float16); k = torch.randn(B, HK, S, D, dtype=torch.float16)
    ang = torch.randn(1, S, D // 2)
    cos = torch.cat([ang.cos(), ang.cos()], -1).half(); sin = torch.cat([ang.sin(), ang.sin()], -1).half()
    q0, k0 = q.float().clone(), k.float().clone()
    def rot(t):
        t1, t2 = t[..., :D // 2], t[..., D // 2:]
        return torch.cat([-t2, t1], -1)
    c, s = cos.float().unsqueeze(1), sin.float().unsqueeze(1)
    return {"kernel": m._rope_kernel, "args": (q, k, cos, sin, 1, S, 8, 2, 32), "grid": (B * S, 1, 1),
                "outs": lambda: [q, k], "want": lambda: [q0 * c + rot(q0) * s, k0 * c + rot(k0) * s], "tol": 1e-2,
                "extra": "6 q heads -> TILE_QH=8 (padded)"}

def swiglu_fwd():
    m = mod(OPS + "swiglu")
    M, N = 6, 100
    a = torch.randn(M, N, dtype=torch.float16); b = torch.randn(M, N, dtype=torch.float16); c = torch.zeros_like(a)
    return {"kernel": m._swiglu_forward_kernel, "args": (a, b, c, 128), "grid": (M,), "outs": c,
                "want": lambda: F.silu(a.float()) * b.float(), "tol": 1e-2}

def swiglu_bwd():
    m = mod(OPS + "swiglu")
    M, N = 4, 100
    a = torch.randn(M, N); b = torch.randn(M, N); dc = torch.randn(M, N)
    da, db = torch.zeros_like(a), torch.zeros_like(a)
    TILE = 32  # NUM_SMS=32-ish heuristic: TILE_N=ceil(NUM_SMS/n_rows)
    grid = (M, math.ceil(N / TILE), 1)
    def want():
        aa = a.clone().requires_grad_(True); bb = b.clone().requires_grad_(True)
        (F.silu(aa) * bb).backward(dc); return [aa.grad, bb.grad]
    return {"kernel": m._swiglu_backward_kernel, "args": (dc, a, b, da, db, TILE), "grid": grid, "outs": lambda: [da, db],
                "want": want, "tol": 1e-3}

def geglu_fwd_tanh():
    m = mod(OPS + "activation.geglu")
    M, N = 5, 100
    x = torch.randn(M, 2 * N); y = torch.zeros(M, N)
    n = M * N; grid = ((n + 255) // 256, 1, 1)
    return {"kernel": m._geglu_fwd_kernel, "args": (y.view(-1), x.view(-1), N, 2 * N, N, 256, 1), "grid": grid, "outs": y,
                "want": lambda: x[:, :N] * F.gelu(x[:, N:], approximate="tanh"), "tol": 1e-4}

def geglu_bwd_exact():
    m = mod(OPS + "activation.geglu")
    M, N = 5, 100
    x = torch.randn(M, 2 * N); dy = torch.randn(M, N); dx = torch.zeros_like(x)
    n = M * N; grid = ((n + 255) // 256, 1, 1)
    def want():
        xx = x.clone().requires_grad_(True)
        (xx[:, :N] * F.gelu(xx[:, N:])).backward(dy); return xx.grad
    return {"kernel": m._geglu_bwd_kernel, "args": (dx.view(-1), dy.view(-1), x.view(-1), N, 2 * N, N, 256, 0), "grid": grid,
                "outs": dx, "want": want, "tol": 1e-4}

def dropout():
    m = mod(OPS + "dropout")
    n = 3000
    x = torch.randn(n, dtype=torch.float16); out = torch.zeros_like(x)
    seed = m._mix_seed(42); p = 0.5
    def want():
        off = np.arange(n, dtype=np.int64)
        comb = ((off * 1103515245 + seed) & 0xFFFFFFFF).astype(np.uint32).view(np.int32)
        h = comb ^ (comb >> 16)
        h = (h ^ (h << 8).astype(np.int32)).astype(np.int32)
        h = h ^ (h >> 4)
        hf = (h & 0x7FFFFFFF).astype(np.float32) / np.float32(2147483647.0)
        keep = torch.from_numpy(hf > p)
        return torch.where(keep, x * 2.0, torch.zeros_like(x))
    return {"kernel": m._dropout_kernel, "args": (x, out, p, seed, 1024, True), "grid": (math.ceil(n / 1024), 1, 1),
                "outs": out, "want": want, "tol": 1e-3}

def silu_and_mul():
    m = mod(OPS + "silu_and_mul")
    M, H = 6, 100
    x = torch.randn(M, 2 * H, dtype=torch.float16); out = torch.zeros(M, H, dtype=torch.float16)
    return {"kernel": m._silu_and_mul_kernel_row_wise, "args": (x, out, 128, H), "grid": (M,), "outs": out,
                "want": lambda: F.silu(x[:, :H].float()) * x[:, H:].float(), "tol": 1e-2}

def silu_and_mul_bwd():
    m = mod(OPS + "silu_and_mul")
    M, H = 6, 100
    x = torch.randn(M, 2 * H); dc = torch.randn(M, H)
    ga, gb = torch.zeros(M, H), torch.zeros(M, H)
    def want():
        xx = x.clone().requires_grad_(True)
        (F.silu(xx[:, :H]) * xx[:, H:]).backward(dc); return [xx.grad[:, :H], xx.grad[:, H:]]
    return {"kernel": m._silu_and_mul_backward_kernel_row_wise, "args": (dc, x, ga, gb, 128, H), "grid": (M,),
                "outs": lambda: [ga, gb], "want": want, "tol": 1e-3}

def _splitk(use_dot):
    m = mod(OPS + "splitk_reduce")
    B, H, S, D = 2, 3, 5, 64
    o = torch.randn(B, H, S, D, dtype=torch.float16); lse = torch.randn(B, H, S) * 3
    out = torch.zeros(B, H, D, dtype=torch.float16)
    def want():
        w = torch.exp2(lse - lse.max(-1, keepdim=True).values)
        return (w.unsqueeze(-1) * o.float()).sum(2) / w.sum(-1, keepdim=True)
    return {"kernel": m._splitk_reduce_kernel, "args": (o, lse, out, B, 128, H, D, S, 8, 64, use_dot), "grid": (B, H, 1),
                "outs": out, "want": want, "tol": 1e-2}

def splitk_reduce_sum(): return _splitk(False)
def splitk_reduce_dot(): return _splitk(True)
