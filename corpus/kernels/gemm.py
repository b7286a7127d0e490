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
