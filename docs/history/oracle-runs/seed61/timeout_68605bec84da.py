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
    b0 = ct.bid(0)
    b1 = ct.bid(1)
    b = b0 + b1 * ct.num_blocks(0)
    nb = ct.num_blocks(0) * ct.num_blocks(1)
    nt = ct.num_tiles(y, axis=0, shape=(T,))
    vy = y.tiled_view((T,), padding_mode=ZERO, traversal_steps=(T,))
    ya = y.slice(0, 0, 128)
    yb = y.slice(0, 112, 256)
    p2 = nb - 1 - b
    for j1 in range(ct.load(idx, b, shape=()) % 2):
        p4 = b * 2
        for j3 in range(2):
            ct.store(y, index=(b,), tile=ct.full((T,), 1.0, dtype=ct.float32) * b)
            q5 = ct.atomic_add(cnt, 1, 1, memory_order=RELAXED)
            if q5 == nb - 1:
                s6 = ct.full((T,), 0.0, dtype=ct.float32)
                for k7 in range(nb):
                    s6 = s6 + ct.load(y, index=(k7,), shape=(T,), padding_mode=ZERO)
                ct.store(acc, index=(1,), tile=s6)
            if b % 2 == 0:
                break
            ct.scatter(yb, (b) * (T - 1) + ct.arange(T, dtype=ct.int32), ct.full((T,), 1.0, dtype=ct.float32) * b)
            vy.store((nt - 1 - b,), ct.full((T,), 1.0, dtype=ct.float32) * b)
            p4 += 2
        if b0 % 2 == 0:
            pass
        else:
            pass
        p2 += 1


def make_args():
    rng = np.random.default_rng(130200)
    x = rng.standard_normal(256).astype(np.float32)
    y = np.zeros(256, np.float32)
    c = rng.integers(0, 4, 256).astype(np.int32)
    acc = np.zeros(2 * 16, np.float32)
    idx = np.where(rng.random(256) < 0.1, rng.choice([-1, 256, 263], 256), rng.permutation(256)).astype(np.int32)
    lk = np.zeros(1, np.int32)
    m = rng.standard_normal((8, 36)).astype(np.float32)[:, ::2]
    cnt = np.zeros(2, np.int32)
    fl = np.zeros(16, np.int32)
    return (x, y, c, acc, idx, lk, m, cnt, fl, 16)


GRID = (4, 1, 1)
ASSUME = [tilecheck.distinct("idx"), tilecheck.bounded("idx", 0, 255)]


# more than the time limit
