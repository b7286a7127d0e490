"""Attention-family kernels: RoPE, flash-attention forward, the head-permutation bug and its twin."""
import math

import cuda.tile as ct
import numpy as np

import tilecheck

ConstInt = ct.Constant[int]


@tilecheck.case(grid=(16, 1, 1), args=lambda: (np.ones((16, 64), np.float32), np.ones((16, 32), np.float32),
                                               np.zeros((16, 32), np.float32), np.zeros((16, 64), np.float32), 32))
@ct.kernel
def rope(X, COS, SIN, Y, HALF: ConstInt):
    pos = ct.bid(0)
    x1 = ct.load(X, index=(pos, 0), shape=(1, HALF))
    x2 = ct.load(X, index=(pos, 1), shape=(1, HALF))
    c = ct.load(COS, index=(pos, 0), shape=(1, HALF))
    s = ct.load(SIN, index=(pos, 0), shape=(1, HALF))
    ct.store(Y, index=(pos, 0), tile=x1 * c - x2 * s)
    ct.store(Y, index=(pos, 1), tile=x2 * c + x1 * s)


@tilecheck.case(grid=(2, 4, 1), args=lambda: (np.ones((2, 2, 64, 32), np.float16), np.ones((2, 2, 64, 32), np.float16),
                                              np.ones((2, 2, 64, 32), np.float16), np.zeros((2, 2, 64, 32), np.float16),
                                              0.125, 32, 2, 32, 32))
@ct.kernel
def flash_attention_fwd(Q, K, V, O, scale, D: ConstInt, H: ConstInt, TM: ConstInt, TN: ConstInt):
    qb = ct.bid(0)
    bh = ct.bid(1)
    b = bh // H
    h = bh % H
    q = ct.reshape(ct.load(Q, index=(b, h, qb, 0), shape=(1, 1, TM, D)), (TM, D))
    m_i = ct.full((TM, 1), -math.inf, dtype=ct.float32)
    l_i = ct.full((TM, 1), 0.0, dtype=ct.float32)
    acc = ct.full((TM, D), 0.0, dtype=ct.float32)
    for j in range(ct.cdiv(K.shape[2], TN)):
        k = ct.load(K, index=(b, h, 0, j), shape=(1, 1, D, TN), order=(0, 1, 3, 2))
        qk = ct.mma(q, ct.reshape(k, (D, TN)), ct.full((TM, TN), 0.0, dtype=ct.float32)) * scale
        m_ij = ct.maximum(m_i, ct.max(qk, axis=-1, keepdims=True))
        p = ct.exp(qk - m_ij)
        alpha = ct.exp(m_i - m_ij)
        l_i = l_i * alpha + ct.sum(p, axis=-1, keepdims=True)
        v = ct.reshape(ct.load(V, index=(b, h, j, 0), shape=(1, 1, TN, D)), (TN, D))
        acc = ct.mma(p.astype(Q.dtype), v, acc * alpha)
        m_i = m_ij
    out = ct.reshape(acc / l_i, (1, 1, TM, D)).astype(O.dtype)
    ct.store(O, index=(b, h, qb, 0), tile=out)


def _perm_args(B=1, H=8, M=128, D=64, BM=32, BD=64):
    src = np.arange(B * H * M * D, dtype=np.float32).reshape(B, H, M, D)
    return src, np.zeros((B, H, M, D), np.float32), H, BM, BD


@tilecheck.case(grid=(8, 8, 1), args=_perm_args)
@ct.kernel
def head_permute_swapped(src, dst, H: ConstInt, BM: ConstInt, BD: ConstInt):
    # The paper's bug: the destination index swaps the head and sequence axes.
    b = ct.bid(0) // H
    h1 = ct.bid(0) % H
    h2 = ct.bid(1)
    for m in range(ct.num_tiles(src, axis=2, shape=(1, 1, BM, BD))):
        t = ct.load(src, index=(b, h1, m, 0), shape=(1, 1, BM, BD))
        ct.store(dst, index=(b, m, h2, 0), tile=t)


@tilecheck.case(grid=(8, 8, 1), args=_perm_args)
@ct.kernel
def head_permute_paper_fix(src, dst, H: ConstInt, BM: ConstInt, BD: ConstInt):
    # The store the paper calls correct; with grid (B*H, H, 1) it races too.
    b = ct.bid(0) // H
    h1 = ct.bid(0) % H
    h2 = ct.bid(1)
    for m in range(ct.num_tiles(src, axis=2, shape=(1, 1, BM, BD))):
        t = ct.load(src, index=(b, h1, m, 0), shape=(1, 1, BM, BD))
        ct.store(dst, index=(b, h2, m, 0), tile=t)


@tilecheck.case(grid=(8, 1, 1), args=_perm_args)
@ct.kernel
def head_permute_safe(src, dst, H: ConstInt, BM: ConstInt, BD: ConstInt):
    # Race-free twin: one block per (b, h), a bijective head permutation.
    b = ct.bid(0) // H
    h = ct.bid(0) % H
    for m in range(ct.num_tiles(src, axis=2, shape=(1, 1, BM, BD))):
        t = ct.load(src, index=(b, h, m, 0), shape=(1, 1, BM, BD))
        ct.store(dst, index=(b, (h + 1) % H, m, 0), tile=t)
