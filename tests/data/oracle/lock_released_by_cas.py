"""Not a disagreement: both checkers agree, and both are wrong (the grammar's ``lock-cas-release``
spin-lock variant; both report a race on every launch of it).

A correct spin lock whose release is ``atomic_cas(lk, e, 1, 0, memory_order=RELEASE)`` instead of
``atomic_xchg(lk, e, 0, ...)``. The holder's CAS always finds 1 (no one else writes the element while
it is held), so it is exactly the xchg release: the critical sections are ordered and the launch is
race-free (run_repeated: acc is the same in every run). verify and detect only accept an xchg (or a
store) as the release, so the read-modify-write of acc counts as unprotected (read-write,
write-write), and the acquire and release CASes as order-dependent atomics.
Expected once fixed: verified for both (a false alarm, not unsound, but detect claims to be exact).
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
    ct.atomic_cas(lk, b % 2, 1, 0, memory_order=RELEASE)


def make_args():
    return (np.zeros(16, np.float32), np.zeros(2, np.int32), 8)


GRID = (8, 1, 1)
ASSUME = []
TRUTH = "race-free"
