"""The differential runner and schedules: racy kernels vary, race-free ones never do."""
import json
import struct
import sys

import cuda.tile as ct
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tilecheck
from corpus.kernels import atomics, attention, elementwise, inplace, norms
from tests.tiers import examples

ConstInt = ct.Constant[int]


@ct.kernel
def store_zero_times_inf(x, y, T: ConstInt):
    t = ct.load(x, index=(ct.bid(0),), shape=(T,))
    ct.store(y, index=(ct.bid(0),), tile=t * ct.rsqrt(t))  # x = 0: 0 * inf, the canonical NaN


@ct.kernel
def scatter_even(x, y, T: ConstInt):
    # y[2 * i] = x[i]: the odd half of y is never written
    t = ct.load(x, index=(ct.bid(0),), shape=(T,))
    ct.scatter(y, ct.arange(T, dtype=ct.int32) * 2 + ct.bid(0) * 2 * T, t)


SHAPES = [(1, 8, 128, 64, 32, 64), (2, 16, 256, 128, 64, 128)]


# slow with the large shape: the small one checks the same on less data
@pytest.mark.parametrize("shape", [pytest.param(SHAPES[0], id="small"),
                                   pytest.param(SHAPES[1], id="large", marks=pytest.mark.slow)])
def test_head_permutation_race_is_nondeterministic_on_cpu(shape):
    B, H = shape[:2]
    args = attention._perm_args(*shape)
    report = tilecheck.run_repeated(attention.head_permute_swapped, args, (B * H, H, 1), runs=6)
    dst = report.arrays["dst"]
    assert not report.deterministic and dst.distinct_outcomes > 1
    assert 0.1 < report.fraction_differing <= 1.0
    assert dst.unwritten > 0  # the swapped index also leaves tiles unwritten (and drops some out of bounds)
    assert "NONDETERMINISTIC" in str(report)
    paper = tilecheck.run_repeated(attention.head_permute_paper_fix, args, (B * H, H, 1), runs=6)
    assert not paper.deterministic and paper.arrays["dst"].unwritten == 0


def test_race_free_twin_is_bit_identical_over_50_schedules():
    args = attention._perm_args()
    report = tilecheck.run_repeated(attention.head_permute_safe, args, (8, 1, 1), runs=50)
    assert report.deterministic and report.fraction_differing == 0.0
    assert report.arrays["dst"].unwritten == 0
    np.testing.assert_array_equal(report.arrays["dst"].differing_mask, 0)


@settings(max_examples=examples(25), deadline=None, derandomize=True)
@given(seed=st.integers(0, 10**6))
def test_race_free_kernels_are_identical_under_any_schedule(seed):
    """Property: for verified kernels, adversarial schedules never change a bit."""
    for kernel in (norms.layer_norm_bwd, elementwise.branch_on_bid, inplace.inplace_scale):
        case = tilecheck.cases_of(kernel)[0]
        report = tilecheck.run_repeated(kernel, case.make_args(), case.grid, runs=2, seed=seed)
        assert report.deterministic, (kernel, seed, str(report))


@settings(max_examples=examples(10), deadline=None, derandomize=True)
@given(seed=st.integers(0, 10**6))
def test_racy_kernel_differs_under_some_schedules(seed):
    case = tilecheck.cases_of(inplace.inplace_halo)[0]
    args = (np.arange(1024, dtype=np.float32), 128)
    report = tilecheck.run_repeated(inplace.inplace_halo, args, case.grid, runs=8, seed=seed)
    assert not report.deterministic


def test_float_atomics_differ_only_by_rounding():
    x = np.random.default_rng(1).standard_normal(4096).astype(np.float32) * 1e3
    report = tilecheck.run_repeated(atomics.sum_atomic_float, (x, np.zeros(1, np.float32), 128), (32,), runs=12)
    out = report.arrays["out"]
    assert out.max_abs_difference is not None and out.max_abs_difference < 1.0


def test_report_json():
    args = attention._perm_args()
    report = tilecheck.run_repeated(attention.head_permute_swapped, args, (8, 8, 1), runs=4)
    data = json.loads(report.to_json())
    assert data["deterministic"] is False and data["arrays"]["dst"]["shape"] == [1, 8, 128, 64]
    assert set(data["arrays"]["dst"]) >= {"runs", "distinct_outcomes", "fraction_differing_max",
                                          "fraction_differing_mean", "first_differing", "unwritten",
                                          "max_abs_difference"}
    assert data["constant_inputs"] == []


def _finding(array, element, first, second):
    from tilecheck.ir.loc import Loc
    from tilecheck.report import Finding, Side, Witness

    def side(block):
        return Side("store_view_tko", Loc.unknown(), block, {}, (0,), "write")

    witness = Witness(array, element, None, side(first), side(second) if second else None, (8, 8, 1), {})
    return Finding("write-write", "two blocks write one element", Loc.unknown(), witness=witness)


def test_heatmap_is_a_figure_with_a_panel_per_batch_and_head(tmp_path):
    args = attention._perm_args()
    report = tilecheck.run_repeated(attention.head_permute_swapped, args, (8, 8, 1), runs=4)
    path = tmp_path / "heat.png"
    races = [_finding("dst", (0, 0, 0, 0), (0, 0, 0), (1, 0, 0)), _finding("dst", (0, 7, 127, 63), (2, 0, 0), (3, 0, 0))]
    summary = report.save_heatmap(str(path), races=races)
    raw = path.read_bytes()
    assert raw[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", raw[16:24])
    assert width >= 800 and height >= 300
    (dst,) = summary.arrays
    assert (summary.panels, summary.total_panels) == (8, 8)  # dst (1, 8, 128, 64): one panel per (b, h)
    assert dst.shown == tuple((0, h) for h in range(8)) and dst.pooled == (1, 1)
    assert (summary.marked, summary.unplaced) == (2, 0)
    assert report.save_heatmap(str(tmp_path / "plain.png")).marked == 0  # races=None still draws


# repeated runs of a larger launch; the fast tier draws a heatmap with a panel per batch and head
# (test_heatmap_is_a_figure_with_a_panel_per_batch_and_head)
@pytest.mark.slow
def test_heatmap_caps_panels_and_lays_out_each_array_by_its_dimensions(tmp_path):
    from tilecheck.runtime import ArrayDiff, NondeterminismReport

    def diff(name, shape, differs):
        mask = np.zeros(shape, np.uint8)
        mask.reshape(-1)[differs] = 1
        return ArrayDiff(name, shape, 4, 2, 0.1, 0.1, [], 0, 1.0, True, mask)

    arrays = {"out": diff("out", (2, 40, 8, 4), [0, 32 * 79 + 5]),  # differs on panels (0, 0) and (1, 39)
              "lse": diff("lse", (5000,), [4999]), "acc": diff("acc", (600, 3), [])}
    report = NondeterminismReport("k", (4, 1, 1), 4, "cpu", 0, arrays, 0.1, ["q"])
    races = [_finding("out", (1, 38, 0, 0), (0, 0, 0), (1, 0, 0)), _finding("lse", (4999,), (2, 0, 0), None),
             _finding("nope", (0,), (0, 0, 0), (1, 0, 0))]
    summary = report.save_heatmap(str(tmp_path / "h.png"), races=races)
    out, lse, acc = summary.arrays
    assert (out.total, len(out.shown), lse.total, acc.total) == (80, 62, 1, 1)  # 64 panels in all
    assert {(0, 0), (1, 38), (1, 39)} <= set(out.shown)  # the witness's and the differing panels are kept
    assert lse.pooled == (1, 20) and acc.pooled == (3, 1)
    assert (summary.marked, summary.unplaced) == (2, 1)


def test_heatmap_without_matplotlib_says_how_to_get_it(tmp_path, monkeypatch, capsys):
    from tilecheck.cli import main

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib now raises ImportError
    report = tilecheck.run_repeated(attention.head_permute_safe, attention._perm_args(), (8, 1, 1), runs=1)
    with pytest.raises(tilecheck.TilecheckError, match=r"pip install 'tilecheck\[plot\]'"):
        report.save_heatmap(str(tmp_path / "h.png"))
    target = f"{attention.__file__}::head_permute_safe"
    assert main(["run", target, "--repeat", "1", "--heatmap", str(tmp_path / "h.png")]) == 3
    assert "the heatmap needs matplotlib" in capsys.readouterr().err
    assert not (tmp_path / "h.png").exists()


def test_sentinel_marks_unwritten_elements():
    x = np.ones(1024, np.float32)
    out = np.zeros(2048, np.float32)  # the kernel only writes the first 1024
    report = tilecheck.run_repeated(elementwise.copy_2d, (x.reshape(32, 32), out.reshape(64, 32), 32, 32),
                                    (1, 1, 1), runs=2)
    assert report.arrays["dst"].unwritten == 1024 and report.deterministic


def test_runs_must_be_positive():
    with pytest.raises(tilecheck.TilecheckError):
        tilecheck.run_repeated(elementwise.vector_add, tilecheck.cases_of(elementwise.vector_add)[0].make_args(),
                               (64,), runs=0)


def test_outcomes_compare_raw_byte_elements_bitwise():
    from tilecheck.runtime.outcomes import Outcomes

    ref = np.arange(8, dtype=np.uint16).view("V2")  # how bfloat16 device outputs come back
    outcome = Outcomes("y", ref, sentinel=False)
    changed = ref.copy()
    changed.view(np.uint16)[3] = 99
    outcome.add(changed)
    outcome.add(ref.copy())
    result = outcome.result()
    assert (result.distinct_outcomes, result.first_differing, result.fraction_differing_max) == (2, [(3,)], 0.125)


def test_bfloat16_outputs_get_a_nan_sentinel_and_fresh_copies():
    import ml_dtypes

    from corpus.kernels import attention as A

    src, dst, H, BM, BD = A._perm_args()
    bf = ml_dtypes.bfloat16
    out = dst.astype(bf)
    report = tilecheck.run_repeated(A.head_permute_swapped, (src.astype(bf), out, H, BM, BD), (8, 8, 1), runs=6)
    d = report.arrays["dst"]
    assert not report.deterministic and d.unwritten == 32768 and d.max_abs_difference > 0
    assert not out.astype(np.float32).any()  # runs work on copies


def test_a_stored_nan_is_written_not_unwritten():
    """Sentinel collision: 0 * inf stored by the kernel is the canonical NaN, not the sentinel."""
    x = np.zeros(256, np.float32)
    report = tilecheck.run_repeated(store_zero_times_inf, (x, np.zeros(256, np.float32), 64), (4,), runs=3)
    assert report.arrays["y"].unwritten == 0 and report.deterministic


# fp8 e4m3fn, whose only NaNs (0x7f, 0xff) are both what arithmetic makes, is the case the
# second-sentinel run covers.
NARROW = [np.float32, np.float16, np.float64, ml_dtypes.bfloat16, ml_dtypes.float8_e5m2, ml_dtypes.float8_e4m3fn]


@pytest.mark.parametrize("dtype", NARROW, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("sign", [1.0, -1.0], ids=["nan", "-nan"])
def test_unwritten_is_exactly_the_unwritten_half_whatever_nan_is_stored(dtype, sign):
    """The kernel copies NaN (both signs: every NaN fp8 e4m3fn has) into the even half of y; only
    the odd half reads as never written."""
    x = np.full(128, sign * np.nan, np.float32).astype(dtype)
    report = tilecheck.run_repeated(scatter_even, (x, np.zeros(256, dtype), 32), (4,), runs=2)
    y = report.arrays["y"]
    assert y.unwritten == 128 and report.deterministic
    np.testing.assert_array_equal(y.differing_mask, np.tile([0, 2], 128))


GPU_NAN = {"float16": 0x7FFF, "float32": 0x7FFFFFFF, "float64": 0x7FFFFFFFFFFFFFFF, "bfloat16": 0x7FFF,
           "float8_e5m2": 0x7F}


def test_sentinels_are_nans_arithmetic_does_not_make():
    from tilecheck.runtime.outcomes import sentinel_bits, sentinel_value

    with np.errstate(all="ignore"):
        made = np.array([0.0, -0.0], np.float64) * np.inf
    for dtype in (np.float16, np.float32, np.float64, ml_dtypes.bfloat16, ml_dtypes.float8_e5m2):
        dtype = np.dtype(dtype)
        words = f"u{dtype.itemsize}"
        bits = sentinel_bits(dtype)
        assert np.isnan(np.array(bits, words).view(dtype).astype(np.float32))
        assert bits not in made.astype(dtype).view(words) and bits not in (-made).astype(dtype).view(words)
        assert bits != GPU_NAN[dtype.name]  # the NaN NVIDIA GPUs compute
        assert int(np.full(3, sentinel_value(dtype), dtype).view(words)[1]) == bits  # the device path fills so
    assert sentinel_bits(np.dtype(np.int32)) != sentinel_bits(np.dtype(np.int32), second=True)


def test_constant_inputs_are_named_in_the_report():
    """Zeros hide races: inplace_halo on all-zero data is deterministic, and the report says why."""
    case = tilecheck.cases_of(inplace.inplace_halo)[0]
    zeros = tilecheck.run_repeated(inplace.inplace_halo, (np.zeros(1024, np.float32), 128), case.grid, runs=4)
    assert zeros.deterministic and zeros.constant_inputs == ["x"]
    assert "note: input x is constant (every element equal)" in str(zeros)
    assert "tilecheck detect does not depend on values" in str(zeros)
    assert json.loads(zeros.to_json())["constant_inputs"] == ["x"]
    ramp = tilecheck.run_repeated(inplace.inplace_halo, (np.arange(1024, dtype=np.float32), 128), case.grid, runs=4)
    assert ramp.constant_inputs == [] and "constant" not in str(ramp) and not ramp.deterministic
    # two inputs, a pure output excluded (its zeros are the caller's placeholder, never read)
    add = tilecheck.run_repeated(elementwise.vector_add, (np.ones(256, np.float32), np.ones(256, np.float32),
                                                          np.zeros(256, np.float32), 64), (4,), runs=1)
    assert add.constant_inputs == ["a", "b"] and "note: inputs a, b are constant" in str(add)


def test_two_views_of_one_buffer_race_in_repeated_runs_as_on_a_gpu():
    # copy_2d from a buffer into its own transpose: block (i, j) reads tile (i, j) and writes tile
    # (j, i), which block (j, i) reads. Each run copies the arguments keeping their overlap, so the
    # race shows (separate copies made every run bit-identical); the caller's buffer is untouched
    buf = np.arange(64 * 64, dtype=np.float32).reshape(64, 64)
    before = buf.copy()
    args = (buf, buf.T, 16, 16)
    assert tilecheck.verify(elementwise.copy_2d, args, (4, 4, 1), cache=False).status == "race"
    report = tilecheck.run_repeated(elementwise.copy_2d, args, (4, 4, 1), runs=8, backend="cpu")
    assert not report.deterministic
    assert np.array_equal(buf, before)
    # disjoint arrays: no overlap kept where there is none
    clean = tilecheck.run_repeated(elementwise.copy_2d, (buf, np.zeros_like(buf), 16, 16), (4, 4, 1), runs=4,
                                   backend="cpu")
    assert clean.deterministic
