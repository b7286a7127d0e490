"""Oracle disagreement (reuse long run, seed 3: a launch whose lock array was padded with -1;
minimised by hand).

Blocks 2b and 2b+1 share lock element b % 2 around a read-modify-write of acc. The acquire loop
spins while the CAS returns 1 (`while cas(lk, i, 0, 1) == 1`, cuTile's own layer-norm backward
form): it leaves the loop whenever the CAS does not see 1. With lk[0] = -1 the CAS never succeeds,
returns -1, and both blocks leave the loop at once: their critical sections overlap (detect: read-
write and write-write on acc[0]). verify said verified: the lock was counted whatever the lock
array held. Fixed: such a lock counts only where the lock array holds nothing but 0 and 1 (checked
on the given contents; a contract carries it as its protocol, evaluated at each launch).
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
    while ct.atomic_cas(lk, (b // 2) % 2, 0, 1, memory_order=ACQUIRE) == 1:
        pass
    a = ct.load(acc, index=((b // 2) % 2,), shape=(T,), padding_mode=ZERO)
    ct.store(acc, index=((b // 2) % 2,), tile=a + 1.0)
    ct.atomic_xchg(lk, (b // 2) % 2, 0, memory_order=RELEASE)


def make_args():
    return np.zeros(3 * 8, np.float32), np.array([-1, 0], np.int32), 8


GRID = (3, 1, 1)
ASSUME = []
TRUTH = "race"
