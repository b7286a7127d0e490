"""Blocks that synchronise through memory (Tile IR memory model): message passing with release and
acquire flags, a "last ticket" counter whose acq_rel read-modify-writes carry every block's release
to the last one, and a test-and-set lock taken and freed with exchanges. Each race-free kernel has
a racy twin that breaks the synchronisation in one place."""
import cuda.tile as ct
import numpy as np

import tilecheck

ConstInt = ct.Constant[int]
ACQUIRE, RELEASE, RELAXED = ct.MemoryOrder.ACQUIRE, ct.MemoryOrder.RELEASE, ct.MemoryOrder.RELAXED

_PASS = lambda: (np.zeros(32, np.float32), np.zeros(32, np.float32), np.zeros(4, np.int32), 8)  # noqa: E731


@tilecheck.case(grid=(4, 1, 1), args=_PASS)
@ct.kernel
def pass_previous_tile(x, y, flags, T: ConstInt):
    # block b publishes its tile of y, then raises flag b (release); block b + 1 waits for flag b
    # (acquire) before it reads that tile: the release synchronises with the acquire
    b = ct.bid(0)
    ct.store(y, index=(b,), tile=ct.full((T,), 1.0, dtype=ct.float32) * b)
    ct.atomic_xchg(flags, b, 1, memory_order=RELEASE)
    if b > 0:
        while ct.atomic_cas(flags, b - 1, 1, 1, memory_order=ACQUIRE) == 0:
            pass
        ct.store(x, index=(b,), tile=ct.load(y, index=(b - 1,), shape=(T,)))


@tilecheck.case(grid=(4, 1, 1), args=_PASS)
@ct.kernel
def pass_previous_tile_own_flag(x, y, flags, T: ConstInt):
    # racy: block b waits for its own flag, which it raised itself, so nothing orders its read of
    # tile b - 1 after block b - 1's store
    b = ct.bid(0)
    ct.store(y, index=(b,), tile=ct.full((T,), 1.0, dtype=ct.float32) * b)
    ct.atomic_xchg(flags, b, 1, memory_order=RELEASE)
    if b > 0:
        while ct.atomic_cas(flags, b, 1, 1, memory_order=ACQUIRE) == 0:
            pass
        ct.store(x, index=(b,), tile=ct.load(y, index=(b - 1,), shape=(T,)))


@tilecheck.case(grid=(4, 1, 1), args=_PASS)
@ct.kernel
def pass_previous_tile_flag_first(x, y, flags, T: ConstInt):
    # racy: the flag is raised before the tile is stored, so the release covers nothing
    b = ct.bid(0)
    ct.atomic_xchg(flags, b, 1, memory_order=RELEASE)
    ct.store(y, index=(b,), tile=ct.full((T,), 1.0, dtype=ct.float32) * b)
    if b > 0:
        while ct.atomic_cas(flags, b - 1, 1, 1, memory_order=ACQUIRE) == 0:
            pass
        ct.store(x, index=(b,), tile=ct.load(y, index=(b - 1,), shape=(T,)))


_TICKET = lambda: (np.arange(64, dtype=np.float32), np.zeros(64, np.float32), np.zeros(1, np.int32),  # noqa: E731
                   np.zeros(16, np.float32), 16)


@tilecheck.case(grid=(4, 1, 1), args=_TICKET)
@ct.kernel
def last_ticket_sums(x, partials, counter, out, T: ConstInt):
    # every block stores its partial, then draws a ticket (acq_rel add); the block that draws the
    # last ticket reads every partial: the chain of read-modify-writes on the counter carries each
    # block's release to the last acquire (a release sequence)
    b = ct.bid(0)
    ct.store(partials, index=(b,), tile=ct.load(x, index=(b,), shape=(T,)))
    ticket = ct.atomic_add(counter, 0, 1)
    if ticket == ct.num_blocks(0) - 1:
        total = ct.load(partials, index=(0,), shape=(T,))
        for k in range(1, ct.num_blocks(0)):
            total = total + ct.load(partials, index=(k,), shape=(T,))
        ct.store(out, index=(0,), tile=total)


@tilecheck.case(grid=(4, 1, 1), args=_TICKET)
@ct.kernel
def last_ticket_relaxed(x, partials, counter, out, T: ConstInt):
    # racy: a relaxed ticket orders nothing, so the last block may read partials still being stored
    b = ct.bid(0)
    ct.store(partials, index=(b,), tile=ct.load(x, index=(b,), shape=(T,)))
    ticket = ct.atomic_add(counter, 0, 1, memory_order=RELAXED)
    if ticket == ct.num_blocks(0) - 1:
        total = ct.load(partials, index=(0,), shape=(T,))
        for k in range(1, ct.num_blocks(0)):
            total = total + ct.load(partials, index=(k,), shape=(T,))
        ct.store(out, index=(0,), tile=total)


_LOCKED = lambda: (np.zeros(1, np.int32), np.zeros(8, np.int32), 8)  # noqa: E731


@tilecheck.case(grid=(4, 1, 1), args=_LOCKED)
@ct.kernel
def exchange_lock_counts(lock, total, T: ConstInt):
    # a test-and-set lock: taken by an acquire exchange that finds it free (0), freed by a release
    # exchange back to 0; the read-modify-write of `total` inside it is ordered
    while ct.atomic_xchg(lock, 0, 1, memory_order=ACQUIRE) == 1:
        pass
    t = ct.load(total, index=(0,), shape=(T,))
    ct.store(total, index=(0,), tile=t + 1)
    ct.atomic_xchg(lock, 0, 0, memory_order=RELEASE)


@tilecheck.case(grid=(4, 1, 1), args=_LOCKED)
@ct.kernel
def exchange_lock_freed_early(lock, total, T: ConstInt):
    # racy: the lock is freed before the new total is stored
    while ct.atomic_xchg(lock, 0, 1, memory_order=ACQUIRE) == 1:
        pass
    t = ct.load(total, index=(0,), shape=(T,))
    ct.atomic_xchg(lock, 0, 0, memory_order=RELEASE)
    ct.store(total, index=(0,), tile=t + 1)
