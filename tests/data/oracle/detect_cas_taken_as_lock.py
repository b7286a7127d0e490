"""Oracle disagreement (long run, seed 5: a grammar ``atomic-cas`` statement before a ``lock-ok``
spin lock; minimised by hand).

Each block first does an ordinary compare-and-swap on its own element of c (default order acq_rel,
0 -> 1, no contention at all), then a correct spin lock on lk[0] around a read-modify-write of
acc[0:T]. The critical sections are ordered: no race (run_repeated: acc is the same in every run).
verify: verified (with the lock). detect: read-write and write-write on acc between blocks 0 and 1.
Triage: the detector is wrong. Its recorder treats every successful acquire-ordered CAS that changes
the value as taking a lock, so each block "holds" c[b] forever; an access is then attributed to
the block's outermost held lock (Recorder._locks_of: ids[0]), c[b], which differs between blocks,
so the real lock lk[0] never counts. Expected: detect verified (an access is protected when the two
blocks hold a common lock, and a CAS that is never released is no lock). Fixed in a392cc4.
"""
import cuda.tile as ct
import numpy as np

ConstInt = ct.Constant[int]
ZERO = ct.PaddingMode.ZERO
ACQUIRE = ct.MemoryOrder.ACQUIRE
RELEASE = ct.MemoryOrder.RELEASE


@ct.kernel
def k(c, acc, lk, T: ConstInt):
    b = ct.bid(0)
    ct.atomic_cas(c, b, 0, 1)
    while ct.atomic_cas(lk, 0, 0, 1, memory_order=ACQUIRE) == 1:
        pass
    a = ct.load(acc, index=(0,), shape=(T,), padding_mode=ZERO)
    ct.store(acc, index=(0,), tile=a + 1.0)
    ct.atomic_xchg(lk, 0, 0, memory_order=RELEASE)


def make_args():
    return (np.zeros(4, np.int32), np.zeros(8, np.float32), np.zeros(1, np.int32), 8)


GRID = (4, 1, 1)
ASSUME = []
TRUTH = "race-free"
