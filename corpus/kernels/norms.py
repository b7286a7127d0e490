"""Row-wise kernels: softmax, layer norm forward/backward (spin lock), RMS norm."""
import cuda.tile as ct
import numpy as np

import tilecheck

ConstInt = ct.Constant[int]
ZERO = ct.PaddingMode.ZERO


@tilecheck.case(grid=(64, 1, 1), args=lambda: (np.ones((64, 128), np.float32), np.zeros((64, 128), np.float32), 128))
@ct.kernel
def softmax(x, y, TN: ConstInt):
    row = ct.bid(0)
    t = ct.load(x, index=(row, 0), shape=(1, TN), padding_mode=ct.PaddingMode.NEG_INF)
    t = t - ct.max(t, axis=1, keepdims=True)
    e = ct.exp(t)
    ct.store(y, index=(row, 0), tile=e / ct.sum(e, axis=1, keepdims=True))


@tilecheck.case(grid=(32, 1, 1), args=lambda: (np.ones((32, 256), np.float32), np.ones(256, np.float32),
                                               np.zeros(256, np.float32), np.zeros((32, 256), np.float32),
                                               np.zeros(32, np.float32), np.zeros(32, np.float32), 1e-5, 64))
@ct.kernel
def layer_norm_fwd(X, W, B, Y, Mean, Rstd, eps, TN: ConstInt):
    row = ct.bid(0)
    n_tiles = ct.num_tiles(X, axis=1, shape=(1, TN))
    N = X.shape[1]
    acc = ct.full((1, TN), 0, dtype=ct.float32)
    for j in range(n_tiles):
        acc += ct.load(X, index=(row, j), shape=(1, TN), padding_mode=ZERO)
    mean = ct.sum(acc, axis=1) / N
    ct.store(Mean, index=(row,), tile=mean)
    var = ct.full((1, TN), 0, dtype=ct.float32)
    for j in range(n_tiles):
        tx = ct.load(X, index=(row, j), shape=(1, TN), padding_mode=ZERO)
        inside = (j * TN + ct.arange(TN, dtype=ct.int32)) < N
        d = ct.where(inside, tx - mean, 0)
        var += d * d
    rstd = 1 / ct.sqrt(ct.sum(var, axis=1) / N + eps)
    ct.store(Rstd, index=(row,), tile=rstd)
    for j in range(n_tiles):
        tx = ct.load(X, index=(row, j), shape=(1, TN), padding_mode=ZERO)
        tw = ct.load(W, index=(j,), shape=(TN,), padding_mode=ZERO)
        tb = ct.load(B, index=(j,), shape=(TN,), padding_mode=ZERO)
        ct.store(Y, index=(row, j), tile=((tx - mean) * rstd * tw + tb).astype(Y.dtype))


@tilecheck.case(grid=(32, 1, 1), args=lambda: (np.zeros((32, 128), np.float32), np.ones((32, 128), np.float32),
                                               np.zeros((8, 128), np.float32), np.zeros((8, 128), np.float32),
                                               np.ones((32, 128), np.float32), np.ones(128, np.float32),
                                               np.zeros(32, np.float32), np.ones(32, np.float32),
                                               np.zeros(8, np.int32), 64))
@ct.kernel
def layer_norm_bwd(DX, DY, DW, DB, X, W, Mean, Rstd, Locks, TN: ConstInt):
    # Partial dW/dB rows are shared by GROUP blocks: a CAS spin lock guards them.
    row = ct.bid(0)
    n_tiles = ct.num_tiles(X, axis=1, shape=(1, TN))
    N = X.shape[1]
    group = row % DW.shape[0]
    mean = ct.load(Mean, index=(row,), shape=(1,))
    rstd = ct.load(Rstd, index=(row,), shape=(1,))
    for j in range(n_tiles):
        tx = ct.load(X, index=(row, j), shape=(1, TN), padding_mode=ZERO)
        tw = ct.load(W, index=(j,), shape=(TN,), padding_mode=ZERO)
        tdy = ct.load(DY, index=(row, j), shape=(1, TN), padding_mode=ZERO)
        xhat = (tx - mean) * rstd
        wdy = tw * tdy
        c1 = ct.sum(xhat * wdy, axis=1) / N
        c2 = ct.sum(wdy, axis=1) / N
        ct.store(DX, index=(row, j), tile=((wdy - (xhat * c1 + c2)) * rstd).astype(DX.dtype))
        pdw = tdy * xhat
        pdb = tdy
        while ct.atomic_cas(Locks, group, 0, 1, memory_order=ct.MemoryOrder.ACQUIRE) == 1:
            pass
        pdw += ct.load(DW, index=(group, j), shape=(1, TN), padding_mode=ZERO)
        pdb += ct.load(DB, index=(group, j), shape=(1, TN), padding_mode=ZERO)
        ct.store(DW, index=(group, j), tile=pdw)
        ct.store(DB, index=(group, j), tile=pdb)
        ct.atomic_xchg(Locks, group, 0, memory_order=ct.MemoryOrder.RELEASE)


@tilecheck.case(grid=(32, 1, 1), args=lambda: (np.zeros((32, 128), np.float32), np.ones((32, 128), np.float32),
                                               np.zeros((8, 128), np.float32), np.ones((32, 128), np.float32),
                                               np.zeros(8, np.int32), 64))
@ct.kernel
def partial_sums_lock_too_early(DX, DY, DW, X, Locks, TN: ConstInt):
    # Racy: the lock is released before the shared partial sum is written back.
    row = ct.bid(0)
    group = row % DW.shape[0]
    for j in range(ct.num_tiles(X, axis=1, shape=(1, TN))):
        tdy = ct.load(DY, index=(row, j), shape=(1, TN), padding_mode=ZERO)
        ct.store(DX, index=(row, j), tile=tdy)
        while ct.atomic_cas(Locks, group, 0, 1, memory_order=ct.MemoryOrder.ACQUIRE) == 1:
            pass
        acc = ct.load(DW, index=(group, j), shape=(1, TN), padding_mode=ZERO) + tdy
        ct.atomic_xchg(Locks, group, 0, memory_order=ct.MemoryOrder.RELEASE)
        ct.store(DW, index=(group, j), tile=acc)


@tilecheck.case(grid=(32, 1, 1), args=lambda: (np.random.default_rng(0).standard_normal((32, 128)).astype(np.float32),
                                               np.zeros(32, np.float32), 128))
@ct.kernel
def row_mean_shared_slot(X, Mean, TN: ConstInt):
    # Racy: the per-row mean is stored to Mean[0] by every block (index (0,) instead of (row,)).
    row = ct.bid(0)
    tx = ct.load(X, index=(row, 0), shape=(1, TN), padding_mode=ZERO)
    ct.store(Mean, index=(0,), tile=ct.sum(tx, axis=1) / X.shape[1])


@tilecheck.case(grid=(32, 1, 1), args=lambda: (np.ones((32, 128), np.float32), np.ones(128, np.float32),
                                               np.zeros((32, 128), np.float32), 1e-6, 128))
@ct.kernel
def rms_norm(X, W, Y, eps, TN: ConstInt):
    row = ct.bid(0)
    tx = ct.load(X, index=(row, 0), shape=(1, TN), padding_mode=ZERO)
    ms = ct.sum(tx * tx, axis=1, keepdims=True) / X.shape[1]
    tw = ct.load(W, index=(0,), shape=(TN,), padding_mode=ZERO)
    ct.store(Y, index=(row, 0), tile=tx * ct.rsqrt(ms + eps) * tw)


def _ce_args():
    logits = np.random.default_rng(0).standard_normal((8, 64)).astype(np.float32)
    return logits, np.array([3, -100, 63, 0, 17, -100, 5, 9], np.int32), np.zeros(8, np.float32), 64


@tilecheck.case(grid=(8, 1, 1), args=_ce_args, assume=[tilecheck.bounded("target", 0, 63, also=(-100,))])
@ct.kernel
def cross_entropy_ignore_index(logits, target, loss, V: ConstInt):
    # In bounds under its contract: a target is a class in [0, V) or the ignore_index -100, and an
    # ignored row writes a zero loss and returns before its target is used as an index.
    row = ct.bid(0)
    t = ct.load(target, row, shape=())
    if t == -100:
        ct.store(loss, index=(row,), tile=ct.full((1,), 0.0, dtype=ct.float32))
        return
    x = ct.load(logits, index=(row, 0), shape=(1, V))
    m = ct.max(x)
    lse = m + ct.log(ct.sum(ct.exp(x - m)))
    picked = ct.gather(logits, (row, t), check_bounds=False)
    ct.store(loss, index=(row,), tile=lse - picked)


@tilecheck.case(grid=(32, 1, 1), args=lambda: (np.ones((32, 128), np.float32), np.zeros((8, 128), np.float32),
                                               np.zeros(8, np.int32), 64))
@ct.kernel
def partial_sums_release_twice(DY, DW, Locks, TN: ConstInt):
    # Racy: the block releases, writes the partial sum back outside the lock, and releases again
    # (the second release can also free a lock another block holds by then).
    row = ct.bid(0)
    group = row % DW.shape[0]
    for j in range(ct.num_tiles(DY, axis=1, shape=(1, TN))):
        tdy = ct.load(DY, index=(row, j), shape=(1, TN), padding_mode=ZERO)
        while ct.atomic_cas(Locks, group, 0, 1, memory_order=ct.MemoryOrder.ACQUIRE) == 1:
            pass
        acc = ct.load(DW, index=(group, j), shape=(1, TN), padding_mode=ZERO) + tdy
        ct.atomic_xchg(Locks, group, 0, memory_order=ct.MemoryOrder.RELEASE)
        ct.store(DW, index=(group, j), tile=acc)
        ct.atomic_xchg(Locks, group, 0, memory_order=ct.MemoryOrder.RELEASE)


@tilecheck.case(grid=(32, 1, 1), args=lambda: (np.ones((32, 128), np.float32), np.zeros((8, 128), np.float32),
                                               np.zeros(8, np.int32), 64))
@ct.kernel
def partial_sums_foreign_release(DY, DW, Locks, TN: ConstInt):
    # Racy: before taking its own lock, each block "releases" the next group's lock, which another
    # block may hold: two blocks can then be inside that group's critical section at once.
    row = ct.bid(0)
    group = row % DW.shape[0]
    for j in range(ct.num_tiles(DY, axis=1, shape=(1, TN))):
        tdy = ct.load(DY, index=(row, j), shape=(1, TN), padding_mode=ZERO)
        ct.atomic_xchg(Locks, (group + 1) % DW.shape[0], 0, memory_order=ct.MemoryOrder.RELEASE)
        while ct.atomic_cas(Locks, group, 0, 1, memory_order=ct.MemoryOrder.ACQUIRE) == 1:
            pass
        acc = ct.load(DW, index=(group, j), shape=(1, TN), padding_mode=ZERO) + tdy
        ct.store(DW, index=(group, j), tile=acc)
        ct.atomic_xchg(Locks, group, 0, memory_order=ct.MemoryOrder.RELEASE)


@tilecheck.case(grid=(32, 1, 1), args=lambda: (np.ones((32, 128), np.float32), np.zeros((8, 128), np.float32),
                                               np.zeros(8, np.int32), 64))
@ct.kernel
def partial_sums_locked(DY, DW, Locks, TN: ConstInt):
    # Race-free: acquire, read-modify-write the group's partial sum, release once.
    row = ct.bid(0)
    group = row % DW.shape[0]
    for j in range(ct.num_tiles(DY, axis=1, shape=(1, TN))):
        tdy = ct.load(DY, index=(row, j), shape=(1, TN), padding_mode=ZERO)
        while ct.atomic_cas(Locks, group, 0, 1, memory_order=ct.MemoryOrder.ACQUIRE) == 1:
            pass
        acc = ct.load(DW, index=(group, j), shape=(1, TN), padding_mode=ZERO) + tdy
        ct.store(DW, index=(group, j), tile=acc)
        ct.atomic_xchg(Locks, group, 0, memory_order=ct.MemoryOrder.RELEASE)
