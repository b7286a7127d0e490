"""A CPU run that cannot fit in memory is refused before it allocates anything (issue 14)."""
import time

import numpy as np
import pytest

import tilecheck
from corpus.kernels import elementwise as E
from tilecheck.interp import budget

ARGS = (np.ones(64, np.float32), np.ones(64, np.float32), np.zeros(64, np.float32), 16)


def test_launch_refuses_a_grid_that_does_not_fit_with_a_clear_error():
    start = time.perf_counter()
    with pytest.raises(budget.MemoryBudgetError, match=r"refusing to run vector_add on the CPU: grid "
                       r"\(2147483647, 1, 1\) \(2147483647 blocks\) needs about .* GiB of memory and .* is available"):
        tilecheck.launch((2**31 - 1,), E.vector_add, ARGS)
    assert time.perf_counter() - start < 30  # refused up front, not after allocating


def test_every_cpu_run_of_a_whole_grid_is_checked(monkeypatch):
    monkeypatch.setattr(budget, "available_bytes", lambda: 10_000)
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
