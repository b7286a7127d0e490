import cuda.tile as ct
import numpy as np

import tilecheck

ConstInt = ct.Constant[int]
ZERO = ct.PaddingMode.ZERO
ACQUIRE = ct.MemoryOrder.ACQUIRE
RELEASE = ct.MemoryOrder.RELEASE
RELAXED = ct.MemoryOrder.RELAXED
BLOCK = ct.MemoryScope.BLOCK
DEVICE = ct.MemoryScope.DEVICE


@ct.kernel
def k(x, y, c, acc, idx, lk, m, cnt, fl, T: ConstInt):
    b1 = ct.bid(1)
    b2 = ct.bid(2)
    b = b1 + b2 * ct.num_blocks(1)
    nb = ct.num_blocks(1) * ct.num_blocks(2)
    nt = ct.num_tiles(y, axis=0, shape=(T,))
    vy = y.tiled_view((T,), padding_mode=ZERO, traversal_steps=(T // 2,))
    ya = y.slice(0, 0, 48)
    yb = y.slice(0, 47, 96)
    ct.store(y, index=(b,), tile=ct.full((T,), 2.0, dtype=ct.float32))
    ct.atomic_xchg(fl, b, 1, memory_order=RELEASE)
    if b > 0:
        while ct.atomic_cas(fl, b - 1, 1, 1, memory_order=ACQUIRE) == 0:
            pass
        t1 = ct.load(y, index=(b - 1,), shape=(T,), padding_mode=ZERO)
    else:
        t1 = ct.full((T,), 0.0, dtype=ct.float32)
    if ct.sum(t1) > 0.0:
        ct.store(y, index=(b,), tile=t1 * 2.0)
        q2 = ct.atomic_add(cnt, 1, 1, memory_order=RELAXED)
        if q2 == nb - 1:
            s3 = ct.full((T,), 0.0, dtype=ct.float32)
            for k4 in range(nb):
                s3 = s3 + ct.load(y, index=(k4,), shape=(T,), padding_mode=ZERO)
            ct.store(acc, index=(1,), tile=s3)
        ct.store(y, index=(b,), tile=t1 + 1.0)
        p6 = b
        for j5 in range(1):
            while ct.atomic_cas(lk, 0, 0, 1, memory_order=ACQUIRE) == 1:
                pass
            a7 = ct.load(acc, index=(b % 2,), shape=(T,), padding_mode=ZERO)
            ct.store(acc, index=(b % 2,), tile=a7 + 1.0)
            ct.atomic_xchg(lk, 0, 0, memory_order=RELEASE)
            p6 += 1
        if b2 % 2 == 0:
            pass


def make_args():
    rng = np.random.default_rng(165344703)
    x = rng.standard_normal(96).astype(np.float32)
    y = np.zeros(96, np.float32)
    c = rng.integers(0, 4, 96).astype(np.int32)
    acc = np.zeros(2 * 4, np.float32)
    idx = rng.integers(0, 96, 96).astype(np.int32)
    lk = np.zeros(1, np.int32)
    m = rng.standard_normal((12, 10)).astype(np.float32)
    cnt = np.zeros(2, np.int32)
    fl = np.zeros(16, np.int32)
    return (x, y, c, acc, idx, lk, m, cnt, fl, 4)


GRID = (1, 3, 2)
ASSUME = [tilecheck.distinct("idx")]


# more than the time limit
