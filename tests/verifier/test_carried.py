"""Loop-carried scalars followed iteration by iteration (verifier/model/carried.py), and integer scans and
reductions over a tile (symbolic/ops/control.py): verify's verdict on a launch agrees with the
exact detector's, for generated data and grids."""
import linecache

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import tilecheck
from corpus.kernels import loops as L
from tests.tiers import examples


def _verdict(report) -> str:
    return "race" if report.status == "out-of-bounds" else report.status


@settings(max_examples=examples(16), deadline=None, derandomize=True)
@given(sizes=st.lists(st.integers(-2, 4), min_size=2, max_size=5),
       kernel=st.sampled_from([L.grouped_rows_prefix_sum, L.grouped_rows_scan]))
def test_a_prefix_sum_of_group_sizes_is_decided_as_the_detector_decides_it(sizes, kernel):
    # negative sizes make a later group start inside an earlier one: a race iff some rows overlap;
    # the sum is a loop's carried value, or a scan (ct.cumsum) and a masked reduction (ct.sum)
    n = len(sizes)
    args = (np.array(sizes, np.int32), np.arange(16 * 8, dtype=np.float32).reshape(16, 8),
            np.zeros((16, 8), np.float32), 8, 8)
    exact = tilecheck.detect(kernel, args, (n, 1, 1))
    report = tilecheck.verify(kernel, args, (n, 1, 1))
    assert _verdict(report) == _verdict(exact), (sizes, str(report), str(exact))
    if report.status == "race":  # witnessed by the launch's own data
        assert all(f.witness is None or not f.witness.contents for f in report.races)
    if min(sizes) >= 0:  # the static proof for every such content, not only this launch's
        static = tilecheck.verify(kernel, args, (n, 1, 1), data=False,
                                  assume=[tilecheck.bounded("sizes", 0, 4)])
        assert static.status == "verified", (sizes, str(static))


@settings(max_examples=examples(12), deadline=None, derandomize=True)
@given(blocks=st.integers(1, 8), tiles=st.integers(0, 40), short=st.booleans())
def test_a_while_loops_cursor_is_decided_as_the_detector_decides_it(blocks, tiles, short):
    kernel = L.persistent_while_short_stride if short else L.persistent_while
    args = (np.arange(40 * 4, dtype=np.float32), np.zeros(40 * 4, np.float32), tiles, 4)
    if short and blocks == 1:
        return  # the cursor would not advance: the launch never finishes
    exact = tilecheck.detect(kernel, args, (blocks, 1, 1))
    report = tilecheck.verify(kernel, args, (blocks, 1, 1), data=False)  # the static check alone
    assert _verdict(report) == _verdict(exact), (blocks, tiles, short, str(report))


def test_a_prefix_sum_past_the_unrolled_iterations_is_not_a_proof():
    # 70 groups: the loop of the last blocks runs past the 64 iterations the facts cover, so their
    # start is any value there; the verdict may be unknown, never a wrong one
    sizes = np.ones(70, np.int32)
    sizes[66] = -1  # group 67 starts inside group 66
    args = (sizes, np.arange(80 * 8, dtype=np.float32).reshape(80, 8), np.zeros((80, 8), np.float32), 8, 8)
    report = tilecheck.verify(L.grouped_rows_prefix_sum, args, (70, 1, 1), data=False)
    assert report.status in ("race", "unknown"), str(report)
    assert tilecheck.detect(L.grouped_rows_prefix_sum, args, (70, 1, 1)).status == "race"


def test_carried_facts_are_unrolled_for_the_trip_count_the_level_fixes():
    from tilecheck.ir.cutile import module_for
    from tilecheck.verifier.model import carried
    from tilecheck.verifier.solver import smt
    from tilecheck.verifier.model.engine import execute

    case = tilecheck.cases_of(L.grouped_rows_prefix_sum)[0]
    module, _ = module_for(L.grouped_rows_prefix_sum, case.make_args())
    fp = execute(module)
    (prefix,) = [c for c in fp.carried.values() if c.init is not None]
    ctx = [smt.IntVal(3), smt.IntVal(0), smt.IntVal(0)]  # block 3 sums groups 0, 1, 2
    facts = prefix.unrolled(ctx, [], carried.MAX_FACTS)
    assert len(facts) == 1 + 3  # the first value, then one step per iteration
    # a bound the level does not fix (here the block id itself) is unrolled up to the cap
    facts = prefix.unrolled([smt.Int("bid0_b1"), smt.IntVal(0), smt.IntVal(0)], [], carried.MAX_FACTS)
    assert len(facts) == 1 + carried.MAX_ITERATIONS


def test_carried_values_that_read_one_another_are_computed_once_per_iteration(monkeypatch):
    # expert_walk's loop carries a first row, a tile count and a match, each step reading the others;
    # 54 experts of -40M rows make the first row wrap at the 55th: the given case computes the carried
    # values iteration by iteration, each iteration once (about 6 terms per iteration; recomputing
    # each read from the first iteration took ~3,100 and ran out of this bound)
    from tilecheck.verifier.concrete import given_case

    monkeypatch.setattr(given_case, "EVALUATION_STEPS", 1000)
    sizes = np.full(60, -40_000_000, np.int32)
    sizes[-1] = 2
    args = (sizes, np.zeros((16, 8), np.float32), np.zeros((16, 8), np.float32), 60, 2, 8)
    report = tilecheck.verify(L.expert_walk, args, (4, 1, 1))
    (overflow,) = [f for f in report.findings if f.kind == "overflow"]
    assert "computes -2160000000" in overflow.message and "first_row = first_row + m" in linecache.getline(overflow.loc.file, overflow.loc.line), str(report)


def test_an_overflow_in_a_loop_carried_address_is_checked():
    # the first row is summed by the loop and only then feeds the scatter's rows: the slice of ops
    # feeding an address follows a loop's results back to the body's continue (and an if's yields)
    sizes = np.array([-2**28] * 11 + [2], np.int32)
    args = (sizes, np.zeros((16, 8), np.float32), np.zeros((16, 8), np.float32), 12, 2, 8)
    report = tilecheck.verify(L.expert_walk, args, (4, 1, 1))
    assert report.status != "verified" and any(f.kind == "overflow" for f in report.findings), str(report)
    clean = tilecheck.verify(L.expert_walk, L._experts(), (16, 1, 1))
    assert clean.status == "verified", str(clean)


def test_an_evaluation_past_its_work_bound_is_unknown_not_verified(monkeypatch):
    # the same wrapping walk with a bound its evaluation cannot meet: the overflow claim stays
    # undecided (an unknown naming an untracked value), never a proof
    from tilecheck.verifier.concrete import given_case

    monkeypatch.setattr(given_case, "EVALUATION_STEPS", 10)
    sizes = np.full(60, -40_000_000, np.int32)
    sizes[-1] = 2
    args = (sizes, np.zeros((16, 8), np.float32), np.zeros((16, 8), np.float32), 60, 2, 8)
    report = tilecheck.verify(L.expert_walk, args, (4, 1, 1), data=False)
    assert report.status == "unknown", str(report)
    assert any("integer overflow" in r and "does not track" in r for r in report.reasons), report.reasons


def test_past_the_unrolled_iterations_the_pinned_step_hands_over_to_the_detector(monkeypatch):
    # race-free sizes, 70 groups: with the sizes pinned, a carried start past iteration 64 is still
    # any value, so the solver's witnesses do not reproduce. The pinned step excludes them for the
    # data step's rounds only (8 rounds of 5-15M-unit queries on TileGym's 128-expert grouped GEMM
    # pinned nothing down), then the exact detector decides the launch
    from tilecheck.verifier.data import data_step
    from tilecheck.verifier.obligations import witnesses
    from tilecheck.verifier.obligations.checker import Checker

    asked = []
    real_pinned, real_solve = data_step.proved_pinned, Checker.solve
    inside = []

    def pinned(*a, **k):
        inside.append(True)
        try:
            return real_pinned(*a, **k)
        finally:
            inside.pop()

    def solve(self, constraints, what, *a, **k):
        if inside:
            asked.append(what)
        return real_solve(self, constraints, what, *a, **k)

    monkeypatch.setattr(data_step, "proved_pinned", pinned)
    monkeypatch.setattr(Checker, "solve", solve)
    sizes = np.ones(70, np.int32)
    args = (sizes, np.arange(80 * 8, dtype=np.float32).reshape(80, 8), np.zeros((80, 8), np.float32), 8, 8)
    report = tilecheck.verify(L.grouped_rows_prefix_sum, args, (70, 1, 1))
    assert report.status == "verified" and report.level == "this launch's data", str(report)
    assert asked
    assert sum("after excluding a witness" in w for w in asked) <= witnesses.DATA_CONFIRM_ROUNDS, asked


def test_the_pinned_runs_overflow_claims_keep_the_data_steps_budget(monkeypatch):
    # the data step's pinned run asks an overflow claim on contents within the level's budget for
    # such a query, not its own 20M: past 2M units one round of TileGym's 128-expert grouped GEMM ran
    # 580 s in Z3's Diophantine solver, which does not charge its big-number work to the limit
    from tilecheck.verifier.concrete import given_case
    from tilecheck.verifier.data import data_step
    from tilecheck.verifier.solver import smt

    monkeypatch.setattr(given_case, "EVALUATION_STEPS", 10)  # the claims stay undecided at the level
    inside, limits = {"pinned": 0, "overflow": 0}, []

    def flagged(name, real):
        def run(*a, **k):
            inside[name] += 1
            try:
                return real(*a, **k)
            finally:
                inside[name] -= 1
        return run

    check = smt.check

    def spy(constraints, rlimit=smt.DEFAULT_RLIMIT, *a, **k):
        if inside["pinned"] and inside["overflow"]:
            limits.append(rlimit)
        return check(constraints, rlimit, *a, **k)

    monkeypatch.setattr(data_step, "proved_pinned", flagged("pinned", data_step.proved_pinned))
    monkeypatch.setattr(given_case, "solve_with_given_contents",
                        flagged("overflow", given_case.solve_with_given_contents))
    monkeypatch.setattr(smt, "check", spy)
    sizes = np.full(60, -40_000_000, np.int32)
    sizes[-1] = 2
    args = (sizes, np.zeros((16, 8), np.float32), np.zeros((16, 8), np.float32), 60, 2, 8)
    report = tilecheck.verify(L.expert_walk, args, (4, 1, 1))
    assert report.level == "this launch's data", str(report)  # the pinned run did not prove it
    assert limits and max(limits) == given_case.PINNED_OVERFLOW_RLIMIT, limits



def test_overflow_claims_on_contents_that_none_wraps_are_proved_in_one_query(monkeypatch):
    # at the given case the claims that read array contents are asked first as one disjunction,
    # with what each claim's own question starts from (the given contents' ranges and small arrays):
    # no model proves them all; a claim that wraps still gets its witness, asked on its own
    from tests.verifier import launch_data_kernels as K
    from tilecheck.verifier.concrete import given_case

    one_by_one = []
    solve = given_case.solve_with_given_contents
    monkeypatch.setattr(given_case, "solve_with_given_contents",
                        lambda ch, cs, claim, *a: one_by_one.append(claim) or solve(ch, cs, claim, *a))
    x, y = np.arange(256, dtype=np.float32), np.zeros(64, np.float32)
    clean = tilecheck.verify(K.two_gathers, (np.array([0, 3, 1, 5, 2], np.int32), x, y, 4), (4, 1, 1),
                             every_shape=False)
    assert clean.status == "verified", str(clean)
    assert one_by_one == []
    wraps = tilecheck.verify(K.two_gathers, (np.array([0, 3, 2**30, 5, 2], np.int32), x, y, 4), (4, 1, 1),
                             every_shape=False)
    assert any(f.kind == "overflow" and "2147483647" in f.message for f in wraps.findings), str(wraps)
    assert one_by_one


@settings(max_examples=examples(12), deadline=None, derandomize=True)
@given(sizes=st.lists(st.integers(-3, 9), min_size=1, max_size=5), blocks=st.integers(2, 5),
       short=st.booleans())
def test_a_ragged_persistent_schedule_is_decided_as_the_detector_decides_it(sizes, blocks, short):
    # flashinfer's ragged BMM schedule: the segments' tiles numbered by a running prefix sum of the
    # offsets, taken in a while loop per segment; the listing of the store's tiles computes the
    # carried cursor and sums block by block. A negative size makes a segment overlap the one before
    kernel = L.ragged_persistent_short_stride if short else L.ragged_persistent
    offsets = np.concatenate([[8], 8 + np.cumsum(sizes)]).astype(np.int32)
    args = L._ragged(tuple(int(o) for o in offsets))
    if min(offsets) < 0 or short and blocks == 1:
        return
    exact = tilecheck.detect(kernel, args, (blocks, 1, 1))
    report = tilecheck.verify(kernel, args, (blocks, 1, 1))
    assert _verdict(report) == _verdict(exact), (sizes, blocks, short, str(report), str(exact))


def test_a_ragged_persistent_store_is_proved_by_listing_its_tiles(monkeypatch):
    # the store's tile is in a while loop inside a for loop, at offsets read from memory: with the
    # given offsets its tiles are listed block by block (carried values computed by rows.Evaluator),
    # not asked of the solver with the offsets pinned (TileGym's ragged block-scaled BMM: 4.3M units)
    listed = []
    compare = tilecheck.verifier.concrete.enumeration.compare

    def seen(x, y, grid, concrete, memory=None, cache=None):
        found = compare(x, y, grid, concrete, memory, cache)
        listed.append((x.writes and y.writes, found, sorted(memory or {})))
        return found

    monkeypatch.setattr(tilecheck.verifier.concrete.enumeration, "compare", seen)
    report = tilecheck.verify(L.ragged_persistent, L._ragged((0, 8, 8, 24, 36)), (3, 1, 1))
    assert report.status == "verified", str(report)
    # the store pair was listed with the offsets and the carried values, and found apart
    assert any(ww and found is True and "mem_offsets" in names and any(n.startswith("carried") for n in names)
               for ww, found, names in listed), listed


def test_overflow_claims_on_given_contents_are_decided_by_listing(monkeypatch):
    # the schedule's arithmetic on the offsets (a segment's size, its tile count, the running sum)
    # is checked against the given contents: listed block by block with them, not asked of the solver
    # claim by claim; contents that make it wrap are still an overflow with a witness
    from tilecheck.verifier.obligations import checker as obligations

    asked = []
    solve = obligations.Checker.solve

    def spy(self, constraints, what, locs, key=None, **kw):
        if what == "integer overflow" and self.level.grid is not None:
            asked.append(key)
        return solve(self, constraints, what, locs, key, **kw)

    monkeypatch.setattr(obligations.Checker, "solve", spy)
    # the disjunctions left undecided (as a larger kernel's are): each claim is then the listing's
    monkeypatch.setattr(obligations.Checker, "none_holds", lambda self, *a, **k: False)
    report = tilecheck.verify(L.ragged_persistent, L._ragged((0, 8, 8, 24, 36)), (3, 1, 1))
    assert report.status == "verified" and not [key for key in asked if key is not None], (str(report), asked)
    wraps = L._ragged((0, 8, 8, 24, 36))
    wraps = (np.array([0, 8, -2**31 + 4, 24, 36], np.int32), *wraps[1:])  # 8 - (-2^31 + 4) wraps
    report = tilecheck.verify(L.ragged_persistent, wraps, (3, 1, 1))
    assert any(f.kind == "overflow" for f in report.findings), str(report)
