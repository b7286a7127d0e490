"""Value bounds carried by the symbolic engine (``verifier/model/bounds.py``): every bound holds
for every value its operands' bounds allow, and a division of non-negative operands is Z3's own
``div`` / ``mod``, with the sign fix-ups cuTile emits for Python's ``//`` and ``%`` folded away."""
import cuda.tile as ct
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tilecheck
from tilecheck.ir.cutile import module_for
from tilecheck.verifier.solver import smt
from tilecheck.verifier.model import bounds as B
from tilecheck.verifier.model.engine import execute

from tests.tiers import examples

SMALL = st.integers(-40, 40)


@st.composite
def bounded(draw, values=SMALL):
    """A bound (either side possibly open) and a value inside it."""
    value = draw(values)
    lo = draw(st.one_of(st.none(), st.integers(-40, value)))
    hi = draw(st.one_of(st.none(), st.integers(value, 40)))
    return (lo, hi), value


def inside(bound, value) -> bool:
    return (bound[0] is None or bound[0] <= value) and (bound[1] is None or value <= bound[1])


@settings(max_examples=examples(400), deadline=None, derandomize=True)
@given(a=bounded(), b=bounded())
def test_every_bound_holds_for_the_values_its_operands_allow(a, b):
    (ab, x), (bb, y) = a, b
    assert inside(B.add(ab, bb), x + y)
    assert inside(B.sub(ab, bb), x - y)
    assert inside(B.mul(ab, bb), x * y)
    assert inside(B.neg(ab), -x)
    assert inside(B.join(ab, bb), x) and inside(B.join(ab, bb), y)
    assert inside(B.minimum(ab, bb), min(x, y))
    assert inside(B.maximum(ab, bb), max(x, y))
    assert inside(B.absolute(ab), abs(x))
    if y > 0:  # Z3's div and mod (x // y, x % y for a positive divisor); a zero divisor leaves x
        assert inside(B.quotient(ab, bb), x // y)
        assert inside(B.ceiling(ab, bb), -(-x // y))
        assert inside(B.floor_quotient(ab, bb), x // y)
    if x >= 0 and y >= 0:
        assert inside(B.remainder(ab, bb), x % y if y else x)
    for predicate, holds in (("equal", x == y), ("not_equal", x != y), ("less_than", x < y),
                             ("less_than_or_equal", x <= y), ("greater_than", x > y),
                             ("greater_than_or_equal", x >= y)):
        assert B.compare(predicate, ab, bb) in (None, holds)


def test_bounds_decide_what_they_should():
    assert B.compare("less_than", (0, None), (0, 0)) is False  # a remainder is never below zero
    assert B.compare("greater_than_or_equal", (3, 9), (0, 3)) is True
    assert B.quotient((0, None), (0, None)) == B.UNKNOWN  # the divisor may be zero
    assert B.remainder((0, None), (0, None)) == (0, None)
    assert B.remainder((0, 100), (1, 8)) == (0, 7)
    assert B.ceiling((0, 1000), (128, 128)) == (0, 8)


@ct.kernel
def swizzled_copy(x, y, GROUP: ct.Constant[int]):
    # a GEMM's group swizzle, Python's // and % on non-negative values
    pid = ct.bid(0)
    num_n = ct.num_tiles(y, axis=1, shape=(4, 4))
    in_group = GROUP * num_n
    first_m = (pid // in_group) * GROUP
    m = first_m + (pid % in_group) % GROUP
    n = (pid % in_group) // GROUP
    ct.store(y, index=(m, n), tile=ct.load(x, index=(m, n), shape=(4, 4)))


def _nodes(term):
    _, nodes = smt.dag(term)
    return [n.kind for n in nodes.values()]


def test_a_division_of_non_negative_values_has_no_sign_cases():
    x, y = np.zeros((16, 16), np.float32), np.zeros((16, 16), np.float32)
    module, _ = module_for(swizzled_copy, (x, y, 2))
    with smt.own_context():
        fp = execute(module)
        (store,) = [a for a in fp.accesses if a.writes]
        kinds = [k for c in store.coords for k in _nodes(c)]
        # pid // in_group and pid % in_group: Z3's div and mod, the remainder guarded once for a
        # zero divisor; the remainder's fix-up for a negative sign (xor of two comparisons) is gone
        assert "xor" not in kinds
        assert kinds.count("ite") <= 2, kinds
    report = tilecheck.verify(swizzled_copy, (x, y, 2), (16, 1, 1))
    assert report.status == "verified", str(report)


@ct.kernel
def swizzled_copy_overlapping(x, y, GROUP: ct.Constant[int]):
    pid = ct.bid(0)
    num_n = ct.num_tiles(y, axis=1, shape=(4, 4))
    in_group = GROUP * num_n
    m = (pid // in_group) * GROUP + (pid % in_group) % GROUP
    n = (pid % in_group) // (GROUP * 2)  # two blocks per column tile
    ct.store(y, index=(m, n), tile=ct.load(x, index=(m, n), shape=(4, 4)))


def test_the_simpler_division_still_finds_the_race():
    x, y = np.zeros((16, 16), np.float32), np.zeros((16, 16), np.float32)
    report = tilecheck.verify(swizzled_copy_overlapping, (x, y, 2), (16, 1, 1))
    assert report.status == "race", str(report)
    assert tilecheck.detect(swizzled_copy_overlapping, (x, y, 2), (16, 1, 1)).status == "race"


@ct.kernel
def gemm_swizzle(x, y, GROUP: ct.Constant[int], SHIFT: ct.Constant[int]):
    # TileGym's matmul swizzle: the group's last rows may be fewer than GROUP (a small divisor
    # whose sign the bounds cannot tell, split into its positive values)
    pid = ct.bid(0)
    num_m = ct.num_tiles(y, axis=0, shape=(4, 4))
    num_n = ct.num_tiles(y, axis=1, shape=(4, 4))
    in_group = GROUP * num_n
    first_m = (pid // in_group) * GROUP
    size_m = min(num_m - first_m, GROUP)
    m = first_m + (pid % in_group) % size_m
    n = (pid % in_group) // size_m + SHIFT * (pid % 2)
    ct.store(y, index=(m, n), tile=ct.load(x, index=(m, n), shape=(4, 4)))


# up to one block per tile; the shifted column collides at (12, 9) and (20, 15) (where a shifted
# tile lands on one another block writes), and falls off the array at the others
@pytest.mark.parametrize("rows,grid,shift,expected", [
    (12, 9, 0, "verified"), (12, 9, 1, "race"), (16, 12, 0, "verified"), (16, 12, 1, "verified"),
    (20, 15, 0, "verified"), (20, 15, 1, "race"), (20, 10, 1, "verified")])
def test_a_group_swizzle_is_decided_as_the_detector_decides_it(rows, grid, shift, expected):
    x, y = np.zeros((rows, 12), np.float32), np.zeros((rows, 12), np.float32)
    args = (x, y, 2, shift)
    report = tilecheck.verify(gemm_swizzle, args, (grid, 1, 1))
    assert report.status == tilecheck.detect(gemm_swizzle, args, (grid, 1, 1)).status == expected, str(report)


@settings(max_examples=examples(300), deadline=None, derandomize=True)
@given(a=st.integers(0, 1000), b=st.integers(-3, 16), lo=st.sampled_from([None, -2, 0, 1, 3]))
def test_a_small_divisor_split_into_its_values_is_the_division(a, b, lo):
    import z3

    from tilecheck.verifier.model.ops import arith
    from tilecheck.verifier.model.values import IntTile

    x, y = z3.Int("x"), z3.Int("y")
    hi = 16
    if lo is not None and b < lo:
        return  # outside the divisor's bounds: no execution has it
    dividend, divisor = IntTile(x, bounds=(0, None)), IntTile(y, bounds=(lo, hi))
    general = z3.Int("general")  # what the term is where the divisor is not positive
    quotient = arith._by_divisor(dividend, divisor, lambda k: x / k, general)
    remainder = arith._by_divisor(dividend, divisor, lambda k: x % k, general)
    at = [(x, z3.IntVal(a)), (y, z3.IntVal(b))]
    q, r = (z3.simplify(z3.substitute(t, *at)) for t in (quotient, remainder))
    if b >= 1:
        assert (q.as_long(), r.as_long()) == (a // b, a % b)
    else:
        assert z3.eq(q, general) and z3.eq(r, general)


@ct.kernel
def strided_tiles(x, y, ITERS: ct.Constant[int]):
    # a counter carried across iterations, stepped by the grid (a persistent kernel's tile index)
    t = ct.bid(0)
    n = ct.num_tiles(y, axis=0, shape=(4,))
    for i in range(ITERS):
        ct.store(y, index=(t % n,), tile=ct.load(x, index=(t % n,), shape=(4,)))
        t += ct.num_blocks(0)


def test_a_counter_carried_by_a_grid_stride_is_never_negative():
    x, y = np.zeros(16, np.float32), np.zeros(16, np.float32)
    module, _ = module_for(strided_tiles, (x, y, 2))
    with smt.own_context():
        fp = execute(module)
        (store,) = [a for a in fp.accesses if a.writes]
        kinds = [k for c in store.coords for k in _nodes(c)]
        assert kinds.count("ite") <= 1, kinds  # t % n guarded for n == 0 only
    for grid, expected in (((2, 1, 1), "verified"), ((3, 1, 1), "race")):  # 3 blocks: 1 + 3 wraps to 0
        report = tilecheck.verify(strided_tiles, (x, y, 2), grid)
        assert report.status == tilecheck.detect(strided_tiles, (x, y, 2), grid).status == expected, str(report)
