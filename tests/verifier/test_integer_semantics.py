"""The symbolic integer ops against numpy's two's-complement arithmetic (issue 12 item 10): bitwise
and/or/xor (arithmetic form for a constant with few set bits, bit-vectors otherwise), unsigned
division, remainder, logical shift right, and min/max under the IR's signedness."""
import cuda.tile as ct
import numpy as np
import pytest
import z3

import tilecheck
from hypothesis import given, settings
from hypothesis import strategies as st

from tilecheck.verifier.model.ops import arith

from tests.tiers import examples

I32 = st.integers(-(1 << 31), (1 << 31) - 1)


def _value(term) -> int:
    return z3.simplify(term).as_long()


def _wrap(v: int) -> int:
    return int(np.array(v & 0xFFFFFFFF, np.uint32).view(np.int32))


@settings(max_examples=examples(300), deadline=None, derandomize=True)
@given(x=I32, c=st.sampled_from([0, 1, 2, 3, 5, 8, 255, 1 << 30, -1, -2, (1 << 31) - 1, 12345]),
       name=st.sampled_from(["andi", "ori", "xori"]))
def test_bitwise_with_a_constant(x, c, name):
    expected = {"andi": np.bitwise_and, "ori": np.bitwise_or, "xori": np.bitwise_xor}[name](
        np.int32(x), np.int32(c))
    bits = 32
    if (c % (1 << bits)).bit_count() <= arith.FEW_BITS:
        term = arith._with_constant(name, z3.IntVal(x), c % (1 << bits), bits)
    else:
        fn = {"andi": lambda a, b: a & b, "ori": lambda a, b: a | b, "xori": lambda a, b: a ^ b}[name]
        term = arith._bitvector(fn, z3.IntVal(x), z3.IntVal(c), bits)
    assert _value(term) == int(expected)


@settings(max_examples=examples(200), deadline=None, derandomize=True)
@given(x=I32, y=I32)
def test_bitwise_of_two_values_on_bit_patterns(x, y):
    for fn, ref in ((lambda a, b: a ^ b, np.bitwise_xor), (lambda a, b: a | b, np.bitwise_or),
                    (lambda a, b: a & b, np.bitwise_and)):
        assert _value(arith._bitvector(fn, z3.IntVal(x), z3.IntVal(y), 32)) == int(ref(np.int32(x), np.int32(y)))


@settings(max_examples=examples(200), deadline=None, derandomize=True)
@given(x=I32, y=I32.filter(lambda v: v != 0), k=st.integers(0, 31))
def test_unsigned_division_remainder_and_shift(x, y, k):
    ux, uy = np.uint32(x & 0xFFFFFFFF), np.uint32(y & 0xFFFFFFFF)
    q = arith.as_signed(arith.floordiv(arith.as_unsigned(z3.IntVal(x), 32), arith.as_unsigned(z3.IntVal(y), 32)), 32)
    assert _value(q) == _wrap(int(ux // uy))
    a, b = arith.as_unsigned(z3.IntVal(x), 32), arith.as_unsigned(z3.IntVal(y), 32)
    assert _value(arith.as_signed(a - b * arith.floordiv(a, b), 32)) == _wrap(int(ux % uy))
    shifted = arith.as_signed(arith.floordiv(arith.as_unsigned(z3.IntVal(x), 32), z3.IntVal(1 << k)), 32)
    assert _value(shifted) == _wrap(int(ux >> np.uint32(k)))
    less = arith._unsigned_less(z3.IntVal(x), z3.IntVal(y), False)
    assert z3.is_true(z3.simplify(less)) == bool(ux < uy)


def test_a_truncation_that_wraps_an_index_is_an_overflow_finding():
    from tests.interp import kernels as K

    args = (np.arange(8 * 4, dtype=np.float32), np.zeros(1024 * 4, np.float32), 4)
    report = tilecheck.verify(K.truncated_index, args, (8, 1, 1))
    assert report.status == "unknown", str(report)  # not the identity the model would otherwise take
    (finding,) = [f for f in report.findings if f.kind == "overflow"]
    assert "trunci computes 128 in block (2, 0, 0)" in finding.message
    assert tilecheck.detect(K.truncated_index, args, (8, 1, 1)).status == "race"
    assert tilecheck.verify(K.truncated_index, args, (2, 1, 1)).status == "verified"  # 0 and 64 fit


def test_an_unsigned_extension_is_the_bit_pattern():
    from tests.interp import kernels as K

    args = (np.arange(8 * 4, dtype=np.float32), np.zeros(8 * 4, np.float32), 4)
    report = tilecheck.verify(K.zero_extended_index, args, (8, 1, 1))
    # uint32(b - 4) is 2^32 - 4 + b for b < 4, which the truncation back to 32 bits wraps
    assert report.status == "unknown"
    assert any(f.kind == "overflow" and "4294967292" in f.message for f in report.findings)


BIG = 1 << 30


@ct.kernel
def _sum_in_a_for(x, y, off: int):
    # a loop-carried value: the loop's result is what its continue passes on
    r = ct.bid(0) + off
    for _ in range(2):
        r = r + BIG  # wraps when off >= 2^30
        r = r - BIG
    ct.store(y, index=(r - off,), tile=ct.load(x, index=(ct.bid(0),), shape=(4,)))


@ct.kernel
def _sum_in_an_if(x, y, off: int):
    # an if's result is what either branch yields
    b = ct.bid(0)
    if b > 0:
        r = b + off + BIG  # wraps when off >= 2^30
        r = r - BIG
    else:
        r = b + off
    ct.store(y, index=(r - off,), tile=ct.load(x, index=(b,), shape=(4,)))


@ct.kernel
def _sum_in_a_while(x, y, off: int):
    # a while loop's result is what its break passes on
    r = ct.bid(0) + off
    n = 0
    while n < 2:
        r = r + BIG  # wraps when off >= 2^30
        r = r - BIG
        n = n + 1
    ct.store(y, index=(r - off,), tile=ct.load(x, index=(ct.bid(0),), shape=(4,)))


@pytest.mark.parametrize("kernel", [_sum_in_a_for, _sum_in_an_if, _sum_in_a_while])
def test_arithmetic_inside_a_region_that_feeds_an_address_is_checked_for_overflow(kernel):
    # the value reaches the store through a for's, an if's or a while's result: the slice of ops
    # feeding an address follows region results into their bodies (it followed a for's result to
    # its initial value only); off = 2^30 wraps inside the region, off = 0 does not
    args = (np.arange(4 * 4, dtype=np.float32), np.zeros(4 * 4, np.float32))
    report = tilecheck.verify(kernel, (*args, BIG), (4, 1, 1))
    assert report.status != "verified" and any(f.kind == "overflow" for f in report.findings), str(report)
    assert tilecheck.verify(kernel, (*args, 0), (4, 1, 1)).status == "verified"
