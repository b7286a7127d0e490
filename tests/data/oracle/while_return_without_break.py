"""Oracle disagreement (seed 12 of the 10,000-example run at f74d45c): a `return` inside a `while`.

Both blocks of grid (2, 1, 1) compute b = 0 (the kernel reads only axes 1 and 2) and store m's
tile (0, 0) in iteration 0, then return (b2 = 0). verify said verified: the while loop's accesses
were limited to iterations up to its exit, defined as the iteration where it *breaks*, and this
loop never breaks (every block returns inside it), so no exit iteration existed and every query
through it was unsatisfiable. detect: write-write on m[0, 0]. Fixed: a return stops every
enclosing loop too, like a break (and a return from a nested loop leaves the exit undefined).
"""
import cuda.tile as ct
import numpy as np

import tilecheck

ConstInt = ct.Constant[int]


@ct.kernel
def k(x, y, c, acc, idx, lk, m, cnt, T: ConstInt):
    b1 = ct.bid(1)
    b2 = ct.bid(2)
    b = b1 + b2 * ct.num_blocks(1)
    nb = ct.num_blocks(1) * ct.num_blocks(2)
    nt = ct.num_tiles(y, axis=0, shape=(T,))
    w2 = 0
    while w2 < 2:
        w2 += 1
        ct.store(m, index=(b // 2, b % 2), tile=ct.full((4, 4), 1.0, dtype=ct.float32) * b)
        if b2 % 2 == 0:
            return


def make_args():
    rng = np.random.default_rng(2147483646)
    x = rng.standard_normal(128).astype(np.float32)
    y = np.zeros(128, np.float32)
    c = rng.integers(0, 4, 128).astype(np.int32)
    acc = np.zeros(3 * 16, np.float32)
    idx = rng.permutation(128).astype(np.int32)
    lk = np.zeros(2, np.int32)
    m = rng.standard_normal((8, 18)).astype(np.float32)
    cnt = np.zeros(2, np.int32)
    return (x, y, c, acc, idx, lk, m, cnt, 16)


GRID = (2, 1, 1)
ASSUME = [tilecheck.distinct("idx")]
TRUTH = "race"
