"""A CPU run holds at most the blocks memory allows at once (issue 21: bounded by the arrays and one
wave, not by the grid); one that cannot fit even so is refused before it allocates anything
(issue 14)."""
import time
import tracemalloc

import cuda.tile as ct
import numpy as np
import pytest

import tilecheck
from corpus.kernels import elementwise as E
from tilecheck.interp import budget

ARGS = (np.ones(64, np.float32), np.ones(64, np.float32), np.zeros(64, np.float32), 16)


def test_launch_refuses_a_grid_that_does_not_fit_with_a_clear_error():
    start = time.perf_counter()
    with pytest.raises(budget.MemoryBudgetError, match=r"refusing to run vector_add on the CPU: grid "
                       r"\(2147483647, 1, 1\) \(2147483647 blocks\) needs about .* GiB of memory even one block at "
                       r"a time, and .* is available"):
        tilecheck.launch((2**31 - 1,), E.vector_add, ARGS)
    assert time.perf_counter() - start < 30  # refused up front, not after allocating


def test_every_cpu_run_of_a_whole_grid_is_checked(monkeypatch):
    monkeypatch.setattr(budget, "available_bytes", lambda: 1_000)  # less than the block ids of 64 blocks
    for run in (lambda: tilecheck.launch((64,), E.vector_add, ARGS),
                lambda: tilecheck.run_repeated(E.vector_add, ARGS, (64,), runs=2),
                lambda: tilecheck.detect(E.vector_add, ARGS, (64,))):
        with pytest.raises(budget.MemoryBudgetError, match="use a smaller grid"):
            run()


def test_runs_that_fit_still_run():
    c = np.zeros(64, np.float32)
    tilecheck.launch((4,), E.vector_add, (np.ones(64, np.float32), np.ones(64, np.float32), c, 16))
    assert (c == 2).all()


def test_the_estimate_grows_with_blocks_alive_and_tile_sizes():
    small = tilecheck.ir.from_cutile(E.vector_add, ARGS).entry
    large = tilecheck.ir.from_cutile(E.vector_add, ARGS[:3] + (64,)).entry
    assert budget.value_bytes_per_block(large) > budget.value_bytes_per_block(small) > 0
    assert budget.estimate_bytes(small, 10**6, 10**6) > budget.estimate_bytes(small, 10**6, 1)
    assert (budget.available_bytes() or 1) > 0


BIG = 1 << 20  # elements of each vector below: 4 MiB of float32


def _peak(run) -> int:
    tracemalloc.start()
    try:
        run()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _vectors():
    return np.arange(BIG, dtype=np.float32), np.ones(BIG, np.float32), np.zeros(BIG, np.float32)


@ct.kernel
def add_in_place(a, b, TILE: ct.Constant[int]):
    # the sum is read back (a is loaded): the detector computes it, as a launch does
    bid = ct.bid(0)
    ct.store(a, index=(bid,), tile=ct.load(a, index=(bid,), shape=(TILE,)) + ct.load(b, index=(bid,), shape=(TILE,)))


@pytest.mark.parametrize("how", ["launch", "detect", "run_repeated"])
def test_memory_is_bounded_by_the_arrays_and_one_wave_not_by_the_grid(monkeypatch, how):
    a, b, c = _vectors()
    grid = (BIG // 128,)  # 8192 blocks
    runs = {"launch": lambda: tilecheck.launch(grid, E.vector_add, (a, b, c, 128)),
            # (vector_add's sum decides nothing, and the detector does not compute it)
            "detect": lambda: tilecheck.detect(add_in_place, (a, b, 128), grid),
            "run_repeated": lambda: tilecheck.run_repeated(E.vector_add, (a, b, c, 128), grid, runs=1, seed=3)}
    runs[how]()  # once untraced: what the first run allocates for good (compiled kernel, caches)
    peaks = {}
    for wave_bytes in (1 << 30, 1 << 18):
        monkeypatch.setattr(budget, "WAVE_BYTES", wave_bytes)
        peaks[wave_bytes] = _peak(runs[how])
    # every block alive at once holds the tile values of the whole grid (about 5 MiB here); a
    # 256 KiB wave, a small part of that: what remains is the arrays (the detector's copies and
    # per-element summaries; the caller's arrays are allocated before tracing starts)
    assert peaks[1 << 30] - peaks[1 << 18] > 2 << 20, peaks
    assert peaks[1 << 18] < 3 * 3 * a.nbytes, peaks


def test_waves_bounded_by_memory_give_the_same_bits_and_verdicts(monkeypatch):
    a, b, _ = _vectors()
    grid = (BIG // 128,)
    results = []
    for wave_bytes in (1 << 30, 1 << 16):
        monkeypatch.setattr(budget, "WAVE_BYTES", wave_bytes)
        c = np.zeros(BIG, np.float32)
        tilecheck.launch(grid, E.vector_add, (a, b, c, 128))
        outcome = tilecheck.run_repeated(E.vector_add, (a, b, np.zeros(BIG, np.float32), 128), grid, runs=2,
                                         seed=5)
        results.append((c.copy(), outcome.deterministic, tilecheck.detect(E.vector_add, (a, b, c, 128),
                                                                           grid).status))
    assert (results[0][0] == a + 1).all() and (results[0][0] == results[1][0]).all()
    assert results[0][1:] == results[1][1:] == (True, "verified")


def test_read_only_arrays_take_no_summary_in_the_detectors_budget(monkeypatch):
    """The detector keeps per-element summaries only of arrays some op writes: an unsloth grouped
    GEMM whose 671M-element weight is only read was refused ("needs about 25.5 GiB"), its arrays
    taking 1.3 GB. Here the two inputs are read only: memory for the output's summaries is enough."""
    n = 1 << 16
    args = (np.ones(n, np.float32), np.ones(n, np.float32), np.zeros(n, np.float32), 1024)
    per_array = n * 40  # SUMMARY_BYTES_PER_ELEMENT
    monkeypatch.setattr(budget, "available_bytes", lambda: 2 * per_array)  # one array's, not three
    report = tilecheck.detect(E.vector_add, args, (n // 1024,))
    assert report.status == "verified"
    monkeypatch.setattr(budget, "available_bytes", lambda: per_array // 2)  # not even the output's
    with pytest.raises(budget.MemoryBudgetError, match="use a smaller grid"):
        tilecheck.detect(E.vector_add, args, (n // 1024,))
