"""Oracle disagreement (tests/test_oracle.py's grammar: ``assume-distinct`` with ``idx-duplicates``).

verify: verified ("for the given shapes and grid", listing "'idx' holds no duplicate values
(precondition)" among its assumptions). detect: race (write-write and unordered-in-block on y), and a
note that the given idx violates its precondition (value 1 at flat positions 19 and 40).
The launch races: two lanes scatter block-dependent values to the same element of y (run_repeated
gives differing y). Triage: the verifier is wrong. It has the arguments, and DESIGN §4 says the given
case must satisfy the user's preconditions ("a violated one is a finding naming the argument, not a
proof"); it checks the kernel's own assume ops (issue 12, item 4) but not tilecheck.distinct /
tilecheck.bounded, so a violated precondition yields a vacuous 'verified'. Expected: an
assumption-violated finding naming idx, status not verified.
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
    ct.scatter(y, e, ct.full((T,), 1.0, dtype=ct.float32) * b)


def make_args():
    idx = np.random.default_rng(1).integers(0, 64, 64).astype(np.int32)  # duplicates
    return (np.zeros(64, np.float32), idx, 8)


GRID = (8, 1, 1)
ASSUME = [tilecheck.distinct("idx")]
TRUTH = "race"
