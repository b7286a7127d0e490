"""Across-blocks questions of grid-stride loops asked first without their block ids
(``footprints.grid_stride_relaxed``): a proof of the weaker question is a proof, its models are not
findings, and blocks that differ along an axis the loop does not stride still race."""
import cuda.tile as ct
import numpy as np

import tilecheck
from tests.interp.kernels import misswizzled_copy, swizzled_args, swizzled_copy
from tilecheck.verifier.model import footprints
from tilecheck.verifier.obligations import checker as obligations
from tilecheck.verifier.solver import smt

ConstInt = ct.Constant[int]


@ct.kernel
def strided_rows_ignoring_y(dst, T: ConstInt):
    # the loop strides the grid's x axis only: blocks (x, 0) and (x, 1) write the same tiles
    for t in range(ct.bid(0), ct.num_tiles(dst, axis=0, shape=(T,)), ct.num_blocks(0)):
        ct.store(dst, index=(t,), tile=ct.full((T,), 1.0, ct.float32))


def _relaxed_questions(monkeypatch) -> list[tuple[list, list]]:
    """Every (constraints, weaker constraints) pair the checker builds."""
    pairs = []
    real = footprints.grid_stride_relaxed

    def spy(a, b, constraints):
        relaxed = real(a, b, constraints)
        if relaxed is not None:
            pairs.append((list(constraints), relaxed))
        return relaxed

    monkeypatch.setattr(obligations, "grid_stride_relaxed", spy)
    return pairs


def test_a_swizzled_persistent_loop_is_proved_for_every_shape_by_the_weaker_question(monkeypatch):
    pairs = _relaxed_questions(monkeypatch)
    proved = []
    solve = obligations.Checker.solve

    def spy(self, constraints, what, locs, key=None, **kw):
        result = solve(self, constraints, what, locs, key, **kw)
        if "across" in what and any(constraints is weaker for _, weaker in pairs):
            proved.append(isinstance(result, smt.Unsat))
        return result

    monkeypatch.setattr(obligations.Checker, "solve", spy)
    report = tilecheck.verify(swizzled_copy, swizzled_args(), (4, 1, 1))
    assert report.status == "verified" and report.launch_contract.proved, str(report)
    assert pairs and any(proved), proved


def test_the_weaker_question_follows_from_the_whole_one(monkeypatch):
    """Soundness: every model of the question is a model of the weaker one (checked by Z3 for each
    pair the checker builds, in the verification's own context), so a proof of the weaker one is a
    proof."""
    answers = []
    real = footprints.grid_stride_relaxed

    def spy(a, b, constraints):
        relaxed = real(a, b, constraints)
        if relaxed is not None:
            answers.append(smt.check([*constraints, smt.Not(smt.And(*relaxed))], 2_000_000))
        return relaxed

    monkeypatch.setattr(obligations, "grid_stride_relaxed", spy)
    tilecheck.verify(swizzled_copy, swizzled_args(), (4, 1, 1), work=None)
    tilecheck.verify(strided_rows_ignoring_y, (np.zeros(64, np.float32), 8), (2, 2, 1), work=None)
    assert answers and all(isinstance(a, smt.Unsat) for a in answers), answers


def test_a_race_of_a_wrong_swizzle_is_still_found():
    report = tilecheck.verify(misswizzled_copy, swizzled_args(), (4, 1, 1))
    assert report.status == "race", str(report)


def test_blocks_that_differ_along_an_axis_the_loop_does_not_stride_still_race(monkeypatch):
    pairs = _relaxed_questions(monkeypatch)
    report = tilecheck.verify(strided_rows_ignoring_y, (np.zeros(64, np.float32), 8), (2, 2, 1))
    assert report.status == "race", str(report)
    assert pairs  # the weaker question was asked, and did not hide the race
    assert not report.launch_contract.proved
