"""Atomic kernels: float and int atomic_add, MoE-style scatter with data-dependent indices."""
import cuda.tile as ct
import numpy as np

import tilecheck

ConstInt = ct.Constant[int]


@tilecheck.case(grid=(8, 1, 1), args=lambda: (np.ones(1024, np.float32), np.zeros(1, np.float32), 128))
@ct.kernel
def sum_atomic_float(x, out, TILE: ConstInt):
    bid = ct.bid(0)
    t = ct.load(x, index=(bid,), shape=(TILE,))
    ct.atomic_add(out, 0, ct.sum(t))


@tilecheck.case(grid=(8, 1, 1), args=lambda: (np.arange(1024, dtype=np.int32) % 16,
                                              np.zeros(16, np.int32), 128))
@ct.kernel
def histogram_atomic_int(x, hist, TILE: ConstInt):
    bid = ct.bid(0)
    idx = bid * TILE + ct.arange(TILE, dtype=ct.int32)
    bins = ct.gather(x, idx)
    ct.atomic_add(hist, bins, ct.full((TILE,), 1, dtype=ct.int32))


@tilecheck.case(grid=(8, 1, 1), args=lambda: (np.arange(1024, dtype=np.int32) % 16,
                                              np.zeros(16, np.int32), 128))
@ct.kernel
def histogram_count_and_max(x, hist, TILE: ConstInt):
    # even blocks count into the bins, odd blocks raise them to a maximum: an add and a max on one
    # element do not commute, so the final bins depend on the order the blocks ran in
    bid = ct.bid(0)
    idx = bid * TILE + ct.arange(TILE, dtype=ct.int32)
    bins = ct.gather(x, idx)
    if bid % 2 == 0:
        ct.atomic_add(hist, bins, ct.full((TILE,), 1, dtype=ct.int32))
    else:
        ct.atomic_max(hist, bins, ct.full((TILE,), 7, dtype=ct.int32))


@tilecheck.case(grid=(4, 1, 1), args=lambda: (np.ones((64, 32), np.float32), np.arange(64, dtype=np.int32),
                                              np.zeros((64, 32), np.float32), 16, 32))
@tilecheck.case(grid=(4, 1, 1), args=lambda: (np.ones((64, 32), np.float32), np.arange(64, dtype=np.int32) % 48,
                                              np.zeros((64, 32), np.float32), 16, 32))
@ct.kernel
def moe_scatter(x, dest_rows, out, TM: ConstInt, TD: ConstInt):
    # Each block moves TM token rows to the rows named by dest_rows (data-dependent).
    bid = ct.bid(0)
    rows = bid * TM + ct.arange(TM, dtype=ct.int32)
    dst = ct.gather(dest_rows, rows)
    cols = ct.arange(TD, dtype=ct.int32)
    t = ct.load(x, index=(bid, 0), shape=(TM, TD))
    ct.scatter(out, (dst[:, None], cols[None, :]), t)


@tilecheck.case(grid=(8, 1, 1), args=lambda: (np.ones((8, 64), np.float32), np.zeros(64, np.float32), 64))
@ct.kernel
def last_row_relaxed_device(x, last, TN: ConstInt):
    # Race-free but order-dependent: every block stores its row to `last` with relaxed device-scope
    # stores, which are morally strong (no data race); which row remains depends on the order.
    row = ct.bid(0)
    ct.store(last, index=(0,), tile=ct.load(x, index=(row, 0), shape=(1, TN)).reshape((TN,)),
             memory_order=ct.MemoryOrder.RELAXED, memory_scope=ct.MemoryScope.DEVICE)
