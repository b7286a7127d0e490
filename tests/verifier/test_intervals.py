"""Interval bounds (verifier/solver/intervals.py): sound for every value the variables can take, and tight
enough to prove the overflow obligations of ordinary index arithmetic without the solver."""
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.tiers import examples
from tilecheck.verifier.solver import intervals, smt
from tilecheck.verifier.solver.intervals import INF

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


def _bv_terms(depth: int):
    """Bit-vector terms of 8 bits over the integer variables (``int2bv``), as the engine's exact
    bitwise ops and Z3's simplification of them make."""
    leaf = st.one_of(st.sampled_from(NAMES).map(lambda n: ("int2bv", n)),
                     st.integers(0, 255).map(lambda v: ("bvlit", v)))
    if depth == 0:
        return leaf
    sub = _bv_terms(depth - 1)
    return st.one_of(
        leaf,
        st.tuples(st.sampled_from(("and", "or", "xor", "add", "sub")), sub, sub),
        st.tuples(st.just("not"), sub),
        st.tuples(st.just("extract"), sub, st.integers(0, 7), st.integers(0, 7)),
        st.tuples(st.just("ite"), sub, sub, sub),
    )


def _build_bv(tree, v):
    kind = tree[0]
    if kind == "int2bv":
        return smt.z3.Int2BV(v[tree[1]], 8)
    if kind == "bvlit":
        return smt.z3.BitVecVal(tree[1], 8)
    if kind == "not":
        return ~_build_bv(tree[1], v)
    if kind == "extract":  # a field, put back at 8 bits (concat of zeros above it)
        high, low = max(tree[2], tree[3]), min(tree[2], tree[3])
        field = smt.z3.Extract(high, low, _build_bv(tree[1], v))
        return field if high - low == 7 else smt.z3.Concat(smt.z3.BitVecVal(0, 7 - (high - low)), field)
    a, b = _build_bv(tree[1], v), _build_bv(tree[2], v)
    if kind == "ite":
        return smt.If(smt.z3.ULT(a, b), b, _build_bv(tree[3], v))
    return {"and": lambda: a & b, "or": lambda: a | b, "xor": lambda: a ^ b, "add": lambda: a + b,
            "sub": lambda: a - b}[kind]()


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tree=_bv_terms(3), signed=st.booleans(), simplify=st.booleans(),
       ranges=st.lists(st.tuples(st.integers(-20, 300), st.integers(0, 300)), min_size=3, max_size=3))
def test_every_value_of_a_bit_vector_term_lies_in_the_range(tree, signed, simplify, ranges):
    # the engine's bit-vector terms, as an integer (unsigned or two's complement), raw or as Z3's
    # simplifier rewrites them (an xor with a constant becomes extracts and a complement): every
    # value the variables in the box give lies in range_of, by the solver
    v = {n: smt.Int(n) for n in NAMES}
    bits = _build_bv(tree, v)
    term = smt.z3.BV2Int(bits, is_signed=signed)
    if simplify:
        term = smt.z3.simplify(term)
    box = {n: (lo, lo + width) for n, (lo, width) in zip(NAMES, ranges)}
    lo, hi = intervals.range_of(term, box)
    assert signed or 0 <= lo and hi <= 255, (term, lo, hi)  # (z3's signed form is an ite on the sign)
    inside = [c for n, (a, b) in box.items() for c in (v[n] >= a, v[n] <= b)]
    result = smt.check([*inside, smt.Or(term < lo, term > hi)], rlimit=2_000_000)
    assert isinstance(result, smt.Unsat), (term, box, (lo, hi), result)


def test_a_partner_index_through_xor_is_bounded_by_its_bits():
    # a bitonic sort's partner, i ^ j with i below 2^24 and j a power of two below it: below 2^24
    # (the overflow claim of its address, that enumeration listed 2^24 lanes for)
    i, j = smt.Int("i"), smt.Int("j")
    partner = smt.z3.BV2Int(smt.z3.Int2BV(i, 32) ^ smt.z3.Int2BV(j, 32), is_signed=True)
    box = {"i": (0, (1 << 24) - 1), "j": (1, 1 << 23)}
    assert intervals.range_of(partner, box) == (0, (1 << 24) - 1)
    assert intervals.range_of(smt.z3.simplify(partner * 2), {**box, "j": (1, 1)}) == (0, (1 << 25) - 2)
    # a negative operand is a pattern with its top bit set: its partner may be negative
    assert intervals.range_of(partner, {**box, "i": (-1, 5)})[0] < 0
