"""Oracle disagreement (tests/test_oracle.py's grammar: ``assume-bounded`` with ``idx-out-of-range``
and an unchecked scatter), the same class as precondition_distinct_violated.py.

verify: verified, assuming "values of 'idx' lie in [0, 63] (precondition)". detect: out-of-bounds
(idx[5] = 70 reaches a scatter compiled with check_bounds=False: undefined behaviour), with a note
that the given idx violates its precondition. Triage: the verifier is wrong: the given case breaks
a user precondition, which must be an assumption-violated finding, not a proof (DESIGN §4).
Fixed in d567c31 (verify checks distinct / bounded against the given arguments).
"""
import cuda.tile as ct
import numpy as np

import tilecheck

ConstInt = ct.Constant[int]


@ct.kernel
def k(y, idx, T: ConstInt):
    b = ct.bid(0)
    e = ct.gather(idx, b * T + ct.arange(T, dtype=ct.int32))
    ct.scatter(y, e, ct.full((T,), 1.0, dtype=ct.float32) * b, check_bounds=False)


def make_args():
    idx = np.arange(64, dtype=np.int32)
    idx[5] = 70  # outside y, and outside the precondition's bound
    return (np.zeros(64, np.float32), idx, 8)


GRID = (8, 1, 1)
ASSUME = [tilecheck.bounded("idx", 0, 63), tilecheck.distinct("idx")]
TRUTH = "out-of-bounds"
