"""Not a disagreement: both checkers agree, and both are wrong (found reading the grammar's
``view-relaxed`` option against the Tile IR memory model; issue 12, item 10).

Every block stores its tile to y[0:T] with ``memory_order=RELAXED, memory_scope=DEVICE``. Those
stores are strong operations whose scope includes every other block, so any two of them are
"morally strong" and, by the memory model (derived from PTX's), not a data race: the result depends
on the order (like a float atomic add), but it is defined. verify and detect both treat relaxed view
loads and stores as weak (plain) accesses and report write-write. The same stores with
``memory_scope=BLOCK`` do race (the scope excludes the other blocks); both checkers get that right.
Expected once fixed: no race (an order-dependent warning, as for float atomics).
"""
import cuda.tile as ct
import numpy as np

ConstInt = ct.Constant[int]
RELAXED = ct.MemoryOrder.RELAXED
DEVICE = ct.MemoryScope.DEVICE


@ct.kernel
def k(y, T: ConstInt):
    b = ct.bid(0)
    ct.store(y, index=(0,), tile=ct.full((T,), 1.0, dtype=ct.float32) * b, memory_order=RELAXED,
             memory_scope=DEVICE)


def make_args():
    return (np.zeros(8, np.float32), 8)


GRID = (4, 1, 1)
ASSUME = []
TRUTH = "race-free"
