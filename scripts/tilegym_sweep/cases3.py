import math

import torch
from harness import mod

import tilecheck

OPS = "tilegym.ops.cutile."
LN2 = math.log(2)

def _attn_inputs(B=1, H=4, HKV=2, S=128, D=64, causal=True):
    torch.manual_seed(0)
    q = torch.randn(B, H, S, D, dtype=torch.float16) * 0.5
    k = torch.randn(B, HKV, S, D, dtype=torch.float16) * 0.5
    v = torch.randn(B, HKV, S, D, dtype=torch.float16)
    return q, k, v

def _ref_attn(q, k, v, scale, causal, g):
    qq = q.float().requires_grad_(True); kk = k.float().repeat_interleave(g, 1).requires_grad_(True)
    vv = v.float().repeat_interleave(g, 1).requires_grad_(True)
    s = qq @ kk.transpose(-1, -2) * scale
    if causal:
        S = q.shape[2]; s = s.masked_fill(torch.ones(S, S, dtype=torch.bool).triu(1), -math.inf)
    lse = torch.logsumexp(s, -1)
    o = torch.softmax(s, -1) @ vv
    return qq, kk, vv, o, lse

def fmha_fwd_lse_causal():
    m = mod(OPS + "attention")
    B, H, HKV, S, D = 1, 4, 2, 128, 64
    q, k, v = _attn_inputs(B, H, HKV, S, D)
    o = torch.zeros_like(q); lse = torch.zeros(B * H * S)
    scale = 1 / 8.0; TM, TN = 64, 64
    def want():
        _, _, _, ro, rl = _ref_attn(q, k, v, scale, True, H // HKV)
        return [ro.detach(), (rl / LN2).detach().reshape(-1)]
    return {"kernel": m._fmha_fwd_kernel_with_lse,
                "args": (q, k, v, o, lse, scale, 0, D, H, B, S, TM, TN, H // HKV, True, True),
                "grid": (S // TM, B * H, 1), "outs": lambda: [o, lse], "want": want, "tol": 2e-2}

def fmha_bwd_preprocess():
    m = mod(OPS + "attention")
    B, H, S, D = 1, 4, 128, 64
    o = torch.randn(B, H, S, D, dtype=torch.float16); do = torch.randn(B, H, S, D, dtype=torch.float16)
    delta = torch.zeros(B * H * S)
    TM = 64
    return {"kernel": m._fmha_bwd_preprocess_kernel, "args": (o, do, delta, TM, D, H, S), "grid": (S // TM, B * H, 1),
                "outs": delta, "want": lambda: (o.float() * do.float()).sum(-1).reshape(-1), "tol": 1e-2}

def _bwd_setup():
    B, H, HKV, S, D = 1, 4, 2, 128, 64
    q, k, v = _attn_inputs(B, H, HKV, S, D)
    scale = 1 / 8.0
    qq, kk, vv, o, lse = _ref_attn(q, k, v, scale, True, H // HKV)
    do = torch.randn(B, H, S, D, dtype=torch.float16)
    o.backward(do.float())
    dq = qq.grad; dk = kk.grad.view(B, HKV, H // HKV, S, D).sum(2); dv = vv.grad.view(B, HKV, H // HKV, S, D).sum(2)
    delta = (o.detach().half().float() * do.float()).sum(-1).reshape(-1).contiguous()
    lse2 = (lse.detach() / LN2).reshape(-1).contiguous()
    return B, H, HKV, S, D, q, k, v, do, scale, lse2, delta, dq, dk, dv

def fmha_bwd_dkdv_causal():
    m = mod(OPS + "attention")
    B, H, HKV, S, D, q, k, v, do, scale, lse2, delta, _dq, dk, dv = _bwd_setup()
    dK = torch.zeros_like(k); dV = torch.zeros_like(v)
    TM, TN = 32, 64
    return {"kernel": m._fmha_bwd_dkdv_kernel,
                "args": (q, k, v, do, dK, dV, lse2, delta, scale, D, H, HKV, S, TM, TN, H // HKV, True),
                "grid": (S // TN, B * HKV, 1), "outs": lambda: [dK, dV], "want": lambda: [dk, dv], "tol": 5e-2}

def fmha_bwd_dq_causal():
    m = mod(OPS + "attention")
    B, H, HKV, S, D, q, k, v, do, scale, lse2, delta, dq, _dk, _dv = _bwd_setup()
    dQ = torch.zeros_like(q)
    TM, TN = 64, 32
    return {"kernel": m._fmha_bwd_dq_kernel,
                "args": (q, k, v, do, dQ, lse2, delta, scale, D, H, S, TM, TN, H // HKV, True),
                "grid": (S // TM, B * H, 1), "outs": dQ, "want": lambda: dq, "tol": 5e-2}

def flash_decode_grouped():
    m = mod(OPS + "flash_decode")
    B, HQ, HKV, S, D = 1, 8, 2, 300, 64
    torch.manual_seed(0)
    Q = torch.randn(B, HQ, D, dtype=torch.float16); K = torch.randn(B, HKV, S, D, dtype=torch.float16)
    V = torch.randn(B, HKV, S, D, dtype=torch.float16)
    T = 128; NS = (S + T - 1) // T; G = HQ // HKV; QG = max(8, 1 << (G - 1).bit_length())
    mid = torch.zeros(B, HQ, NS, D, dtype=torch.float16); lse = torch.zeros(B, HQ, NS)
    mid5 = mid.view(B, HKV, G, NS, D); lse4 = lse.view(B, HKV, G, NS)
    scale = 1 / 8.0
    Qg = Q.view(B, HKV, G, D)
    def want():
        kk = K.float().repeat_interleave(G, 1); vv = V.float().repeat_interleave(G, 1)
        outs, lses = [], []
        for s in range(NS):
            lo, hi = s * T, min((s + 1) * T, S)
            sc = (Q.float().unsqueeze(2) @ kk[:, :, lo:hi].transpose(-1, -2)).squeeze(2) * scale
            lses.append(torch.logsumexp(sc, -1) / LN2)
            outs.append(torch.softmax(sc, -1).unsqueeze(2) @ vv[:, :, lo:hi])
        return [torch.cat(outs, 2), torch.stack(lses, -1)]
    return {"kernel": m._attention_decode_kernel_grouped,
                "args": (Qg, K, V, mid5, lse4, scale, mid.stride(0), mid.stride(1), mid.stride(2), lse.stride(0),
                      lse.stride(1), B, HQ, HKV, S, D, 128, T, G, QG, NS),
                "grid": (B, HKV, NS), "outs": lambda: [mid, lse], "want": want, "tol": 2e-2,
                "extra": "G=4 q heads/kv < QUERY_GROUP_TILE_SIZE=8 -> scatter path"}

def _moe_align_ref(topk_ids, E, bs):
    flat = topk_ids.reshape(-1).tolist(); n = len(flat)
    cnt = [flat.count(e) for e in range(E)]
    padded = [(c + bs - 1) // bs * bs for c in cnt]
    cums = [0]
    for p in padded: cums.append(cums[-1] + p)
    maxpad = n + E * (bs - 1)
    sorted_ids = [n] * maxpad; expert_ids = [0] * ((maxpad + bs - 1) // bs); pos = list(cums[:-1])
    for i, e in enumerate(flat):
        sorted_ids[pos[e]] = i; pos[e] += 1
    for e in range(E):
        for b in range(cums[e] // bs, cums[e + 1] // bs): expert_ids[b] = e
    return (torch.tensor(sorted_ids, dtype=torch.int32), torch.tensor(expert_ids, dtype=torch.int32), cums[-1],
            torch.tensor(cums, dtype=torch.int32), max(cnt))

def _moe_align_state(stage):
    m = mod(OPS + "moe_align_block")
    torch.manual_seed(0)
    E, bs, T, topk = 4, 4, 6, 2
    topk_ids = torch.stack([torch.randperm(E)[:topk] for _ in range(T)]).to(torch.int32)
    flat = topk_ids.reshape(-1); numel = flat.numel(); tpt = (numel + E - 1) // E
    maxpad = numel + E * (bs - 1)
    sorted_ids = torch.full((maxpad,), numel, dtype=torch.int32)
    expert_ids = torch.zeros(((maxpad + bs - 1) // bs,), dtype=torch.int32)
    ntp = torch.zeros(1, dtype=torch.int32); mx = torch.zeros(1, dtype=torch.int32)
    cnts = torch.zeros((E + 1) * E, dtype=torch.int32); cums = torch.zeros(E + 1, dtype=torch.int32)
    E2 = 1 << (E - 1).bit_length()
    calls = [
        ("s1", m._moe_align_block_size_stage1_kernel, (flat, cnts, E, numel, tpt), (E,)),
        ("s2", m._moe_align_block_size_stage2_kernel, (cnts, E, E2), (E,)),
        ("s3", m._moe_align_block_size_stage3_kernel, (ntp, mx, cnts, cums, E, bs), (1,)),
        ("s4", m._moe_align_block_size_stage4_kernel, (flat, sorted_ids, expert_ids, cnts, cums, E, bs, numel, tpt), (E,)),
    ]
    for i in range(stage - 1):  # produce this stage's inputs with the earlier stages on the interpreter
        _, k, a, g = calls[i]
        tilecheck.launch(g, k, a, backend="cpu", unsafe=True)
    ref = _moe_align_ref(topk_ids, E, bs)
    return calls[stage - 1], ref, {"cnts": cnts, "cums": cums, "ntp": ntp, "mx": mx, "sorted_ids": sorted_ids, "expert_ids": expert_ids,
                                       "flat": flat, "E": E}

def moe_align_stage1():
    (_, k, a, g), _ref, st = _moe_align_state(1)
    E = st["E"]; flat = st["flat"]; tpt = (flat.numel() + E - 1) // E
    def want():
        w = torch.zeros(E + 1, E, dtype=torch.int32)
        for i, e in enumerate(flat.tolist()): w[i // tpt + 1, e] += 1
        return w.reshape(-1)
    return {"kernel": k, "args": a, "grid": g, "outs": st["cnts"], "want": want, "tol": 0}

def moe_align_stage2():
    (_, k, a, g), _ref, st = _moe_align_state(2)
    E = st["E"]; before = st["cnts"].clone().view(E + 1, E)
    def want():
        w = before.clone(); w[1:] = torch.cumsum(before[1:], 0); return w.reshape(-1)
    return {"kernel": k, "args": a, "grid": g, "outs": st["cnts"], "want": want, "tol": 0}

def moe_align_stage3():
    (_, k, a, g), ref, st = _moe_align_state(3)
    return {"kernel": k, "args": a, "grid": g, "outs": lambda: [st["cums"], st["ntp"], st["mx"]],
                "want": lambda: [ref[3], torch.tensor([ref[2]]), torch.tensor([ref[4]])], "tol": 0}

def moe_align_stage4():
    (_, k, a, g), ref, st = _moe_align_state(4)
    return {"kernel": k, "args": a, "grid": g, "outs": lambda: [st["sorted_ids"], st["expert_ids"][:len(ref[1])]],
                "want": lambda: [ref[0], ref[1]], "tol": 0}

def fused_moe():
    m = mod(OPS + "moe")
    torch.manual_seed(0)
    M, E, N, K, topk, TM, TN, TK = 6, 4, 96, 64, 2, 16, 64, 32
    A = torch.randn(M, K, dtype=torch.float16) * 0.3; Bw = torch.randn(E, N, K, dtype=torch.float16) * 0.3
    topk_ids = torch.stack([torch.randperm(E)[:topk] for _ in range(M)]).to(torch.int32)
    topk_w = torch.rand(M, topk)
    sorted_ids, expert_ids, ntp, _, _ = _moe_align_ref(topk_ids, E, TM)
    C = torch.zeros(M, topk, N, dtype=torch.float16)
    EM = sorted_ids.shape[0]
    grid = (math.ceil(EM / TM) * math.ceil(N / TN),)
    ntp_t = torch.tensor([ntp], dtype=torch.int32)
    args = (A.reshape(-1), Bw, C.view(-1, N), torch.empty(0, dtype=torch.float16), torch.empty(0, dtype=torch.float16),
            topk_w.view(-1), sorted_ids, expert_ids, ntp_t, N, K, EM, topk_ids.numel(), 0, 0, TM, TN, TK, 8, 1, topk,
            0, 0, 1, K)
    def want():
        out = torch.zeros(M, topk, N)
        for t in range(M):
            for j in range(topk):
                out[t, j] = (A[t].float() @ Bw[topk_ids[t, j]].float().T) * topk_w[t, j]
        return out
    return {"kernel": m._fused_moe_kernel, "args": args, "grid": grid, "outs": C, "want": want, "tol": 2e-2}

def group_gemm():
    m = mod(OPS + "group_gemm")
    torch.manual_seed(0)
    shapes = [(64, 96, 64), (100, 64, 80)]
    As = [torch.randn(mm, kk, dtype=torch.float16) for mm, nn, kk in shapes]
    Bs = [torch.randn(nn, kk, dtype=torch.float16) for mm, nn, kk in shapes]  # transpose_b
    Cs = [torch.zeros(mm, nn, dtype=torch.float16) for mm, nn, kk in shapes]
    NSM = 3
    return {"kernel": m._group_gemm_kernel, "args": (tuple(As), tuple(Bs), tuple(Cs), 32, 32, 32, NSM, True),
                "grid": (NSM, 1, 1), "outs": lambda: Cs, "want": lambda: [a.float() @ b.float().T for a, b in zip(As, Bs)],
                "tol": 5e-2}
