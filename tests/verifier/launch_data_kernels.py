"""Kernels whose safety rests on the contents of an index array (tests/verifier/test_launch_data.py)."""
import cuda.tile as ct

ConstInt = ct.Constant[int]


@ct.kernel
def scatter(x, y, idx, T: ConstInt):
    b = ct.bid(0)
    e = ct.load(idx, b, shape=())
    ct.store(y, index=(e,), tile=ct.load(x, index=(b,), shape=(T,)))


@ct.kernel
def scatter_halved(x, y, idx, T: ConstInt):
    b = ct.bid(0)
    e = ct.load(idx, b, shape=())
    ct.store(y, index=(e // 2,), tile=ct.load(x, index=(b,), shape=(T,)))


@ct.kernel
def scatter_padded(x, y, idx, N: ConstInt, T: ConstInt):
    # entries >= N are padding: the block has nothing to move
    b = ct.bid(0)
    e = ct.load(idx, b, shape=())
    if e < N:
        ct.store(y, index=(e,), tile=ct.load(x, index=(b,), shape=(T,)))


@ct.kernel
def pair_sum_rows(idx, x, y, T: ConstInt):
    # block b writes tile idx[b] + idx[b + 1]: safe when those sums are distinct, a fact about the
    # contents no precondition states
    b = ct.bid(0)
    i = ct.load(idx, index=(b,), shape=(1,)).item() + ct.load(idx, index=(b + 1,), shape=(1,)).item()
    ct.store(y, index=(i,), tile=ct.load(x, index=(b,), shape=(T,)))


@ct.kernel
def two_gathers(idx, x, y, T: ConstInt):
    # two tiles at offsets computed from index contents: an overflow claim on contents each
    b = ct.bid(0)
    i = ct.load(idx, index=(b,), shape=(1,)).item()
    j = ct.load(idx, index=(b + 1,), shape=(1,)).item()
    t = ct.load(x, index=(i * 2,), shape=(T,)) + ct.load(x, index=(j * 3,), shape=(T,))
    ct.store(y, index=(b,), tile=t)


@ct.kernel
def shifted_pick(logits, target, out, V: ConstInt):
    # row b reads logits[b, target[b] + 8]: in bounds for targets in [0, V - 9], not the whole [0, V - 1]
    b = ct.bid(0)
    t = ct.load(target, b, shape=())
    ct.store(out, index=(b,), tile=ct.reshape(ct.gather(logits, (b, t + 8), check_bounds=False), (1,)))
