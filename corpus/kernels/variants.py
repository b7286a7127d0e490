"""Racy variants of the safe families: one wrong index or one missing synchronisation each."""
import cuda.tile as ct
import numpy as np

import tilecheck
from corpus.kernels.attention import flash_attention_fwd  # noqa: F401  (the safe twin)
from corpus.kernels.elementwise import _flag_rows

ConstInt = ct.Constant[int]
ZERO = ct.PaddingMode.ZERO


def _r():
    return np.random.default_rng(0)


@tilecheck.case(grid=(64, 1, 1), args=lambda: (_r().standard_normal((64, 128)).astype(np.float32),
                                               np.zeros((64, 128), np.float32), 128))
@ct.kernel
def softmax_half_rows(x, y, TN: ConstInt):
    # Racy: rows 2r and 2r + 1 both store to row r.
    row = ct.bid(0)
    t = ct.load(x, index=(row, 0), shape=(1, TN))
    e = ct.exp(t - ct.max(t, axis=1, keepdims=True))
    ct.store(y, index=(row // 2, 0), tile=e / ct.sum(e, axis=1, keepdims=True))


@tilecheck.case(grid=(2, 4, 1), args=lambda: tuple(_r().standard_normal((2, 2, 64, 32)).astype(np.float16)
                                                   for _ in range(3)) + (np.zeros((2, 2, 64, 32), np.float16),
                                                                         0.125, 32, 2, 32))
@ct.kernel
def attention_head_dropped(Q, K, V, O, scale, D: ConstInt, H: ConstInt, TM: ConstInt):
    # Racy: the output index drops the head, so all heads of a batch write head 0.
    qb = ct.bid(0)
    b = ct.bid(1) // H
    h = ct.bid(1) % H
    q = ct.reshape(ct.load(Q, index=(b, h, qb, 0), shape=(1, 1, TM, D)), (TM, D))
    k = ct.reshape(ct.load(K, index=(b, h, qb, 0), shape=(1, 1, TM, D)), (TM, D))
    v = ct.reshape(ct.load(V, index=(b, h, qb, 0), shape=(1, 1, TM, D)), (TM, D))
    s = ct.mma(q, ct.transpose(k), ct.full((TM, TM), 0.0, dtype=ct.float32)) * scale
    p = ct.exp(s - ct.max(s, axis=1, keepdims=True))
    o = ct.mma((p / ct.sum(p, axis=1, keepdims=True)).astype(Q.dtype), v, ct.full((TM, D), 0.0, dtype=ct.float32))
    ct.store(O, index=(b, 0, qb, 0), tile=ct.reshape(o, (1, 1, TM, D)).astype(O.dtype))


@tilecheck.case(grid=(2, 2, 2), args=lambda: (_r().standard_normal((2, 64, 32)).astype(np.float16),
                                              _r().standard_normal((2, 32, 64)).astype(np.float16),
                                              np.zeros((2, 64, 64), np.float16), 32, 32, 16))
@ct.kernel
def batch_matmul_batch_dropped(A, B, C, TM: ConstInt, TN: ConstInt, TK: ConstInt):
    # Racy: stores every batch's tile into batch 0.
    batch, bm, bn = ct.bid(0), ct.bid(1), ct.bid(2)
    acc = ct.full((TM, TN), 0.0, dtype=ct.float32)
    for k in range(ct.cdiv(A.shape[2], TK)):
        a = ct.load(A, index=(batch, bm, k), shape=(1, TM, TK), padding_mode=ZERO)
        b = ct.load(B, index=(batch, k, bn), shape=(1, TK, TN), padding_mode=ZERO)
        acc = ct.mma(ct.reshape(a, (TM, TK)), ct.reshape(b, (TK, TN)), acc)
    ct.store(C, index=(0, bm, bn), tile=ct.reshape(acc, (1, TM, TN)).astype(C.dtype))


@tilecheck.case(grid=(32, 1, 1), args=lambda: (_r().standard_normal((32, 128)).astype(np.float32),
                                               np.zeros((8, 128), np.float32), 64))
@ct.kernel
def partial_sums_no_lock(DY, DW, TN: ConstInt):
    # Racy: the shared partial-sum rows of layer-norm backward, accumulated without the lock.
    row = ct.bid(0)
    group = row % DW.shape[0]
    for j in range(ct.num_tiles(DY, axis=1, shape=(1, TN))):
        acc = ct.load(DW, index=(group, j), shape=(1, TN), padding_mode=ZERO)
        ct.store(DW, index=(group, j), tile=acc + ct.load(DY, index=(row, j), shape=(1, TN), padding_mode=ZERO))


@tilecheck.case(grid=(8, 1, 1), args=lambda: ((np.arange(1024) % 16).astype(np.int32), np.zeros(16, np.int32), 128))
@ct.kernel
def histogram_plain_update(x, hist, TILE: ConstInt):
    # Racy: a histogram with gather + scatter instead of atomic_add (lost updates).
    bid = ct.bid(0)
    bins = ct.gather(x, bid * TILE + ct.arange(TILE, dtype=ct.int32))
    ct.scatter(hist, bins, ct.gather(hist, bins) + 1)


@tilecheck.case(grid=(4, 8, 1), args=lambda: (_r().standard_normal((4, 8, 64)).astype(np.float32), 64))
@ct.kernel
def head_mix_inplace(q, HD: ConstInt):
    # Racy: head h is rewritten from head h + 1, which its own block rewrites concurrently.
    t = ct.bid(0)
    h = ct.bid(1)
    nxt = ct.load(q, index=(t, h + 1, 0), shape=(1, 1, HD), padding_mode=ZERO)
    cur = ct.load(q, index=(t, h, 0), shape=(1, 1, HD))
    ct.store(q, index=(t, h, 0), tile=(cur + nxt) * 0.5)


def _flat_rows():
    return np.arange(32 * 300, dtype=np.float32) / 100.0, np.zeros(32 * 300, np.float32), 300, 512


@tilecheck.case(grid=(32, 1, 1), args=_flat_rows)
@ct.kernel
def flat_rows_unmasked(x, y, C: ConstInt, TC: ConstInt):
    # Racy for C not a power of two: rows of C elements in a flat array, one row per block, handled
    # with a power-of-two tile TC >= C and no column mask, so each row's tail lands in the next row.
    # (The pattern of a layer-norm example found racy in the wild; see docs/corpus.md.)
    row = ct.bid(0)
    idx = row * C + ct.arange(TC, dtype=ct.int32)
    t = ct.gather(x, idx, padding_value=0)
    ct.scatter(y, idx, t - ct.sum(t) / C)  # centred by the row's (tile's) mean


@tilecheck.case(grid=(32, 1, 1), args=_flat_rows)
@ct.kernel
def flat_rows_masked(x, y, C: ConstInt, TC: ConstInt):
    # The fix: mask the columns past C.
    row = ct.bid(0)
    cols = ct.arange(TC, dtype=ct.int32)
    idx = row * C + cols
    t = ct.gather(x, idx, mask=cols < C, padding_value=0)
    ct.scatter(y, idx, t - ct.sum(t) / C, mask=cols < C)


@tilecheck.case(grid=(8, 1, 1), args=_flag_rows)
@ct.kernel
def early_return_next_row(flag, x, y, N: ConstInt):
    # Racy: an ignored row zeroes the *next* row of x, which that row's block reads.
    row = ct.bid(0)
    cols = ct.arange(N, dtype=ct.int32)
    if ct.load(flag, row, shape=()) == 0:
        ct.scatter(x, ((row + 1) % ct.num_blocks(0), cols), ct.full((N,), 0.0, dtype=ct.float32))
        return
    ct.scatter(y, (row, cols), ct.gather(x, (row, cols)) * 2.0)


@tilecheck.case(grid=(8, 1, 1), args=lambda: (*_flag_rows()[:3], 3, 64))
@ct.kernel
def continue_next_row(flag, x, y, K: ConstInt, N: ConstInt):
    # Racy: the skipping branch zeroes the next row, which that row's block gathers.
    row = ct.bid(0)
    cols = ct.arange(N, dtype=ct.int32)
    for _ in range(K):
        if ct.load(flag, row, shape=()) == 0:
            ct.scatter(x, ((row + 1) % ct.num_blocks(0), cols), ct.full((N,), 0.0, dtype=ct.float32))
            continue
        ct.scatter(y, (row, cols), ct.gather(x, (row, cols)) + 1.0)


def _labelled_rows() -> tuple:
    labels = np.array([0, 3, 0, 1, 2, 0, 5, 0, 1, 0], np.int64)  # label 0: the row is ignored
    return np.ones((10, 100), np.float32), np.zeros((10, 100), np.float32), labels, 10, 100, 64


@tilecheck.case(grid=(4, 1, 1), args=_labelled_rows)
@ct.kernel
def skip_ignored_rows(p, g, label, ROWS: ConstInt, COLS: ConstInt, BLOCK: ConstInt):
    # Race-free: persistent rows (Liger's TV distance form). An ignored row is zeroed and skipped
    # with `continue`; the loop after the `if` runs only for the other rows, so its stores to the
    # same row never meet the zeroing ones in one iteration.
    n_chunks = (COLS + BLOCK - 1) // BLOCK
    for row in range(ct.bid(0), ROWS, ct.num_blocks(0)):
        if ct.load(label, row, shape=()) == 0:
            for ci in range(n_chunks):
                cols = ct.arange(BLOCK, dtype=ct.int32) + ci * BLOCK
                ct.scatter(g, (row, cols), ct.full((BLOCK,), 0.0, dtype=ct.float32), check_bounds=True)
            continue
        for ci in range(n_chunks):
            cols = ct.arange(BLOCK, dtype=ct.int32) + ci * BLOCK
            ct.scatter(g, (row, cols), ct.gather(p, (row, cols), check_bounds=True) * 0.5, check_bounds=True)


@tilecheck.case(grid=(4, 1, 1), args=_labelled_rows)
@ct.kernel
def skip_ignored_rows_next(p, g, label, ROWS: ConstInt, COLS: ConstInt, BLOCK: ConstInt):
    # Racy: the same, but an ignored row zeroes the *next* row, which another block writes.
    n_chunks = (COLS + BLOCK - 1) // BLOCK
    for row in range(ct.bid(0), ROWS, ct.num_blocks(0)):
        if ct.load(label, row, shape=()) == 0:
            for ci in range(n_chunks):
                cols = ct.arange(BLOCK, dtype=ct.int32) + ci * BLOCK
                ct.scatter(g, ((row + 1) % ROWS, cols), ct.full((BLOCK,), 0.0, dtype=ct.float32), check_bounds=True)
            continue
        for ci in range(n_chunks):
            cols = ct.arange(BLOCK, dtype=ct.int32) + ci * BLOCK
            ct.scatter(g, (row, cols), ct.gather(p, (row, cols), check_bounds=True) * 0.5, check_bounds=True)


@tilecheck.case(grid=(8, 1, 1), args=lambda: (np.arange(1024, dtype=np.int32) % 16,
                                              np.zeros(16, np.int32), 128))
@ct.kernel
def histogram_atomic_block_scope(x, hist, TILE: ConstInt):
    # Racy: the same histogram with tile-block-scoped atomics, which are atomic only within a
    # block; the eight blocks' updates of one bin are not ordered against one another.
    bid = ct.bid(0)
    idx = bid * TILE + ct.arange(TILE, dtype=ct.int32)
    bins = ct.gather(x, idx)
    ct.atomic_add(hist, bins, ct.full((TILE,), 1, dtype=ct.int32), memory_scope=ct.MemoryScope.BLOCK)


@tilecheck.case(grid=(8, 1, 1), args=lambda: (np.ones(1000, np.float32), np.zeros(1000, np.float32), 128))
@ct.kernel
def copy_unchecked_tail(x, y, TILE: ConstInt):
    # Out of bounds: the last tile runs past 1000 elements, and check_bounds=False promises the
    # compiler it does not (undefined behaviour, not padding).
    bid = ct.bid(0)
    t = ct.load(x, index=(bid,), shape=(TILE,), check_bounds=False)
    ct.store(y, index=(bid,), tile=t, check_bounds=False)



def _accumulate_from_next(x, y, row, T: ConstInt):
    if row % 2 == 1:
        return
    nxt = ct.load(y, index=(row + 1,), shape=(T,), padding_mode=ct.PaddingMode.ZERO)
    ct.store(y, index=(row,), tile=nxt + ct.load(x, index=(row,), shape=(T,)))


def _bump_row(y, row, T: ConstInt):
    if row % 2 == 0:
        return
    ct.store(y, index=(row,), tile=ct.full((T,), 1.0, dtype=ct.float32))


@tilecheck.case(grid=(8, 1, 1), args=lambda: (np.ones(64, np.float32), np.zeros(64, np.float32), 8))
@ct.kernel
def helper_early_return_reads_next(x, y, T: ConstInt):
    # Racy: even blocks read the tile of the next (odd) block, which writes it; both inside
    # helpers that return early.
    _accumulate_from_next(x, y, ct.bid(0), T)
    _bump_row(y, ct.bid(0), T)


@tilecheck.case(grid=(8, 1, 1), args=lambda: (np.ones((8, 64), np.float32), np.zeros(64, np.float32), 64))
@ct.kernel
def last_row_relaxed_block(x, last, TN: ConstInt):
    # Racy: the same relaxed stores at tile-block scope, whose scope does not include the other
    # blocks: not morally strong across blocks.
    row = ct.bid(0)
    ct.store(last, index=(0,), tile=ct.load(x, index=(row, 0), shape=(1, TN)).reshape((TN,)),
             memory_order=ct.MemoryOrder.RELAXED, memory_scope=ct.MemoryScope.BLOCK)


@tilecheck.case(grid=(4, 1, 1), args=lambda: (np.arange(64, dtype=np.float32), np.zeros(64, np.float32), 8))
@ct.kernel
def scatter_two_halves_overlapping(x, y, T: ConstInt):
    # Racy: the second half starts one element early, so two lanes of the scatter write its first
    # element; which value lands is unspecified
    b = ct.bid(0)
    low = b * (2 * T) + ct.arange(T, dtype=ct.int32)
    ct.scatter(y, ct.cat((low, low + T - 1), 0), ct.load(x, index=(b,), shape=(2 * T,)))
