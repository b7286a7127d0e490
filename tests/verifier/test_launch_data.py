"""Data contracts at a launch (issue 13 item 4): a defect that needs index contents other than the
given ones is decided on the launch's data, with the precondition that would exclude it suggested.

These are the given case's steps: the contract over the shapes, which is searched first and may
carry the given contents' facts itself (tests/verifier/test_shape_contract.py), is left out."""
import functools
from unittest import mock

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import tilecheck
from tests.tiers import examples
from tilecheck.verifier.data.launch_data import LEVEL

from . import launch_data_kernels as K

verify = functools.partial(tilecheck.verify, every_shape=False)


def _scatter(idx, kernel=K.scatter, **kw):
    x, y = np.ones(64, np.float32), np.zeros(64, np.float32)
    return verify(kernel, (x, y, np.array(idx, np.int32), 16), (len(idx), 1, 1), **kw)


def _question_limits(monkeypatch, shortcuts: bool = False) -> list[int]:
    """The work limits of the solver queries that follow, in order: with ``shortcuts`` those of the
    shortcut (tentative) queries at a level the data step follows, else all but shortcuts."""
    from tilecheck.verifier.solver import smt
    from tilecheck.verifier.obligations.checker import Checker

    inside, limits = [False], []
    check, solve = smt.check, Checker.solve

    def spy_check(constraints, rlimit=smt.DEFAULT_RLIMIT, assumptions=()):
        if inside[0] == shortcuts:
            limits.append(rlimit)
        return check(constraints, rlimit, assumptions)

    def spy_solve(self, constraints, what, locs, key=None, **kw):
        inside[0] = bool(kw.get("tentative")) and (self.data_rlimit is not None or not shortcuts)
        try:
            return solve(self, constraints, what, locs, key, **kw)
        finally:
            inside[0] = False

    monkeypatch.setattr(smt, "check", spy_check)
    monkeypatch.setattr(Checker, "solve", spy_solve)
    return limits


def test_distinct_data_is_verified_at_this_launchs_data_with_the_precondition_suggested():
    report = _scatter([3, 1, 0, 2])
    assert report.status == "verified"
    assert report.level == LEVEL
    assert any("tilecheck.distinct('idx')" in n and "this launch's data satisfies it" in n for n in report.notes)
    assert "'idx' holds no duplicate values (precondition)" in report.assumptions
    # the precondition stated: verified for every content, at the given shapes and grid
    stated = _scatter([3, 1, 0, 2], assume=[tilecheck.distinct("idx")])
    assert stated.status == "verified" and stated.level == "the given shapes and grid"


def test_duplicate_data_is_a_race_witnessed_by_the_given_contents():
    report = _scatter([3, 1, 3, 2])
    assert report.status == "race"
    w = report.races[0].witness
    assert not w.contents  # no other contents needed: this launch races
    assert {w.first.block[0], w.second.block[0]} == {0, 2}
    assert tilecheck.replay(report.races[0]).reproduced


def test_data_false_keeps_the_race_for_other_contents():
    report = _scatter([3, 1, 0, 2], data=False)
    assert report.status == "race"
    assert report.races[0].witness.contents


def test_padding_entries_give_distinct_below():
    x, y = np.ones(64, np.float32), np.zeros(64, np.float32)
    idx = np.array([2, 4, 0, 4], np.int32)  # 4 is padding (N = 4)
    report = verify(K.scatter_padded, (x, y, idx, 4, 16), (4, 1, 1))
    assert report.status == "verified" and report.level == LEVEL
    assert any("tilecheck.distinct('idx', below=4)" in n for n in report.notes), report.notes


def test_no_candidate_precondition_falls_back_to_the_given_contents_then_the_exact_detector():
    # idx // 2 must be distinct: no stated fact the data satisfies says so; the static check with
    # idx held at its contents decides (a small array), else the detector (past 256 elements)
    safe = _scatter([0, 2, 4, 6], kernel=K.scatter_halved)
    assert safe.status == "verified" and safe.level == LEVEL
    assert any("with the given contents of 'idx' it proves this launch" in n for n in safe.notes)
    racy = _scatter([0, 1, 4, 6], kernel=K.scatter_halved)
    assert racy.status == "race"
    large = np.arange(300, dtype=np.int32) * 2  # only the first 4 entries are read
    x, y = np.ones(64, np.float32), np.zeros(64, np.float32)
    report = verify(K.scatter_halved, (x, y, large, 16), (4, 1, 1))
    assert report.status == "verified" and report.level == LEVEL
    assert any("decided by tilecheck.detect" in n for n in report.notes), report.notes


def test_a_suggested_range_is_widened_to_an_index_range_of_the_arrays():
    """The data's own range of targets is narrow; the suggestion is the logits' column range with
    the ignore_index kept as a marker, the contract a caller states."""
    from corpus.kernels import norms

    case = tilecheck.cases_of(norms.cross_entropy_ignore_index)[0]
    report = verify(norms.cross_entropy_ignore_index, case.make_args(), case.grid)
    assert report.status == "verified" and report.level == LEVEL
    assert any("an out-of-bounds on 'logits'" in n and "tilecheck.bounded('target', 0, 63, also=(-100,))" in n
               for n in report.notes), report.notes


def test_the_static_check_with_the_given_index_contents_decides_before_the_detector(monkeypatch):
    import tilecheck.verifier.data.data_step as data_step

    def no_detector(*a, **k):
        raise AssertionError("the pinned static check should have decided this launch")

    monkeypatch.setattr(data_step, "detect_if_small", no_detector)
    x, y = np.arange(64, dtype=np.float32), np.zeros(128, np.float32)
    # sums 0, 1, 6, 7: distinct, though idx repeats 0 and is not sorted (no candidate fact holds)
    args = (np.array([0, 0, 1, 5, 2], np.int32), x, y, 8)
    report = verify(K.pair_sum_rows, args, (4, 1, 1))
    assert (report.status, report.level) == ("verified", LEVEL), str(report)
    assert any("with the given contents of 'idx' it proves this launch" in n for n in report.notes)
    assert tilecheck.detect(K.pair_sum_rows, args, (4, 1, 1)).status == "verified"
    # the same with two equal sums: a race witnessed by the data itself
    args = (np.array([0, 0, 1, 5, 1], np.int32), x, y, 8)
    monkeypatch.undo()
    report = verify(K.pair_sum_rows, args, (4, 1, 1))
    assert report.status == "race"


def test_a_content_query_the_given_contents_settle_is_not_asked_with_its_whole_budget(monkeypatch):
    """At the given case, with the data step to follow, a query about array contents is asked
    within ``PROBE_RLIMIT`` first; past it, the given contents are tried, and when they prove it the
    query stays undecided for other contents (the data step decides the launch) instead of running
    on to its whole budget. A race in the given data is still found."""
    from tilecheck.verifier.concrete import given_case
    from tilecheck.verifier.data import data_step

    monkeypatch.setattr(given_case, "PROBE_RLIMIT", 1)  # every probe undecided
    limits = _question_limits(monkeypatch)
    answers = []
    probed = given_case.probed
    monkeypatch.setattr(given_case, "probed", lambda *a, **kw: answers.append(probed(*a, **kw)) or answers[-1])
    x, y = np.arange(64, dtype=np.float32), np.zeros(128, np.float32)
    args = (np.array([0, 0, 1, 5, 2], np.int32), x, y, 8)  # sums 0, 1, 6, 7: distinct
    report = verify(K.pair_sum_rows, args, (4, 1, 1))
    assert (report.status, report.level) == ("verified", LEVEL), str(report)
    assert any("it holds for the given ones" in n for n in report.notes)
    probes = [i for i, r in enumerate(limits) if r == 1]
    # each is followed by the pinned question: its query's budget, or more from the level's allowance
    # (a pair enumeration may list with the given contents: first within LISTED_AFTER_RLIMIT)
    assert probes and all(data_step.DATA_STEP_RLIMIT <= limits[i + 1] <= given_case.PINNED_RLIMIT
                          or limits[i + 1] == given_case.LISTED_AFTER_RLIMIT for i in probes)
    assert answers and None not in answers  # and never the whole query after it
    # two equal sums: a race in the data, witnessed by the given contents
    args = (np.array([0, 0, 1, 5, 1], np.int32), x, y, 8)
    report = verify(K.pair_sum_rows, args, (4, 1, 1))
    assert report.status == "race", str(report)
    race = report.races[0]
    assert not race.witness.contents and tilecheck.replay(race).reproduced


def test_the_pinned_run_does_not_ask_again_what_a_probe_proved_pinned(monkeypatch):
    """A probe that proved its obligation with the small index arrays at their given contents
    records it (``LevelResult.proved_pinned``); the data step's pinned run of the same level asks
    only the others."""
    from tilecheck.verifier.concrete import given_case
    from tilecheck.verifier.obligations.checker import Checker

    monkeypatch.setattr(given_case, "PROBE_RLIMIT", 1)  # every probe undecided: each tries the pins
    probed, asked_pinned = set(), []
    solve = Checker.solve

    def spy(self, constraints, what, locs, key=None, *a, **kw):
        queries = self.result.queries
        result = solve(self, constraints, what, locs, key, *a, **kw)
        if self.pin_given and self.result.queries > queries:  # a solver query, not a known proof
            asked_pinned.append(key)
        else:
            probed.update(self.result.proved_pinned)
        return result

    monkeypatch.setattr(Checker, "solve", spy)
    x, y = np.arange(64, dtype=np.float32), np.zeros(128, np.float32)
    args = (np.array([0, 0, 1, 5, 2], np.int32), x, y, 8)  # sums 0, 1, 6, 7: distinct
    report = verify(K.pair_sum_rows, args, (4, 1, 1))
    assert (report.status, report.level) == ("verified", LEVEL), str(report)
    assert probed, "no probe proved anything with the given contents"
    assert not probed & set(asked_pinned), "the pinned run asked a probed obligation again"


def test_a_pinned_question_takes_the_pinned_runs_budget_from_one_allowance_per_level(monkeypatch):
    """An obligation's pinned question may run to the pinned run's budget, out of an allowance of
    one such budget (past the queries' own) for the whole level. An overflow claim keeps its own
    budget, and so does every question once an obligation is open that the pins do not settle."""
    from types import SimpleNamespace

    from tilecheck.verifier.concrete import given_case
    from tilecheck.verifier.solver import smt
    from tilecheck.verifier.contracts.levels import LevelResult

    asked = []
    monkeypatch.setattr(smt, "check", lambda terms, rlimit, tracked=(): asked.append(rlimit) or smt.Unknown("out"))
    ch = SimpleNamespace(given_pins=lambda terms: [True], level=SimpleNamespace(tracked=()),
                         bitwise_limit=lambda formula, rlimit: rlimit,
                         result=LevelResult(None), pinned_allowance=given_case.PINNED_RLIMIT,
                         pinned_may_prove=True, given_listings={})
    own = 2_000_000
    given_case.pinned(ch, [], ("across", 0, 1), own)  # no work account: charged its whole budget
    given_case.pinned(ch, [], ("inside", 0, 1, 0, "r"), own)
    given_case.pinned(ch, [], ("overflow", 3), own)
    given_case.pinned(ch, [], ("bounds", 2, None), own)
    # the first took all but ``own`` of the allowance, the second the rest, the last had none left
    assert asked == [given_case.PINNED_RLIMIT, own + own, own, own]
    # once an obligation is open that the pins do not settle, no pinned question gets more
    ch.pinned_allowance, ch.pinned_may_prove = given_case.PINNED_RLIMIT, False
    given_case.pinned(ch, [], ("across", 2, 3), own)
    assert asked[-1] == own


def test_the_data_steps_runs_only_decide_whether_the_launch_is_proved(monkeypatch):
    """The runs under a candidate precondition and with the index arrays pinned keep no witness:
    a model there ends the run as it comes (not confirmed, not made canonical, not looked for in
    the given contents), whether or not it would reproduce: either way the run is no proof."""
    from tilecheck.verifier.data import data_step
    from tilecheck.verifier.obligations.checker import Checker

    inside, polished = [False], []
    given_again = data_step.given_again

    def flagged(*a, **kw):
        inside[0] = True
        try:
            return given_again(*a, **kw)
        finally:
            inside[0] = False

    def spy(name):
        real = getattr(Checker, name)

        def wrapper(self, *a, **kw):
            if inside[0]:
                polished.append(name)
            return real(self, *a, **kw)
        return wrapper

    monkeypatch.setattr(data_step, "given_again", flagged)
    for name in ("confirmed", "canonical", "with_given_contents"):
        monkeypatch.setattr(Checker, name, spy(name))
    # idx // 2 distinct: the race for other contents remains under every candidate fact (a run
    # that finds a model), then the run with idx pinned proves the launch
    report = _scatter([0, 2, 4, 6], kernel=K.scatter_halved)
    assert report.status == "verified" and report.level == LEVEL
    assert any("with the given contents of 'idx' it proves this launch" in n for n in report.notes)
    assert not polished, polished


def test_a_model_that_does_not_reproduce_is_not_excluded_when_the_given_contents_settle_it(monkeypatch):
    """At a given case the data step follows, a model about contents that does not reproduce on the
    interpreter is answered by the pinned question: when the given contents settle the obligation,
    no other model is looked for (each a query and a run) and the data step does not ask it again."""
    from tilecheck.verifier.obligations import confirm
    from tilecheck.verifier.obligations.checker import Checker

    monkeypatch.setattr(confirm, "reproduced", lambda *a, **k: False)  # no model reproduces
    asked = []
    solve = Checker.solve

    def spy(self, constraints, what, locs, key=None, **kw):
        queries = self.result.queries
        result = solve(self, constraints, what, locs, key, **kw)
        if self.result.queries > queries:  # a solver query, not a known proof
            asked.append((what, self.pin_given))
        return result

    monkeypatch.setattr(Checker, "solve", spy)
    report = _scatter([3, 1, 0, 2])  # distinct: other contents race, these do not
    assert report.status == "verified" and report.level == LEVEL, str(report)
    assert not any("after excluding a witness" in what for what, _ in asked), asked
    assert not any(pin and "across blocks" in what for what, pin in asked), asked


def test_a_shortcut_about_contents_gets_no_more_than_a_probe(monkeypatch):
    """At a given case the data step follows, a shortcut query about array contents (all bounds of
    a level at once) is asked within a late probe's budget, not the shortcut's own larger one: each
    of its questions is asked alone after it anyway, with a probe of its own."""
    from tilecheck.verifier.concrete import given_case

    limits = _question_limits(monkeypatch, shortcuts=True)
    x, y = np.arange(64, dtype=np.float32), np.zeros(128, np.float32)
    args = (np.array([0, 0, 1, 5, 2], np.int32), x, y, 8)
    report = verify(K.pair_sum_rows, args, (4, 1, 1))
    assert report.status == "verified", str(report)
    assert limits and max(limits) <= given_case.PROBE_OPEN_RLIMIT, limits


def test_the_pinned_question_after_a_model_that_does_not_reproduce_is_asked_once(monkeypatch):
    """When the given contents do not settle it, the obligation's other models are excluded one at a
    time as before, and the pinned question (up to the pinned run's whole budget) is not asked again
    in each round."""
    from tilecheck.verifier.obligations import confirm
    from tilecheck.verifier.solver import smt
    from tilecheck.verifier.obligations.checker import Checker

    monkeypatch.setattr(confirm, "reproduced", lambda *a, **k: False)  # no model reproduces
    asked = []

    def open_question(self, terms, key, rlimit):
        asked.append(key)
        return smt.Unknown("canceled")

    monkeypatch.setattr(Checker, "ask_pinned", open_question)
    report = _scatter([3, 1, 0, 2])
    assert asked and len(asked) == len(set(asked)), asked
    assert report.status == "verified" and report.level == LEVEL, str(report)


def test_data_follows_gives_content_queries_the_data_steps_budget_without_running_it(monkeypatch):
    """``verify(..., data=False, data_follows=True)`` (the launcher's cached verdict, whose launches
    on the host it decides on their own data afterwards): queries about contents at the given case
    get the data step's budget, and the step itself is not run."""
    from tilecheck.verifier.data import data_step
    from tilecheck.verifier.obligations.checker import Checker

    budgets = []
    init = Checker.__init__

    def spy(self, *a, **kw):
        init(self, *a, **kw)
        budgets.append(self.data_rlimit)

    monkeypatch.setattr(Checker, "__init__", spy)
    x, y = np.arange(64, dtype=np.float32), np.zeros(128, np.float32)
    args = (np.array([0, 0, 1, 5, 1], np.int32), x, y, 8)  # two equal sums: a race in the data
    alone = verify(K.pair_sum_rows, args, (4, 1, 1), data=False)
    assert budgets and set(budgets) == {None}
    budgets.clear()
    follows = verify(K.pair_sum_rows, args, (4, 1, 1), data=False, data_follows=True)
    assert data_step.DATA_STEP_RLIMIT in budgets
    assert follows.level != LEVEL and alone.level != LEVEL  # neither ran the step
    assert follows.status == alone.status == "race"


def test_a_witness_the_data_step_replaces_is_confirmed_but_not_minimised(monkeypatch):
    """A race that needs other index contents, at a level whose such races the data step decides:
    its model is confirmed on the interpreter, but its blocks are not made least (the step replaces
    the witness and keeps only its contents). Without the data step, the same race's witness is
    canonical."""
    from tilecheck.verifier.solver import smt
    from tilecheck.verifier.obligations.checker import Checker

    minimised, runs = [], []
    minimize, confirmed = smt.minimize, Checker.confirmed

    def spy_minimize(*a, **kw):
        minimised.append(1)
        return minimize(*a, **kw)

    def spy_confirmed(self, kind, a, b, sat, constraints):
        runs.append(self.data_rlimit)
        return confirmed(self, kind, a, b, sat, constraints)

    monkeypatch.setattr(smt, "minimize", spy_minimize)
    monkeypatch.setattr(Checker, "confirmed", spy_confirmed)
    decided = _scatter([3, 1, 0, 2])
    assert decided.status == "verified" and decided.level == LEVEL
    assert runs and all(r is not None for r in runs) and not minimised
    assert any("for other index contents" in n and "idx[" in n for n in decided.notes)
    runs.clear()
    kept = _scatter([3, 1, 0, 2], data=False)
    assert kept.status == "race" and kept.races[0].witness.contents
    assert runs == [None] and minimised
    w = kept.races[0].witness
    assert sorted((w.first.block[0], w.second.block[0])) == [0, 1]  # the least pair of blocks


def test_once_an_unsettled_obligation_is_open_the_detector_decides_and_queries_get_a_probes_budget(monkeypatch):
    """At a given case whose launch the exact detector runs next, once the level has left open an
    obligation the given contents do not settle, every further query gets a late probe's budget:
    whatever they answer, the data step decides the launch (TileBench's stream-K GEMM: twelve
    2M-unit queries in turn ran out before the detector decided). Without the detector to follow
    (``data=False``), the queries keep their budgets."""
    from tilecheck.verifier.concrete import given_case
    from tilecheck.verifier.solver import smt
    from tilecheck.verifier.obligations.checker import Checker

    limits, forced, level = [], [False], [None]
    check, solve = smt.check, Checker.solve

    def spy_solve(self, constraints, what, locs, key=None, **kw):
        level[0] = self
        return solve(self, constraints, what, locs, key, **kw)

    def spy_check(constraints, rlimit=smt.DEFAULT_RLIMIT, assumptions=()):
        ch = level[0]
        if ch is None or ch.stop_early or ch.level.grid is None:  # the given level only
            return check(constraints, rlimit, assumptions)
        if forced[0] in (False, ch.asked) and ch.asked is not None:  # its first obligation: undecided
            forced[0] = ch.asked
            return smt.Unknown("forced")
        if forced[0]:
            limits.append(rlimit)
        return check(constraints, rlimit, assumptions)

    monkeypatch.setattr(Checker, "solve", spy_solve)
    monkeypatch.setattr(smt, "check", spy_check)
    report = _scatter([3, 1, 0, 2])
    assert report.status == "verified" and report.level == LEVEL, report  # by the detector
    assert limits and max(limits) <= given_case.PROBE_OPEN_RLIMIT
    limits.clear()
    forced[0] = False
    kept = _scatter([3, 1, 0, 2], data=False)  # the forced obligation stays open: nothing decides it
    assert kept.status == "unknown" and any("forced" in r for r in kept.reasons), kept
    assert limits and max(limits) > given_case.PROBE_OPEN_RLIMIT



def _data_report(sizes: tuple[int, ...]):
    """A report whose one race needs other contents of 'idx', on an array of dimensions ``sizes``."""
    from tilecheck.ir.loc import Loc
    from tilecheck.report import Finding, Report, Side, Witness

    side = Side("store", Loc.unknown(), (0, 0, 0), {}, (0,), "write")
    witness = Witness("y", (0,), 0, side, side, (4, 1, 1), {"y": sizes}, contents={"idx": {(0,): 99}})
    return Report("k", "race", findings=[Finding("write-write", "w", Loc.unknown(), (), witness)])


@settings(max_examples=examples(200), deadline=None)
@given(data=st.lists(st.integers(0, 40), min_size=1, max_size=6),
       sizes=st.lists(st.integers(2, 80), max_size=3, unique=True),
       need_hi=st.one_of(st.none(), st.integers(0, 90)), need_distinct=st.booleans(),
       need_nondecreasing=st.booleans())
def test_the_widest_range_tried_first_ends_as_the_whole_refinement_does(data, sizes, need_hi, need_distinct,
                                                                        need_nondecreasing):
    """``launch_data.decide`` tries the first fact's widened range alone before refining the facts
    the data satisfies: for any monotone verifier (more facts never lose a proof) it ends with the
    same verdict and suggestion, and in one verify when that range suffices."""
    from tilecheck.report import Report
    from tilecheck.requirements import Bounded, Distinct, Nondecreasing
    from tilecheck.verifier.data import launch_data

    arrays = {"idx": np.array(data, np.int32)}

    def proves(pres):  # what the kernel needs: a small enough range, or another fact
        return (need_hi is not None and any(isinstance(p, Bounded) and p.hi is not None and p.hi <= need_hi
                                            for p in pres)) or \
            (need_distinct and any(isinstance(p, Distinct) for p in pres)) or \
            (need_nondecreasing and any(isinstance(p, Nondecreasing) for p in pres))

    def run(shortcut):
        calls = []

        def reverify(pres):
            calls.append(list(pres))
            return Report("k", "verified" if proves(pres) else "unknown")
        with mock.patch.object(launch_data, "_widest_first", launch_data._widest_first if shortcut
                               else lambda *a: None):
            out = launch_data.decide(_data_report(tuple(sizes)), arrays, reverify, lambda: Report("k", "unknown"))
        return out, calls
    fast, fast_calls = run(True)
    slow, slow_calls = run(False)
    assert (fast.status, fast.level, fast.notes, fast.assumptions) == \
        (slow.status, slow.level, slow.notes, slow.assumptions)
    if proves(fast_calls[0]) and len(fast_calls[0]) == 1:
        assert len(fast_calls) == 1 <= len(slow_calls)
    else:
        assert len(fast_calls) <= len(slow_calls) + 1


def test_a_race_with_no_witness_in_the_given_contents_is_not_asked_again_pinned(monkeypatch):
    """The given case finds a race for other contents, and no witness in the given ones (the small
    index array held whole at its contents): that answer is the pinned question's, recorded for
    the data step's pinned run, which asks the obligation no more (enumeration is turned off: with
    the small array's contents it decides these launches before any query, as it cannot in a loop
    over carried values, TileGym's LPT prefills)."""
    from tilecheck.verifier.concrete import enumeration
    from tilecheck.verifier.obligations.checker import Checker

    monkeypatch.setattr(enumeration, "compare", lambda *a, **kw: None)
    asked_pinned = []
    solve = Checker.solve

    def spy(self, constraints, what, locs, key=None, *a, **kw):
        if self.pin_given and key is not None and key[0] == "across" and key not in self.known_proved:
            asked_pinned.append(key)
        return solve(self, constraints, what, locs, key, *a, **kw)

    monkeypatch.setattr(Checker, "solve", spy)
    safe = _scatter([0, 2, 4, 6], kernel=K.scatter_halved)  # idx // 2 distinct: no facts say so
    assert (safe.status, safe.level) == ("verified", LEVEL)
    assert any("with the given contents of 'idx' it proves this launch" in n for n in safe.notes), safe.notes
    assert asked_pinned == []
    racy = _scatter([0, 1, 4, 6], kernel=K.scatter_halved)  # a witness in the given contents
    assert racy.status == "race" and not racy.races[0].witness.contents


def test_past_the_detector_an_open_question_leaves_only_a_probe_for_the_rest(monkeypatch):
    """Where the data step follows but its exact detector will not run the launch, an obligation
    left open that the given contents do not settle makes the verdict unknown whatever the queries
    after it prove: they get a late probe's budget, to find a race (TileBench's radix scatter at
    19,532 blocks: its in-block question ran to 0.5M units, unknown, after its across-blocks one)."""
    from types import SimpleNamespace

    from tilecheck.verifier import pipeline
    from tilecheck.verifier.concrete import given_case
    from tilecheck.verifier.data import data_step
    from tilecheck.verifier.concrete.contents import ContentQuestions

    late = given_case.PROBE_OPEN_RLIMIT
    for follows, final, may_prove, want in [(False, True, False, late), (True, False, False, late),
                                            (False, False, False, 2_000_000), (False, True, True, 2_000_000)]:
        ch = SimpleNamespace(detector_follows=follows, open_is_final=final, pinned_may_prove=may_prove)
        assert ContentQuestions.after_open(ch, 2_000_000) == want, (follows, final, may_prove)
    # verify's given case is told which: a launch past the detector's blocks, or one it runs
    seen = []
    real = pipeline.Checker

    def spy(*a, **kw):
        seen.append((kw.get("detector_follows"), kw.get("open_is_final")))
        return real(*a, **kw)

    monkeypatch.setattr(pipeline, "Checker", spy)
    args = (np.ones(32, np.float32), np.zeros(32, np.float32), np.array([3, 1, 2, 0], np.int32), 8)
    tilecheck.verify(K.scatter, args, (4, 1, 1), every_shape=False)
    runs, seen[:] = list(seen), []
    monkeypatch.setattr(data_step, "DATA_DETECT_BLOCKS", 2)
    tilecheck.verify(K.scatter, args, (4, 1, 1), every_shape=False)
    assert (True, False) in runs and (False, True) not in runs, runs  # the given case, the detector next
    assert (False, True) in seen and (True, False) not in seen, seen


def test_a_static_proof_on_the_data_is_reused_for_other_float_values_and_a_detectors_is_not(tmp_path):
    """A launch proved with its index array pinned (or under preconditions its contents satisfy)
    read only integer contents: the cache keeps it by those, so the same launch with other float
    values is a hit (a 64 MB weight array kept TileGym's grouped GEMM's proof out of the cache, and
    the same launch paid it again). A verdict the exact detector gave may follow the floats: the
    same launch with other float values is proved again."""
    x, y = np.arange(64, dtype=np.float32), np.zeros(128, np.float32)
    idx = np.array([0, 0, 1, 5, 2], np.int32)
    first = verify(K.pair_sum_rows, (idx, x, y, 8), (4, 1, 1), cache=tmp_path)
    assert (first.status, first.level, first.stats.get("data_proof")) == ("verified", LEVEL, "pinned"), first
    again = verify(K.pair_sum_rows, (idx, x * 3, y, 8), (4, 1, 1), cache=tmp_path)
    assert again.stats.get("cache") == "hit" and again.status == "verified", again
    # idx past 256 elements: decided by the detector, on the floats too
    large = np.arange(300, dtype=np.int32) * 2
    detected = verify(K.scatter_halved, (x, np.zeros(64, np.float32), large, 16), (4, 1, 1), cache=tmp_path)
    assert detected.status == "verified" and "data_proof" not in detected.stats, detected
    assert verify(K.scatter_halved, (x, np.zeros(64, np.float32), large, 16), (4, 1, 1),
                  cache=tmp_path).stats.get("cache") == "hit"
    other = verify(K.scatter_halved, (x + 1, np.zeros(64, np.float32), large, 16), (4, 1, 1), cache=tmp_path)
    assert other.stats.get("cache") != "hit", other


def test_a_race_the_detector_found_comes_back_from_the_cache_and_replays(tmp_path):
    x = np.arange(64, dtype=np.float32)
    large = np.arange(300, dtype=np.int32) * 2
    large[1] = 1  # 1 // 2 == 0 // 2: blocks 0 and 1 write one tile
    args = (x, np.zeros(64, np.float32), large, 16)
    first = verify(K.scatter_halved, args, (4, 1, 1), cache=tmp_path)
    again = verify(K.scatter_halved, args, (4, 1, 1), cache=tmp_path)
    assert first.status == again.status == "race" and again.stats.get("cache") == "hit", again
    assert tilecheck.replay(again.races[0]).reproduced
