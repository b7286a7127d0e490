"""Oracle disagreement (found probing the overflow fixes with index values read from an array; the
grammar's index arrays hold small values, so the long run cannot reach it).

Block b reads e = idx[b] and stores its tile at tile index e * 4. The given idx is distinct, as the
precondition says, but idx[1] = 2**30: the i32 product 4 * 2**30 wraps to 0 (Tile IR muli has no
overflow flags), block 0's tile. verify: verified "for the given shapes and grid"; its assumptions
say overflow is checked for block ids, loop variables, shapes and scalars, and "values computed from
array contents: assumed". detect (the interpreter computes in i32 like the GPU): write-write on y[0]
between blocks 0 and 1; run_repeated gives differing y. Triage: the verifier is wrong at this launch:
the contents are given (verify already checks the precondition against them), so the product is
checkable; assuming it away proves a racing launch safe. Issue 12 item 10: a verdict that depends on
a known simplification is unknown, never verified. Fixed: index arithmetic on array contents is
checked for overflow against the given contents (verifier/concrete/given_case.py), an ``overflow`` finding.
"""
import cuda.tile as ct
import numpy as np

import tilecheck

ConstInt = ct.Constant[int]


@ct.kernel
def k(y, idx, T: ConstInt):
    b = ct.bid(0)
    e = ct.load(idx, b, shape=())
    ct.store(y, index=(e * 4,), tile=ct.full((T,), 1.0, dtype=ct.float32) * b)


def make_args():
    return (np.zeros(64, np.float32), np.array([0, 2**30, 2, 3], np.int32), 4)


GRID = (4, 1, 1)
ASSUME = [tilecheck.distinct("idx")]
TRUTH = "race"
