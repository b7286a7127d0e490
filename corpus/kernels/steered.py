"""Results steered by atomics: the value an atomic returns decides where a block writes, what it
writes, or whether it writes. When what is written also depends on the block (its own rows, its
id), the output depends on the order the blocks drew in: an order-dependent-atomic warning. When
any block would write the same thing (a work queue's items, the last block's sum), it does not."""
import cuda.tile as ct
import numpy as np

import tilecheck

ConstInt = ct.Constant[int]

_ROWS = lambda: (np.arange(64, dtype=np.float32).reshape(4, 16), np.zeros((4, 16), np.float32),  # noqa: E731
                 np.zeros(1, np.int32), 16)


@tilecheck.case(grid=(4, 1, 1), args=_ROWS)
@ct.kernel
def append_rows(x, out, count, T: ConstInt):
    # an append buffer: each block reserves a slot with a ticket and copies its own row there, so
    # which row lands in which slot depends on the order the blocks drew their tickets
    b = ct.bid(0)
    slot = ct.atomic_add(count, 0, 1)
    ct.store(out, index=(slot, 0), tile=ct.load(x, index=(b, 0), shape=(1, T)))


@tilecheck.case(grid=(4, 1, 1), args=_ROWS)
@ct.kernel
def work_queue_rows(x, out, count, T: ConstInt):
    # a work queue: each block takes the next item and doubles that row in place of the output;
    # any block processes an item the same way, so every order gives the same output
    item = ct.atomic_add(count, 0, 1)
    ct.store(out, index=(item, 0), tile=ct.load(x, index=(item, 0), shape=(1, T)) * 2.0)


@tilecheck.case(grid=(4, 1, 1), args=lambda: (np.zeros(1, np.int32), np.full(1, -1, np.int32)))
@ct.kernel
def first_block_logs_itself(counter, owner):
    # the block that draws ticket 0 writes its own id: which id depends on the order
    ticket = ct.atomic_add(counter, 0, 1)
    if ticket == 0:
        ct.atomic_xchg(owner, 0, ct.bid(0))


_AMAX = lambda: (np.arange(64, dtype=np.int32).reshape(4, 16), np.zeros(1, np.int32),  # noqa: E731
                 np.zeros(4, np.int32), 16)


@tilecheck.case(grid=(4, 1, 1), args=_AMAX)
@ct.kernel
def running_max_seen(x, amax, seen, T: ConstInt):
    # each block raises the running maximum and keeps the maximum it saw before: that value depends
    # on which blocks came first
    b = ct.bid(0)
    m = ct.max(ct.load(x, index=(b, 0), shape=(1, T)))
    before = ct.atomic_max(amax, 0, m)
    ct.store(seen, index=(b,), tile=ct.full((1,), before, dtype=ct.int32))


@tilecheck.case(grid=(4, 1, 1), args=_AMAX)
@ct.kernel
def running_max_only(x, amax, seen, T: ConstInt):
    # the maximum alone: integer max commutes, and the returned value is not used
    b = ct.bid(0)
    m = ct.max(ct.load(x, index=(b, 0), shape=(1, T)))
    ct.atomic_max(amax, 0, m)
    ct.store(seen, index=(b,), tile=ct.full((1,), m, dtype=ct.int32))
