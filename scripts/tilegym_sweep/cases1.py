import math

import torch
from harness import mod

OPS = "tilegym.ops.cutile."

def matmul():
    m = mod(OPS + "matmul")
    M, N, K = 128, 96, 80   # non-multiples of tiles for the tail checks
    a, b = torch.randn(M, K, dtype=torch.float16), torch.randn(K, N, dtype=torch.float16)
    c = torch.zeros(M, N, dtype=torch.float16)
    TM, TN, TK = 64, 64, 32
    grid = (math.ceil(M / TM) * math.ceil(N / TN), 1, 1)
    return {"kernel": m._matmul_kernel, "args": (a, b, c, TM, TN, TK), "grid": grid, "outs": c,
                "want": lambda: a.float() @ b.float(), "tol": 5e-2}

def matmul_persistent_transB():
    m = mod(OPS + "matmul")
    M, N, K = 128, 96, 80
    a, bt = torch.randn(M, K, dtype=torch.float16), torch.randn(N, K, dtype=torch.float16)
    c = torch.zeros(M, N, dtype=torch.float16)
    TM, TN, TK = 64, 64, 32
    tiles = math.ceil(M / TM) * math.ceil(N / TN)
    grid = (min(3, tiles), 1, 1)  # "NUM_SMS"=3 to force the persistent loop
    return {"kernel": m._static_persistent_matmul_kernel,
                "args": (a, bt, c, M, N, K, TM, TN, TK, False, True, 8, -1), "grid": grid, "outs": c,
                "want": lambda: a.float() @ bt.float().T, "tol": 5e-2}

def bmm():
    m = mod(OPS + "bmm")
    Q, M, N, K = 2, 64, 96, 80
    a, b = torch.randn(Q, M, K, dtype=torch.float16), torch.randn(Q, K, N, dtype=torch.float16)
    c = torch.zeros(Q, M, N, dtype=torch.float16)
    TM, TN, TK = 32, 64, 32
    grid = (math.ceil(M / TM), math.ceil(N / TN), Q)
    return {"kernel": m._bmm_kernel, "args": (a, b, c, TM, TN, TK), "grid": grid, "outs": c,
                "want": lambda: torch.bmm(a.float(), b.float()), "tol": 5e-2}

def bmm_persistent_transA():
    m = mod(OPS + "bmm")
    Q, M, N, K = 2, 64, 96, 80
    at, b = torch.randn(Q, K, M, dtype=torch.float16), torch.randn(Q, K, N, dtype=torch.float16)
    c = torch.zeros(Q, M, N, dtype=torch.float16)
    TM, TN, TK = 32, 64, 32
    total = math.ceil(M / TM) * math.ceil(N / TN) * Q
    grid = (min(3, total),)
    return {"kernel": m._static_persistent_bmm_kernel,
                "args": (at, b, c, Q, M, N, K, TM, TN, TK, 8, True, False), "grid": grid, "outs": c,
                "want": lambda: torch.bmm(at.float().transpose(1, 2), b.float()), "tol": 5e-2}

def _rms_ref(x, w, eps, off=0.0):
    xf = x.float()
    r = torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    return (xf * r * (off + w.float())), r.squeeze(-1)

def rms_norm_gather():
    m = mod(OPS + "rms_norm")
    M, N = 8, 300
    x, w = torch.randn(M, N, dtype=torch.float16), torch.randn(N, dtype=torch.float16)
    y, rstd = torch.zeros_like(x), torch.zeros(M)
    TILE = min(4096 // 2, 512)
    return {"kernel": m._rms_norm_kernel_gather, "args": (x, w, y, rstd, N, 1e-6, 0.0, TILE), "grid": (M,),
                "outs": lambda: [y, rstd], "want": lambda: list(_rms_ref(x, w, 1e-6)), "tol": 1e-2}

def rms_norm_gather_multitile():
    m = mod(OPS + "rms_norm")
    M, N = 4, 300
    x, w = torch.randn(M, N, dtype=torch.float16), torch.randn(N, dtype=torch.float16)
    y, rstd = torch.zeros_like(x), torch.zeros(M)
    TILE = 128  # forces the j-loop (3 tiles) with a masked tail
    return {"kernel": m._rms_norm_kernel_gather, "args": (x, w, y, rstd, N, 1e-6, 1.0, TILE), "grid": (M,),
                "outs": lambda: [y, rstd], "want": lambda: list(_rms_ref(x, w, 1e-6, 1.0)), "tol": 1e-2,
                "extra": "TILE_SIZE=128 (< wrapper's 512) to exercise loop"}

def rms_norm_cached():
    m = mod(OPS + "rms_norm")
    M, N = 8, 300
    x, w = torch.randn(M, N, dtype=torch.float16), torch.randn(N, dtype=torch.float16)
    y, rstd = torch.zeros_like(x), torch.zeros(M)
    return {"kernel": m._rms_norm_kernel_multi_wave_cached, "args": (x, w, y, rstd, N, 1e-6, 0.0, 512), "grid": (M,),
                "outs": lambda: [y, rstd], "want": lambda: list(_rms_ref(x, w, 1e-6)), "tol": 1e-2}

def rms_norm_persistent():
    m = mod(OPS + "rms_norm")
    M, N = 70, 300
    x, w = torch.randn(M, N, dtype=torch.float16), torch.randn(N, dtype=torch.float16)
    y, rstd = torch.zeros_like(x), torch.zeros(M)
    TM, TN = 16, 512
    grid = (min(3, math.ceil(M / TM)),)
    return {"kernel": m._rms_norm_kernel_static_persistent, "args": (x, y, w, rstd, TM, TN, 1e-6, 0.0), "grid": grid,
                "outs": lambda: [y, rstd], "want": lambda: list(_rms_ref(x, w, 1e-6)), "tol": 1e-2}

def rms_norm_bwd():
    m = mod(OPS + "rms_norm")
    M, N = 30, 300
    x, w = torch.randn(M, N), torch.randn(N)
    dy = torch.randn(M, N)
    rstd = torch.rsqrt(x.pow(2).mean(-1) + 1e-6)
    tm, T = 4, 512
    g = min(3, math.ceil(M / tm))
    dx = torch.zeros_like(x)
    dwp = torch.zeros(g, T)
    def want():
        xx = x.clone().requires_grad_(True); ww = w.clone().requires_grad_(True)
        y = xx * torch.rsqrt(xx.pow(2).mean(-1, keepdim=True) + 1e-6) * ww
        y.backward(dy)
        return [xx.grad, ww.grad]
    return {"kernel": m._rms_bwd_kernel.__wrapped__ if hasattr(m._rms_bwd_kernel, "__wrapped__") else m._rms_bwd_kernel,
                "args": (dx, dy, x, w, rstd, dwp, tm, T), "grid": (g,),
                "outs": lambda: [dx, dwp.sum(0)[:N]], "want": want, "tol": 1e-3}
