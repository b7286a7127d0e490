"""Contracts over the shapes (issue 20): one pair per contract form. The first kernel of each pair
is race-free for every shape under the form (its case is a launch that satisfies it); its twin
differs in one line and is race-free at its own launch, but its contract is narrower (a value seen,
not a relation) or does not exist. tests/verifier/test_shape_contract.py checks each pair."""
import cuda.tile as ct
import numpy as np

import tilecheck

ConstInt = ct.Constant[int]


def _flat():
    return np.ones(96, np.float32), np.zeros(96, np.float32), 16


# cdiv: block b writes tile b modulo the tiles y has; past cdiv(n, T) blocks it wraps onto a tile
# another block writes. Contract: grid[0] <= cdiv(y.shape[0], 16).
@tilecheck.case(grid=(6, 1, 1), args=_flat)
@ct.kernel
def wrap_at_tiles(x, y, T: ConstInt):
    b = ct.bid(0)
    t = b % ct.num_tiles(y, axis=0, shape=(T,))
    ct.store(y, index=(t,), tile=ct.load(x, index=(t,), shape=(T,)))


# Twin: wraps at a fixed 6 tiles instead of the array's: race-free only while the launch has the
# shapes seen (y of 96 elements), not for every shape under a relation.
@tilecheck.case(grid=(6, 1, 1), args=_flat)
@ct.kernel
def wrap_at_six(x, y, T: ConstInt):
    b = ct.bid(0)
    t = b % 6
    ct.store(y, index=(t,), tile=ct.load(x, index=(t,), shape=(T,)))


# masked pointer tiles: grid[0] <= cdiv(n, 16) (the int32 offset b * 16 bounds it). Its twin is
# grids.py's tiles_unmasked_up_to_cdiv, the same tiles unmasked: floor, grid[0] <= n // 16.
@tilecheck.case(grid=(6, 1, 1), args=_flat)
@ct.kernel
def masked_tiles(x, y, T: ConstInt):
    b = ct.bid(0)
    offs = b * T + ct.arange(T, dtype=ct.int32)
    ct.scatter(y, offs, ct.gather(x, offs))


def _heads():
    return np.ones((2, 3, 16), np.float32), np.zeros((2, 3, 16), np.float32), 3, 16


# product: axis 0 enumerates (batch, head) pairs. Contract: grid[0] <= y.shape[0] * y.shape[1]
# (or ==), H == y.shape[1]: head h of batch b is block b * H + h.
@tilecheck.case(grid=(6, 1, 1), args=_heads)
@ct.kernel
def batch_heads(x, y, H: int, T: ConstInt):
    bh = ct.bid(0)
    b = bh // H
    h = bh % H
    ct.store(y, index=(b, h, 0), tile=ct.load(x, index=(b, h, 0), shape=(1, 1, T)))


# Twin: the head is taken modulo 3, not modulo H: race-free when H happens to be 3.
@tilecheck.case(grid=(6, 1, 1), args=_heads)
@ct.kernel
def batch_heads_mod3(x, y, H: int, T: ConstInt):
    bh = ct.bid(0)
    b = bh // H
    h = bh % 3
    ct.store(y, index=(b, h, 0), tile=ct.load(x, index=(b, h, 0), shape=(1, 1, T)))


def _matrix():
    return np.ones((32, 48), np.float32), np.zeros((32, 48), np.float32), 16, 16


# swizzled 1-D grid over 2-D tiles: block p writes tile (p // nn, p % nn); blocks past
# cdiv(M, TM) * cdiv(N, TN) name rows past the array, and move nothing. Contract: unread axes only.
# (With the rows wrapping at the tiles y has, (p // nn) % nm, the contract would need
# grid[0] <= cdiv(M, TM) * cdiv(N, TN), and the solver does not decide that non-linear question
# within the search's budget: the contract falls back to the values seen.)
@tilecheck.case(grid=(6, 1, 1), args=_matrix)
@ct.kernel
def swizzled_tiles(x, y, TM: ConstInt, TN: ConstInt):
    p = ct.bid(0)
    nn = ct.num_tiles(y, axis=1, shape=(TM, TN))
    i = p // nn
    j = p % nn
    ct.store(y, index=(i, j), tile=ct.load(x, index=(i, j), shape=(TM, TN)))


# Twin: the rows wrap at 2, not at the tiles y has.
@tilecheck.case(grid=(6, 1, 1), args=_matrix)
@ct.kernel
def swizzled_tiles_wrap2(x, y, TM: ConstInt, TN: ConstInt):
    p = ct.bid(0)
    nn = ct.num_tiles(y, axis=1, shape=(TM, TN))
    i = (p // nn) % 2
    j = p % nn
    ct.store(y, index=(i, j), tile=ct.load(x, index=(i, j), shape=(TM, TN)))


# persistent: a grid-stride loop over the tiles: any grid.
@tilecheck.case(grid=(4, 1, 1), args=_flat)
@ct.kernel
def grid_stride(x, y, T: ConstInt):
    n = ct.num_tiles(y, axis=0, shape=(T,))
    for t in range(ct.bid(0), n, ct.num_blocks(0)):
        ct.store(y, index=(t,), tile=ct.load(x, index=(t,), shape=(T,)))


# Twin: the stride is a fixed 4, not the grid's extent: race-free while the grid has at most 4 blocks.
@tilecheck.case(grid=(4, 1, 1), args=_flat)
@ct.kernel
def stride_four(x, y, T: ConstInt):
    n = ct.num_tiles(y, axis=0, shape=(T,))
    for t in range(ct.bid(0), n, 4):
        ct.store(y, index=(t,), tile=ct.load(x, index=(t,), shape=(T,)))


def _rows():
    return np.ones((4, 64), np.float32), np.zeros((4, 64), np.float32), 16


# unread axis: the row is bid(0), the column tile bid(1); axis 2 is not read. Contract: grid[2] == 1.
@tilecheck.case(grid=(4, 4, 1), args=_rows)
@ct.kernel
def rows_and_columns(x, y, T: ConstInt):
    r = ct.bid(0)
    c = ct.bid(1)
    ct.store(y, index=(r, c), tile=ct.load(x, index=(r, c), shape=(1, T)))


# Twin: the column tile is not read from bid(1) but fixed: axes 1 and 2 both unread, so each must be 1.
@tilecheck.case(grid=(4, 1, 1), args=_rows)
@ct.kernel
def rows_first_tile(x, y, T: ConstInt):
    r = ct.bid(0)
    ct.store(y, index=(r, 0), tile=ct.load(x, index=(r, 0), shape=(1, T)))


# A constant whose value decides the race (issue 51: proofs that span constants): rows past K all
# write row K, so the kernel is race-free exactly when K >= grid - 1. K is compiled in as a literal
# and lifted into a symbol (tilecheck/ir/lifting.py): the first launch is proved as compiled (K held
# at 7), the second (K = 9) over K's range (9 <= K), the third (K = 12) is decided by that contract;
# the fourth (K = 3) is outside it, and races. The entries run in this order through one cache.
def _capped(k):
    return lambda: (np.ones((8, 16), np.float32), np.zeros((max(k, 8) + 1, 16), np.float32), k)


@tilecheck.case(grid=(8, 1, 1), args=_capped(7))
@tilecheck.case(grid=(8, 1, 1), args=_capped(9))
@tilecheck.case(grid=(8, 1, 1), args=_capped(12))
@tilecheck.case(grid=(8, 1, 1), args=_capped(3))
@ct.kernel
def capped_rows(x, y, K: ConstInt):
    b = ct.bid(0)
    t = ct.load(x, index=(b, 0), shape=(1, 16))
    ct.store(y, index=(ct.minimum(b, K), 0), tile=t)
