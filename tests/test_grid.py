"""The one grid validator (tilecheck.grid) and every entry point that goes through it."""
import cuda.tile as ct
import numpy as np
import pytest

import tilecheck
from corpus.kernels import elementwise as E
from tilecheck.grid import GridError, normalize_grid, parse_grid

ARGS = (np.ones(64, np.float32), np.ones(64, np.float32), np.zeros(64, np.float32), 16)


@pytest.mark.parametrize("grid, expected", [
    (4, (4, 1, 1)), ((4,), (4, 1, 1)), ([4, 2], (4, 2, 1)), ((2**31 - 1, 65535, 65535), (2**31 - 1, 65535, 65535)),
    ((np.int64(3), np.int32(2)), (3, 2, 1)),
])
def test_valid_grids(grid, expected):
    assert normalize_grid(grid) == expected
    assert all(type(d) is int for d in normalize_grid(grid))


@pytest.mark.parametrize("grid, message", [
    (True, "an int or a tuple"), ((True,), "made of ints; grid x is True"), ((8.0,), "grid x is 8.0 \\(float\\)"),
    ((4, 2.5), "grid y is 2.5"), ("8", "an int or a tuple"), (None, "an int or a tuple"), ((), "1 to 3 dimensions"),
    ((1, 1, 1, 1), "1 to 3 dimensions, got 4"), ((0,), "positive; grid x is 0"), ((4, -1), "grid y is -1"),
    ((2**31, 1, 1), "grid x is 2147483648, above CUDA's limit of 2147483647"),
    ((1, 65536), "grid y is 65536, above CUDA's limit of 65535"), ((1, 1, 70000), "grid z is 70000"),
    ((np.bool_(True),), "made of ints"), (np.array([4]), "an int or a tuple"),
])
def test_invalid_grids(grid, message):
    with pytest.raises(GridError, match=message):
        normalize_grid(grid)


def test_parse_grid():
    assert parse_grid("8,2") == (8, 2, 1)
    assert parse_grid(" 8 , 1 , 1 ") == (8, 1, 1)
    for bad, message in [("abc", "comma-separated positive integers"), ("8.0", "comma-separated"), ("", "comma"),
                         ("1,2,3,4", "1 to 3 dimensions"), ("0", "positive"), ("2147483648", "above CUDA's limit")]:
        with pytest.raises(GridError, match=message):
            parse_grid(bad)


@pytest.mark.parametrize("grid", [(2**31, 1, 1), (8.0,), True, (0, 1)])
def test_every_entry_point_refuses_the_same_grids(grid):
    module = tilecheck.ir.from_cutile(E.vector_add, ARGS)
    calls = [lambda: tilecheck.verify(E.vector_add, ARGS, grid),
             lambda: tilecheck.verify(module, None, grid),
             lambda: tilecheck.launch(grid, E.vector_add, ARGS),
             lambda: tilecheck.run_repeated(E.vector_add, ARGS, grid, runs=2),
             lambda: tilecheck.device_op(grid, E.vector_add, ARGS),
             lambda: tilecheck.detect(E.vector_add, ARGS, grid)]
    for call in calls:
        with pytest.raises(GridError, match="grid"):
            call()


@tilecheck.case(grid=(8.0,), args=lambda: ARGS)
@tilecheck.case(grid=[4, 1], args=lambda: ARGS)
@ct.kernel
def _two_cases(a, b, c, TILE: ct.Constant[int]):
    ct.store(c, index=(ct.bid(0),), tile=ct.load(a, index=(ct.bid(0),), shape=(TILE,)))


def test_a_case_with_a_bad_grid_fails_where_it_is_used_not_on_import():
    bad, good = tilecheck.cases_of(_two_cases)
    assert tilecheck.verify(_two_cases, good.make_args(), good.grid).status == "verified"
    with pytest.raises(GridError, match="8.0"):
        tilecheck.verify(_two_cases, bad.make_args(), bad.grid)
