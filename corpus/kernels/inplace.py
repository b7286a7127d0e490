"""In-place and neighbour-access kernels: a racy halo and its race-free twins; bounds; token order."""
import cuda.tile as ct
import numpy as np

import tilecheck

ConstInt = ct.Constant[int]


@tilecheck.case(grid=(8, 1, 1), args=lambda: (np.ones(1024, np.float32), 128))
@ct.kernel
def inplace_scale(x, TILE: ConstInt):
    # Race-free: each block reads and rewrites only its own tile.
    bid = ct.bid(0)
    t = ct.load(x, index=(bid,), shape=(TILE,))
    ct.store(x, index=(bid,), tile=t * 2.0)


@tilecheck.case(grid=(8, 1, 1), args=lambda: (np.ones(1024, np.float32), 128))
@ct.kernel
def inplace_halo(x, TILE: ConstInt):
    # Racy: block b reads the tile of block b + 1, which that block overwrites.
    bid = ct.bid(0)
    right = ct.load(x, index=(bid + 1,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    mine = ct.load(x, index=(bid,), shape=(TILE,))
    ct.store(x, index=(bid,), tile=(mine + right) * 0.5)


@tilecheck.case(grid=(8, 1, 1), args=lambda: (np.ones(1024, np.float32), np.zeros(1024, np.float32), 128))
@ct.kernel
def halo_out_of_place(x, y, TILE: ConstInt):
    # The fix: read neighbours from x, write y.
    bid = ct.bid(0)
    right = ct.load(x, index=(bid + 1,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    mine = ct.load(x, index=(bid,), shape=(TILE,))
    ct.store(y, index=(bid,), tile=(mine + right) * 0.5)


@tilecheck.case(grid=(8, 1, 1), args=lambda: (np.ones(1000, np.float32), np.zeros(1000, np.float32), 128))
@ct.kernel
def gather_unchecked(x, y, TILE: ConstInt):
    # Out of bounds: 1000 is not a multiple of 128 and bounds checks are off.
    bid = ct.bid(0)
    idx = bid * TILE + ct.arange(TILE, dtype=ct.int32)
    ct.scatter(y, idx, ct.gather(x, idx, check_bounds=False), check_bounds=False)


@tilecheck.case(grid=(8, 1, 1), args=lambda: (np.ones(1000, np.float32), np.zeros(1000, np.float32), 128))
@ct.kernel
def gather_checked(x, y, TILE: ConstInt):
    bid = ct.bid(0)
    idx = bid * TILE + ct.arange(TILE, dtype=ct.int32)
    ct.scatter(y, idx, ct.gather(x, idx))


@tilecheck.case(grid=(8, 1, 1), args=lambda: (np.ones(1024, np.float32), np.zeros(1024, np.float32), 128))
@ct.kernel
def store_then_reload(x, y, TILE: ConstInt):
    # Safe as compiled (a token orders the reload after the store); with
    # CUDA_TILE_TESTING_DISABLE_TOKEN_ORDER=1 nothing orders them.
    bid = ct.bid(0)
    t = ct.load(x, index=(bid,), shape=(TILE,))
    ct.store(y, index=(bid,), tile=t + 1.0)
    again = ct.load(y, index=(bid,), shape=(TILE,))
    ct.store(x, index=(bid,), tile=again * 2.0)


@tilecheck.case(grid=(8, 1, 1), args=lambda: (np.ones(1024, np.float32), np.zeros(1024, np.float32), 128))
@ct.kernel
def copy_unchecked_exact(x, y, TILE: ConstInt):
    # Race-free and in bounds: 1024 is a multiple of 128, so the unchecked tiles stay inside.
    bid = ct.bid(0)
    t = ct.load(x, index=(bid,), shape=(TILE,), check_bounds=False)
    ct.store(y, index=(bid,), tile=t, check_bounds=False)
