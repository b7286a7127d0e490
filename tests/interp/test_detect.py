"""The exact detector: races at one launch, with witnesses; the corpus as its oracle."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tilecheck
from tests.interp import kernels as K


def test_race_whose_writers_store_equal_values_is_found():
    x, y = np.arange(16, dtype=np.float32), np.zeros(16, np.float32)
    runs = tilecheck.run_repeated(K.same_tile_same_values, (x, y, 16), (4, 1, 1), runs=6, progress=False)
    assert runs.deterministic  # outputs cannot show it
    report = tilecheck.detect(K.same_tile_same_values, (x, y, 16), (4, 1, 1))
    assert report.status == "race" and report.level == "this launch"
    (f,) = report.races
    assert f.kind == "write-write"
    w = f.witness
    assert (w.array, w.element, w.first.block, w.second.block) == ("y", (0,), (0, 0, 0), (1, 0, 0))
    assert f.loc.line and "ct.store(y" in str(f)


def test_arguments_are_not_modified():
    x, y = np.arange(16, dtype=np.float32), np.full(16, -1, np.float32)
    tilecheck.detect(K.same_tile_same_values, (x, y, 16), (4, 1, 1))
    assert (y == -1).all()


@pytest.mark.parametrize("dest, expect", [(np.arange(32)[::-1], "verified"),
                                          (np.r_[np.arange(31), 0], "race")])
def test_data_decides_a_scatter(dest, expect):
    x, y = np.arange(32, dtype=np.float32), np.zeros(32, np.float32)
    report = tilecheck.detect(K.scatter_rows, (x, dest.astype(np.int32), y, 8), (4, 1, 1))
    assert report.status == expect
    if expect == "race":
        (f,) = report.races
        assert f.kind == "write-write" and f.witness.element == (0,)
        assert {f.witness.first.block, f.witness.second.block} == {(0, 0, 0), (3, 0, 0)}


def test_duplicate_lanes_of_one_scatter_are_unordered_in_block():
    x, y = np.arange(32, dtype=np.float32), np.zeros(32, np.float32)
    dest = np.arange(32, dtype=np.int32)
    dest[1] = 0  # block 0 writes y[0] from two lanes
    report = tilecheck.detect(K.scatter_rows, (x, dest, y, 8), (4, 1, 1))
    assert [f.kind for f in report.races] == ["unordered-in-block"]
    w = report.races[0].witness
    assert w.first.block == w.second.block == (0, 0, 0) and {w.first.lane, w.second.lane} == {(0,), (1,)}
    # and the differential runner varies the lane order, so the outputs show it too
    runs = tilecheck.run_repeated(K.scatter_rows, (x, dest, y, 8), (4, 1, 1), runs=12, progress=False)
    assert not runs.deterministic


def test_out_of_bounds_is_reported_not_raised():
    x, y = np.arange(32, dtype=np.float32), np.zeros(32, np.float32)
    report = tilecheck.detect(K.gather_offset, (x, y, 4, 8), (4, 1, 1))
    (f,) = report.findings
    assert f.kind == "out-of-bounds" and f.witness.first.block == (3, 0, 0) and f.witness.offset == 32
    assert tilecheck.detect(K.gather_offset, (x, y, 0, 8), (4, 1, 1)).status == "verified"


@pytest.mark.parametrize("kernel, expect", [(K.locked_sum, "verified"),
                                            (K.locked_sum_write_after_release, "race"),
                                            (K.locked_sum_foreign_release, "race")])
def test_spin_locks_as_executed(kernel, expect):
    x, acc, locks = np.ones(32, np.float32), np.zeros(8, np.float32), np.zeros(1, np.int32)
    report = tilecheck.detect(kernel, (x, acc, locks, 8), (4, 1, 1))
    assert report.status == expect, str(report)
    assert any("seeded adversarial orders" in a for a in report.assumptions)
    if expect == "race":
        assert {f.witness.array for f in report.races} == {"acc"}


def test_a_grid_axis_the_kernel_ignores_is_a_race():
    x, y = np.arange(16, dtype=np.float32), np.zeros(16, np.float32)
    report = tilecheck.detect(K.gather_offset, (x, y, 0, 4), (4, 2, 1))
    (f,) = report.races
    assert f.witness.first.block == (0, 0, 0) and f.witness.second.block == (0, 1, 0)


def test_interpreter_failure_is_unknown_with_the_reason():
    x, y = np.arange(16, dtype=np.float32), np.zeros(16, np.float32)
    report = tilecheck.detect(K.same_tile_same_values, (x, y, 16), (4, 1, 1), assume=())
    assert report.status == "race"


def test_arguments_sharing_memory_race_through_it():
    from corpus.kernels import layouts

    x = np.arange(1024, dtype=np.float32)
    report = tilecheck.detect(layouts.copy_onto_itself_shifted, (x, x, 128), (8, 1, 1))
    assert report.status == "race"
    assert "shares its memory with 'dst'" in report.races[0].message
    assert (x == np.arange(1024)).all()  # run on copies that share memory as the originals do
    y = np.zeros(1024, np.float32)
    assert tilecheck.detect(layouts.copy_onto_itself_shifted, (x, y, 128), (8, 1, 1)).status == "verified"


def test_launch_runs_a_statically_racy_kernel_when_this_launch_is_race_free():
    x, y = np.arange(32, dtype=np.float32), np.zeros(32, np.float32)
    dest = np.arange(32, dtype=np.int32)[::-1].copy()
    # decided on this launch's own contents by verify's data step (a static proof with dest pinned),
    # before the exact detector would run the launch
    with pytest.warns(tilecheck.LaunchWarning, match="not at this launch: verified on its own contents"):
        tilecheck.launch((4, 1, 1), K.scatter_rows, (x, dest, y, 8))
    assert (y == x[::-1]).all()
    dest[0] = 0  # block 0 and block 3 both write y[0]
    with pytest.raises(tilecheck.RaceError, match="write-write") as info:
        tilecheck.launch((4, 1, 1), K.scatter_rows, (x, dest, y, 8))
    assert info.value.report.level == "this launch"


def _corpus_entries():
    import tomllib
    from pathlib import Path

    from tests.tiers import corpus_sample, slow_unless

    root = Path(__file__).resolve().parents[2] / "corpus"
    entries = tomllib.loads((root / "manifest.toml").read_text())["kernel"]
    sample = corpus_sample(entries)  # the fast tier's; the other entries run under --thorough
    return [pytest.param(root, e, id=f"{e['file']}::{e.get('kernel')}{'+' if e.get('assume') else ''}"
                         f"{'-any' if e.get('data') is False else ''}{e.get('case') or ''}",
                         marks=slow_unless(i in sample))
            for i, e in enumerate(entries) if e["file"].endswith(".py")]


@pytest.mark.parametrize("root, entry", _corpus_entries())
def test_corpus_launches_agree_with_their_labels(root, entry):
    """The detector as the corpus's oracle: no race at a race-free entry's launch; every racy entry's
    launch races, except where the race needs index contents this launch does not have."""
    from tilecheck.cases import cases_of
    from tilecheck.collect import load_module
    from tilecheck.requirements import parse

    kernel = getattr(load_module(root / entry["file"]), entry["kernel"])
    case = cases_of(kernel)[entry.get("case", 0)]
    report = tilecheck.detect(kernel, case.make_args(), case.grid, assume=[parse(s) for s in entry.get("assume", [])])
    if entry["expect"] == "verified":
        assert report.status == "verified", str(report)
    elif entry.get("data", True):
        assert report.failed, str(report)  # a race, or an out-of-bounds access (the corpus calls both racy)
    else:  # labelled for every index content (data = false); the launch's own data is race-free
        assert report.status == "verified"


def test_fp8_constants_decode_like_ml_dtypes():
    import ml_dtypes

    from tilecheck.ir.attrs import float_from_bits

    for name, dtype in (("f8E4M3FN", ml_dtypes.float8_e4m3fn), ("f8E5M2", ml_dtypes.float8_e5m2)):
        expected = np.arange(256, dtype=np.uint8).view(dtype).astype(np.float64)
        got = np.array([float_from_bits(name, b) for b in range(256)])
        assert np.array_equal(expected, got, equal_nan=True), name


def test_fp8_e5m2_arrays_have_a_layout_and_a_flat_view():
    import ml_dtypes

    from tilecheck.arrays import layout_of
    from tilecheck.interp.memory import copy_with_layout

    a = np.arange(12, dtype=np.float32).astype(ml_dtypes.float8_e5m2).reshape(3, 4)[:, ::2]
    assert layout_of(a).itemsize == 1
    copy = copy_with_layout(a)
    assert copy.dtype == a.dtype and copy.strides == a.strides and np.array_equal(copy.astype(np.float32),
                                                                                  a.astype(np.float32))


@pytest.mark.parametrize("kernel, expect", [(K.count_block_scoped, "race"), (K.count_device_scoped, "verified")])
def test_atomics_order_blocks_only_at_device_scope(kernel, expect):
    x, counts = np.ones(32, np.int32), np.zeros(1, np.int32)
    assert tilecheck.detect(kernel, (x, counts, 8), (4, 1, 1)).status == expect
    assert tilecheck.verify(kernel, (x, counts, 8), (4, 1, 1)).status == expect


def test_exchanges_from_several_blocks_are_order_dependent_not_races():
    x, slot = np.ones(32, np.int32), np.zeros(1, np.int32)
    for report in (tilecheck.detect(K.last_writer_wins, (x, slot, 8), (4, 1, 1)),
                   tilecheck.verify(K.last_writer_wins, (x, slot, 8), (4, 1, 1))):
        assert report.status == "verified" and [f.kind for f in report.findings] == ["order-dependent-atomic"]
        assert "which value remains" in report.findings[0].message


def test_integer_atomics_of_two_kinds_on_one_element_are_order_dependent():
    # an add and a max do not commute: found by the oracle's repeated runs (a detector miss)
    from corpus.kernels import atomics as A

    for kernel, expected in ((A.histogram_count_and_max, True), (A.histogram_atomic_int, False)):
        case = tilecheck.cases_of(kernel)[0]
        for report in (tilecheck.detect(kernel, case.make_args(), case.grid),
                       tilecheck.verify(kernel, case.make_args(), case.grid)):
            assert report.status == "verified"  # no data race: a warning, as for float atomic adds
            kinds = {f.kind for f in report.findings}
            assert ("order-dependent-atomic" in kinds) is expected, str(report)
            if expected:
                assert any("(add and max)" in f.message or "(max and add)" in f.message for f in report.findings)


def _findings(report):
    return [(f.kind, str(f.loc), tilecheck.report.describe(f.witness)) for f in report.findings]


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**16), blocks=st.lists(st.integers(0, 63), max_size=4), duplicates=st.integers(0, 3),
       limit=st.sampled_from([8, 24, 100]))
def test_in_block_hits_searched_as_blocks_finish_are_those_of_the_whole_run(seed, blocks, duplicates, limit):
    # the detector searches a finished block's full records for in-block hits and drops them once
    # DETAIL_ROWS are held, so memory stays bounded: the findings must be those of one search over
    # every record (the least block's witness per pair of ops), and the records held stay bounded
    from tilecheck.interp import recorder as R

    rng = np.random.default_rng(seed)
    dest = rng.permutation(512).astype(np.int32)
    for b in blocks:  # two lanes of block b write one element
        dest[b * 8 + rng.integers(1, 8)] = dest[b * 8]
    for _ in range(duplicates):  # a lane writes where a lane of any block does
        dest[rng.integers(512)] = dest[rng.integers(512)]
    x, y = np.arange(512, dtype=np.float32), np.zeros(512, np.float32)
    whole = tilecheck.detect(K.scatter_rows, (x, dest, y, 8), (64, 1, 1))
    held = []
    finished = R.Recorder.finished

    def spy(self, blocks):
        held.append(self.detail_rows)
        finished(self, blocks)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(R, "DETAIL_ROWS", limit)
        m.setattr(R.Recorder, "finished", spy)
        streamed = tilecheck.detect(K.scatter_rows, (x, dest, y, 8), (64, 1, 1))
    assert _findings(streamed) == _findings(whole)
    assert streamed.status == whole.status
    assert held and max(held) <= limit + max(8, limit)  # one block makes 8 records of its scatter


def test_the_detectors_work_is_bounded_and_counted_the_same_every_time():
    x, y = np.arange(16, dtype=np.float32), np.zeros(16, np.float32)
    unbounded = tilecheck.detect(K.same_tile_same_values, (x, y, 16), (4, 1, 1), max_steps=10**12)
    again = tilecheck.detect(K.same_tile_same_values, (x, y, 16), (4, 1, 1), max_steps=10**12)
    assert unbounded.status == "race" and unbounded.stats["steps"] == again.stats["steps"] > 0
    bounded = tilecheck.detect(K.same_tile_same_values, (x, y, 16), (4, 1, 1), max_steps=5)
    assert bounded.status == "unknown" and not bounded.findings
    assert "stopped at its work limit before it decided this launch: 5 steps" in bounded.reasons[0]
    # the limit is on all the runs together: the second run of a racy launch gets what the first left
    just_short = tilecheck.detect(K.same_tile_same_values, (x, y, 16), (4, 1, 1),
                                  max_steps=unbounded.stats["steps"] - 1)
    assert just_short.status == "unknown"
    assert tilecheck.detect(K.same_tile_same_values, (x, y, 16), (4, 1, 1),
                            max_steps=unbounded.stats["steps"]).status == "race"


def test_a_launch_the_detector_cannot_decide_within_its_limit_is_refused_as_unverified(monkeypatch):
    x, y = np.arange(32, dtype=np.float32), np.zeros(32, np.float32)
    dest = np.arange(32, dtype=np.int32)[::-1].copy()
    dest[0] = 0  # blocks 0 and 3 both write y[0]: the detector shows it, given the work
    monkeypatch.setenv("TILECHECK_DETECT_STEPS", "3")
    with pytest.raises(tilecheck.UnverifiedError, match="work limit") as info:
        tilecheck.launch((4, 1, 1), K.scatter_rows, (x, dest, y, 8))
    assert any("the static check, over other contents: race" in n for n in info.value.report.notes)
    monkeypatch.setenv("TILECHECK_DETECT_STEPS", "0")  # no limit
    with pytest.raises(tilecheck.RaceError, match="write-write"):
        tilecheck.launch((4, 1, 1), K.scatter_rows, (x, dest, y, 8))
