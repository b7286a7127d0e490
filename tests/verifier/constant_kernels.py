"""Kernels whose constants are compiled into their Tile IR, for the tests of proofs that span
constants (``tilecheck/ir/lifting.py``; cuTile needs kernels in a file)."""
import cuda.tile as ct

ConstInt = ct.Constant[int]
ZERO = ct.PaddingMode.ZERO


@ct.kernel
def capped_rows(x, y, K: ConstInt):
    # rows past K all write row K: race-free exactly when K >= grid - 1
    b = ct.bid(0)
    t = ct.load(x, index=(b, 0), shape=(1, 16))
    ct.store(y, index=(ct.minimum(b, K), 0), tile=t)


@ct.kernel
def guarded_copy(x, y, N: ConstInt, TILE: ConstInt):
    # N only guards the store (a size passed as a constant); TILE shapes the tiles
    b = ct.bid(0)
    t = ct.load(x, index=(b,), shape=(TILE,))
    if b * TILE < N:
        ct.store(y, index=(b,), tile=t * 2)


@ct.kernel
def scaled_copy(x, y, SCALE: ConstInt):
    # SCALE only scales the values stored: it decides no address
    b = ct.bid(0)
    t = ct.load(x, index=(b,), shape=(16,))
    ct.store(y, index=(b,), tile=t * SCALE)


@ct.kernel
def widened_copy(x, y):
    # a float16 input is cast to float32 (an ftof), a float32 one is not cast at all
    b = ct.bid(0)
    t = ct.load(x, index=(b,), shape=(16,))
    ct.store(y, index=(b,), tile=ct.astype(t, ct.float32) + 1.0)


@ct.kernel
def stepped_rows(x, y, STEP: ConstInt):
    # a literal used as a loop's step stays a literal (a symbolic step over-approximates the loop)
    b = ct.bid(0)
    for i in range(0, 64, STEP):
        t = ct.load(x, index=(b, i), shape=(1, 1))
        ct.store(y, index=(b, i), tile=t)


@ct.kernel
def two_guards(x, y, N: ConstInt, M: ConstInt):
    # two constants, each a literal of its own
    b = ct.bid(0)
    t = ct.load(x, index=(b,), shape=(16,))
    if b * 16 < N:
        if b * 16 < M + 4:
            ct.store(y, index=(b,), tile=t)
