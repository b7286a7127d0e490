"""Oracle disagreement (found by tests/test_oracle.py's grammar, fixed in 2f871d3, issue 12 item 1).

After its critical section on lock element b % 2, each block also releases element (b + 1) % 2:
a lock another block may hold. That block's section is then open to a third block, so two blocks
read-modify-write acc[b % 2] together: a race. The verifier used to accept the CAS-acquire /
xchg-release pair around the accesses as a lock and said 'verified'; detect (locks as executed)
reported read-write and write-write.
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
    while ct.atomic_cas(lk, b % 2, 0, 1, memory_order=ACQUIRE) == 1:
        pass
    a = ct.load(acc, index=(b % 2,), shape=(T,), padding_mode=ZERO)
    ct.store(acc, index=(b % 2,), tile=a + 1.0)
    ct.atomic_xchg(lk, b % 2, 0, memory_order=RELEASE)
    ct.atomic_xchg(lk, (b + 1) % 2, 0, memory_order=RELEASE)


def make_args():
    return (np.zeros(16, np.float32), np.zeros(2, np.int32), 8)


GRID = (8, 1, 1)
ASSUME = []
TRUTH = "race"
