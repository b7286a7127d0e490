"""Lanes every access masks off decide nothing (FlagGems' cat on an empty input): index arithmetic
that wraps there, or divides by zero there, is not a defect, in the verifier (the overflow
obligation holds only where an access using the lane is active) or on the interpreter (a division
by zero leaves the lane unspecified, as on a GPU; the run stops only if the lane is used)."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

triton = pytest.importorskip("triton")
tl = pytest.importorskip("triton.language")

import tilecheck as tc  # noqa: E402

from tests.tiers import examples  # noqa: E402


@triton.jit
def cat_copy(out_ptr, in_ptr, dim_size_in, dim_size_out, dim_prod_post, dim_offset, total,
             BLOCK: tl.constexpr):
    # FlagGems' cat_copy_func_kernel (cat.py): one input's elements to their place in the output
    idx = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = idx < total
    pre = idx // (dim_size_in * dim_prod_post)
    d = (idx // dim_prod_post) % dim_size_in
    post = idx % dim_prod_post
    out_idx = pre * dim_size_out * dim_prod_post + (d + dim_offset) * dim_prod_post + post
    tl.store(out_ptr + out_idx, tl.load(in_ptr + idx, mask=mask), mask=mask)


@triton.jit
def scaled_scatter(out_ptr, n, scale, shift, BLOCK: tl.constexpr):
    # i32 index arithmetic that wraps for large lanes; the mask keeps lanes below n
    idx = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    where = idx * scale + shift
    tl.store(out_ptr + where, idx.to(tl.float32), mask=idx < n)


@triton.jit
def mask_from_wrapping(out_ptr, n, scale, BLOCK: tl.constexpr):
    # the wrapping value decides the mask itself: every lane's overflow matters
    idx = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + idx, idx.to(tl.float32), mask=idx * scale < n)


@triton.jit
def branch_on_quotient(out_ptr, d, BLOCK: tl.constexpr):
    q = tl.program_id(0) // d
    if q < 1:
        tl.store(out_ptr + tl.arange(0, BLOCK), tl.zeros((BLOCK,), tl.float32))


def _cat_args(size_in, total):
    return (np.zeros(8, np.float32), np.ones(max(total, 1), np.float32), size_in, 2, 4, 0, total, 1024)


def test_cat_of_an_empty_input_is_verified_and_runs():
    args = _cat_args(0, 0)  # dim_size_in == 0: the lanes divide by zero and wrap, every one masked off
    report = tc.verify(cat_copy, args, (1,), cache=False)
    assert report.status == "verified", report
    assert tc.detect(cat_copy, args, (1,)).status == "verified"
    tc.launch((1,), cat_copy, args)


def test_a_division_by_zero_in_an_active_lane_stops_the_interpreter():
    report = tc.detect(cat_copy, _cat_args(0, 1), (1,))  # lane 0 stores through the quotient
    assert report.status == "unknown"
    assert "unspecified" in report.reasons[0] and "division by zero" in report.reasons[0]
    assert tc.verify(cat_copy, _cat_args(0, 1), (1,), cache=False).status != "verified"


def test_a_quotient_by_zero_deciding_a_branch_stops_the_interpreter():
    report = tc.detect(branch_on_quotient, (np.zeros(16, np.float32), 0, 16), (2,))
    assert report.status == "unknown" and "unspecified" in report.reasons[0]


def test_a_wrap_in_lanes_that_decide_the_mask_is_still_an_overflow():
    report = tc.verify(mask_from_wrapping, (np.zeros(1024, np.float32), 16, 1 << 22, 1024), (1,), cache=False)
    assert any(f.kind == "overflow" for f in report.findings), report


@settings(max_examples=examples(150, 15), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(n=st.integers(0, 256), scale=st.sampled_from([1, 2, 3, 1 << 20, 1 << 24, (1 << 31) - 1, -(1 << 30)]),
       shift=st.sampled_from([0, 5, 1 << 30, -(1 << 31)]), blocks=st.integers(1, 2))
def test_masked_guard_agrees_with_the_wrapped_run(n, scale, shift, blocks):
    """Whatever lanes wrap, ``verified`` means the interpreter's own i32 arithmetic (which wraps as a
    GPU's does) touches only in-bounds, distinct elements; and a wrap in an active lane is never
    verified."""
    out = np.zeros(256 * abs(scale) + abs(shift) + 1 if abs(scale) < 4 and abs(shift) < 8 else 64, np.float32)
    args = (out, n, scale, shift, 128)
    report = tc.verify(scaled_scatter, args, (blocks,), cache=False)
    lanes = np.arange(blocks * 128, dtype=np.int64)
    active = lanes[lanes < n]
    exact = active * scale + shift
    wraps = bool(((exact < -(1 << 31)) | (exact >= 1 << 31)).any())
    if wraps:
        assert report.status != "verified", report
    if report.status == "verified":
        assert tc.detect(scaled_scatter, args, (blocks,)).status == "verified"
