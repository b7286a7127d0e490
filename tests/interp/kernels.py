"""Kernels for the exact detector's tests (cuTile needs them in a file)."""
import cuda.tile as ct
import numpy as np

ConstInt = ct.Constant[int]
ZERO = ct.PaddingMode.ZERO
ACQ, REL = ct.MemoryOrder.ACQUIRE, ct.MemoryOrder.RELEASE


@ct.kernel
def same_tile_same_values(x, y, T: ConstInt):
    # every block writes y[0:T] with the same values: no output ever differs, yet it is a race
    t = ct.load(x, index=(0,), shape=(T,))
    ct.store(y, index=(0,), tile=t)


@ct.kernel
def scatter_rows(x, dest, y, T: ConstInt):
    # block b moves x[b*T:(b+1)*T] to y[dest[...]]: race-free iff dest has no duplicates across blocks
    b = ct.bid(0)
    rows = b * T + ct.arange(T, dtype=ct.int32)
    ct.scatter(y, ct.gather(dest, rows), ct.gather(x, rows))


@ct.kernel
def gather_offset(x, y, SHIFT: ConstInt, T: ConstInt):
    b = ct.bid(0)
    rows = b * T + ct.arange(T, dtype=ct.int32) + SHIFT
    ct.store(y, index=(b,), tile=ct.gather(x, rows, check_bounds=False))


@ct.kernel
def locked_sum(x, acc, locks, T: ConstInt):
    # correct: acquire, read-modify-write the shared slot, release once
    b = ct.bid(0)
    t = ct.load(x, index=(b,), shape=(T,))
    while ct.atomic_cas(locks, 0, 0, 1, memory_order=ACQ) == 1:
        pass
    ct.store(acc, index=(0,), tile=ct.load(acc, index=(0,), shape=(T,)) + t)
    ct.atomic_xchg(locks, 0, 0, memory_order=REL)


@ct.kernel
def locked_sum_write_after_release(x, acc, locks, T: ConstInt):
    # racy: releases, writes the slot again outside the lock, releases again
    b = ct.bid(0)
    t = ct.load(x, index=(b,), shape=(T,))
    while ct.atomic_cas(locks, 0, 0, 1, memory_order=ACQ) == 1:
        pass
    s = ct.load(acc, index=(0,), shape=(T,)) + t
    ct.atomic_xchg(locks, 0, 0, memory_order=REL)
    ct.store(acc, index=(0,), tile=s)
    ct.atomic_xchg(locks, 0, 0, memory_order=REL)


@ct.kernel
def locked_sum_foreign_release(x, acc, locks, T: ConstInt):
    # racy: each block also "releases" lock 0 before taking it, which it never held
    b = ct.bid(0)
    t = ct.load(x, index=(b,), shape=(T,))
    ct.atomic_xchg(locks, 0, 0, memory_order=REL)
    while ct.atomic_cas(locks, 0, 0, 1, memory_order=ACQ) == 1:
        pass
    ct.store(acc, index=(0,), tile=ct.load(acc, index=(0,), shape=(T,)) + t)
    ct.atomic_xchg(locks, 0, 0, memory_order=REL)


@ct.kernel
def xor_partner(x, y, m, T: ConstInt):
    # block b writes tile b ^ m: a permutation of the tiles for any m < grid (race-free); xor is
    # modelled exactly on the bit patterns
    b = ct.bid(0)
    ct.store(y, index=(b ^ m,), tile=ct.load(x, index=(b,), shape=(T,)))


@ct.kernel
def while_reduced(x, y, m, T: ConstInt):
    # block b writes tile b mod m computed by a while loop: race-free while the grid is at most m
    # (the value the while loop carries is tracked iteration by iteration)
    b = ct.bid(0)
    i = b
    while i >= m:
        i = i - m
    ct.store(y, index=(i,), tile=ct.load(x, index=(b,), shape=(T,)))


@ct.kernel
def summed_index(x, y, T: ConstInt):
    # block b writes tile b + sum(zeros): race-free (an integer reduction over a tile is exact)
    b = ct.bid(0)
    i = b + ct.sum(ct.full((T,), 0, ct.int32))
    ct.store(y, index=(i,), tile=ct.load(x, index=(b,), shape=(T,)))


@ct.kernel
def float_offset_index(x, y, T: ConstInt):
    # block b writes tile b + int(0.0 * sum(x's tile)): race-free, but an integer made from float
    # data is not tracked, so the solver may pick colliding tiles
    b = ct.bid(0)
    t = ct.load(x, index=(b,), shape=(T,))
    i = b + ct.astype(ct.sum(t) * 0.0, ct.int32)
    ct.store(y, index=(i,), tile=t)


@ct.kernel
def xor_partner_halved(x, y, m, T: ConstInt):
    # racy: (b ^ m) // 2 maps two blocks to each tile
    b = ct.bid(0)
    ct.store(y, index=((b ^ m) // 2,), tile=ct.load(x, index=(b,), shape=(T,)))


@ct.kernel
def count_block_scoped(x, counts, T: ConstInt):
    # racy: a tile-block-scoped atomic orders nothing across blocks, and every block adds to counts[0]
    b = ct.bid(0)
    t = ct.load(x, index=(b,), shape=(T,))
    ct.atomic_add(counts, 0, ct.sum(t), memory_scope=ct.MemoryScope.BLOCK)


@ct.kernel
def count_device_scoped(x, counts, T: ConstInt):
    b = ct.bid(0)
    t = ct.load(x, index=(b,), shape=(T,))
    ct.atomic_add(counts, 0, ct.sum(t))


@ct.kernel
def last_writer_wins(x, slot, T: ConstInt):
    # every block exchanges its id into slot[0]: atomic, but which id remains depends on the order
    b = ct.bid(0)
    ct.atomic_xchg(slot, 0, b)


@ct.kernel
def truncated_index(x, y, T: ConstInt):
    # block b writes tile int8(b * 64): blocks 0 and 4 both write tile 0 once the product wraps
    b = ct.bid(0)
    i = ct.astype(b * 64, ct.int8)
    ct.store(y, index=(i,), tile=ct.load(x, index=(b,), shape=(T,)))


@ct.kernel
def zero_extended_index(x, y, T: ConstInt):
    # block b writes tile uint32(int32(b) - 4) widened to 64 bits: a huge index for b < 4 (out of
    # bounds, so dropped), b - 4 from block 4 on; a sign extension would make it -4 .. -1
    b = ct.bid(0)
    i = ct.astype(ct.astype(b - 4, ct.uint32), ct.int64)
    ct.store(y, index=(i,), tile=ct.load(x, index=(b,), shape=(T,)))


@ct.kernel
def counted_writes(counts, y, T: ConstInt):
    # every block writes y[0], y[1], ... y[counts[0] - 1]: racy as soon as counts[0] > 0
    for i in range(ct.load(counts, index=(0,), shape=(1,)).item()):
        ct.store(y, index=(i % 4,), tile=ct.full((T,), 1.0, ct.float32))


@ct.kernel
def swizzled_copy(src, dst, TM: ConstInt, GROUP: ConstInt):
    pid = ct.bid(0)
    num_m = ct.num_tiles(dst, axis=0, shape=(TM, TM))
    num_n = ct.num_tiles(dst, axis=1, shape=(TM, TM))
    for t in range(pid, num_m * num_n, ct.num_blocks(0)):
        first = (t // (GROUP * num_n)) * GROUP
        size = ct.minimum(num_m - first, GROUP)
        m = first + (t % size)
        n = (t % (GROUP * num_n)) // size
        ct.store(dst, index=(m, n), tile=ct.load(src, index=(m, n), shape=(TM, TM)))


@ct.kernel
def misswizzled_copy(src, dst, TM: ConstInt, GROUP: ConstInt):
    pid = ct.bid(0)
    num_m = ct.num_tiles(dst, axis=0, shape=(TM, TM))
    num_n = ct.num_tiles(dst, axis=1, shape=(TM, TM))
    for t in range(pid, num_m * num_n, ct.num_blocks(0)):
        first = (t // (GROUP * num_n)) * GROUP
        size = ct.minimum(num_m - first, GROUP)
        m = first + (t % size)
        n = (t % (GROUP * num_n)) // GROUP  # wrong for the last, smaller group: two t, one tile
        ct.store(dst, index=(m, n), tile=ct.load(src, index=(m, n), shape=(TM, TM)))


def swizzled_args():
    # 3 x 2 tiles of 32 x 32 in groups of 2 rows: the last group has one row
    return np.arange(96 * 64, dtype=np.float32).reshape(96, 64), np.zeros((96, 64), np.float32), 32, 2


def _copy_rows_of(b, offsets, lens, src, dst, TM):
    # a helper that returns early (cuTile lowers it to a loop of one trip): batch b's rows, sliced at
    # their offset, copied tile by tile; a ragged batch (a prefill's sequences)
    start = ct.gather(offsets, (b,), padding_value=0).item()
    n = ct.gather(lens, (b,), padding_value=0).item()
    if n <= 0:
        return
    s = src.slice(axis=0, start=start, stop=start + n)
    d = dst.slice(axis=0, start=start, stop=start + n)
    for t in range(ct.cdiv(n, TM)):
        ct.store(d, index=(t, 0), tile=ct.load(s, index=(t, 0), shape=(TM, 8)))


@ct.kernel
def ragged_rows(offsets, lens, src, dst, TM: ConstInt):
    # racy when two batches' row ranges overlap
    _copy_rows_of(ct.bid(0), offsets, lens, src, dst, TM)


def ragged_rows_args(offsets, lens):
    return (np.array(offsets, np.int32), np.array(lens, np.int32), np.arange(64 * 8, dtype=np.float32).reshape(64, 8),
            np.zeros((64, 8), np.float32), 4)
