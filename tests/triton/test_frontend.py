"""The Triton frontend (issue 24): @triton.jit kernels -> TTIR -> the Tile IR model, checked by
verify, detect and the CPU interpreter like cuTile kernels. Skipped where Triton is not installed."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

triton = pytest.importorskip("triton")
tl = pytest.importorskip("triton.language")

import tilecheck as tc  # noqa: E402
from corpus.kernels import triton_kernels as tk  # noqa: E402
from tilecheck.errors import TilecheckError  # noqa: E402
from tilecheck.ir.triton import bind, is_triton_kernel  # noqa: E402
from tests.oracle_relation import check, load  # noqa: E402
from tests.oracle_triton import triton_cases  # noqa: E402
from tests.tiers import examples  # noqa: E402


@triton.jit
def _copy_rows(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=offs < n), mask=offs < n)


@triton.jit
def _histogram(x_ptr, out_ptr, BLOCK: tl.constexpr):
    tl.store(out_ptr + tl.arange(0, 8), tl.histogram(tl.load(x_ptr + tl.arange(0, BLOCK)), 8))


@triton.jit
def _gathered(x_ptr, idx_ptr, out_ptr, BLOCK: tl.constexpr):
    lanes = tl.arange(0, BLOCK)
    tl.store(out_ptr + lanes, tl.gather(tl.load(x_ptr + lanes), tl.load(idx_ptr + lanes), 0))


@triton.jit
def _argmax_rows(x_ptr, out_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    tl.store(out_ptr + pid, tl.argmax(tl.load(x_ptr + pid * BLOCK + tl.arange(0, BLOCK)), axis=0))


def _vec(n=100):
    return dict(src_ptr=np.arange(n, dtype=np.float32), dst_ptr=np.zeros(n, np.float32), n=n, BLOCK=32)


def test_a_triton_kernel_lowers_to_tile_ir_with_its_source_lines():
    bound = bind(_copy_rows, _vec())
    text = bound.module.to_text()
    for op in ("get_tile_block_id", "iota", "offset", "load_ptr_tko", "store_ptr_tko"):
        assert op in text
    store = next(op for op in bound.module.walk() if op.name == "store_ptr_tko")
    assert store.loc.file.endswith("test_frontend.py")
    assert "tl.store" in open(store.loc.file).read().splitlines()[store.loc.line - 1]
    # parameters in declaration order: two arrays, a scalar, a constexpr
    assert [(p.name, p.kind) for p in bound.module.params] == [
        ("src_ptr", "array"), ("dst_ptr", "array"), ("n", "scalar"), ("BLOCK", "constant")]


def test_arguments_by_name_or_in_order_give_the_same_module():
    a = bind(_copy_rows, _vec())
    v = _vec()
    b = bind(_copy_rows, (v["src_ptr"], v["dst_ptr"], v["n"], v["BLOCK"]))
    assert a.module.to_text() == b.module.to_text()


@pytest.mark.parametrize("args, message", [
    (dict(src_ptr=np.zeros(4, np.float32), n=4, BLOCK=4), "missing argument(s) dst_ptr"),
    (dict(src_ptr=np.zeros(4, np.float32), dst_ptr=np.zeros(4, np.float32), n=4, BLOCK=4, WIDTH=2),
     "no parameter 'WIDTH'"),
    ((1, 2, 3, 4, 5), "takes 4 parameters"),
    (dict(src_ptr="x", dst_ptr=np.zeros(4, np.float32), n=4, BLOCK=4), "unsupported argument type str"),
])
def test_wrong_arguments_are_named(args, message):
    with pytest.raises(TilecheckError, match=message.replace("(", r"\(").replace(")", r"\)")):
        tc.verify(_copy_rows, args, (1,))


def test_a_masked_copy_is_verified_for_every_shape_and_its_detector_agrees():
    report = tc.verify(_copy_rows, _vec(), (4,))
    assert report.status == "verified", report
    assert report.level.startswith("every shape")
    assert tc.detect(_copy_rows, _vec(), (4,)).status == "verified"


def test_the_head_permutation_race_in_triton_names_its_store_and_shows_on_the_interpreter():
    case = tc.cases_of(tk.heads_to_rows_swapped)[0]
    report = tc.verify(tk.heads_to_rows_swapped, case.make_args(), case.grid)
    assert report.status == "race"
    race = report.races[0]
    line = open(race.loc.file).read().splitlines()[race.loc.line - 1]
    assert "tl.store(out_ptr" in line and "h2" in line
    assert tc.detect(tk.heads_to_rows_swapped, case.make_args(), case.grid).status == "race"
    runs = tc.run_repeated(tk.heads_to_rows_swapped, case.make_args(), case.grid, runs=6, backend="cpu")
    assert not runs.deterministic
    clean = tc.run_repeated(tk.heads_to_rows, case.make_args(), case.grid, runs=4, backend="cpu")
    assert clean.deterministic


def test_the_interpreter_computes_what_triton_means():
    case = tc.cases_of(tk.matmul)[0]
    args = case.make_args()
    tc.launch(case.grid, tk.matmul, args, backend="cpu")
    np.testing.assert_allclose(args["c_ptr"], args["a_ptr"] @ args["b_ptr"], rtol=1e-4, atol=1e-4)
    args = tc.cases_of(tk.last_ticket_total)[0].make_args()
    tc.launch((8,), tk.last_ticket_total, args, backend="cpu")
    assert int(args["out_ptr"][0]) == sum(range(1, 9))


@pytest.mark.parametrize("kernel, args, op", [
    (_gathered, dict(x_ptr=np.zeros(16, np.float32), idx_ptr=np.zeros(16, np.int32), out_ptr=np.zeros(16, np.float32),
                     BLOCK=16), "tt.gather"),
])
def test_an_op_outside_the_map_is_unknown_and_named(kernel, args, op):
    report = tc.verify(kernel, args, (1,))
    assert report.status == "unknown"
    assert any(op in reason for reason in report.reasons), report.reasons


def test_a_histogram_is_verified_and_counts_as_triton_does():
    x = np.array([0, 3, 3, 7, 9, -1, 2, 3] * 2, np.int32)  # 9 and -1 fall in no bin
    args = dict(x_ptr=x, out_ptr=np.zeros(8, np.int32), BLOCK=16)
    assert tc.verify(_histogram, args, (1,)).status == "verified"
    tc.launch((1,), _histogram, args)
    assert list(args["out_ptr"]) == [2, 0, 2, 6, 0, 0, 0, 2]


def test_an_argmax_is_verified_and_runs():  # (a tt.reduce of two tensors: tests/triton/test_library_functions.py)
    x = np.random.default_rng(1).standard_normal(32).astype(np.float32)
    args = dict(x_ptr=x, out_ptr=np.zeros(2, np.int32), BLOCK=16)
    assert tc.verify(_argmax_rows, args, (2,)).status == "verified"
    tc.launch((2,), _argmax_rows, args)
    assert list(args["out_ptr"]) == [int(x[:16].argmax()), int(x[16:].argmax())]


def test_triton_kernels_are_found_by_the_collector_with_their_cases(tmp_path):
    from tilecheck.collect import collect

    entries = [e for e in collect(["corpus/kernels/triton_kernels.py"]) if e.kernel is not None]
    assert {e.name for e in entries} >= {"vector_add", "heads_to_rows_swapped", "matmul"}
    assert all(is_triton_kernel(e.kernel) and e.cases for e in entries)


@triton.jit
def _scale_in_place(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) * 2)


@triton.jit
def _shift_in_place(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs + BLOCK, tl.load(x_ptr + offs))


@pytest.mark.parametrize("kernel, status", [(_scale_in_place, "verified"), (_shift_in_place, "race")])
def test_arguments_that_share_memory_are_decided_element_by_element(kernel, status):
    # Triton, unlike cuTile, lets a launch pass one tensor twice (an in-place update): the static
    # model keeps arrays apart, so the exact detector decides such a launch
    x = np.arange(4 * 32 + 32, dtype=np.float32)
    report = tc.verify(kernel, dict(x_ptr=x, out_ptr=x, BLOCK=32), (4,))
    assert report.status == status, report
    assert report.level == "this launch's data"
    assert not any(f.kind == "aliasing" for f in report.findings)
    if status == "race":
        lines = [open(loc.file).read().splitlines()[loc.line - 1] for loc in (report.races[0].loc,
                                                                                 *report.races[0].related_locs)]
        assert any("tl.store" in line for line in lines) and any("tl.load" in line for line in lines)


@triton.jit
def _early_return_rows(x_ptr, out_ptr, skip_ptr, n_cols, BLOCK: tl.constexpr):
    # Liger's cross-entropy shape: a row whose label says "ignore" is zeroed and the program returns
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    if tl.load(skip_ptr + row) != 0:
        tl.store(out_ptr + row * n_cols + offs, tl.zeros((BLOCK,), tl.float32), mask=offs < n_cols)
        return
    x = tl.load(x_ptr + row * n_cols + offs, mask=offs < n_cols, other=0.0)
    tl.store(out_ptr + row * n_cols + offs, tl.math.rsqrt(x + 1.0), mask=offs < n_cols)


def test_an_early_return_and_a_libdevice_call_lower_and_run():
    x = np.arange(4 * 8, dtype=np.float32)
    args = dict(x_ptr=x, out_ptr=np.full(32, -1, np.float32), skip_ptr=np.array([0, 1, 0, 1], np.int32),
                n_cols=8, BLOCK=8)
    text = bind(_early_return_rows, args).module.to_text()
    assert "rsqrt" in text and "tt." not in text  # every op mapped: cf.cond_br, libdevice rsqrt
    report = tc.verify(_early_return_rows, args, (4,))
    assert report.status == "verified", report
    tc.launch((4,), _early_return_rows, args, backend="cpu")
    expected = 1 / np.sqrt(x.reshape(4, 8) + 1)
    expected[[1, 3]] = 0
    np.testing.assert_allclose(args["out_ptr"].reshape(4, 8), expected, rtol=1e-6)


TRITON_TESTS = '''
import numpy as np
import triton
import triton.language as tl


@triton.jit
def copy(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=offs < n), mask=offs < n)


@triton.heuristics({"BLOCK": lambda args: 32})
@triton.jit
def copy_halved(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(dst_ptr + (pid // 2) * BLOCK + tl.arange(0, BLOCK), tl.load(src_ptr + offs, mask=offs < n))


def test_a_triton_launch_runs_on_the_cpu():
    src, dst = np.arange(100, dtype=np.float32), np.zeros(100, np.float32)
    copy[(4,)](src, dst, 100, BLOCK=32)
    assert (dst == src).all()


@triton.jit
def copy_default(src_ptr, dst_ptr, n, BLOCK: tl.constexpr = 32):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=offs < n), mask=offs < n)


def test_triton_s_launch_protocol():
    src, dst = np.arange(100, dtype=np.float32), np.zeros(100, np.float32)
    # the grid function is given what Triton's binder gives: the constexpr's default too
    launched = copy_default[lambda meta: (triton.cdiv(meta["n"], meta["BLOCK"]),)](src, dst, 100)
    assert (dst == src).all()
    # what the launch returns launches again, every parameter in order (FlagGems' LibEntry)
    dst[:] = 0
    launched[(4,)](src, dst, 100, 32)
    assert (dst == src).all()
    dst[:] = 0
    launched[(4,)](src, dst, 100)  # the non-constexpr parameters only: BLOCK is compiled in
    assert (dst == src).all()
    # and it keeps only the constexprs: launch wrappers keep it for the session, and this launch's
    # arrays must not live as long
    import gc
    import weakref

    out = np.zeros(100, np.float32)
    kept, ref = copy_default[(4,)](src, out, 100), weakref.ref(out)
    del out
    gc.collect()
    assert ref() is None and kept is not None
    # a grid without blocks launches nothing, as in Triton
    dst[:] = 0
    copy_default[(0,)](src, dst, 100)
    assert not dst.any()


def test_a_grid_function_and_a_racy_launch():
    src, dst = np.arange(128, dtype=np.float32), np.zeros(128, np.float32)
    copy_halved[lambda meta: (triton.cdiv(meta["n"], meta["BLOCK"]),)](src, dst, 128)


@triton.autotune(configs=[triton.Config({"BLOCK": 16}), triton.Config({"BLOCK": 64})], key=["n"])
@triton.jit
def copy_tuned(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=offs < n), mask=offs < n)


@triton.autotune(configs=[triton.Config({"BLOCK": 32}), triton.Config({"BLOCK": 16})], key=["n"])
@triton.jit
def copy_tuned_halved(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    # BLOCK 32: blocks 2k and 2k+1 write the same tile; BLOCK 16 would be a plain copy
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(dst_ptr + (pid // 2) * BLOCK + tl.arange(0, BLOCK), tl.load(src_ptr + offs, mask=offs < n))


def test_an_autotuned_launch_without_a_gpu():
    src, dst = np.arange(100, dtype=np.float32), np.zeros(100, np.float32)
    copy_tuned[lambda meta: (triton.cdiv(meta["n"], meta["BLOCK"]),)](src, dst, 100)
    assert (dst == src).all()
    assert copy_tuned.best_config.kwargs == {"BLOCK": 16}  # the first that passes its check


class OwnRun(triton.runtime.Autotuner):
    # an autotuner subclass with its own run (FlagGems' LibTuner): it times through _bench / do_bench
    def run(self, *args, **kwargs):
        self.nargs = dict(zip(self.arg_names, args))
        timings = {config: self._bench(*args, config=config, **kwargs)[0] for config in self.configs}
        self.best_config = min(timings, key=timings.get)
        return self.fn.run(*args, **kwargs, **self.best_config.all_kwargs())


copy_own_tuner = triton.autotune(configs=[triton.Config({"BLOCK": 16}), triton.Config({"BLOCK": 64})],
                                 key=["n"])(triton.jit(copy.fn))
copy_own_tuner.__class__ = OwnRun


def test_an_autotuner_subclass_with_its_own_run():
    src, dst = np.arange(100, dtype=np.float32), np.zeros(100, np.float32)
    copy_own_tuner[lambda meta: (triton.cdiv(meta["n"], meta["BLOCK"]),)](src, dst, 100)
    assert (dst == src).all()


def test_an_autotuned_configuration_that_races():
    src, dst = np.arange(128, dtype=np.float32), np.zeros(128, np.float32)
    copy_tuned_halved[lambda meta: (triton.cdiv(meta["n"], meta["BLOCK"]),)](src, dst, 128)
'''


GATHERED = '''
import numpy as np
import triton
import triton.language as tl


@triton.jit
def gathered(x_ptr, idx_ptr, out_ptr, BLOCK: tl.constexpr):
    lanes = tl.arange(0, BLOCK)
    tl.store(out_ptr + lanes, tl.gather(tl.load(x_ptr + lanes), tl.load(idx_ptr + lanes), 0))


def test_gather():
    x, idx, out = np.ones(16, np.float32), np.zeros(16, np.int32), np.zeros(16, np.float32)
    gathered[(1,)](x, idx, out, BLOCK=16)
'''


def test_what_tilecheck_cannot_run_is_an_error_in_the_summary_not_a_refusal(pytester):
    # tl.gather: outside the map (unknown); allowed to launch, the interpreter cannot run it
    pytester.makepyfile(test_gather=GATHERED)
    result = pytester.runpytest_subprocess("--tilecheck-launches", "--tilecheck-backend=cpu",
                                           "--tilecheck-allow-unknown", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["gathered: 1 error, 1 unknown",
                                 "*tilecheck could not check it (not a verdict on the kernel)*tt.gather*"])


def test_the_plugin_checks_triton_launches_and_runs_them_on_the_cpu(pytester):
    pytester.makepyfile(test_triton_launches=TRITON_TESTS)
    result = pytester.runpytest_subprocess("--tilecheck-launches", "--tilecheck-backend=cpu")
    result.assert_outcomes(passed=4, failed=2)
    result.stdout.fnmatch_lines(["*RaceError*", "*write-write*"])
    # Triton's autotuner would time each configuration with a GPU driver: each is checked instead,
    # and the racy configuration fails its test even though another configuration is race-free
    result.stdout.fnmatch_lines(["copy_tuned: 3 verified, 1 autotuned",
                              "*without_a_gpu: 2 configuration(s) checked, 2 passed; chose BLOCK: 16,*"])
    result.stdout.fnmatch_lines(["*FAILED*test_an_autotuned_configuration_that_races*"])


@settings(max_examples=examples(300), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(case=triton_cases())
def test_oracle_a_verified_triton_launch_has_no_race(case, tmp_path_factory):
    """The oracle relation (tests/test_oracle.py) on generated Triton kernels: verify says verified
    => detect finds no race or out-of-bounds access at that launch."""
    outcome = check(load(case, tmp_path_factory.mktemp("triton_oracle")))
    assert not outcome.disagreement, f"{case.source}\n{outcome.describe()}"


@triton.jit
def _walk_then_store_end(x_ptr, out_ptr, ends_ptr, K, BLOCK: tl.constexpr):
    # the pointer advanced in the loop is used after it: its value there is the start plus every step
    pid = tl.program_id(0)
    p = x_ptr + pid * K + tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), tl.float32)
    step = BLOCK * 1
    for _ in range(0, K, BLOCK):
        acc += tl.load(p)
        p += step
    tl.store(out_ptr + pid * BLOCK + tl.arange(0, BLOCK), acc)
    tl.store(ends_ptr + pid * BLOCK + tl.arange(0, BLOCK), tl.load(p - BLOCK))


def test_pointers_a_loop_advances_are_lowered_in_closed_form():
    x = np.arange(3 * 64, dtype=np.float32)
    args = dict(x_ptr=x, out_ptr=np.zeros(3 * 16, np.float32), ends_ptr=np.zeros(3 * 16, np.float32), K=64,
                BLOCK=16)
    report = tc.verify(_walk_then_store_end, args, (3,))
    assert report.status == "verified" and report.level.startswith("every shape"), report
    tc.launch((3,), _walk_then_store_end, args, backend="cpu")
    np.testing.assert_allclose(args["out_ptr"].reshape(3, 16), x.reshape(3, 4, 16).sum(axis=1))
    np.testing.assert_allclose(args["ends_ptr"].reshape(3, 16), x.reshape(3, 4, 16)[:, -1])


@triton.jit
def _rows_by_descriptor(x_ptr, y_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr, STEP: tl.constexpr):
    pid = tl.program_id(0)
    dx = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    dy = tl.make_tensor_descriptor(y_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    dy.store([pid * STEP, 0], dx.load([pid * BM, 0]) + 1)


@pytest.mark.parametrize("step, status", [(16, "verified"), (8, "race")])
def test_tensor_descriptors_load_padded_and_store_clipped_blocks(step, status):
    # 40 rows in blocks of 16: the last block's rows past the tensor read as zeros and are not written
    args = dict(x_ptr=np.arange(40 * 16, dtype=np.float32).reshape(40, 16), y_ptr=np.zeros((40, 16), np.float32),
                M=40, N=16, BM=16, BN=16, STEP=step)
    assert tc.verify(_rows_by_descriptor, args, (3,)).status == status
    assert tc.detect(_rows_by_descriptor, args, (3,)).status == status
    if status == "verified":
        tc.launch((3,), _rows_by_descriptor, args, backend="cpu")
        np.testing.assert_array_equal(args["y_ptr"], args["x_ptr"] + 1)


@triton.jit
def _scale(x_ptr, y_ptr, s, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs) * s)


@pytest.mark.parametrize("s", [2.0, np.float32(2.0), np.float16(2.0), 2])
def test_scalars_of_every_kind_bind(s):
    args = dict(x_ptr=np.ones(32, np.float32), y_ptr=np.zeros(32, np.float32), s=s, BLOCK=16)
    assert tc.verify(_scale, args, (2,)).status == "verified"
    tc.launch((2,), _scale, args, backend="cpu")
    assert (args["y_ptr"] == 2).all()


@triton.jit
def _sort_rows(x_ptr, y_ptr, BLOCK: tl.constexpr):
    # tl.sort of 512 elements works on a 2x2x...x2 hypercube: tiles of rank 9
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.sort(tl.load(x_ptr + offs), 0))


@pytest.mark.slow  # the launch's sort runs on the interpreter: about 30 s
def test_tiles_of_high_rank_are_unknown_statically_and_decided_at_the_launch():
    x = np.random.default_rng(3).permutation(2 * 512).astype(np.int32)
    args = dict(x_ptr=x, y_ptr=np.zeros(2 * 512, np.int32), BLOCK=512)
    report = tc.verify(_sort_rows, args, (2,))
    assert report.status == "verified" and report.level == "this launch's data", report
    assert any("rank 9" in note for note in report.notes), report.notes


@triton.jit
def _online_softmax_denominator(x_ptr, d_ptr, n_cols, BLOCK: tl.constexpr):
    # Liger's cross entropy, first pass: the masked load makes the sum's operand non-contiguous
    x_ptr += tl.program_id(0).to(tl.int64) * n_cols
    m = float("-inf")
    d = 0.0
    for i in range(0, n_cols, BLOCK):
        offs = i + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n_cols, other=float("-inf")).cast(tl.float32)
        m_new = tl.maximum(m, tl.max(x))
        d = d * tl.exp2((m - m_new) * 1.4426950408889634) + tl.sum(tl.exp2((x - m_new) * 1.4426950408889634))
        m = m_new
    tl.store(d_ptr + tl.program_id(0), d)


def test_a_long_sum_is_as_accurate_as_a_tree_reduction():
    rows, n = 4, 32000
    x = np.random.default_rng(0).standard_normal(rows * n).astype(np.float32)
    d = np.zeros(rows, np.float32)
    tc.launch((rows,), _online_softmax_denominator, dict(x_ptr=x, d_ptr=d, n_cols=n, BLOCK=32768), backend="cpu")
    exact = np.exp(x.reshape(rows, n).astype(np.float64) - x.reshape(rows, n).max(1, keepdims=True)).sum(1)
    # float32 summed pairwise (numpy) or as a tree (a GPU): ~1e-7; one element at a time: ~1e-5
    np.testing.assert_allclose(d, exact, rtol=1e-6)


@triton.jit
def _keyed_add(x, y):
    # a segmented sum packed in one integer (key << 16 | count): no identity element
    same = (x & 0xFFFF0000) == (y & 0xFFFF0000)
    return tl.where(same, x + (y & 0xFFFF), y)


@triton.jit
def _segment_ranks(keys_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    packed = (tl.load(keys_ptr + offs).to(tl.uint32) << 16) | 1
    tl.store(out_ptr + offs, (tl.associative_scan(packed, 0, _keyed_add) & 0xFFFF).to(tl.int32))


def test_a_scan_whose_combine_has_no_identity_runs_from_the_first_element():
    # Liger's MoE router: tl.associative_scan with a segment-aware add, whose identity is not one
    # the frontend can name; a scan needs none
    keys = np.array([0, 0, 0, 2, 2, 5, 5, 5, 5, 7, 8, 8, 8, 8, 8, 9], np.int32)
    args = dict(keys_ptr=keys, out_ptr=np.zeros(16, np.int32), BLOCK=16)
    tc.launch((1,), _segment_ranks, args, backend="cpu")
    expected = np.array([1, 2, 3, 1, 2, 1, 2, 3, 4, 1, 1, 2, 3, 4, 5, 1], np.int32)
    np.testing.assert_array_equal(args["out_ptr"], expected)
    assert tc.verify(_segment_ranks, dict(args), (1,)).status == "verified"


@triton.jit
def _pick_and_sum(x_ptr, w_ptr, out_ptr, n, N: tl.constexpr, BLOCK: tl.constexpr):
    # Liger's attn_res: tl.sum of a 1-D tile inside an `if` of an unrolled tl.static_range; Triton
    # prints the same value names in each unrolled body (a reshape's result in one, a combine's
    # argument in another), so a name's uses are looked for in its own block only
    cols = tl.arange(0, BLOCK)
    w = tl.load(w_ptr + tl.arange(0, N))
    acc = tl.zeros((BLOCK,), tl.float32)
    for i in tl.static_range(0, N):
        if i < n:
            a_i = tl.sum(tl.where(tl.arange(0, N) == i, w, 0.0))
            acc += a_i * tl.load(x_ptr + i * BLOCK + cols)
    tl.store(out_ptr + tl.program_id(0) * BLOCK + cols, acc)


def test_a_sum_in_each_body_of_an_unrolled_loop_is_lowered():
    x = np.arange(4 * 8, dtype=np.float32)
    w = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    args = dict(x_ptr=x, w_ptr=w, out_ptr=np.zeros(8, np.float32), n=3, N=4, BLOCK=8)
    assert tc.verify(_pick_and_sum, dict(args), (1,)).status == "verified"
    tc.launch((1,), _pick_and_sum, args, backend="cpu")
    np.testing.assert_allclose(args["out_ptr"], (w[:3, None] * x.reshape(4, 8)[:3]).sum(0))


@triton.jit
def _swap_pairs(x_ptr, out_ptr, BLOCK: tl.constexpr):
    # Liger's llama4 rope: a row of (re, im) pairs split into its two halves, joined back swapped
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    pairs = tl.reshape(tl.load(x_ptr + offs), (BLOCK // 2, 2))
    re, im = tl.split(pairs)
    tl.store(out_ptr + offs, tl.reshape(tl.join(im, -re), (BLOCK,)))


def test_a_split_tile_is_its_halves_along_the_last_dimension():
    x = np.arange(64, dtype=np.float32)
    args = dict(x_ptr=x, out_ptr=np.zeros(64, np.float32), BLOCK=16)
    tc.launch((4,), _swap_pairs, args, backend="cpu")
    expected = np.stack([x[1::2], -x[0::2]], axis=1).reshape(-1)
    np.testing.assert_array_equal(args["out_ptr"], expected)
    assert tc.verify(_swap_pairs, dict(args), (4,)).status == "verified"


@triton.jit
def _rows_by_host_descriptor(dx, dy, STEP: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    # host descriptors over 1 x M x N arrays, blocks [1, BM, BN]: Triton drops the unit dimension of
    # the tile a descriptor loads, and the reshape back to store
    pid = tl.program_id(0)
    t = tl.reshape(dx.load([0, pid * BM, 0]), [BM, BN]) + 1
    dy.store([0, pid * STEP, 0], tl.reshape(t, [1, BM, BN]))


def _host_descriptor(array, block):
    from triton.tools.tensor_descriptor import TensorDescriptor

    # Triton's own constructor validates torch tensors (data_ptr); the frontend takes any array
    d = TensorDescriptor.__new__(TensorDescriptor)
    d.base, d.shape, d.block_shape = array, list(array.shape), list(block)
    d.strides = [s // array.itemsize for s in array.strides]
    d.padding, d.round_f32_to_tf32 = "zero", False
    return d


@pytest.mark.parametrize("step, status", [(16, "verified"), (8, "race")])
def test_host_tensor_descriptors_are_views_of_their_base(step, status):
    x, y = np.arange(40 * 16, dtype=np.float32).reshape(1, 40, 16), np.zeros((1, 40, 16), np.float32)
    args = dict(dx=_host_descriptor(x, (1, 16, 16)), dy=_host_descriptor(y, (1, 16, 16)), STEP=step, BM=16, BN=16)
    report = tc.verify(_rows_by_host_descriptor, args, (3,))
    assert report.status == status, report
    assert tc.detect(_rows_by_host_descriptor, args, (3,)).status == status
    if status == "race":
        assert report.races[0].witness.array == "dy"
    else:
        tc.launch((3,), _rows_by_host_descriptor, args, backend="cpu")
        np.testing.assert_array_equal(y, x + 1)  # the last block's rows past 40 are neither read nor written


def test_the_ttir_stage_alone_gives_the_ttir_of_the_whole_pipeline(monkeypatch):
    # the frontend runs Triton's pipeline to its ttir stage only (no cubin); the text must be what
    # triton.compile gives, and on a Triton whose internals differ the whole pipeline runs instead
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from tilecheck.ir.triton import frontend

    from triton import knobs

    # Triton's disk cache keys a kernel by its source, not its file: a cached TTIR may carry another
    # checkout's paths in its locations (the stage alone always compiles, with this file's)
    monkeypatch.setattr(knobs.compilation, "always_compile", True)
    src = ASTSource(fn=_scale, signature={"x_ptr": "*fp32", "y_ptr": "*fp32", "s": "fp32", "BLOCK": "constexpr"},
                    constexprs={"BLOCK": 16})
    target = GPUTarget("cuda", frontend.TARGET_ARCH, 32)
    whole = triton.compile(src, target=target).asm["ttir"]
    assert frontend._ttir_stage(triton, src, target) == whole
    assert "tt.load" in whole and "loc(" in whole  # the locations findings are reported at

    import triton.compiler.compiler as compiler

    real, calls = compiler.make_backend, []

    class Moved:  # a backend whose internals are not where this Triton keeps them
        def __getattr__(self, name):
            raise AttributeError(name)

    def first_moved(target):
        calls.append(target)
        return Moved() if len(calls) == 1 else real(target)
    monkeypatch.setattr(compiler, "make_backend", first_moved)
    assert frontend._ttir_stage(triton, src, target) == whole
    assert len(calls) >= 2  # the stage alone, then the whole pipeline
