"""The launcher keeps thousands of verdicts (by signature, and by contents for launches decided on
their data): a kept verdict must not keep the launch's arrays alive (FlagGems' suite ended with
1.7 GB of its tests' tensors held by kept findings), and a verdict reused for an equal launch
replays on that launch's arrays."""
import gc
import weakref

import numpy as np
import pytest

import tilecheck as tc
from corpus.kernels import atomics, attention
from tilecheck.runtime import launcher


def _launch(kernel, args, grid):
    try:
        tc.launch(grid, kernel, args)
    except tc.TilecheckError as exc:
        return exc
    return None


def test_a_kept_race_frees_its_arrays_and_replays_on_the_next_equal_launch():
    case = tc.cases_of(attention.head_permute_swapped)[0]
    args = case.make_args()
    refs = [weakref.ref(a) for a in args if isinstance(a, np.ndarray)]
    caught = _launch(attention.head_permute_swapped, args, case.grid)
    assert isinstance(caught, tc.RaceError)
    assert caught.report.races[0].launch_case()[1] is not None  # the caller's report replays
    del caught, args
    gc.collect()
    assert refs and all(r() is None for r in refs), "a kept verdict holds the launch's arrays"

    again = case.make_args()  # the same signature: the kept verdict, bound to these arrays
    caught = _launch(attention.head_permute_swapped, again, case.grid)
    assert isinstance(caught, tc.RaceError)
    race = caught.report.races[0]
    assert race.launch_case()[1] is not None and race.launch_case()[1][0] is again[0]
    assert tc.replay(race).reproduced


def test_a_launch_verified_on_its_data_is_kept_without_its_arrays():
    x = np.ones((64, 32), np.float32)
    rows = np.arange(64, dtype=np.int32)  # distinct rows: race-free at this launch only
    out = np.zeros((64, 32), np.float32)
    refs = [weakref.ref(a) for a in (x, rows, out)]
    with pytest.warns(launcher.LaunchWarning):
        assert _launch(atomics.moe_scatter, (x, rows, out, 16, 32), (4, 1, 1)) is None
    assert launcher._ON_DATA, "the launch was decided on its data"
    del x, rows, out
    gc.collect()
    assert all(r() is None for r in refs)
