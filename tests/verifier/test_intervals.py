"""Interval bounds (verifier/intervals.py): sound for every value the variables can take, and tight
enough to prove the overflow obligations of ordinary index arithmetic without the solver."""
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.tiers import examples
from tilecheck.verifier import intervals, smt
from tilecheck.verifier.intervals import INF

NAMES = ("x", "y", "z")


def _terms(depth: int):
    leaf = st.one_of(st.sampled_from(NAMES).map(lambda n: ("var", n)),
                     st.integers(-40, 40).map(lambda v: ("lit", v)))
    if depth == 0:
        return leaf
    sub = _terms(depth - 1)
    divisor = st.one_of(st.integers(1, 40).map(lambda v: ("lit", v)), sub)  # usually a tile size
    return st.one_of(
        leaf,
        st.tuples(st.sampled_from(("add", "sub", "mul")), sub, sub),
        st.tuples(st.sampled_from(("div", "mod")), sub, divisor),
        st.tuples(st.just("neg"), sub),
        st.tuples(st.just("clamp"), sub, st.integers(-20, 0), st.integers(0, 20)),
        st.tuples(st.just("ite"), sub, sub, sub),
    )


def _build(tree, v):
    kind = tree[0]
    if kind == "var":
        return v[tree[1]]
    if kind == "lit":
        return smt.IntVal(tree[1])
    if kind == "neg":
        return -_build(tree[1], v)
    if kind == "clamp":  # the engine's in_range pattern: If(lo <= t <= hi, t, 0)
        t = _build(tree[1], v)
        return smt.If(smt.And(t >= tree[2], t <= tree[3]), t, smt.IntVal(0))
    a, b = _build(tree[1], v), _build(tree[2], v)
    if kind == "ite":
        return smt.If(a > 0, b, _build(tree[3], v))
    return {"add": lambda: a + b, "sub": lambda: a - b, "mul": lambda: a * b,
            "div": lambda: a / b, "mod": lambda: a % b}[kind]()


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tree=_terms(3), ranges=st.lists(st.tuples(st.integers(-50, 50), st.integers(0, 60)), min_size=3, max_size=3),
       seed=st.integers(0, 2**16))
def test_every_value_lies_in_the_range(tree, ranges, seed):
    v = {n: smt.Int(n) for n in NAMES}
    term = _build(tree, v)
    box = {n: (lo, lo + width) for n, (lo, width) in zip(NAMES, ranges)}
    lo, hi = intervals.range_of(term, box)
    rng = random.Random(seed)
    for _ in range(12):
        point = {n: rng.choice([a, b, rng.randint(a, b)]) for n, (a, b) in box.items()}
        value = smt.literal(smt.substituted(term, [(v[n], smt.IntVal(x)) for n, x in point.items()]))
        if isinstance(value, int):  # Z3 leaves a division by zero uninterpreted
            assert lo <= value <= hi, (term, point, value, (lo, hi))


@settings(max_examples=examples(200), deadline=None)
@given(tree=_terms(2), ranges=st.lists(st.tuples(st.integers(-30, 30), st.integers(0, 30)), min_size=3, max_size=3))
def test_no_value_outside_the_range_by_the_solver(tree, ranges):
    v = {n: smt.Int(n) for n in NAMES}
    term = _build(tree, v)
    box = {n: (lo, lo + width) for n, (lo, width) in zip(NAMES, ranges)}
    lo, hi = intervals.range_of(term, box)
    if lo <= -INF and hi >= INF:
        return
    inside = [c for n, (a, b) in box.items() for c in (v[n] >= a, v[n] <= b)]
    # -INF / INF say "no bound" (range_of): a value past 2**100 on an unbounded side is no violation
    # (Z3's y / 0 is any value; found by the thorough tier: ite(y/x > 0, y/x, x) at x = 0)
    outside = [*([term < lo] if lo > -INF else []), *([term > hi] if hi < INF else [])]
    result = smt.check([*inside, smt.Or(*outside)], rlimit=2_000_000)
    assert not isinstance(result, smt.Sat), (term, box, (lo, hi), result.model)


def test_bounds_are_read_off_the_constraints_and_propagated():
    x, y, g = smt.Int("x"), smt.Int("y"), smt.Int("g")
    box = intervals.box_of([g >= 1, g <= 64, smt.And(y >= 0, y < g), x <= y - 1, x >= -3])
    assert box["g"] == (1, 64) and box["y"] == (0, 63) and box["x"] == (-3, 62)


def test_an_implication_is_not_read():
    # a contract's candidate rules reach the solver as Implies(flag, rule): a proof here must not
    # rest on one, or the contract would leave it out
    x, flag = smt.Int("x"), smt.Bool("flag")
    box = intervals.box_of([x >= 0, smt.Implies(flag, x <= 10)])
    assert box["x"] == (0, INF)


def test_address_of_a_32_bit_indexed_array_stays_in_64_bits():
    # stride * (bid / 16) + stride * clamp(content) + lane: the shape of a gather's address
    stride0, stride1, bid, lane = (smt.Int(n) for n in ("s0", "s1", "bid", "lane"))
    content = smt.Function("load!0", smt.IntSort(), smt.IntSort())(bid)
    clamped = smt.If(smt.And(content >= -(1 << 31), content <= (1 << 31) - 1), content, smt.IntVal(0))
    address = stride0 * (bid / 16) + stride1 * clamped + lane
    box = intervals.box_of([stride0 >= 0, stride0 <= (1 << 31) - 1, stride1 >= 0, stride1 <= (1 << 31) - 1,
                            bid >= 0, bid <= 65534, lane >= 0, lane < 16])
    assert intervals.within(address, -(1 << 63), (1 << 63) - 1, box)
    assert not intervals.within(address, -(1 << 31), (1 << 31) - 1, box)
    assert not intervals.within(stride0 * content, -(1 << 63), (1 << 63) - 1, box)  # content unbounded


@pytest.mark.parametrize("divisor", [0, -4])
def test_a_divisor_that_may_be_zero_or_negative_bounds_nothing(divisor):
    x, d = smt.Int("x"), smt.Int("d")
    box = {"x": (0, 100), "d": (divisor, 5)}
    assert intervals.range_of(x / d, box) == (-INF, INF)
    assert intervals.range_of(x % d, box) == (-INF, INF)
