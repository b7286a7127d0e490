"""The differential runner and schedules: racy kernels vary, race-free ones never do."""
import json
import struct
import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tilecheck
from corpus.kernels import atomics, attention, elementwise, inplace, norms

SHAPES = [(1, 8, 128, 64, 32, 64), (2, 16, 256, 128, 64, 128)]


@pytest.mark.parametrize("shape", SHAPES, ids=["small", "large"])
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


@settings(max_examples=25, deadline=None, derandomize=True)
@given(seed=st.integers(0, 10**6))
def test_race_free_kernels_are_identical_under_any_schedule(seed):
    """Property: for verified kernels, adversarial schedules never change a bit."""
    for kernel in (norms.layer_norm_bwd, elementwise.branch_on_bid, inplace.inplace_scale):
        case = tilecheck.cases_of(kernel)[0]
        report = tilecheck.run_repeated(kernel, case.make_args(), case.grid, runs=2, seed=seed)
        assert report.deterministic, (kernel, seed, str(report))


@settings(max_examples=10, deadline=None, derandomize=True)
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


def test_report_json_and_heatmap(tmp_path):
    args = attention._perm_args()
    report = tilecheck.run_repeated(attention.head_permute_swapped, args, (8, 8, 1), runs=4)
    data = json.loads(report.to_json())
    assert data["deterministic"] is False and data["arrays"]["dst"]["shape"] == [1, 8, 128, 64]
    assert set(data["arrays"]["dst"]) >= {"runs", "distinct_outcomes", "fraction_differing_max",
                                          "fraction_differing_mean", "first_differing", "unwritten",
                                          "max_abs_difference"}
    path = tmp_path / "heat.png"
    report.save_heatmap(str(path))
    raw = path.read_bytes()
    assert raw[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", raw[16:24])
    assert width >= 64 and height >= 8
    idat = raw.index(b"IDAT")
    length = struct.unpack(">I", raw[idat - 4:idat])[0]
    pixels = zlib.decompress(raw[idat + 4:idat + 4 + length])
    assert len(pixels) == height * (1 + 3 * width)


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
    from tilecheck.runtime.differential import Outcomes

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
