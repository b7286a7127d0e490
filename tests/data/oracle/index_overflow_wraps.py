"""Oracle disagreement (a grammar index ``b * 1073741824``: an i32 product that wraps).

Each block stores its tile at tile index b * 2**30 of y. cuTile computes the index in i32 with a
plain ``muli`` (no overflow flags: two's-complement wrap-around, as the Tile IR defines it), so block
4's index is 2**32 = 0 (mod 2**32), block 0's tile; blocks 1-3 and 5-7 land outside y (dropped).
verify: verified, assuming "integer index arithmetic does not overflow". detect (the interpreter
computes in i32 like the GPU): write-write on y[0] between blocks 0 and 4; run_repeated gives
differing y. Triage: the verifier is wrong: at the given case the overflow is
checkable, and assuming it away here proves a racing launch safe (issue 12, item 5: report an
overflow finding with a witness instead). Fixed in ae9e483 (an overflow finding at the given case).
"""
import cuda.tile as ct
import numpy as np

ConstInt = ct.Constant[int]


@ct.kernel
def k(y, T: ConstInt):
    b = ct.bid(0)
    ct.store(y, index=(b * 1073741824,), tile=ct.full((T,), 1.0, dtype=ct.float32) * b)


def make_args():
    return (np.zeros(64, np.float32), 4)


GRID = (8, 1, 1)
ASSUME = []
TRUTH = "race"
