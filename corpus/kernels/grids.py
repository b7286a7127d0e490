"""Grid contracts (issue 13): kernels that are race-free only for some grids. Each kernel has two
cases: a launch inside its contract (race-free) and the first launch outside it (racy)."""
import cuda.tile as ct
import numpy as np

import tilecheck

ConstInt = ct.Constant[int]


def _rows():
    return np.ones((8, 64), np.float32), np.zeros((8, 64), np.float32), 64


# Ignores bid(1): every block along axis 1 copies the same row, so a grid with two blocks there has
# two blocks writing each element. Contract: race-free for grids (any, 1, 1).
@tilecheck.case(grid=(8, 1, 1), args=_rows)
@tilecheck.case(grid=(8, 2, 1), args=_rows)
@ct.kernel
def row_copy_ignores_bid1(x, y, TN: ConstInt):
    r = ct.bid(0)
    ct.store(y, index=(r, 0), tile=ct.load(x, index=(r, 0), shape=(1, TN)))


def _flat():
    return np.ones(64, np.float32), np.zeros(64, np.float32), 16


# Unmasked pointer stores at b * T + lane: safe while every block's tile lies inside y, that is for
# at most cdiv(64, 16) = 4 blocks; a fifth block writes past the end. Contract: (<=4, 1, 1).
@tilecheck.case(grid=(4, 1, 1), args=_flat)
@tilecheck.case(grid=(5, 1, 1), args=_flat)
@ct.kernel
def tiles_unmasked_up_to_cdiv(x, y, T: ConstInt):
    b = ct.bid(0)
    offs = b * T + ct.arange(T, dtype=ct.int32)
    ct.scatter(y, offs, ct.gather(x, offs, check_bounds=False), check_bounds=False)
