"""Triton kernels (``@triton.jit``), checked through the Triton frontend (docs/triton.md): the same
race classes as the cuTile corpus, each race-free kernel with a racy twin that breaks it in one
place. Arguments are given by name, as to ``kernel[grid](...)``."""
import numpy as np
import triton
import triton.language as tl

import tilecheck

_N = 1000
_VEC = lambda: dict(x_ptr=np.arange(_N, dtype=np.float32), y_ptr=np.ones(_N, np.float32),  # noqa: E731
                    out_ptr=np.zeros(_N, np.float32), n=_N, BLOCK=128)


@tilecheck.case(grid=(8,), args=_VEC)
@triton.jit
def vector_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # program p owns elements [p * BLOCK, (p + 1) * BLOCK); the mask drops the tail past n
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    y = tl.load(y_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, x + y, mask=mask)


@tilecheck.case(grid=(8,), args=_VEC)
@triton.jit
def vector_add_clamped_tail(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # the tail is clamped instead of masked: the last program's lanes past n all write element n - 1,
    # and the previous program's last tile overlaps it when n is not a multiple of BLOCK
    pid = tl.program_id(0)
    offs = tl.minimum(pid * BLOCK + tl.arange(0, BLOCK), n - 1)
    start = tl.minimum(pid * BLOCK, n - BLOCK)
    offs = start + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    tl.store(out_ptr + offs, x + y)


_MASK = lambda: dict(x_ptr=np.arange(_N) % 3 == 0, y_ptr=np.arange(_N) % 2 == 0,  # noqa: E731
                     out_ptr=np.zeros(_N, bool), n=_N, BLOCK=128)


@tilecheck.case(grid=(8,), args=_MASK)
@triton.jit
def mask_and(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # bool tensors: Triton loads and stores them through ptr<i8> (a bitcast of ptr<i1>)
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    both = tl.load(x_ptr + offs, mask=mask, other=False) & tl.load(y_ptr + offs, mask=mask, other=False)
    tl.store(out_ptr + offs, both, mask=mask)


@tilecheck.case(grid=(8,), args=_MASK)
@triton.jit
def mask_and_shifted(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # racy: slices of BLOCK elements placed BLOCK - 1 apart, so neighbours share one element
    offs = tl.program_id(0) * (BLOCK - 1) + tl.arange(0, BLOCK)
    mask = offs < n
    both = tl.load(x_ptr + offs, mask=mask, other=False) & tl.load(y_ptr + offs, mask=mask, other=False)
    tl.store(out_ptr + offs, both, mask=mask)


_B, _H, _M, _D = 2, 4, 8, 16
_HEADS = lambda: dict(x_ptr=np.random.default_rng(0).standard_normal((_B, _H, _M, _D)).astype(np.float32),  # noqa: E731
                      out_ptr=np.zeros((_B, _M, _H, _D), np.float32), H=_H, M=_M, D=_D)


@tilecheck.case(grid=(_B, _H, _M), args=_HEADS)
@triton.jit
def heads_to_rows(x_ptr, out_ptr, H: tl.constexpr, M: tl.constexpr, D: tl.constexpr):
    # (b, h, m, :) -> (b, m, h, :): program (b, h, m) moves one row of head h
    b, h, m = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    d = tl.arange(0, D)
    row = tl.load(x_ptr + ((b * H + h) * M + m) * D + d)
    tl.store(out_ptr + ((b * M + m) * H + h) * D + d, row)


@tilecheck.case(grid=(_B, _H, _M), args=_HEADS)
@triton.jit
def heads_to_rows_swapped(x_ptr, out_ptr, H: tl.constexpr, M: tl.constexpr, D: tl.constexpr):
    # the paper's head-permutation bug, in Triton: the destination head index h2 = h // 2 makes two
    # heads' programs write the same row
    b, h, m = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    h2 = h // 2
    d = tl.arange(0, D)
    row = tl.load(x_ptr + ((b * H + h) * M + m) * D + d)
    tl.store(out_ptr + ((b * M + m) * H + h2) * D + d, row)


_SUM = lambda: dict(x_ptr=np.arange(512, dtype=np.int32), acc_ptr=np.zeros(1, np.int32), BLOCK=64)  # noqa: E731


@tilecheck.case(grid=(8,), args=_SUM)
@triton.jit
def block_sums_atomic(x_ptr, acc_ptr, BLOCK: tl.constexpr):
    # every program adds its block's sum with an atomic: integer adds commute, the result is exact
    pid = tl.program_id(0)
    s = tl.sum(tl.load(x_ptr + pid * BLOCK + tl.arange(0, BLOCK)), axis=0)
    tl.atomic_add(acc_ptr, s)


@tilecheck.case(grid=(8,), args=_SUM)
@triton.jit
def block_sums_plain(x_ptr, acc_ptr, BLOCK: tl.constexpr):
    # the same accumulation as a plain load and store: two programs may read the same old value
    pid = tl.program_id(0)
    s = tl.sum(tl.load(x_ptr + pid * BLOCK + tl.arange(0, BLOCK)), axis=0)
    tl.store(acc_ptr, tl.load(acc_ptr) + s)


_FLAG = lambda: dict(flag_ptr=np.zeros(1, np.int32), data_ptr=np.zeros(64, np.float32),  # noqa: E731
                     out_ptr=np.zeros(64 * 4, np.float32), BLOCK=64)


@tilecheck.case(grid=(4,), args=_FLAG)
@triton.jit
def publish_then_wait(flag_ptr, data_ptr, out_ptr, BLOCK: tl.constexpr):
    # program 0 writes the data, then raises the flag (release); the others spin until they see it
    # (acquire) and read the data: release/acquire orders the write before every read
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    if pid == 0:
        tl.store(data_ptr + offs, offs.to(tl.float32))
        tl.atomic_xchg(flag_ptr, 1, sem="release")
    else:
        while tl.atomic_add(flag_ptr, 0, sem="acquire") == 0:
            pass
        tl.store(out_ptr + pid * BLOCK + offs, tl.load(data_ptr + offs))


@tilecheck.case(grid=(4,), args=_FLAG)
@triton.jit
def publish_then_wait_relaxed(flag_ptr, data_ptr, out_ptr, BLOCK: tl.constexpr):
    # the same handshake with a relaxed flag: seeing the flag orders nothing, the read races
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    if pid == 0:
        tl.store(data_ptr + offs, offs.to(tl.float32))
        tl.atomic_xchg(flag_ptr, 1, sem="relaxed")
    else:
        while tl.atomic_add(flag_ptr, 0, sem="relaxed") == 0:
            pass
        tl.store(out_ptr + pid * BLOCK + offs, tl.load(data_ptr + offs))


_TICKET = lambda: dict(partial_ptr=np.zeros(8, np.int32), counter_ptr=np.zeros(1, np.int32),  # noqa: E731
                       out_ptr=np.zeros(1, np.int32), NPROG=8)


@tilecheck.case(grid=(8,), args=_TICKET)
@triton.jit
def last_ticket_total(partial_ptr, counter_ptr, out_ptr, NPROG: tl.constexpr):
    # each program stores its partial, then takes a ticket (acq_rel); the mask lets only the program
    # with the last ticket read every partial: the chain of read-modify-writes orders them all
    pid = tl.program_id(0)
    tl.store(partial_ptr + pid, pid + 1)
    ticket = tl.atomic_add(counter_ptr, 1, sem="acq_rel")
    last = ticket == NPROG - 1
    lanes = tl.arange(0, NPROG)
    total = tl.sum(tl.load(partial_ptr + lanes, mask=last & (lanes < NPROG), other=0), axis=0)
    tl.store(out_ptr, total, mask=last)


@tilecheck.case(grid=(8,), args=_TICKET)
@triton.jit
def last_ticket_total_relaxed(partial_ptr, counter_ptr, out_ptr, NPROG: tl.constexpr):
    # the same with a relaxed ticket: the last program may read partials not yet visible to it
    pid = tl.program_id(0)
    tl.store(partial_ptr + pid, pid + 1)
    ticket = tl.atomic_add(counter_ptr, 1, sem="relaxed")
    last = ticket == NPROG - 1
    lanes = tl.arange(0, NPROG)
    total = tl.sum(tl.load(partial_ptr + lanes, mask=last & (lanes < NPROG), other=0), axis=0)
    tl.store(out_ptr, total, mask=last)


@tilecheck.case(grid=(8,), args=_TICKET)
@triton.jit
def last_ticket_total_reset(partial_ptr, counter_ptr, out_ptr, NPROG: tl.constexpr):
    # CUDA's threadFenceReduction: the program with the last ticket sums the partials, then resets
    # the counter for the next launch with a plain store; every other program's ticket (acq_rel,
    # one chain of read-modify-writes) happens before it
    pid = tl.program_id(0)
    tl.store(partial_ptr + pid, pid + 1)
    ticket = tl.atomic_add(counter_ptr, 1, sem="acq_rel")
    if ticket == NPROG - 1:
        tl.store(out_ptr, tl.sum(tl.load(partial_ptr + tl.arange(0, NPROG)), axis=0))
        tl.store(counter_ptr, 0)


@tilecheck.case(grid=(8,), args=_TICKET)
@triton.jit
def last_ticket_total_reset_early(partial_ptr, counter_ptr, out_ptr, NPROG: tl.constexpr):
    # racy: the counter is reset by the *first* program to draw a ticket, while the others still
    # draw theirs from it
    pid = tl.program_id(0)
    tl.store(partial_ptr + pid, pid + 1)
    ticket = tl.atomic_add(counter_ptr, 1, sem="acq_rel")
    if ticket == 0:
        tl.store(counter_ptr, 0)
    if ticket == NPROG - 1:
        tl.store(out_ptr, tl.sum(tl.load(partial_ptr + tl.arange(0, NPROG)), axis=0))


_SCATTER = lambda: dict(x_ptr=np.full(8, 2, np.int32), idx_ptr=np.array([0, 1, 0, 1, 2, 2, 3, 3], np.int32),  # noqa: E731
                        out_ptr=np.ones(4, np.int32), seen_ptr=np.zeros(8, np.int32))


@tilecheck.case(grid=(8,), args=_SCATTER)
@triton.jit
def scatter_multiply(x_ptr, idx_ptr, out_ptr, seen_ptr):
    # scatter-reduce by multiplication: CUDA's compare-and-swap retry. The plain load only guesses
    # the value; a stale guess fails the compare and the loop tries again with what it found
    pid = tl.program_id(0)
    i = tl.load(idx_ptr + pid)
    v = tl.load(x_ptr + pid)
    old = tl.load(out_ptr + i)
    done = False
    while not done:
        prev = tl.atomic_cas(out_ptr + i, old, old * v)
        done = prev == old
        old = prev


@tilecheck.case(grid=(8,), args=_SCATTER)
@triton.jit
def scatter_multiply_keeps_guess(x_ptr, idx_ptr, out_ptr, seen_ptr):
    # racy: the guess is also kept (stored) as what the program saw, which depends on which other
    # programs had multiplied before its plain load
    pid = tl.program_id(0)
    i = tl.load(idx_ptr + pid)
    v = tl.load(x_ptr + pid)
    old = tl.load(out_ptr + i)
    tl.store(seen_ptr + pid, old)
    done = False
    while not done:
        prev = tl.atomic_cas(out_ptr + i, old, old * v)
        done = prev == old
        old = prev


_MM = lambda: dict(a_ptr=np.random.default_rng(1).standard_normal((32, 64)).astype(np.float32),  # noqa: E731
                   b_ptr=np.random.default_rng(2).standard_normal((64, 32)).astype(np.float32),
                   c_ptr=np.zeros((32, 32), np.float32), M=32, N=32, K=64, BM=16, BN=16, BK=16)


@tilecheck.case(grid=(2, 2), args=_MM)
@triton.jit
def matmul(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # program (i, j) computes output tile (i, j), walking K with pointers it advances in the loop
    i, j = tl.program_id(0), tl.program_id(1)
    rm = i * BM + tl.arange(0, BM)
    rn = j * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + rm[:, None] * K + rk[None, :]
    b_ptrs = b_ptr + rk[:, None] * N + rn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for _ in range(0, K, BK):
        acc += tl.dot(tl.load(a_ptrs), tl.load(b_ptrs), input_precision="ieee")
        a_ptrs += BK
        b_ptrs += BK * N
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)


@tilecheck.case(grid=(2, 2), args=_MM)
@triton.jit
def matmul_shared_row(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # the output tile ignores the column index j: both programs of a row write tile (i, 0)
    i, j = tl.program_id(0), tl.program_id(1)
    rm = i * BM + tl.arange(0, BM)
    rn = j * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + rm[:, None] * K + rk[None, :]
    b_ptrs = b_ptr + rk[:, None] * N + rn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for _ in range(0, K, BK):
        acc += tl.dot(tl.load(a_ptrs), tl.load(b_ptrs), input_precision="ieee")
        a_ptrs += BK
        b_ptrs += BK * N
    tl.store(c_ptr + rm[:, None] * N + tl.arange(0, BN)[None, :], acc)



# a per-sequence factor read at [b, l] through the caller's strides, as Liger's GRPO sequence-level
# backward reads its loss gradient: right when the (B, 1) factor is expanded to (B, L) (stride 0);
# the second case passes it with its own strides (1, 1), and program (b, l) reads element b + l, past B
_B2, _L2 = 2, 16
_SCALE = lambda s1: lambda: dict(scale_ptr=np.arange(1, _B2 + 1, dtype=np.float32),  # noqa: E731
                                 x_ptr=np.ones(_B2 * _L2 * 32, np.float32), out_ptr=np.zeros(_B2 * _L2 * 32, np.float32),
                                 stride0=1, stride1=s1, L=_L2, BLOCK=32)


@tilecheck.case(grid=(_B2, _L2), args=_SCALE(0))
@tilecheck.case(grid=(_B2, _L2), args=_SCALE(1))
@triton.jit
def scale_rows(scale_ptr, x_ptr, out_ptr, stride0, stride1, L: tl.constexpr, BLOCK: tl.constexpr):
    b, l = tl.program_id(0), tl.program_id(1)
    s = tl.load(scale_ptr + b * stride0 + l * stride1)
    offs = (b * L + l) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) * s)


# a fused QKV projection's output, q | k | v in one buffer: a rotary-style kernel reads k at an offset
# (k[i + SHIFT]), so its last program reads the first SHIFT rows of v; memory, not views: v's rows are
# there (issue 52). Race-free while nothing writes v; the racy twin also writes v in place.
_QKV_N = 256
_QKV = lambda: (lambda qkv: dict(k_ptr=qkv[_QKV_N:2 * _QKV_N], v_ptr=qkv[2 * _QKV_N:],  # noqa: E731
                                 out_ptr=np.zeros(_QKV_N, np.float32), SHIFT=8, BLOCK=64))(
    np.arange(3 * _QKV_N, dtype=np.float32))


@tilecheck.case(grid=(_QKV_N // 64,), args=_QKV)
@triton.jit
def fused_qkv_shifted_read(k_ptr, v_ptr, out_ptr, SHIFT: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(k_ptr + offs + SHIFT) * tl.load(v_ptr + offs))


@tilecheck.case(grid=(_QKV_N // 64,), args=_QKV)
@triton.jit
def fused_qkv_shifted_read_v_in_place(k_ptr, v_ptr, out_ptr, SHIFT: tl.constexpr, BLOCK: tl.constexpr):
    # racy: v is also scaled in place, so program 0's store to v's first rows races with the last
    # program's read of them through k
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    v = tl.load(v_ptr + offs)
    tl.store(out_ptr + offs, tl.load(k_ptr + offs + SHIFT) * v)
    tl.store(v_ptr + offs, v * 0.5)
