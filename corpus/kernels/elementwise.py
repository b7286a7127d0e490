"""Element-wise kernels: vector add (view and gather/scatter forms), 2-D copy, transpose."""
import cuda.tile as ct
import numpy as np

import tilecheck

ConstInt = ct.Constant[int]


@tilecheck.case(grid=(64, 1, 1), args=lambda: (np.ones(1024, np.float32), np.ones(1024, np.float32),
                                               np.zeros(1024, np.float32), 16))
@ct.kernel
def vector_add(a, b, c, TILE: ConstInt):
    bid = ct.bid(0)
    ta = ct.load(a, index=(bid,), shape=(TILE,))
    tb = ct.load(b, index=(bid,), shape=(TILE,))
    ct.store(c, index=(bid,), tile=ta + tb)


@tilecheck.case(grid=(8, 1, 1), args=lambda: (np.ones(1000, np.float32), np.ones(1000, np.float32),
                                              np.zeros(1000, np.float32), 128))
@ct.kernel
def vector_add_gather(a, b, c, TILE: ConstInt):
    bid = ct.bid(0)
    idx = bid * TILE + ct.arange(TILE, dtype=ct.int32)
    ta = ct.gather(a, idx)
    tb = ct.gather(b, idx)
    ct.scatter(c, idx, ta + tb)


@tilecheck.case(grid=(4, 8, 1), args=lambda: (np.ones((128, 256), np.float32),
                                              np.zeros((128, 256), np.float32), 32, 32))
@ct.kernel
def copy_2d(src, dst, TM: ConstInt, TN: ConstInt):
    i = ct.bid(0)
    j = ct.bid(1)
    t = ct.load(src, index=(i, j), shape=(TM, TN))
    ct.store(dst, index=(i, j), tile=t)


@tilecheck.case(grid=(4, 8, 1), args=lambda: (np.ones((128, 256), np.float32),
                                              np.zeros((256, 128), np.float32), 32, 32))
@ct.kernel
def transpose(src, dst, TM: ConstInt, TN: ConstInt):
    i = ct.bid(0)
    j = ct.bid(1)
    t = ct.load(src, index=(i, j), shape=(TM, TN))
    ct.store(dst, index=(j, i), tile=ct.transpose(t))


@tilecheck.case(grid=(4, 8, 1), args=lambda: (np.ones((128, 256), np.float32),
                                              np.zeros((256, 128), np.float32), 32, 32))
@ct.kernel
def transpose_order(src, dst, TM: ConstInt, TN: ConstInt):
    # Reads tile (i, j) of src already transposed, through order=(1, 0): t[y, x] = src[i*TM + x, j*TN + y].
    i = ct.bid(0)
    j = ct.bid(1)
    t = ct.load(src, index=(j, i), shape=(TN, TM), order=(1, 0))
    ct.store(dst, index=(j, i), tile=t)


@tilecheck.case(grid=(8, 1, 1), args=lambda: (np.ones(1024, np.float32), np.zeros(1024, np.float32), 128))
@ct.kernel
def tiled_view_overlap(src, dst, TILE: ConstInt):
    # traversal_steps < tile: neighbouring tiles overlap by half a tile.
    view = src.tiled_view((TILE,), traversal_steps=(TILE // 2,))
    bid = ct.bid(0)
    t = view.load((bid,))
    ct.store(dst, index=(bid,), tile=t)


@tilecheck.case(grid=(16, 1, 1), args=lambda: (np.ones(1024, np.float32), np.zeros(1024, np.float32), 64))
@ct.kernel
def branch_on_bid(src, dst, TILE: ConstInt):
    bid = ct.bid(0)
    t = ct.load(src, index=(bid,), shape=(TILE,))
    if bid % 2 == 0:
        t = t * 2.0
    else:
        t = t + 1.0
    ct.store(dst, index=(bid,), tile=t)


def _flag_rows():
    return (np.array([0, 1, 0, 1, 1, 0, 1, 1], np.int32), np.ones((8, 64), np.float32), np.zeros((8, 64), np.float32),
            64)


@tilecheck.case(grid=(8, 1, 1), args=_flag_rows)
@ct.kernel
def early_return_ignored_row(flag, x, y, N: ConstInt):
    # Race-free: an ignored row is zeroed in place and its block returns; the gather below runs only
    # on the other rows (the pattern of an ignore_index in a cross-entropy kernel).
    row = ct.bid(0)
    cols = ct.arange(N, dtype=ct.int32)
    if ct.load(flag, row, shape=()) == 0:
        ct.scatter(x, (row, cols), ct.full((N,), 0.0, dtype=ct.float32))
        return
    ct.scatter(y, (row, cols), ct.gather(x, (row, cols)) * 2.0)



@tilecheck.case(grid=(8, 1, 1), args=lambda: (*_flag_rows()[:3], 3, 64))
@ct.kernel
def continue_ignored_row(flag, x, y, K: ConstInt, N: ConstInt):
    # Race-free: `continue` skips the rest of each iteration on an ignored row, so the gather never
    # meets the zeroing scatter in one block.
    row = ct.bid(0)
    cols = ct.arange(N, dtype=ct.int32)
    for _ in range(K):
        if ct.load(flag, row, shape=()) == 0:
            ct.scatter(x, (row, cols), ct.full((N,), 0.0, dtype=ct.float32))
            continue
        ct.scatter(y, (row, cols), ct.gather(x, (row, cols)) + 1.0)


def _accumulate_row(x, y, row, T: ConstInt):
    # an early return inside an inlined helper: cuTile lowers it to a single-trip `loop` ending in
    # `break`, which runs once, not once per iteration of a loop
    if row % 2 == 1:
        return
    acc = ct.load(y, index=(row,), shape=(T,))
    ct.store(y, index=(row,), tile=acc + ct.load(x, index=(row,), shape=(T,)))


@tilecheck.case(grid=(8, 1, 1), args=lambda: (np.ones(64, np.float32), np.zeros(64, np.float32), 8))
@ct.kernel
def helper_early_return(x, y, T: ConstInt):
    # Race-free: each even block updates its own tile, odd blocks return early from the helper.
    _accumulate_row(x, y, ct.bid(0), T)


@tilecheck.case(grid=(4, 1, 1), args=lambda: (np.arange(64, dtype=np.float32), np.zeros(64, np.float32), 8))
@ct.kernel
def scatter_two_halves(x, y, T: ConstInt):
    # Race-free: the destination tile is built with ct.cat from two disjoint halves of the block's
    # 2 * T elements, so no two lanes of the scatter meet
    b = ct.bid(0)
    low = b * (2 * T) + ct.arange(T, dtype=ct.int32)
    ct.scatter(y, ct.cat((low, low + T), 0), ct.load(x, index=(b,), shape=(2 * T,)))

