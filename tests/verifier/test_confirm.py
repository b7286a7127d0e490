"""The confirmation channel: a race at the given case is reported only once the interpreter
reproduces its witness; models from over-approximations become unknown, never race."""
import cuda.tile as ct
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tilecheck
from tests.interp import kernels as K
from tests.tiers import examples

ConstInt = ct.Constant[int]


def test_an_unreproducible_witness_is_unknown_with_the_reason():
    args = (np.arange(64, dtype=np.float32), np.zeros(64, np.float32), 8)
    report = tilecheck.verify(K.float_offset_index, args, (8, 1, 1), data=False)
    assert report.status == "unknown", str(report)
    assert any("did not reproduce" in r and "store_view_tko" in r for r in report.reasons)
    assert tilecheck.detect(K.float_offset_index, args, (8, 1, 1)).status == "verified"
    # an integer reduction over a tile is exact: no over-approximation there
    assert tilecheck.verify(K.summed_index, args, (8, 1, 1), data=False).status == "verified"


def test_an_undecided_launch_is_decided_by_the_exact_detector_on_its_data():
    args = (np.arange(64, dtype=np.float32), np.zeros(64, np.float32), 8)
    report = tilecheck.verify(K.float_offset_index, args, (8, 1, 1))
    assert (report.status, report.level) == ("verified", "this launch's data"), str(report)
    assert any("could not decide this launch" in n and "did not reproduce" in n for n in report.notes)
    assert any(a.startswith("array arguments do not alias") for a in report.assumptions)


def test_a_value_a_while_loop_carries_is_tracked():
    args = (np.arange(64, dtype=np.float32), np.zeros(64, np.float32), 8, 8)
    assert tilecheck.verify(K.while_reduced, args, (8, 1, 1)).status == "verified"
    assert tilecheck.verify(K.while_reduced, args, (9, 1, 1)).status == "race"  # block 8 wraps to tile 0


def test_xor_is_exact_on_bit_patterns():
    args = (np.arange(64, dtype=np.float32), np.zeros(64, np.float32), 3, 8)
    assert tilecheck.verify(K.xor_partner, args, (8, 1, 1)).status == "verified"
    assert tilecheck.detect(K.xor_partner, args, (8, 1, 1)).status == "verified"


def test_a_reproducible_witness_stays_a_race():
    args = (np.arange(64, dtype=np.float32), np.zeros(64, np.float32), 3, 8)
    report = tilecheck.verify(K.xor_partner_halved, args, (8, 1, 1))
    assert report.status == "race"
    (f,) = report.races
    assert tilecheck.replay(f).reproduced


def test_a_race_that_needs_other_index_contents_is_confirmed_with_the_models_contents():
    from corpus.kernels import atomics

    case = tilecheck.cases_of(atomics.moe_scatter)[0]
    args = case.make_args()  # distinct destinations: this launch is race-free...
    assert tilecheck.detect(atomics.moe_scatter, args, case.grid).status == "verified"
    report = tilecheck.verify(atomics.moe_scatter, args, case.grid, data=False)
    assert report.status == "race"  # ...but with duplicates in dest_rows it races, and the model has them


def test_witness_contents_survive_json():
    import json

    from corpus.kernels import atomics

    case = tilecheck.cases_of(atomics.moe_scatter)[0]
    report = tilecheck.verify(atomics.moe_scatter, case.make_args(), case.grid, data=False)
    witness = json.loads(report.to_json())["findings"][0]["witness"]
    assert witness["contents"] and {"array", "index", "value"} == set(witness["contents"][0])
    assert witness["contents"][0]["array"] == "dest_rows"


def test_confirming_a_witness_is_a_bounded_run():
    from tilecheck.interp import InterpreterError
    from tilecheck.interp.runs import CONFIRM_ITERATIONS, touched_by

    args = (np.array([10 * CONFIRM_ITERATIONS], np.int32), np.zeros(16, np.float32), 4)
    with pytest.raises(InterpreterError, match="loop iterations"):
        touched_by(K.counted_writes, args, (2, 1, 1), [(0, 0, 0), (1, 0, 0)], "y", (0,))
    # the verdict on a launch whose count is small is unaffected
    args = (np.array([3], np.int32), np.zeros(16, np.float32), 4)
    assert tilecheck.verify(K.counted_writes, args, (2, 1, 1)).status == "race"


def test_a_confirmation_run_stops_once_its_blocks_have_shown_the_witness():
    """Each block stops as soon as it has made its side's touch: what it does afterwards cannot undo
    the race, so a loop that runs on past the run's bound after the racing store no longer keeps a
    genuine witness from being confirmed (the whole run raises, see above)."""
    from tilecheck.interp.runs import CONFIRM_ITERATIONS, reproduced

    few = (np.array([3], np.int32), np.zeros(16, np.float32), 4)
    report = tilecheck.verify(K.counted_writes, few, (2, 1, 1))
    witness = report.races[0].witness
    assert {tuple(witness.first.block), tuple(witness.second.block)} == {(0, 0, 0), (1, 0, 0)}
    many = (np.array([10 * CONFIRM_ITERATIONS], np.int32), np.zeros(16, np.float32), 4)
    assert reproduced(K.counted_writes, many, (2, 1, 1), witness)
    # a run where the blocks never touch the element still says no
    none = (np.array([0], np.int32), np.zeros(16, np.float32), 4)
    assert not reproduced(K.counted_writes, none, (2, 1, 1), witness)


def test_the_exact_fallback_is_bounded_by_the_work_of_the_launch(monkeypatch):
    import tilecheck.verifier.data.data_step as data_step

    args = (np.arange(64, dtype=np.float32), np.zeros(64, np.float32), 8)
    exact = tilecheck.detect(K.float_offset_index, args, (8, 1, 1), max_elements=100)
    assert exact.status == "unknown" and "more than 100 array elements moved" in exact.reasons[0]
    monkeypatch.setattr(data_step, "DATA_DETECT_ELEMENTS", 100)  # each block moves 2 x 8 elements
    report = tilecheck.verify(K.float_offset_index, args, (8, 1, 1))
    assert report.status == "unknown"
    assert any("moves more than 100 array elements" in r and "tilecheck.detect" in r for r in report.reasons)
    monkeypatch.setattr(data_step, "DATA_DETECT_ELEMENTS", 10**9)
    monkeypatch.setattr(data_step, "DATA_DETECT_STEPS", 10)  # and by its steps of work
    report = tilecheck.verify(K.float_offset_index, args, (8, 1, 1))
    assert report.status == "unknown"
    assert any("needs more than 10 steps of the exact detector's work" in r for r in report.reasons), report.reasons
    monkeypatch.setattr(data_step, "DATA_DETECT_STEPS", 10**6)
    assert tilecheck.verify(K.float_offset_index, args, (8, 1, 1)).status != "unknown"


@ct.kernel
def two_float_offset_stores(x, y, z, T: ConstInt):
    # two stores whose tile index is made from float data (untracked): every model the solver gives
    # for either may fail to reproduce, and both obligations end unknown
    b = ct.bid(0)
    t = ct.load(x, index=(b,), shape=(T,))
    i = b + ct.astype(ct.sum(t) * 0.0, ct.int32)
    ct.store(y, index=(i,), tile=t)
    ct.store(z, index=(i,), tile=t)


def test_models_that_do_not_reproduce_are_bounded_per_level_not_per_obligation(monkeypatch):
    from tilecheck.verifier.obligations import confirm, witnesses

    runs = []
    real = confirm.reproduced
    monkeypatch.setattr(confirm, "reproduced", lambda *a, **k: runs.append(1) or real(*a, **k))
    args = (np.arange(64, dtype=np.float32), np.zeros(64, np.float32), np.zeros(64, np.float32), 8)
    report = tilecheck.verify(two_float_offset_stores, args, (8, 1, 1), data=False)
    assert report.status == "unknown", str(report)
    assert sum("did not reproduce" in r for r in report.reasons) == 2, report.reasons
    # one obligation spends the level's rounds; the other stops at its first model (18 runs before)
    assert len(runs) <= witnesses.CONFIRM_ROUNDS + 2, len(runs)


def test_confirmation_runs_copy_a_write_only_output_once():
    from tilecheck.interp.runs import copies
    from tilecheck.ir.cutile import module_for

    # y is only written, x only read, z both (a read-modify-write kernel)
    @ct.kernel
    def scale_into(x, y, z, T: ConstInt):
        b = ct.bid(0)
        t = ct.load(x, index=(b,), shape=(T,))
        ct.store(y, index=(b,), tile=t)
        ct.store(z, index=(b,), tile=ct.load(z, index=(b,), shape=(T,)) + t)

    args = (np.arange(64, dtype=np.float32), np.full(64, 7, np.float32), np.ones(64, np.float32), 8)
    module, _ = module_for(scale_into, args)
    scratch: dict = {}
    first = copies(module, args, only_written=True, scratch=scratch)
    second = copies(module, args, only_written=True, scratch=scratch)
    assert first[0] is args[0] and second[0] is args[0]  # read only: not copied
    assert first[1] is not args[1] and second[1] is first[1]  # write only: one array, reused
    assert not first[1].any() and (args[1] == 7).all()  # zeroed, not copied (nothing reads it)
    assert first[2] is not args[2] and second[2] is not first[2]  # read and written: a fresh copy each run
    assert np.array_equal(second[2], args[2])
    # without a scratch dictionary every written array is copied anew
    assert copies(module, args, only_written=True)[1] is not first[1]


def test_a_run_copies_only_the_arrays_that_share_memory_with_a_written_one():
    from tilecheck.interp.runs import copies
    from tilecheck.ir.cutile import module_for

    @ct.kernel
    def read_two_update_one(x, w, z, T: ConstInt):
        b = ct.bid(0)
        t = ct.load(x, index=(b,), shape=(T,)) + ct.load(w, index=(b,), shape=(T,))
        ct.store(z, index=(b,), tile=ct.load(z, index=(b,), shape=(T,)) + t)

    buffer = np.arange(96, dtype=np.float32)
    x, z = buffer[:64], buffer[32:96]  # an in-place launch: the output is a view of an input
    w = np.ones(64, np.float32)  # read only, sharing memory with nothing: never copied
    args = (x, w, z, 8)
    module, _ = module_for(read_two_update_one, args)
    run_x, run_w, run_z, _ = copies(module, args, only_written=True)
    assert run_w is w
    assert not np.may_share_memory(run_x, buffer) and not np.may_share_memory(run_z, buffer)
    assert np.may_share_memory(run_x, run_z)  # copied together: still one buffer
    run_z[0] = -1
    assert run_x[32] == -1 and buffer[32] == 32  # the copies alias as the originals do; those are untouched


@settings(max_examples=examples(300, fast=60), deadline=None, derandomize=True)
@given(data=st.data())
def test_the_arrays_a_run_copies_are_closed_under_sharing_memory(data):
    from tilecheck.interp.runs import _overlap, _sharing_with_written

    buffers = [np.zeros(32, np.float32) for _ in range(data.draw(st.integers(1, 3)))]
    leaves, written = [], []
    for _ in range(data.draw(st.integers(1, 6))):
        buffer = data.draw(st.sampled_from(buffers))
        lo = data.draw(st.integers(0, 31))
        hi = data.draw(st.integers(lo + 1, 32))
        step = data.draw(st.sampled_from([1, 2]))
        leaves.append(buffer[lo:hi:step])
        written.append(data.draw(st.booleans()))
    copied = _sharing_with_written(leaves, written)
    assert {i for i, w in enumerate(written) if w} <= copied
    # what a run leaves uncopied shares memory with nothing it copies (else the run's writes would
    # not show through it, or would change the caller's array)
    assert not any(_overlap(leaves[i], leaves[j]) for i in copied for j in range(len(leaves)) if j not in copied)


def test_a_confirmation_run_lets_go_of_its_copies_when_it_ends(monkeypatch):
    # a run object can outlive its call (a compile's frames may hold it in a cycle until a
    # collection): the copies of the written arrays must go when the run ends, not then
    import gc
    import weakref

    from tilecheck.interp import runs as R

    kept, made = [], []
    init, copies = R._BlockRun.__init__, R.copies

    def keep(self, *a, **k):
        init(self, *a, **k)
        kept.append(self)  # as a reference cycle would

    def spy(*a, **k):
        out = copies(*a, **k)
        made.extend(weakref.ref(x) for x in out if isinstance(x, np.ndarray))
        return out
    monkeypatch.setattr(R._BlockRun, "__init__", keep)
    monkeypatch.setattr(R, "copies", spy)
    x, y = np.arange(32, dtype=np.float32), np.zeros(32, np.float32)
    gc.disable()
    try:
        touched = R.touched_by(K.same_tile_same_values, (x, y, 16), (2, 1, 1), [(0, 0, 0), (1, 0, 0)], "y", (0,))
        assert set(touched) == {(0, 0, 0), (1, 0, 0)}
        assert kept and made
        assert all(ref() is None for ref in made if ref() is not x)  # the copy of y is gone
    finally:
        gc.enable()


@ct.kernel
def counted_then_write(counts, y, z, T: ConstInt):
    # every block writes z[0] counts[0] times, then y[0]: the race on y shows only after the loop
    for i in range(ct.load(counts, index=(0,), shape=(1,)).item()):
        ct.store(z, index=(0,), tile=ct.full((T,), 1.0, ct.float32))
    ct.store(y, index=(0,), tile=ct.full((T,), 2.0, ct.float32))


def test_a_witness_with_the_solvers_contents_gets_a_shorter_run():
    # the same run (3000 iterations a block before the racing store) confirms the race when the
    # counts are the launch's own, and is cut short when the model chose them: a model's contents
    # may make a loop run for billions of iterations, and such a witness does not decide this
    # launch's verdict
    from tilecheck.interp.runs import OTHER_CONTENTS_ITERATIONS
    from tilecheck.ir.cutile import module_for
    from tilecheck.verifier.obligations.confirm import confirmer

    small = (np.array([3], np.int32), np.zeros(16, np.float32), np.zeros(16, np.float32), 4)
    races = tilecheck.verify(counted_then_write, small, (2, 1, 1), data=False).races
    (race,) = [r for r in races if r.witness.array == "y"]
    big = (np.array([3000], np.int32), np.zeros(16, np.float32), np.zeros(16, np.float32), 4)
    assert 2 * 3000 > OTHER_CONTENTS_ITERATIONS
    module, _ = module_for(counted_then_write, big)
    assert confirmer(module, big, (2, 1, 1)).run(race.witness, {})
    module, _ = module_for(counted_then_write, small)
    assert not confirmer(module, small, (2, 1, 1)).run(race.witness, {"counts": {(0,): 3000}})
    assert confirmer(module, small, (2, 1, 1)).run(race.witness, {"counts": {(0,): 30}})


def test_a_blank_array_keeps_the_layout_of_the_one_it_stands_for():
    from tilecheck.interp.memory import blank_with_layout

    base = np.arange(4 * 6 * 5, dtype=np.float16).reshape(4, 6, 5)
    assert blank_with_layout(base[:0]).shape == (0, 6, 5)
    for a in (base, base[:, ::2, 1:], base[::-1, :, ::-2], base.transpose(2, 0, 1)):
        blank = blank_with_layout(a)
        assert blank.shape == a.shape and blank.strides == a.strides and blank.dtype == a.dtype
        assert not blank.any() and not np.shares_memory(blank, base)
        blank[...] = a  # every element its own place in the new buffer
        assert np.array_equal(blank, a)


@settings(max_examples=examples(300, fast=50), deadline=None, derandomize=True)
@given(data=st.data())
def test_windows_read_and_write_as_copies_do(data):
    """A run's lazy copies (pages copied in where first touched) against eager ones: the same
    values read through every view after any writes, overlapping views included; the caller's
    memory is untouched."""
    from tilecheck.interp.memory import (ArrayMemory, WINDOW_PAGE, _flat_view, copies_keeping_overlaps,
                                         windows_keeping_overlaps)

    size = data.draw(st.sampled_from([64, WINDOW_PAGE // 4 + 3, 3 * WINDOW_PAGE // 4]))
    buffers = [np.arange(size, dtype=np.float32) for _ in range(data.draw(st.integers(1, 2)))]
    originals = [b.copy() for b in buffers]
    leaves = []
    for _ in range(data.draw(st.integers(1, 4))):
        buffer = data.draw(st.sampled_from(buffers))
        lo = data.draw(st.integers(0, size - 1))
        leaves.append(buffer[lo:data.draw(st.integers(lo + 1, size)):data.draw(st.sampled_from([1, 2, 3]))])
    eager = copies_keeping_overlaps(leaves)
    lazy, windows = windows_keeping_overlaps(leaves)

    def memory(a, window):
        flat, strides = _flat_view("a", a)
        mem = ArrayMemory("a", a, flat, a.shape, strides)
        if window is not None:
            mem.in_window(window)
        return mem

    pairs = [(memory(e, None), memory(z, windows[id(z)])) for e, z in zip(eager, lazy)]
    for step in range(data.draw(st.integers(1, 12))):
        e, z = data.draw(st.sampled_from(pairs))
        n = len(e.flat)
        if data.draw(st.booleans()):  # a run of elements (a contiguous tile)
            first = data.draw(st.integers(0, n - 1))
            stop = data.draw(st.integers(first + 1, n))
            z.touch(first, stop)
            key = slice(first, stop)
        else:  # a gather or scatter
            key = np.array(data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=8)), np.int64)
            z.touch(key)
        if data.draw(st.booleans()):
            e.flat[key] = z.flat[key] = np.float32(-step - 1)
        else:
            assert np.array_equal(e.flat[key], z.flat[key])
    for e, z in pairs:  # every element, read through the window as a run does
        z.touch(0, len(z.flat))
        assert np.array_equal(e.flat, z.flat)
    assert all(np.array_equal(b, o) for b, o in zip(buffers, originals))


def test_a_confirmation_in_a_large_in_place_array_copies_the_pages_its_blocks_touch(monkeypatch):
    from corpus.kernels import inplace
    from tilecheck.interp import memory

    made = []
    init = memory.Window.__init__

    def spy(self, lo, hi):
        init(self, lo, hi)
        made.append(self)
    monkeypatch.setattr(memory.Window, "__init__", spy)
    x = np.ones(1 << 24, np.float32)  # 64 MB, written in place: every array of the run shares it
    report = tilecheck.verify(inplace.inplace_halo, (x, 128), (8, 1, 1), cache=False)
    assert report.status == "race" and made
    copied = sum(int(w.loaded.sum()) for w in made) * memory.WINDOW_PAGE
    assert copied <= 4 * memory.WINDOW_PAGE < x.nbytes // 100, copied
    assert (x == 1).all()
