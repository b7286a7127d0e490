"""Listing a gather or scatter axis by axis (verifier/concrete/separable.py), and loops whose carried
values are computed together (rows.Evaluator._trajectories): a persistent grouped GEMM's scheduler
that walks more experts than the solver unrolls is verified on its launch's data, its unmasked twin
is a race that replays, and a property holds the axis-by-axis listing to the lane-by-lane one."""

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import tilecheck
from corpus.kernels.loops import expert_scatter_persistent as expert_scatter
from corpus.kernels.loops import expert_scatter_persistent_unmasked as expert_scatter_unmasked
from corpus.kernels.loops import many_experts
from tests.tiers import examples
from tests.verifier.generated import case_values, load_kernel
from tilecheck.verifier.concrete import enumeration, separable
from tilecheck.verifier.model import carried
from tilecheck.verifier.model.engine import execute
from tilecheck.verifier.solver import smt


def test_a_scheduler_walking_more_experts_than_are_unrolled_is_verified_on_its_data():
    # 70 experts: the solver's facts stop at 64 iterations (carried.MAX_ITERATIONS); the values
    # past them are computed from the given sizes, and the scatter is listed axis by axis
    assert carried.MAX_ITERATIONS < 70 <= carried.EVALUATED_ITERATIONS
    args, grid = many_experts(70), (8, 1, 1)
    report = tilecheck.verify(expert_scatter, args, grid, cache=False)
    assert report.status == "verified" and report.level == "this launch's data", report


def test_its_unmasked_twin_is_a_race_that_replays():
    args, grid = many_experts(70), (8, 1, 1)
    report = tilecheck.verify(expert_scatter_unmasked, args, grid, cache=False)
    assert report.status == "race", report
    assert tilecheck.replay(report.races[0]).reproduced


def test_the_carried_values_of_one_loop_are_computed_together(monkeypatch):
    # each iteration of the expert walk once for all six values: computed one by one, every value
    # asked its siblings from the first iteration again (TileGym's 128-expert walk: 40 s)
    # (and each block and slot once per level, however many listings ask for it)
    args, grid = many_experts(70), (8, 1, 1)
    steps = []
    computed = enumeration.Evaluator._computed_trajectories

    def counted(self, loop, outer, needed):
        steps.append(int(needed.max(initial=0)) * len(needed))
        return computed(self, loop, outer, needed)
    monkeypatch.setattr(enumeration.Evaluator, "_computed_trajectories", counted)
    report = tilecheck.verify(expert_scatter, args, grid, cache=False)
    assert report.status == "verified", report
    slots = args[4]
    # one loop's walk, 70 experts for every block and slot, a few times over (levels, pinned runs)
    assert steps and sum(steps) <= 4 * 70 * 8 * slots, (steps, slots)


# ---- the property: by axis, never more than lane by lane ---------------------------------------
_ROWS = ["b", "b // 2", "b % 3", "(b + s) % 4", "s", "0", "(b * 2) % 5", "3 - b % 4"]
_COLS = ["b", "b // 2", "s", "0", "(b + s) % 3", "1 - b % 2"]
_LANES = ["{t} * TM + ct.arange(TM, dtype=ct.int32)",
          "{t} * 3 + ct.arange(TM, dtype=ct.int32)",  # windows that overlap without being equal
          "({t} * TM + ct.arange(TM, dtype=ct.int32)) % 10",
          "ct.where(ct.arange(TM, dtype=ct.int32) < 3, {t} * TM + ct.arange(TM, dtype=ct.int32), 99)",
          "ct.gather(idx, {t} * TM + ct.arange(TM, dtype=ct.int32), check_bounds=True, padding_value=0)"]


@st.composite
def _scatters(draw):
    r, c = draw(st.sampled_from(_ROWS)), draw(st.sampled_from(_COLS))
    rows = draw(st.sampled_from(_LANES)).format(t=r)
    cols = draw(st.sampled_from(_LANES[:4])).format(t=c).replace("TM", "TN")
    source = ("import cuda.tile as ct\n\n\n@ct.kernel\n"
              "def k(idx, src, dst, TM: ct.Constant[int], TN: ct.Constant[int], S: ct.Constant[int]):\n"
              "    b = ct.bid(0)\n    for s in range(S):\n"
              f"        rows = {rows}\n        cols = {cols}\n"
              "        t = ct.gather(src, (rows[:, None], cols[None, :]), check_bounds=True, padding_value=0)\n"
              "        ct.scatter(dst, (rows[:, None], cols[None, :]), t, check_bounds=True)\n")
    idx = np.array(draw(st.lists(st.integers(0, 11), min_size=24, max_size=24)), np.int32)
    return source, idx, draw(st.integers(1, 5)), draw(st.sampled_from([2, 4])), draw(st.integers(1, 2))


@settings(max_examples=examples(150, fast=12), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(case=_scatters())
def test_listing_by_axis_proves_only_what_listing_every_lane_proves(case, tmp_path_factory, monkeypatch):
    source, idx, grid, tile, slots = case
    kernel = load_kernel(source, tmp_path_factory.mktemp("separable"))
    args = (idx, np.ones((12, 12), np.float32), np.zeros((12, 12), np.float32), tile, tile, slots)
    module = tilecheck.ir.from_cutile(kernel, args)
    with smt.own_context():
        fp = execute(module)
        store = next(a for a in fp.accesses if a.writes)
        concrete = case_values(fp, dict(zip(("idx", "src", "dst"), args)))
        memory = {func.name(): idx for func in fp.memory.values()}
        by_axis = separable.disjoint(store, store, (grid, 1, 1), concrete, memory, {})
        with monkeypatch.context() as m:
            m.setattr(separable, "disjoint", lambda *a, **k: None)
            every_lane = enumeration.compare(store, store, (grid, 1, 1), concrete, memory)
    event(f"by axis {by_axis}, every lane {type(every_lane).__name__}")
    assert by_axis in (True, None)
    if by_axis:
        assert every_lane is True, f"{source}\ngrid={grid} tile={tile} slots={slots} idx={idx}"


@pytest.mark.parametrize("rows, cols, expected", [
    ("b * TM", "s * TN", True),  # each block its rows: disjoint
    ("(b // 2) * TM", "s * TN", None),  # two blocks on the same rows and columns
    ("0", "b * TN", True),  # one row set, columns tiled by block
    ("0", "b * 3", None),  # columns in windows that overlap without being equal (4 wide, 3 apart)
    ("b * 3", "0", None),  # the same, on rows
])
def test_listing_by_axis_decides_disjoint_tiles_and_declines_shared_elements(rows, cols, expected, tmp_path):
    source = ("import cuda.tile as ct\n\n\n@ct.kernel\ndef k(idx, src, dst, TM: ct.Constant[int], "
              "TN: ct.Constant[int], S: ct.Constant[int]):\n    b = ct.bid(0)\n    for s in range(S):\n"
              f"        rows = {rows} + ct.arange(TM, dtype=ct.int32)\n"
              f"        cols = {cols} + ct.arange(TN, dtype=ct.int32)\n"
              "        t = ct.gather(dst, (rows[:, None], cols[None, :]), check_bounds=True, padding_value=0)\n"
              "        ct.scatter(dst, (rows[:, None], cols[None, :]), t + 1, check_bounds=True)\n")
    args = (np.zeros(4, np.int32), np.ones((16, 16), np.float32), np.zeros((16, 16), np.float32), 4, 4, 2)
    kernel = load_kernel(source, tmp_path)
    module = tilecheck.ir.from_cutile(kernel, args)
    with smt.own_context():
        fp = execute(module)
        store = next(a for a in fp.accesses if a.writes)
        concrete = case_values(fp, dict(zip(("idx", "src", "dst"), args)))
        assert separable.disjoint(store, store, (4, 1, 1), concrete, {}, {}) is expected
        # the gather of the same array, through the same map: a pair of two accesses
        load = next(a for a in fp.accesses if not a.writes and a.array == store.array)
        assert separable.disjoint(load, store, (4, 1, 1), concrete, {}, {}) is expected


@settings(max_examples=examples(200), deadline=None, derandomize=True)
@given(st.lists(st.tuples(st.integers(-5, 5), st.integers(-(1 << 40), 1 << 40), st.integers(0, 3)), min_size=1,
                max_size=30))
def test_distinct_columns_are_numpys(columns):
    from tilecheck.verifier.concrete.rows import distinct_columns

    table = np.array(columns, np.int64).T
    found, inverse = distinct_columns(table)
    expected = np.unique(table, axis=1)
    assert found.tolist() == expected.tolist()
    assert (found[:, inverse] == table).all()


@settings(max_examples=examples(12, fast=2), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(count=st.sampled_from([3, 20, 66, 90]), seed=st.integers(0, 50), grid=st.integers(2, 6),
       bn=st.sampled_from([4, 8]), masked=st.booleans())
def test_the_expert_scatter_is_decided_as_the_detector_decides_it(count, seed, grid, bn, masked):
    # the scheduler's walk past the solver's 64 unrolled iterations or not, tiles of other widths:
    # verify's verdict on the launch's data is the exact detector's, and its races replay
    args = many_experts(count, seed=seed, bn=bn, grid=grid)
    kernel = expert_scatter if masked else expert_scatter_unmasked
    report = tilecheck.verify(kernel, args, (grid, 1, 1), cache=False)
    exact = tilecheck.detect(kernel, args, (grid, 1, 1))
    event(f"verify {report.status}, detect {exact.status}")
    assert report.status in ("verified", "race", "unknown"), report
    if report.status != "unknown":
        assert report.status == exact.status, (count, seed, grid, bn, masked, str(report), str(exact))
    if report.status == "race":
        assert tilecheck.replay(report.races[0]).reproduced
