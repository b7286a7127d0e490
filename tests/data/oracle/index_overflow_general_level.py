"""Oracle disagreement (long run, seed 6; minimised by oracle_long.py, then by hand): the overflow
class of index_overflow_wraps.py again, after its fix, when a general level proves the kernel.

Each block stores its tile at tile index b * 2**30 of c, with b linearised over three grid axes. The
i32 product wraps: block 4's index is 2**32 = 0 (mod 2**32), block 0's tile. verify: verified "for
all grids and shapes", assuming "integer index arithmetic does not overflow" (true of some grids,
not of this launch's). detect: write-write on c[0] between blocks 0 and 4; run_repeated gives
differing c. With a two-axis linearisation (b0 + b1 * nb0) verify goes down to the given case and
reports the overflow (status unknown), so the overflow check of ae9e483 only runs when no general
level has already proved the kernel. Triage: the verifier is wrong: when the arguments are given,
the overflow check at the given case must run whatever level the proof came from (DESIGN §4: a
verdict covers the launch it was asked about). Fixed in 5028adb.
"""
import cuda.tile as ct
import numpy as np

ConstInt = ct.Constant[int]


@ct.kernel
def k(c, T: ConstInt):
    b0 = ct.bid(0)
    b1 = ct.bid(1)
    b2 = ct.bid(2)
    b = b0 + b1 * ct.num_blocks(0) + b2 * ct.num_blocks(0) * ct.num_blocks(1)
    ct.store(c, index=(b * 1073741824,), tile=ct.arange(T, dtype=ct.int32) + b)


def make_args():
    return (np.zeros(64, np.int32), 4)


GRID = (8, 1, 1)
ASSUME = []
TRUTH = "race"
