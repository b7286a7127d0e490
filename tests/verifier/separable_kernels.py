"""Kernels for the tests of listing by axis (``verifier/concrete/separable.py``) and of loops whose
carried values are computed together (``rows.Evaluator._trajectories``): a grouped GEMM's tile
scheduler, small (cuTile needs kernels in a file)."""
import cuda.tile as ct

ConstInt = ct.Constant[int]


@ct.kernel
def expert_scatter(m_sizes, src, dst, NUM_EXPERTS: ConstInt, SLOTS: ConstInt, GRID: ConstInt,
                   BM: ConstInt, BN: ConstInt, N: ConstInt, TOTAL: ConstInt):
    # TileGym's persistent grouped GEMM, its scheduler alone: each slot's tile number is found by
    # walking the experts (prefix sums of their row counts, loop-carried), then the tile's rows of
    # that expert are written, columns [n * BN, (n + 1) * BN)
    b = ct.bid(0)
    n_tiles = ct.cdiv(N, BN)
    for slot in range(SLOTS):
        t = b + slot * GRID
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
        if size > 0:
            local = m_local * BM + ct.arange(BM, dtype=ct.int32)
            rows = ct.where(local < size, m_offset + local, TOTAL)
            cols = n_local * BN + ct.arange(BN, dtype=ct.int32)
            tile = ct.gather(src, (rows[:, None], cols[None, :]), check_bounds=True, padding_value=0)
            ct.scatter(dst, (rows[:, None], cols[None, :]), tile, check_bounds=True)


@ct.kernel
def expert_scatter_unmasked(m_sizes, src, dst, NUM_EXPERTS: ConstInt, SLOTS: ConstInt, GRID: ConstInt,
                            BM: ConstInt, BN: ConstInt, N: ConstInt, TOTAL: ConstInt):
    # the same, with the rows past an expert's count not masked: a tile's last rows are the next
    # expert's first, written by another block
    b = ct.bid(0)
    n_tiles = ct.cdiv(N, BN)
    for slot in range(SLOTS):
        t = b + slot * GRID
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
        if size > 0:
            rows = m_offset + m_local * BM + ct.arange(BM, dtype=ct.int32)
            cols = n_local * BN + ct.arange(BN, dtype=ct.int32)
            tile = ct.gather(src, (rows[:, None], cols[None, :]), check_bounds=True, padding_value=0)
            ct.scatter(dst, (rows[:, None], cols[None, :]), tile, check_bounds=True)
