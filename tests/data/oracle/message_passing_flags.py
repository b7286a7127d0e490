"""Found while probing the memory-order options of the grammar against the Tile IR memory model
(both checkers used to call it racy; fixed by happens-before through release/acquire).

Message passing between blocks: block b stores its tile of y, then raises flag b with a release
xchg; block b + 1 spins on flag b with an acquire CAS (1 -> 1, so it only reads) and then reads
block b's tile. The acquire reads the value the release wrote, so the release synchronizes with it:
the store of y happens before the load of y (cuTile's token order puts the weak store before the
release and the load after the acquire). No data race, and the output is the same in every order
(run_repeated agrees); the same holds with a release store and an acquire load of the flag. This is
the shape of split-K semaphores and decoupled look-back scans. detect follows the synchronisation
as executed (``interp/sync.py``); verify defers such pairs to detect at the launch.
"""
import cuda.tile as ct
import numpy as np

ConstInt = ct.Constant[int]
ACQUIRE = ct.MemoryOrder.ACQUIRE
RELEASE = ct.MemoryOrder.RELEASE


@ct.kernel
def k(x, y, flags, T: ConstInt):
    b = ct.bid(0)
    ct.store(y, index=(b,), tile=ct.full((T,), 1.0, dtype=ct.float32) * b)
    ct.atomic_xchg(flags, b, 1, memory_order=RELEASE)
    if b > 0:
        while ct.atomic_cas(flags, b - 1, 1, 1, memory_order=ACQUIRE) == 0:
            pass
        ct.store(x, index=(b,), tile=ct.load(y, index=(b - 1,), shape=(T,)))


def make_args():
    return (np.zeros(32, np.float32), np.zeros(32, np.float32), np.zeros(4, np.int32), 8)


GRID = (4, 1, 1)
ASSUME = []
TRUTH = "race-free"
