"""Oracle disagreement (found by tests/test_oracle.py's grammar, fixed in 2f871d3, issue 12 item 1).

A spin lock released twice: each block takes lock 0, reads acc, releases, writes acc back, and
releases again. The write-back is outside the critical section, so two blocks' read-modify-writes of
acc[0:T] interleave: a race (run_repeated shows differing acc). The verifier used to count the pair
as protected because *some* acquire/release pair of lock 0 surrounded both accesses, and said
'verified'; detect (locks as executed) reported read-write and write-write.
"""
import cuda.tile as ct
import numpy as np

ConstInt = ct.Constant[int]
ZERO = ct.PaddingMode.ZERO
ACQUIRE = ct.MemoryOrder.ACQUIRE
RELEASE = ct.MemoryOrder.RELEASE


@ct.kernel
def k(acc, lk, T: ConstInt):
    b = ct.bid(0)
    while ct.atomic_cas(lk, 0, 0, 1, memory_order=ACQUIRE) == 1:
        pass
    a = ct.load(acc, index=(0,), shape=(T,), padding_mode=ZERO)
    ct.atomic_xchg(lk, 0, 0, memory_order=RELEASE)
    ct.store(acc, index=(0,), tile=a + 1.0 * b)
    ct.atomic_xchg(lk, 0, 0, memory_order=RELEASE)


def make_args():
    return (np.zeros(8, np.float32), np.zeros(1, np.int32), 8)


GRID = (4, 1, 1)
ASSUME = []
TRUTH = "race"
