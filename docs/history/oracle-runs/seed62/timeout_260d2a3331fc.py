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


def h5(x, y, c, acc, idx, lk, m, cnt, fl, b, nb, j, T: ConstInt):
    ct.store(y, index=(b,), tile=ct.full((T,), 1.0, dtype=ct.float32) * b)
    q6 = ct.atomic_add(cnt, 1, 1)
    if q6 == nb - 1:
        s7 = ct.full((T,), 0.0, dtype=ct.float32)
        for k8 in range(nb):
            s7 = s7 + ct.load(y, index=(k8,), shape=(T,), padding_mode=ZERO)
        ct.store(acc, index=(1,), tile=s7)
    if j % 2 == 0:
        return


@ct.kernel
def k(x, y, c, acc, idx, lk, m, cnt, fl, T: ConstInt):
    b0 = ct.bid(0)
    b1 = ct.bid(1)
    b2 = ct.bid(2)
    b = b0 + b1 * ct.num_blocks(0) + b2 * ct.num_blocks(0) * ct.num_blocks(1)
    nb = ct.num_blocks(0) * ct.num_blocks(1) * ct.num_blocks(2)
    nt = ct.num_tiles(y, axis=0, shape=(T,))
    t1 = ct.load(x, index=(b % nt,), shape=(T,), padding_mode=ZERO, memory_order=RELAXED, memory_scope=DEVICE)
    t2 = ct.load(c, index=(b + 1,), shape=(T,), padding_mode=ZERO)
    w3 = 0
    while w3 < 1:
        j4 = w3
        w3 += 1
        ct.store(y, index=(b,), tile=t1 + 1.0)
        h5(x, y, c, acc, idx, lk, m, cnt, fl, b, nb, j4, T)


def make_args():
    rng = np.random.default_rng(982186712)
    x = rng.standard_normal(768).astype(np.float32)
    y = np.zeros(768, np.float32)
    c = rng.integers(0, 4, 768).astype(np.int32)
    acc = np.zeros(2 * 16, np.float32)
    idx = np.where(rng.random(768) < 0.1, rng.choice([-1, 768, 775], 768), rng.permutation(768)).astype(np.int32)
    lk = np.zeros(1, np.int32)
    m = rng.standard_normal((8, 32)).astype(np.float32)[:, ::2]
    cnt = np.zeros(2, np.int32)
    fl = np.zeros(16, np.int32)
    return (x, y, c, acc, idx, lk, m, cnt, fl, 16)


GRID = (4, 3, 1)
ASSUME = []


# more than the time limit
