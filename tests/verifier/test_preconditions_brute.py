"""The Z3 encodings of the preconditions against brute force.

For small concrete arrays, the constraints a precondition puts on reads of the array, with each read
pinned to the array's value, are satisfiable exactly when ``violation`` finds nothing wrong with the
array: the encoding neither excludes an array that keeps the precondition (which would make a proof
unsound) nor lets one through that breaks it. On a subset of the positions, they are satisfiable
exactly when those positions' values, in row-major order, keep it (the rest can always be filled in).
"""
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tilecheck
from tests.tiers import examples
from tilecheck.verifier.solver import smt
from tilecheck.verifier.contracts.preconditions import Distinct, Nondecreasing, Precondition, constraints, parse

VALUES = st.integers(-2, 3)


@st.composite
def arrays(draw: st.DrawFn) -> np.ndarray:
    if draw(st.booleans()):
        shape: tuple[int, ...] = (draw(st.integers(1, 5)),)
    else:
        rows = draw(st.integers(1, 2))
        shape = (rows, draw(st.integers(1, 5 // rows)))
    flat = draw(st.lists(VALUES, min_size=int(np.prod(shape)), max_size=int(np.prod(shape))))
    return np.array(flat, np.int64).reshape(shape)


PRECONDITIONS = st.one_of(
    st.just(tilecheck.distinct("a")),
    VALUES.map(lambda n: tilecheck.distinct("a", below=n)),
    st.just(tilecheck.nondecreasing("a")),
    st.tuples(VALUES, VALUES).map(lambda lh: tilecheck.bounded("a", min(lh), max(lh))),
)


def satisfiable(pre: Precondition, values: np.ndarray, positions: list[tuple[int, ...]]) -> bool:
    """The precondition's constraints on reads at ``positions`` (in a shuffled order, so the
    encoding cannot lean on the order of its reads), each pinned to the array's value there."""
    smt.fresh_context()
    mem = smt.Function("mem_a", *([smt.IntSort()] * (values.ndim + 1)))
    apps = [mem(*[smt.IntVal(c) for c in pos]) for pos in positions]
    pins = [app == int(values[pos]) for app, pos in zip(apps, positions)]
    result = smt.check([*constraints(pre, apps), *pins])
    assert not isinstance(result, smt.Unknown)
    return isinstance(result, smt.Sat)


@settings(max_examples=examples(300), deadline=None, derandomize=True, database=None)
@given(arrays(), PRECONDITIONS, st.randoms(use_true_random=False))
def test_the_encoding_on_every_element_agrees_with_violation(values, pre, rng):
    positions = list(np.ndindex(values.shape))
    rng.shuffle(positions)
    assert satisfiable(pre, values, positions) == (pre.violation(values) is None)


@settings(max_examples=examples(300), deadline=None, derandomize=True, database=None)
@given(arrays(), PRECONDITIONS, st.data())
def test_the_encoding_on_some_elements_agrees_with_their_values(values, pre, data):
    every = list(np.ndindex(values.shape))
    chosen = data.draw(st.lists(st.sampled_from(every), unique=True, min_size=1))
    in_order = np.array([values[pos] for pos in sorted(chosen)])
    assert satisfiable(pre, values, chosen) == (pre.violation(in_order) is None)


@pytest.mark.parametrize("pre, values, message", [
    (tilecheck.nondecreasing("a"), [0, 2, 2, 7, 5, 9],
     "values 7 at flat position 3 and 5 at flat position 4 decrease"),
    (tilecheck.nondecreasing("a"), [[0, 1], [1, 0]],
     "values 1 at flat position 2 and 0 at flat position 3 decrease"),
    (tilecheck.distinct("a"), [4, 1, 12, 3, 12], "value 12 appears at flat positions 2 and 4"),
    (tilecheck.distinct("a", below=8), [8, 1, 8, 12, 12, 1], "value 1 appears at flat positions 1 and 5"),
])
def test_a_violation_names_the_positions(pre, values, message):
    assert pre.violation(np.array(values)) == message


@pytest.mark.parametrize("pre, values", [
    (tilecheck.nondecreasing("a"), [[0, 1, 1], [2, 5, 5]]),
    (tilecheck.distinct("a", below=8), [8, 1, 8, 12, 12, 0]),
    (tilecheck.distinct("a", below=0), [3, 3]),
])
def test_arrays_that_keep_the_precondition_have_no_violation(pre, values):
    assert pre.violation(np.array(values)) is None


def test_symbolic_reads_one_dimension():
    smt.fresh_context()
    mem = smt.Function("mem_a", smt.IntSort(), smt.IntSort())
    i, j = smt.Int("i"), smt.Int("j")
    reads = [mem(i), mem(j)]

    def sat(pre: Precondition, *extra: smt.BoolExpr) -> bool:
        result = smt.check([*constraints(pre, reads), *extra])
        assert not isinstance(result, smt.Unknown)
        return isinstance(result, smt.Sat)

    up = tilecheck.nondecreasing("a")
    assert not sat(up, i < j, mem(i) > mem(j))  # an earlier element above a later one
    assert not sat(up, j < i, mem(j) > mem(i))
    assert sat(up, i < j, mem(i) == mem(j))  # equal neighbours are allowed
    assert sat(up, i > j, mem(i) > mem(j))
    padded = tilecheck.distinct("a", below=4)
    assert not sat(padded, i != j, mem(i) == mem(j), mem(i) < 4)
    assert sat(padded, i != j, mem(i) == mem(j), mem(i) == 4)  # padding repeats
    assert not sat(tilecheck.distinct("a"), i != j, mem(i) == mem(j))


def test_symbolic_reads_two_dimensions_follow_row_major_order():
    smt.fresh_context()
    mem = smt.Function("mem_a", smt.IntSort(), smt.IntSort(), smt.IntSort())
    r0, c0, r1, c1 = (smt.Int(n) for n in ("r0", "c0", "r1", "c1"))
    reads = [mem(r0, c0), mem(r1, c1)]
    pre = tilecheck.nondecreasing("a")

    def sat(*extra: smt.BoolExpr) -> bool:
        result = smt.check([*constraints(pre, reads), *extra])
        assert not isinstance(result, smt.Unknown)
        return isinstance(result, smt.Sat)

    # an earlier row, even at a later column, comes first
    assert not sat(r0 < r1, c0 > c1, mem(r0, c0) > mem(r1, c1))
    assert not sat(r0 == r1, c0 < c1, mem(r0, c0) > mem(r1, c1))
    assert sat(r0 == r1, c0 > c1, mem(r0, c0) > mem(r1, c1))
    # the column order alone says nothing across rows
    assert sat(r0 > r1, c0 < c1, mem(r0, c0) > mem(r1, c1))


def test_text_forms():
    assert parse("nondecreasing:offsets") == tilecheck.nondecreasing("offsets")
    assert parse("distinct:ids") == tilecheck.distinct("ids")
    assert parse("distinct:ids:4096") == tilecheck.distinct("ids", below=4096)
    assert isinstance(parse("distinct:ids:4096"), Distinct)
    assert isinstance(parse("nondecreasing:o"), Nondecreasing)
    assert parse("distinct:sorted_token_ids:4096").describe() == (
        "'sorted_token_ids' holds no duplicate values below 4096 (precondition)")
    assert tilecheck.distinct("ids").describe() == "'ids' holds no duplicate values (precondition)"
    assert "non-decreasing" in parse("nondecreasing:offsets").describe()
    for bad in ("nondecreasing", "nondecreasing:", "nondecreasing:o:1", "distinct:ids:x", "distinct:ids:1:2",
                "distinct:", "increasing:o"):
        with pytest.raises(tilecheck.TilecheckError, match="nondecreasing:NAME") as info:
            parse(bad)
        assert "distinct:NAME:BELOW" in str(info.value)


def test_the_encoding_stays_quadratic_in_the_reads():
    smt.fresh_context()
    mem = smt.Function("mem_a", smt.IntSort(), smt.IntSort())
    reads = [mem(smt.Int(f"i{k}")) for k in range(6)]
    pairs = len(list(itertools.combinations(reads, 2)))
    assert len(constraints(tilecheck.distinct("a", below=3), reads)) == pairs
    assert len(constraints(tilecheck.nondecreasing("a"), reads)) == 2 * pairs
