"""Control-flow shapes cuTile emits, for the verifier's tests (cuTile needs kernels in a file)."""
import cuda.tile as ct

ConstInt = ct.Constant[int]


def _store_row(x, y, row, T: ConstInt):
    # an early return inside an inlined helper: cuTile makes it a single-trip loop ending in break
    if row >= x.shape[0] // T:
        return
    t = ct.load(x, index=(row,), shape=(T,))
    ct.store(y, index=(row,), tile=t + 1.0)


@ct.kernel
def helper_early_return(x, y, T: ConstInt):
    _store_row(x, y, ct.bid(0), T)


def _accumulate(x, y, row, T: ConstInt):
    if row % 2 == 1:
        return
    acc = ct.load(y, index=(row,), shape=(T,))
    ct.store(y, index=(row,), tile=acc + ct.load(x, index=(row,), shape=(T,)))


@ct.kernel
def helper_early_return_rmw(x, y, T: ConstInt):
    # read-modify-write of the block's own tile, inside a helper that may return early
    _accumulate(x, y, ct.bid(0), T)


@ct.kernel
def prefix_rows(x, sizes, y, G: ConstInt, T: ConstInt):
    # group g owns rows [start, start + sizes[g]) where start is the running sum of the sizes
    g = ct.bid(0)
    start = 0
    for i in range(G):
        if i < g:
            start += ct.load(sizes, index=(i,), shape=(1,)).item()
    ct.store(y, index=(start // T,), tile=ct.load(x, index=(g,), shape=(T,)))


@ct.kernel
def continue_after_inner_for(x, y, N: ConstInt, T: ConstInt):
    # rows flagged by x[r, 0] < 0 are summed into y[b] by an inner loop, then skipped by `continue`;
    # the others are copied: every access stays in the block's own row of y
    b = ct.bid(0)
    for r in range(N):
        head = ct.load(x, index=(b * N + r, 0), shape=(1, 1)).item()
        if head < 0:
            acc = ct.zeros((1, T), dtype=ct.float32)
            for j in range(2):
                acc += ct.load(x, index=(b * N + r, j), shape=(1, T))
            ct.store(y, index=(b * N + r, 0), tile=acc)
            continue
        ct.store(y, index=(b * N + r, 0), tile=ct.load(x, index=(b * N + r, 0), shape=(1, T)))


@ct.kernel
def skip_counter(x, y, N: ConstInt, T: ConstInt):
    # block b writes rows from b * N on; a flagged row advances the slot by 2 on a `continue` path,
    # the others by 1: the slots run past b * N + N into the next block's rows (racy for most data).
    # A closed form `b * N + r` taken from the final continue alone would hide it.
    b = ct.bid(0)
    slot = b * N
    for r in range(N):
        head = ct.load(x, index=(r, 0), shape=(1, 1)).item()
        if head < 0:
            slot += 2
            continue
        ct.store(y, index=(slot, 0), tile=ct.load(x, index=(r, 0), shape=(1, T)))
        slot += 1


@ct.kernel
def counted_rows(sizes, x, y, G: ConstInt, T: ConstInt):
    # the row is computed by a loop (a loop-carried value with no closed form: any value at the
    # all-shapes level) and scaled, so its overflow reads no array contents; a size read from
    # memory only picks one of four columns (interval arithmetic bounds it)
    b = ct.bid(0)
    row = 0
    for i in range(G):
        if i < b:
            row = row * 3 + 1
    k = ct.load(sizes, index=(b,), shape=(1,)).item() % 4
    ct.store(y, index=(row * 1024 + b, k), tile=ct.load(x, index=(b, k), shape=(1, T)))
