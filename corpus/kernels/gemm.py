"""GEMM kernels: matmul with a k-loop and a 1-D -> 2-D block-id swizzle; batch matmul."""
import cuda.tile as ct
import numpy as np

import tilecheck

ConstInt = ct.Constant[int]


def _swizzle(M, N, TM, TN, GROUP_M, bid):
    blocks_m = ct.cdiv(M, TM)
    blocks_n = ct.cdiv(N, TN)
    per_group = GROUP_M * blocks_n
    group = bid // per_group
    first_m = group * GROUP_M
    group_m = min(blocks_m - first_m, GROUP_M)
    return first_m + bid % group_m, (bid % per_group) // group_m


@tilecheck.case(grid=(16, 1, 1), args=lambda: (np.ones((128, 64), np.float32), np.ones((64, 128), np.float32),
                                               np.zeros((128, 128), np.float32), 32, 32, 16))
@ct.kernel
def matmul(A, B, C, TM: ConstInt, TN: ConstInt, TK: ConstInt):
    bm, bn = _swizzle(A.shape[0], B.shape[1], TM, TN, 4, ct.bid(0))
    acc = ct.full((TM, TN), 0, dtype=ct.float32)
    for k in range(ct.num_tiles(A, axis=1, shape=(TM, TK))):
        a = ct.load(A, index=(bm, k), shape=(TM, TK), padding_mode=ct.PaddingMode.ZERO)
        b = ct.load(B, index=(k, bn), shape=(TK, TN), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(a, b, acc)
    ct.store(C, index=(bm, bn), tile=acc.astype(C.dtype))


@tilecheck.case(grid=(2, 2, 2), args=lambda: (np.ones((2, 64, 32), np.float16), np.ones((2, 32, 64), np.float16),
                                              np.zeros((2, 64, 64), np.float16), 32, 32, 16))
@ct.kernel
def batch_matmul(A, B, C, TM: ConstInt, TN: ConstInt, TK: ConstInt):
    batch = ct.bid(0)
    bm = ct.bid(1)
    bn = ct.bid(2)
    acc = ct.full((TM, TN), 0.0, dtype=ct.float32)
    for k in range(ct.cdiv(A.shape[2], TK)):
        a = ct.load(A, index=(batch, bm, k), shape=(1, TM, TK), padding_mode=ct.PaddingMode.ZERO)
        b = ct.load(B, index=(batch, k, bn), shape=(1, TK, TN), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(ct.reshape(a, (TM, TK)), ct.reshape(b, (TK, TN)), acc)
    out = ct.reshape(acc, (1, TM, TN)).astype(C.dtype)
    ct.store(C, index=(batch, bm, bn), tile=out)


def _splitk_args():
    r = np.random.default_rng(0)
    return (r.standard_normal((64, 256)).astype(np.float32), r.standard_normal((256, 64)).astype(np.float32),
            np.zeros((64, 64), np.float32), 32, 32, 64)


@tilecheck.case(grid=(2, 2, 4), args=_splitk_args)
@ct.kernel
def matmul_split_k_atomic(A, B, C, TM: ConstInt, TN: ConstInt, TK: ConstInt):
    # Split-K with float atomic adds: no race, but the sum's rounding depends on the block order
    # (an order-dependent result, reported as a warning).
    bm, bn, bk = ct.bid(0), ct.bid(1), ct.bid(2)
    a = ct.load(A, index=(bm, bk), shape=(TM, TK))
    b = ct.load(B, index=(bk, bn), shape=(TK, TN))
    part = ct.mma(a, b, ct.full((TM, TN), 0.0, dtype=ct.float32))
    rows = bm * TM + ct.arange(TM, dtype=ct.int32)
    cols = bn * TN + ct.arange(TN, dtype=ct.int32)
    ct.atomic_add(C, (rows[:, None], cols[None, :]), part)


@tilecheck.case(grid=(2, 2, 4), args=_splitk_args)
@ct.kernel
def matmul_split_k_store(A, B, C, TM: ConstInt, TN: ConstInt, TK: ConstInt):
    # Racy: the K splits store their partial products to the same C tile.
    bm, bn, bk = ct.bid(0), ct.bid(1), ct.bid(2)
    a = ct.load(A, index=(bm, bk), shape=(TM, TK))
    b = ct.load(B, index=(bk, bn), shape=(TK, TN))
    ct.store(C, index=(bm, bn), tile=ct.mma(a, b, ct.full((TM, TN), 0.0, dtype=ct.float32)))


def _persistent_args():
    r = np.random.default_rng(0)
    return (r.standard_normal((128, 64)).astype(np.float32), r.standard_normal((64, 128)).astype(np.float32),
            np.zeros((128, 128), np.float32), 32, 32, 32)


@tilecheck.case(grid=(5, 1, 1), args=_persistent_args)
@ct.kernel
def persistent_matmul(A, B, C, TM: ConstInt, TN: ConstInt, TK: ConstInt):
    # Persistent: 5 blocks stride over the 16 output tiles.
    tiles_n = ct.cdiv(B.shape[1], TN)
    for tile in range(ct.bid(0), ct.cdiv(A.shape[0], TM) * tiles_n, ct.num_blocks(0)):
        bm = tile // tiles_n
        bn = tile % tiles_n
        acc = ct.full((TM, TN), 0.0, dtype=ct.float32)
        for k in range(ct.num_tiles(A, axis=1, shape=(TM, TK))):
            acc = ct.mma(ct.load(A, index=(bm, k), shape=(TM, TK)), ct.load(B, index=(k, bn), shape=(TK, TN)), acc)
        ct.store(C, index=(bm, bn), tile=acc)


@tilecheck.case(grid=(5, 1, 1), args=_persistent_args)
@ct.kernel
def persistent_matmul_short_stride(A, B, C, TM: ConstInt, TN: ConstInt, TK: ConstInt):
    # Racy: strides by num_blocks - 1, so consecutive blocks revisit each other's tiles.
    tiles_n = ct.cdiv(B.shape[1], TN)
    for tile in range(ct.bid(0), ct.cdiv(A.shape[0], TM) * tiles_n, ct.num_blocks(0) - 1):
        bm = tile // tiles_n
        bn = tile % tiles_n
        acc = ct.full((TM, TN), 0.0, dtype=ct.float32)
        for k in range(ct.num_tiles(A, axis=1, shape=(TM, TK))):
            acc = ct.mma(ct.load(A, index=(bm, k), shape=(TM, TK)), ct.load(B, index=(k, bn), shape=(TK, TN)), acc)
        ct.store(C, index=(bm, bn), tile=acc)
