"""Triton constructs real libraries use that have no Tile IR op of their own: libdevice's and
``tl.math``'s erf (lowered to Tile IR arithmetic), correctly rounded division, integer powers, tiles
of pointers chosen per lane (``tl.where`` between pointers), and a pointer tested at run time."""
import math

import numpy as np
import pytest

triton = pytest.importorskip("triton")
tl = pytest.importorskip("triton.language")
libdevice = pytest.importorskip("triton.language.extra.libdevice")

import tilecheck as tc  # noqa: E402


@triton.jit
def gelu(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(y_ptr + offs, 0.5 * x * (1 + tl.math.erf(x * 0.7071067811865476)), mask=m)


@triton.jit
def library(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(y_ptr + offs, libdevice.erf(x) + libdevice.pow(x, 3) + libdevice.div_rn(x, 3.0), mask=m)


@triton.jit
def mirrored(a_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    src = tl.where(offs % 2 == 0, a_ptr + offs, a_ptr + (n - 1 - offs))
    tl.store(y_ptr + offs, tl.load(src, mask=m), mask=m)


@triton.jit
def concatenated(a_ptr, b_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < 2 * n
    src = tl.where(offs < n, a_ptr + offs, b_ptr + (offs - n))
    tl.store(y_ptr + offs, tl.load(src, mask=m), mask=m)


@triton.jit
def chosen_in_a_branch(a_ptr, b_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # FlagGems' cat: each program's input array chosen in a branch on its id
    if tl.program_id(1) == 0:
        in_ptr = a_ptr
    else:
        in_ptr = b_ptr
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + tl.program_id(1) * n + offs, tl.load(in_ptr + offs, mask=offs < n), mask=offs < n)


@triton.jit
def chosen_in_a_branch_overlapping(a_ptr, b_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # racy: the second array's programs write where the first's do
    if tl.program_id(1) == 0:
        in_ptr = a_ptr
    else:
        in_ptr = b_ptr
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(in_ptr + offs, mask=offs < n), mask=offs < n)


@triton.jit
def optional_bias(x_ptr, b_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    if b_ptr:  # a pointer tested at run time (ptr_to_int): batch norm's, layer norm backward's form
        x += tl.load(b_ptr + offs, mask=m)
    tl.store(y_ptr + offs, x, mask=m)


@triton.jit
def row_argmax(x_ptr, v_ptr, i_ptr, N: tl.constexpr):
    row = tl.program_id(0)
    x = tl.load(x_ptr + row * N + tl.arange(0, N))
    v, i = tl.max(x, axis=0, return_indices=True)  # a tt.reduce of two tensors: value and index
    tl.store(v_ptr + row, v)
    tl.store(i_ptr + row, i)


@triton.jit
def _welford(mean_a, m2_a, n_a, mean_b, m2_b, n_b):
    n = n_a + n_b
    delta = mean_b - mean_a
    w = tl.where(n == 0, 0.0, n_b / tl.where(n == 0, 1.0, n))
    return mean_a + delta * w, m2_a + m2_b + delta * delta * n_a * w, n


@triton.jit
def row_variance(x_ptr, out_ptr, N: tl.constexpr):
    row = tl.program_id(0)
    x = tl.load(x_ptr + row * N + tl.arange(0, N))
    mean, m2, n = tl.reduce((x, tl.zeros_like(x), tl.full(x.shape, 1.0, tl.float32)), 0, _welford)
    tl.store(out_ptr + row, m2 / n)


X = np.linspace(-4, 4, 100).astype(np.float32)


@pytest.mark.parametrize("kernel, reference", [
    (gelu, lambda v: 0.5 * v * (1 + math.erf(v / math.sqrt(2)))),
    (library, lambda v: math.erf(v) + v ** 3 + v / 3),
])
def test_library_functions_are_verified_and_computed_as_the_gpu_would(kernel, reference):
    assert tc.verify(kernel, (X, np.zeros_like(X), 100, 32), grid=(4,), cache=False).status == "verified"
    y = np.zeros_like(X)
    tc.launch((4,), kernel, (X.copy(), y, 100, 32))
    expected = np.array([reference(v) for v in X.astype(float)])
    assert np.allclose(y, expected, rtol=2e-6, atol=5e-7), np.abs(y - expected).max()


def test_a_tile_of_pointers_into_one_array_is_modelled():
    y = np.zeros_like(X)
    assert tc.verify(mirrored, (X, y, 100, 32), grid=(4,), cache=False).status == "verified"
    tc.launch((4,), mirrored, (X, y, 100, 32))
    i = np.arange(100)
    assert np.array_equal(y, np.where(i % 2 == 0, X, X[99 - i]))


def test_a_tile_of_pointers_into_two_arrays_is_one_access_per_array():
    # each lane's array is known to both models: the static one records an access per array, each
    # active where its lanes point there; the interpreter follows each lane into its array
    args = (X[:50].copy(), X[50:].copy(), np.zeros_like(X), 50, 32)
    report = tc.verify(concatenated, args, grid=(4,), cache=False)
    assert report.status == "verified" and report.level.startswith("every shape"), report
    assert tc.detect(concatenated, args, grid=(4,)).status == "verified"
    tc.launch((4,), concatenated, args)
    assert np.array_equal(args[2], X)
    for kernel, expected in ((chosen_in_a_branch, "verified"), (chosen_in_a_branch_overlapping, "race")):
        args = (X[:50].copy(), X[50:].copy(), np.zeros_like(X), 50, 32)
        report = tc.verify(kernel, args, grid=(2, 2), cache=False)
        assert report.status == expected, report
        assert tc.detect(kernel, args, grid=(2, 2)).status == expected
        if expected == "race":  # the witness names the lanes of both arrays' programs
            assert report.races[0].witness.array == "y_ptr"


def test_a_pointer_tested_at_run_time_is_an_address_never_null():
    y = np.zeros_like(X)
    args = (X, np.ones_like(X), y, 100, 32)
    assert tc.verify(optional_bias, args, grid=(4,), cache=False).status == "verified"
    assert tc.detect(optional_bias, args, grid=(4,)).status == "verified"
    tc.launch((4,), optional_bias, args)
    assert np.array_equal(y, X + 1)


def test_reductions_of_several_tensors_together_are_modelled():
    rows = np.random.default_rng(0).integers(0, 5, (4, 32)).astype(np.float32)  # ties: the first index wins
    values, indices = np.zeros(4, np.float32), np.zeros(4, np.int32)
    args = (rows, values, indices, 32)
    assert tc.verify(row_argmax, args, grid=(4,), cache=False).status == "verified"
    tc.launch((4,), row_argmax, args)
    assert np.array_equal(values, rows.max(1)) and np.array_equal(indices, rows.argmax(1))
    out = np.zeros(4, np.float32)
    assert tc.verify(row_variance, (rows, out, 32), grid=(4,), cache=False).status == "verified"
    tc.launch((4,), row_variance, (rows, out, 32))
    assert np.allclose(out, rows.var(1), rtol=1e-5)
