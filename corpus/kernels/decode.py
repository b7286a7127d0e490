"""A Qwen3-style decode layer, one kernel per step, with racy variants of the steps that are easy
to get wrong (grouped-query heads, split-K)."""
import math

import cuda.tile as ct
import numpy as np

import tilecheck

ConstInt = ct.Constant[int]
ZERO = ct.PaddingMode.ZERO
B, D, HQ, HKV, HD, S = 4, 256, 8, 2, 64, 128  # tokens, hidden, q heads, kv heads, head dim, context


def _rng():
    return np.random.default_rng(0)


@tilecheck.case(grid=(B, 1, 1), args=lambda: (_rng().standard_normal((B, D)).astype(np.float32),
                                               np.ones(D, np.float32), np.zeros((B, D), np.float32), 1e-6, D))
@ct.kernel
def decode_rmsnorm(x, w, y, eps, TD: ConstInt):
    t = ct.bid(0)
    tx = ct.load(x, index=(t, 0), shape=(1, TD), padding_mode=ZERO)
    inv = ct.rsqrt(ct.sum(tx * tx, axis=1, keepdims=True) / x.shape[1] + eps)
    ct.store(y, index=(t, 0), tile=tx * inv * ct.load(w, index=(0,), shape=(TD,), padding_mode=ZERO))


@tilecheck.case(grid=(D // 32, 1, 1), args=lambda: (_rng().standard_normal((D, D)).astype(np.float32),
                                                    _rng().standard_normal((B, D)).astype(np.float32),
                                                    np.zeros((B, D), np.float32), 32, 64))
@ct.kernel
def qkv_gemv(W, x, y, TN: ConstInt, TK: ConstInt):
    # y[:, n-tile] = x @ W[n-tile, :]^T, one output tile per block, a loop over K.
    n = ct.bid(0)
    acc = ct.full((4, TN), 0.0, dtype=ct.float32)
    for k in range(ct.num_tiles(x, axis=1, shape=(4, TK))):
        tx = ct.load(x, index=(0, k), shape=(4, TK), padding_mode=ZERO)
        tw = ct.load(W, index=(n, k), shape=(TN, TK), padding_mode=ZERO)
        acc = ct.mma(tx, ct.transpose(tw), acc)
    ct.store(y, index=(0, n), tile=acc)


@tilecheck.case(grid=(D // 32, 2, 1), args=lambda: (_rng().standard_normal((D, D)).astype(np.float32),
                                                    _rng().standard_normal((B, D)).astype(np.float32),
                                                    np.zeros((B, D), np.float32), 32, 128))
@ct.kernel
def qkv_gemv_split_k_store(W, x, y, TN: ConstInt, TK: ConstInt):
    # Racy: the K dimension is split over bid(1), and every split stores its partial sum to the
    # same output tile (plain stores, no reduction).
    n = ct.bid(0)
    k = ct.bid(1)
    tx = ct.load(x, index=(0, k), shape=(4, TK), padding_mode=ZERO)
    tw = ct.load(W, index=(n, k), shape=(TN, TK), padding_mode=ZERO)
    ct.store(y, index=(0, n), tile=ct.mma(tx, ct.transpose(tw), ct.full((4, TN), 0.0, dtype=ct.float32)))


@tilecheck.case(grid=(B, HQ, 1), args=lambda: (_rng().standard_normal((B, HQ, HD)).astype(np.float32),
                                               np.cos(np.arange(B * HD // 2, dtype=np.float32)).reshape(B, HD // 2),
                                               np.sin(np.arange(B * HD // 2, dtype=np.float32)).reshape(B, HD // 2),
                                               HD // 2))
@ct.kernel
def rope_inplace(q, cos, sin, HALF: ConstInt):
    # In place, one (token, head) per block: reads and rewrites only its own row.
    t = ct.bid(0)
    h = ct.bid(1)
    x1 = ct.load(q, index=(t, h, 0), shape=(1, 1, HALF))
    x2 = ct.load(q, index=(t, h, 1), shape=(1, 1, HALF))
    c = ct.reshape(ct.load(cos, index=(t, 0), shape=(1, HALF)), (1, 1, HALF))
    s = ct.reshape(ct.load(sin, index=(t, 0), shape=(1, HALF)), (1, 1, HALF))
    ct.store(q, index=(t, h, 0), tile=x1 * c - x2 * s)
    ct.store(q, index=(t, h, 1), tile=x2 * c + x1 * s)


def _attention_args():
    r = _rng()
    q = r.standard_normal((B, HQ, 1, HD)).astype(np.float32)
    k = r.standard_normal((B, HKV, S, HD)).astype(np.float32)
    v = r.standard_normal((B, HKV, S, HD)).astype(np.float32)
    return q, k, v, np.zeros((B, HQ, 1, HD), np.float32), 1.0 / math.sqrt(HD), HQ // HKV, HD, 32


@tilecheck.case(grid=(B, HQ, 1), args=_attention_args)
@ct.kernel
def decode_attention_gqa(Q, K, V, O, scale, GROUP: ConstInt, HDIM: ConstInt, TS: ConstInt):
    # One (token, q head) per block; q head h reads kv head h // GROUP (grouped-query attention).
    b = ct.bid(0)
    h = ct.bid(1)
    kvh = h // GROUP
    q = ct.reshape(ct.load(Q, index=(b, h, 0, 0), shape=(1, 1, 1, HDIM)), (1, HDIM))
    m = ct.full((1, 1), -math.inf, dtype=ct.float32)
    l = ct.full((1, 1), 0.0, dtype=ct.float32)
    acc = ct.full((1, HDIM), 0.0, dtype=ct.float32)
    for j in range(ct.num_tiles(K, axis=2, shape=(1, 1, TS, HDIM))):
        k = ct.reshape(ct.load(K, index=(b, kvh, j, 0), shape=(1, 1, TS, HDIM)), (TS, HDIM))
        v = ct.reshape(ct.load(V, index=(b, kvh, j, 0), shape=(1, 1, TS, HDIM)), (TS, HDIM))
        s = ct.mma(q, ct.transpose(k), ct.full((1, TS), 0.0, dtype=ct.float32)) * scale
        m_new = ct.maximum(m, ct.max(s, axis=1, keepdims=True))
        p = ct.exp(s - m_new)
        alpha = ct.exp(m - m_new)
        l = l * alpha + ct.sum(p, axis=1, keepdims=True)
        acc = ct.mma(p, v, acc * alpha)
        m = m_new
    ct.store(O, index=(b, h, 0, 0), tile=ct.reshape(acc / l, (1, 1, 1, HDIM)))


def _cache_args():
    r = _rng()
    return (r.standard_normal((B, HQ, 1, HD)).astype(np.float32), np.zeros((B, HKV, S, HD), np.float32), 5, HQ // HKV, HD)


@tilecheck.case(grid=(B, HQ, 1), args=_cache_args)
@ct.kernel
def kv_cache_append_per_q_head(knew, cache, pos, GROUP: ConstInt, HDIM: ConstInt):
    # Racy (a GQA bug): launched per *q* head, each block appends its key to the slot of kv head
    # h // GROUP, so the GROUP q heads of one kv head write the same cache row.
    b = ct.bid(0)
    h = ct.bid(1)
    k = ct.load(knew, index=(b, h, 0, 0), shape=(1, 1, 1, HDIM))
    ct.store(cache, index=(b, h // GROUP, pos, 0), tile=k)


@tilecheck.case(grid=(B, HKV, 1), args=lambda: (_rng().standard_normal((B, HKV, 1, HD)).astype(np.float32),
                                                np.zeros((B, HKV, S, HD), np.float32), 5, HD))
@ct.kernel
def kv_cache_append(knew, cache, pos, HDIM: ConstInt):
    # The fix: one block per kv head.
    b = ct.bid(0)
    h = ct.bid(1)
    ct.store(cache, index=(b, h, pos, 0), tile=ct.load(knew, index=(b, h, 0, 0), shape=(1, 1, 1, HDIM)))


@tilecheck.case(grid=(B, D // 64, 1), args=lambda: (_rng().standard_normal((B, D)).astype(np.float32),
                                                    _rng().standard_normal((B, D)).astype(np.float32),
                                                    np.zeros((B, D), np.float32), 64))
@ct.kernel
def silu_mul(gate, up, out, TD: ConstInt):
    t = ct.bid(0)
    j = ct.bid(1)
    g = ct.load(gate, index=(t, j), shape=(1, TD))
    u = ct.load(up, index=(t, j), shape=(1, TD))
    ct.store(out, index=(t, j), tile=g / (1.0 + ct.exp(-g)) * u)


@tilecheck.case(grid=(B, D // 64, 1), args=lambda: (_rng().standard_normal((B, D)).astype(np.float32),
                                                    _rng().standard_normal((B, D)).astype(np.float32),
                                                    np.zeros((B, D), np.float32), 64))
@ct.kernel
def silu_mul_wrong_tile(gate, up, out, TD: ConstInt):
    # Racy: the output column tile is j // 2 (a copy-paste from a half-width variant).
    t = ct.bid(0)
    j = ct.bid(1)
    g = ct.load(gate, index=(t, j), shape=(1, TD))
    u = ct.load(up, index=(t, j), shape=(1, TD))
    ct.store(out, index=(t, j // 2), tile=g / (1.0 + ct.exp(-g)) * u)


@tilecheck.case(grid=(B, D // 64, 1), args=lambda: (_rng().standard_normal((B, D)).astype(np.float32),
                                                    _rng().standard_normal((B, D)).astype(np.float32), 64))
@ct.kernel
def residual_add_inplace(x, delta, TD: ConstInt):
    t = ct.bid(0)
    j = ct.bid(1)
    ct.store(x, index=(t, j), tile=ct.load(x, index=(t, j), shape=(1, TD)) + ct.load(delta, index=(t, j),
                                                                                      shape=(1, TD)))


@tilecheck.case(grid=(B, 1, 1), args=lambda: (_rng().standard_normal((B, D)).astype(np.float32),
                                              np.ones(D, np.float32), np.zeros((B, D), np.float32), 1e-6, D))
@ct.kernel
def rmsnorm_to_row_zero(x, w, y, eps, TD: ConstInt):
    # Racy: every block writes its normalised row to row 0 (the row index was dropped).
    t = ct.bid(0)
    tx = ct.load(x, index=(t, 0), shape=(1, TD), padding_mode=ZERO)
    inv = ct.rsqrt(ct.sum(tx * tx, axis=1, keepdims=True) / x.shape[1] + eps)
    ct.store(y, index=(0, 0), tile=tx * inv * ct.load(w, index=(0,), shape=(TD,), padding_mode=ZERO))
