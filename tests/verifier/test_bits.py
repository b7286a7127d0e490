"""Bit-vector arithmetic written as integer arithmetic (verifier/solver/bits.py): exact, by the solver, on the
terms the engine builds; and what it lets the given case decide without listing every lane."""
import numpy as np
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import tilecheck
from tests.tiers import examples
from tests.verifier.test_enumeration import partner_exchange, partner_exchange_unrouted
from tilecheck.verifier.concrete import enumeration
from tilecheck.verifier.obligations import checker as obligations
from tilecheck.verifier.solver import bits, smt

X, Y, S = smt.Int("x"), smt.Int("y"), smt.Int("s")
_OPS = {"and": lambda p, q: p & q, "or": lambda p, q: p | q, "xor": lambda p, q: p ^ q,
        "shl": lambda p, q: p << q, "lshr": lambda p, q: smt.LShR(p, q), "ashr": lambda p, q: p >> q}


def _trees(depth: int):
    leaf = st.one_of(st.sampled_from(["x", "y", "s"]), st.integers(-300, 300))
    if depth == 0:
        return leaf
    sub = _trees(depth - 1)
    return st.one_of(leaf, st.tuples(st.sampled_from(sorted(_OPS)), sub, sub, st.sampled_from([8, 16, 32])),
                     st.tuples(st.just("add"), sub, sub))


def _build(tree):
    if isinstance(tree, str):
        return {"x": X, "y": Y, "s": S}[tree]
    if isinstance(tree, int):
        return smt.IntVal(tree)
    if tree[0] == "add":
        return _build(tree[1]) + _build(tree[2])
    op, a, b, width = tree
    # the engine's exact encoding (symbolic/ops/arith.py ``_bitvector``)
    return smt.BV2Int(_OPS[op](smt.Int2BV(_build(a), width), smt.Int2BV(_build(b), width)), is_signed=True)


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tree=_trees(2), value=st.integers(-40, 40), lo=st.integers(-300, 300), width=st.integers(0, 600))
def test_the_integer_form_equals_the_bit_vector_term(tree, value, lo, width):
    # with the scalar ``s`` fixed by the level, every island the rewrite writes is equal to the
    # bit-vector term for every x and y in a box: no value where they differ, by the solver
    term = _build(tree)
    z = smt.Int("z")
    formula = smt.And(term == z, X >= lo, X <= lo + width, Y >= -5, Y <= 70)
    written = bits.arithmetic(formula, [(S, smt.IntVal(value))])
    differ = smt.check([formula != written, S == value, X >= lo, X <= lo + width, Y >= -5, Y <= 70],
                       rlimit=2_000_000)
    assert not isinstance(differ, smt.Sat), (term, value, differ.model)
    assume(isinstance(differ, smt.Unsat))  # undecided: no evidence either way (too many: a health check)


def test_a_partner_through_xor_with_a_fixed_scalar_becomes_linear():
    # i ^ j with j fixed at 4 by the level: no bit-vector term is left
    i, j = smt.Int("i"), smt.Int("j")
    partner = smt.BV2Int(smt.Int2BV(i, 32) ^ smt.Int2BV(j, 32), is_signed=True)
    written = bits.arithmetic(smt.And(i >= 0, i < 1024, partner == 7), [(j, smt.IntVal(4))])
    assert smt.bitwise(partner == 7) and not smt.bitwise(written)
    # without the scalar's value (a contract search's level) the term stays as it was
    assert smt.bitwise(bits.arithmetic(partner == 7, []))


def test_a_large_listing_is_asked_of_the_solver_first(monkeypatch):
    # a bitonic step whose listing would be "large": the solver decides its questions in integer
    # arithmetic, and no access is listed lane by lane; the racy variant's race still replays
    monkeypatch.setattr(obligations, "LARGE_LISTING", 16)
    listed = []
    together = enumeration._elements_together
    monkeypatch.setattr(enumeration, "_elements_together", lambda *a, **kw: listed.append(a) or together(*a, **kw))
    work = np.random.default_rng(0).standard_normal(64).astype(np.float32)
    report = tilecheck.verify(partner_exchange, (work, 2, 1, 64, 16), (4, 1, 1), every_shape=False)
    assert report.status == "verified" and report.level == "the given shapes and grid", report
    assert not listed
    racy = tilecheck.verify(partner_exchange_unrouted, (work, 64, 32, 64, 16), (4, 1, 1), every_shape=False)
    assert racy.status == "race", racy
    assert tilecheck.replay(next(f for f in racy.races if f.kind == "write-write")).reproduced
