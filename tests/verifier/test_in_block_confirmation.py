"""In-block race witnesses are confirmed on the interpreter (issue 22, item 4), and ``cat`` has
lane semantics, so a scatter through two disjoint halves is no race with itself."""
import numpy as np

import tilecheck as tc
from corpus.kernels.elementwise import scatter_two_halves
from corpus.kernels.variants import scatter_two_halves_overlapping
from tilecheck.interp.runs import reproduces
from tilecheck.ir.loc import Loc
from tilecheck.report import Side, Witness

ARGS = lambda: (np.arange(64, dtype=np.float32), np.zeros(64, np.float32), 8)  # noqa: E731


def test_disjoint_halves_are_verified_for_every_shape():
    report = tc.verify(scatter_two_halves, ARGS(), (4, 1, 1))
    assert report.status == "verified" and report.launch_contract is not None and report.launch_contract.proved


def test_overlapping_halves_race_inside_the_block_and_replay():
    report = tc.verify(scatter_two_halves_overlapping, ARGS(), (4, 1, 1))
    assert [f.kind for f in report.races] == ["unordered-in-block"]
    replayed = tc.replay(report.races[0])
    assert replayed.reproduced and replayed.differing


def _witness(first_loc, second_loc):
    side = lambda loc: Side("store_ptr_tko", loc, (0, 0, 0), {}, (0,), "write")  # noqa: E731
    return Witness("y", (7,), None, side(first_loc), side(second_loc), (4, 1, 1), {}, {})


def test_one_op_must_touch_the_element_twice():
    here, there = Loc("k.py", 3, 1), Loc("k.py", 4, 1)
    once = {(0, 0, 0): {("write", here, 0, 5)}}
    twice = {(0, 0, 0): {("write", here, 0, 5), ("write", here, 0, 6)}}
    assert not reproduces(_witness(here, here), once)
    assert reproduces(_witness(here, here), twice)
    both = {(0, 0, 0): {("write", here, 0, 5), ("write", there, 1, 5)}}
    assert reproduces(_witness(here, there), both)
    assert not reproduces(_witness(here, there), once)
