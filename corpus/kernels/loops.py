"""Kernels whose addresses come from values a loop carries: a prefix sum of group sizes (where a
ragged batch's rows start), a ``while`` loop's persistent cursor, and views sliced at a block's own
offsets. Each has a racy twin. The verifier follows such values iteration by iteration
(``verifier/model/carried.py``)."""
import cuda.tile as ct
import numpy as np

import tilecheck

ConstInt = ct.Constant[int]
ZERO = ct.PaddingMode.ZERO

SIZES = [3, 1, 4, 2, 5]  # rows per group; group g starts at the sum of the sizes before it


def _groups():
    return (np.array(SIZES, np.int32), np.arange(16 * 8, dtype=np.float32).reshape(16, 8),
            np.zeros((16, 8), np.float32), 8, 8)


def _copy_rows(x, y, start, size, TM: ConstInt, TD: ConstInt):
    """Copy rows start .. start + size (at most TM of them) of x to y (inlined into each kernel)."""
    rows = start + ct.arange(TM, dtype=ct.int32)
    cols = ct.arange(TD, dtype=ct.int32)
    inside = (ct.arange(TM, dtype=ct.int32) < size)[:, None]
    t = ct.gather(x, (rows[:, None], cols[None, :]), mask=inside)
    ct.scatter(y, (rows[:, None], cols[None, :]), t, mask=inside)


@tilecheck.case(grid=(5, 1, 1), args=_groups)
@ct.kernel
def grouped_rows_prefix_sum(sizes, x, y, TM: ConstInt, TD: ConstInt):
    # block g copies the rows of group g: they start at sizes[0] + ... + sizes[g - 1], summed by a loop
    g = ct.bid(0)
    start = 0
    for k in range(g):
        start = start + ct.load(sizes, index=(k,), shape=(1,)).item()
    size = ct.load(sizes, index=(g,), shape=(1,)).item()
    _copy_rows(x, y, start, size, TM, TD)


@tilecheck.case(grid=(5, 1, 1), args=_groups)
@ct.kernel
def grouped_rows_prefix_sum_skips_one(sizes, x, y, TM: ConstInt, TD: ConstInt):
    # racy: the loop stops one group short (range(g - 1)), so group g starts where group g - 1 does
    g = ct.bid(0)
    start = 0
    for k in range(g - 1):
        start = start + ct.load(sizes, index=(k,), shape=(1,)).item()
    size = ct.load(sizes, index=(g,), shape=(1,)).item()
    _copy_rows(x, y, start, size, TM, TD)


def _tiles():
    return (np.arange(40 * 4, dtype=np.float32), np.zeros(40 * 4, np.float32), 40, 4)


@tilecheck.case(grid=(6, 1, 1), args=_tiles)
@ct.kernel
def persistent_while(x, y, n_tiles: int, T: ConstInt):
    # a persistent loop written as `while`: block b takes tiles b, b + nb, b + 2 nb, ...
    t = ct.bid(0)
    while t < n_tiles:
        ct.store(y, index=(t,), tile=ct.load(x, index=(t,), shape=(T,)) * 2.0)
        t = t + ct.num_blocks(0)


@tilecheck.case(grid=(6, 1, 1), args=_tiles)
@ct.kernel
def persistent_while_short_stride(x, y, n_tiles: int, T: ConstInt):
    # racy: the cursor advances by nb - 1, so block b + 1 revisits the tile block b takes next
    t = ct.bid(0)
    while t < n_tiles:
        ct.store(y, index=(t,), tile=ct.load(x, index=(t,), shape=(T,)) * 2.0)
        t = t + ct.num_blocks(0) - 1


def _segments(offsets):
    return (np.array(offsets, np.int32), np.arange(32 * 8, dtype=np.float32).reshape(32, 8),
            np.zeros((32, 8), np.float32), 8, 8)


@tilecheck.case(grid=(4, 1, 1), args=lambda: _segments([0, 5, 9, 17, 24]))
@ct.kernel
def sliced_segments(offsets, x, y, TM: ConstInt, TD: ConstInt):
    # block b works on the rows offsets[b] .. offsets[b + 1] through views sliced there (a view whose
    # origin and size differ per block); the store is masked to the slice
    b = ct.bid(0)
    start = ct.load(offsets, index=(b,), shape=(1,)).item()
    stop = ct.load(offsets, index=(b + 1,), shape=(1,)).item()
    xs = x.slice(axis=0, start=start, stop=stop)
    ys = y.slice(axis=0, start=start, stop=stop)
    for i in range(ct.cdiv(stop - start, TM)):
        ct.store(ys, index=(i, 0), tile=ct.load(xs, index=(i, 0), shape=(TM, TD), padding_mode=ZERO))


@tilecheck.case(grid=(4, 1, 1), args=lambda: _segments([0, 5, 9, 17, 24]))
@ct.kernel
def sliced_segments_overlap(offsets, x, y, TM: ConstInt, TD: ConstInt):
    # racy: each slice runs to offsets[b + 2] (clamped to the last), into the next block's rows
    b = ct.bid(0)
    start = ct.load(offsets, index=(b,), shape=(1,)).item()
    stop = ct.load(offsets, index=(ct.minimum(b + 2, 4),), shape=(1,)).item()
    xs = x.slice(axis=0, start=start, stop=stop)
    ys = y.slice(axis=0, start=start, stop=stop)
    for i in range(ct.cdiv(stop - start, TM)):
        ct.store(ys, index=(i, 0), tile=ct.load(xs, index=(i, 0), shape=(TM, TD), padding_mode=ZERO))


@tilecheck.case(grid=(5, 1, 1), args=_groups)
@ct.kernel
def grouped_rows_scan(sizes, x, y, TM: ConstInt, TD: ConstInt):
    # the same groups, their starts computed without a loop: an exclusive prefix sum by ct.cumsum
    # over the whole size tile, then block g's entry picked out by a masked sum
    g = ct.bid(0)
    all_sizes = ct.load(sizes, index=(0,), shape=(8,), padding_mode=ZERO)
    starts = ct.cumsum(all_sizes, axis=0) - all_sizes
    lanes = ct.arange(8, dtype=ct.int32)
    start = ct.sum(ct.where(lanes == g, starts, 0))
    size = ct.sum(ct.where(lanes == g, all_sizes, 0))
    _copy_rows(x, y, start, size, TM, TD)


def _experts():
    sizes = [3, 0, 5, 2, 8, 1, 4, 0, 6, 2, 3, 7]  # rows per expert, as a mixture-of-experts router sends them
    total = sum(sizes)
    return (np.array(sizes, np.int32), np.arange(total * 8, dtype=np.float32).reshape(total, 8),
            np.zeros((total, 8), np.float32), len(sizes), 2, 8)


def _walk_experts(sizes, t, E: ConstInt, TM: ConstInt, OWN: ConstInt):
    """Tile t's expert (its size, the tile's index in it, the expert's first row), found by walking
    the experts and carrying the first row, the tiles before and the match, each step reading the
    others (inlined into each kernel). ``OWN`` 1: the first row also counts the matched expert's
    rows (the racy twin's slip)."""
    first_row = 0
    tiles_before = 0
    size = 0
    local = 0
    for e in range(E):
        m = ct.load(sizes, index=(e,), shape=(1,)).item()
        tiles = ct.cdiv(m, TM)
        if t < tiles_before + tiles:
            if size == 0:  # the first match
                size = m
                local = t - tiles_before
        if t >= tiles_before + tiles * (1 - OWN):
            first_row = first_row + m
        tiles_before = tiles_before + tiles
    return size, local, first_row


def _copy_expert_tile(x, y, size, local, first_row, TM: ConstInt, TD: ConstInt):
    if size > 0:
        rows = first_row + local * TM + ct.arange(TM, dtype=ct.int32)
        cols = ct.arange(TD, dtype=ct.int32)
        inside = (local * TM + ct.arange(TM, dtype=ct.int32) < size)[:, None]
        tile = ct.gather(x, (rows[:, None], cols[None, :]), mask=inside)
        ct.scatter(y, (rows[:, None], cols[None, :]), tile, mask=inside)


@tilecheck.case(grid=(16, 1, 1), args=_experts)
@ct.kernel
def expert_walk(sizes, x, y, E: ConstInt, TM: ConstInt, TD: ConstInt):
    # a persistent grouped GEMM's scheduling (unsloth's MoE kernels): tile t finds its expert by a
    # walk over the experts, then copies its rows of that expert
    size, local, first_row = _walk_experts(sizes, ct.bid(0), E, TM, 0)
    _copy_expert_tile(x, y, size, local, first_row, TM, TD)


@tilecheck.case(grid=(16, 1, 1), args=_experts)
@ct.kernel
def expert_walk_counts_own_rows(sizes, x, y, E: ConstInt, TM: ConstInt, TD: ConstInt):
    # racy: the walk also adds the matched expert's rows to its first row, so an expert's tiles land
    # on later experts' rows (and past them)
    size, local, first_row = _walk_experts(sizes, ct.bid(0), E, TM, 1)
    _copy_expert_tile(x, y, size, local, first_row, TM, TD)


def many_experts(count: int = 70, seed: int = 0, bm: int = 4, bn: int = 8, n: int = 16, grid: int = 8):
    """Launch arguments of the persistent expert scatters: ``count`` experts (more than the 64
    iterations the solver's facts unroll), ``grid`` blocks each taking every ``grid``-th tile."""
    sizes = np.random.default_rng(seed).integers(0, 7, count).astype(np.int32)
    total = int(sizes.sum())
    tiles = sum(-(-int(m) // bm) for m in sizes) * (n // bn)
    return (sizes, np.ones((total, n), np.float32), np.zeros((total, n), np.float32), count,
            -(-tiles // grid), grid, bm, bn, n, total)


def _expert_tiles(m_sizes, t, NUM_EXPERTS: ConstInt, BM: ConstInt, n_tiles):
    """TileGym's persistent grouped GEMM's scheduler (unsloth): tile ``t``'s expert size, m-tile,
    n-tile and first row, by a walk over the experts carrying the offset, the tiles before and the
    match (inlined into each kernel)."""
    m_offset = 0
    before = 0
    size = 0
    m_local = 0
    n_local = 0
    for e in range(NUM_EXPERTS):
        m = ct.load(m_sizes, index=(e,), shape=(1,)).item()
        tiles = ct.cdiv(m, BM) * n_tiles
        if t < before + tiles:
            if size == 0:
                size = m
                m_local = (t - before) // n_tiles
                n_local = (t - before) % n_tiles
        if t >= before + tiles:
            m_offset = m_offset + m
        before = before + tiles
    return size, m_local, n_local, m_offset


@tilecheck.case(grid=(8, 1, 1), args=many_experts)
@ct.kernel
def expert_scatter_persistent(m_sizes, src, dst, NUM_EXPERTS: ConstInt, SLOTS: ConstInt, GRID: ConstInt,
                              BM: ConstInt, BN: ConstInt, N: ConstInt, TOTAL: ConstInt):
    # each block takes tiles b, b + GRID, ...: rows of the tile's expert past its count are sent
    # out of bounds (TOTAL), columns [n * BN, (n + 1) * BN)
    for slot in range(SLOTS):
        size, m_local, n_local, m_offset = _expert_tiles(m_sizes, ct.bid(0) + slot * GRID, NUM_EXPERTS, BM,
                                                         ct.cdiv(N, BN))
        if size > 0:
            local = m_local * BM + ct.arange(BM, dtype=ct.int32)
            rows = ct.where(local < size, m_offset + local, TOTAL)
            cols = n_local * BN + ct.arange(BN, dtype=ct.int32)
            tile = ct.gather(src, (rows[:, None], cols[None, :]), check_bounds=True, padding_value=0)
            ct.scatter(dst, (rows[:, None], cols[None, :]), tile, check_bounds=True)


@tilecheck.case(grid=(8, 1, 1), args=many_experts)
@ct.kernel
def expert_scatter_persistent_unmasked(m_sizes, src, dst, NUM_EXPERTS: ConstInt, SLOTS: ConstInt,
                                       GRID: ConstInt, BM: ConstInt, BN: ConstInt, N: ConstInt,
                                       TOTAL: ConstInt):
    # racy: an expert's last m-tile keeps its rows past the expert's count, the next expert's first
    for slot in range(SLOTS):
        size, m_local, n_local, m_offset = _expert_tiles(m_sizes, ct.bid(0) + slot * GRID, NUM_EXPERTS, BM,
                                                         ct.cdiv(N, BN))
        if size > 0:
            rows = m_offset + m_local * BM + ct.arange(BM, dtype=ct.int32)
            cols = n_local * BN + ct.arange(BN, dtype=ct.int32)
            tile = ct.gather(src, (rows[:, None], cols[None, :]), check_bounds=True, padding_value=0)
            ct.scatter(dst, (rows[:, None], cols[None, :]), tile, check_bounds=True)


def _ragged(offsets=(0, 8, 8, 24, 32), blocks=3):
    """Segments of a ragged batch (rows ``offsets[q]`` .. ``offsets[q + 1]``), 4-row tiles."""
    rows = offsets[-1] + 8
    return (np.array(offsets, np.int32), np.arange(rows * 8, dtype=np.float32).reshape(rows, 8),
            np.zeros((rows, 8), np.float32), len(offsets) - 1, 4, 8)


def _ragged_schedule(offsets, x, y, Q: ConstInt, TM: ConstInt, TD: ConstInt, STRIDE: ConstInt):
    """A ragged BMM's persistent schedule (flashinfer's grouped GEMMs): the segments' tiles numbered
    one after the other by a running prefix sum, each block taking tiles b, b + STRIDE, ... of that
    numbering, in a ``while`` loop per segment, through views sliced at the segment (inlined)."""
    t = ct.bid(0)
    tiles_before = 0
    start = ct.load(offsets, index=(0,), shape=(1,)).item()
    for q in range(Q):
        stop = ct.load(offsets, index=(q + 1,), shape=(1,)).item()
        tiles = ct.cdiv(stop - start, TM)
        while t >= tiles_before and t < tiles_before + tiles:
            xs = x.slice(axis=0, start=start, stop=stop)
            ys = y.slice(axis=0, start=start, stop=stop)
            i = t - tiles_before
            ct.store(ys, index=(i, 0), tile=ct.load(xs, index=(i, 0), shape=(TM, TD), padding_mode=ZERO))
            t = t + STRIDE
        tiles_before = tiles_before + tiles
        start = stop


@tilecheck.case(grid=(3, 1, 1), args=_ragged)
@ct.kernel
def ragged_persistent(offsets, x, y, Q: ConstInt, TM: ConstInt, TD: ConstInt):
    # the cursor advances by the grid: every tile of every segment is one block's
    _ragged_schedule(offsets, x, y, Q, TM, TD, ct.num_blocks(0))


@tilecheck.case(grid=(3, 1, 1), args=_ragged)
@ct.kernel
def ragged_persistent_short_stride(offsets, x, y, Q: ConstInt, TM: ConstInt, TD: ConstInt):
    # racy: the cursor advances by num_blocks - 1, so block b + 1 revisits the tile block b takes next
    _ragged_schedule(offsets, x, y, Q, TM, TD, ct.num_blocks(0) - 1)
