import math

import torch
import torch.nn.functional as F
from harness import mod

SU = "tilegym.suites."

def unsloth_ce_fwd_softcap():
    m = mod(SU + "unsloth.cutile.cross_entropy_loss")
    R, V = 6, 300
    logits = torch.randn(R, V, dtype=torch.float16) * 3
    labels = torch.randint(0, V, (R,)); labels[2] = -100
    labels = labels.to(torch.int32) if False else labels  # wrapper passes int64 labels
    loss = torch.zeros(R); lse = torch.zeros(R)
    cap = 10.0
    def want():
        x = cap * torch.tanh(logits.float() / cap)
        l = torch.logsumexp(x, 1)
        ce = F.cross_entropy(x, labels, ignore_index=-100, reduction="none")
        return [ce, l]
    return {"kernel": m._cross_entropy_forward_ct, "args": (logits, loss, lse, labels, V, 512, 1, cap, 0, 0.0), "grid": (R, 1, 1),
                "outs": lambda: [loss, lse], "want": want, "tol": 1e-3, "extra": "labels int64, one label=-100"}

def unsloth_ce_bwd():
    m = mod(SU + "unsloth.cutile.cross_entropy_loss")
    R, V, BS = 4, 300, 128
    logits = torch.randn(R, V) * 3
    labels = torch.randint(0, V, (R,)); labels[1] = -100
    dl = torch.rand(R)
    lse = torch.logsumexp(logits, 1)
    grad = torch.zeros_like(logits)
    def want():
        x = logits.clone().requires_grad_(True)
        F.cross_entropy(x, labels, ignore_index=-100, reduction="none").backward(dl)
        return x.grad
    return {"kernel": m._cross_entropy_backward_ct, "args": (logits, grad, dl, lse, labels, V, BS, 0, 0.0, 0, 0.0),
                "grid": (R, math.ceil(V / BS), 1), "outs": grad, "want": want, "tol": 1e-4,
                "extra": "BLOCK_SIZE=128 (wrapper uses 4096) to get 3 column blocks"}

def liger_ce_inplace_grad():
    m = mod(SU + "liger.cutile.cross_entropy")
    R, V, BS = 5, 300, 128
    x0 = torch.randn(R, V) * 2
    inp = x0.clone()
    target = torch.randint(0, V, (R,), dtype=torch.int64); target[3] = -100
    loss = torch.zeros(R); acc = torch.zeros(R); pred = torch.full((R,), -1, dtype=torch.int64)
    nni = int((target != -100).sum())
    dummy_w = torch.zeros(1); dummy_z = torch.zeros(1)
    args = (inp, target, dummy_w, loss, dummy_z, acc, pred, V, 1.0 / nni, float(nni), 0.0, -100, 0.0, 0.0, 0.0, BS,
            1, 1, 0, 0, 0, 1, 1)
    def want():
        x = x0.clone().requires_grad_(True)
        l = F.cross_entropy(x, target, ignore_index=-100, reduction="none")
        (l.sum() / nni).backward()
        p = torch.where(target != -100, x0.argmax(1), torch.full_like(target, -1))
        a = torch.where(target != -100, (x0.argmax(1) == target).float(), torch.zeros(R))
        return [l.detach() / nni, x.grad, p, a]
    return {"kernel": m._liger_cross_entropy_kernel, "args": args, "grid": (R, 1, 1), "outs": lambda: [loss, inp, pred, acc],
                "want": want, "tol": 1e-4, "extra": "fused fwd+bwd, gradient written in-place into input; early return for ignore_index"}
