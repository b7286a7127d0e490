"""The cuda backend's logic on the simulated device (no GPU needed): checked launches on streams,
DeviceOp's three modes, ownership of device arrays, and the device differential runner."""
import asyncio

import numpy as np
import pytest

import tilecheck
from corpus.kernels import attention as A
from corpus.kernels import elementwise as E
from corpus.kernels import inplace as I
from tilecheck.arrays import ArrayLayout, layout_of, layouts_overlap
from tilecheck.runtime.cuda import (
    CudaError,
    DeviceArray,
    SimulatedDriver,
    cuda_available,
    stream_handle,
    to_device,
    to_host,
    use_driver,
)
from tilecheck.runtime.cuda.kernels import bitwise_diff


@pytest.fixture
def sim():
    with use_driver(SimulatedDriver(seed=3)) as driver:
        yield driver


def _vectors(sim, n=1024):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    return a, b, to_device(sim, a), to_device(sim, b), to_device(sim, np.zeros(n, np.float32))


def test_launch_queues_on_the_stream_and_runs_when_waited_for(sim):
    a, b, da, db, dc = _vectors(sim)
    stream = sim.new_stream()
    tilecheck.launch((64,), E.vector_add, (da, db, dc, 16), backend="cuda", stream=stream)
    assert not any(entry.startswith("launch") for entry in sim.log)  # queued, not run: ct.launch is asynchronous
    sim.synchronize(stream)
    assert sim.log[-1] == "launch vector_add"
    np.testing.assert_array_equal(to_host(sim, dc), a + b)


def test_launch_refuses_races_host_arrays_and_aliasing_device_arrays(sim):
    src, dst, H, BM, BD = A._perm_args()
    dsrc, ddst = to_device(sim, src), to_device(sim, dst)
    with pytest.raises(tilecheck.RaceError, match="head_permute_swapped"):
        tilecheck.launch((8, 8, 1), A.head_permute_swapped, (dsrc, ddst, H, BM, BD), backend="cuda")
    _, _, da, db, dc = _vectors(sim)
    with pytest.raises(tilecheck.TilecheckError, match="argument '#1' is a host array"):
        tilecheck.launch((64,), E.vector_add, (da, np.zeros(1024, np.float32), dc, 16), backend="cuda")
    with pytest.raises(tilecheck.AliasingError, match="'c' is written and overlaps argument 'a'"):
        tilecheck.launch((64,), E.vector_add, (da, db, da, 16), backend="cuda")
    shifted = DeviceArray(da.ptr + 64, da.shape, da.strides, da.dtype)  # c = a[16:] on the device
    with pytest.raises(tilecheck.AliasingError, match="overlaps argument 'a'"):
        tilecheck.launch((64,), E.vector_add, (da, db, shifted, 16), backend="cuda")
    broadcast = DeviceArray(dc.ptr, dc.shape, (0,), dc.dtype)
    with pytest.raises(tilecheck.AliasingError, match="share one address"):
        tilecheck.launch((64,), E.vector_add, (da, db, broadcast, 16), backend="cuda")
    assert not any(entry.startswith("launch") for entry in sim.log)


def test_device_op_sync_then_and_zip(sim):
    a, b, da, db, dc = _vectors(sim)
    dd = to_device(sim, np.zeros_like(a))
    add = tilecheck.device_op((64,), E.vector_add, (da, db, dc, 16), backend="cuda")
    add.then(tilecheck.device_op((8,), I.inplace_scale, (dc, 128), backend="cuda")).sync()
    np.testing.assert_array_equal(to_host(sim, dc), (a + b) * 2)
    tilecheck.DeviceOp.zip(add, tilecheck.device_op((64,), E.vector_add, (db, da, dd, 16), backend="cuda")).sync()
    np.testing.assert_array_equal(to_host(sim, dd), a + b)
    clash = tilecheck.DeviceOp.zip(add, tilecheck.device_op((8,), I.inplace_scale, (dc, 128), backend="cuda"))
    with pytest.raises(tilecheck.AliasingError, match="not independent"):
        clash.sync()


def test_await_polls_an_event_while_other_tasks_run(sim):
    a, b, da, db, dc = _vectors(sim)
    ticks = []

    async def ticker():
        for _ in range(3):
            ticks.append(len(sim.log))
            await asyncio.sleep(0)

    async def main():
        await asyncio.gather(tilecheck.device_op((64,), E.vector_add, (da, db, dc, 16), backend="cuda"), ticker())

    asyncio.run(main())
    assert len(ticks) == 3
    assert sim.log[-1] == "launch vector_add"
    np.testing.assert_array_equal(to_host(sim, dc), a + b)


def test_graph_capture_runs_nothing_and_replays_see_current_memory(sim):
    a, b, da, db, dc = _vectors(sim)
    op = tilecheck.device_op((64,), E.vector_add, (da, db, dc, 16), backend="cuda").then(
        tilecheck.device_op((8,), I.inplace_scale, (dc, 128), backend="cuda"))
    graph = op.graph()
    assert graph.launches == 2
    np.testing.assert_array_equal(to_host(sim, dc), 0)  # capture records, it does not run
    graph.replay()
    np.testing.assert_array_equal(to_host(sim, dc), (a + b) * 2)
    sim.copy_htod(da.ptr, a + 1, 0)
    graph.replay(sync=False)
    graph.synchronize()
    np.testing.assert_array_equal(to_host(sim, dc), (a + 1 + b) * 2)
    assert sim.log.count("graph") == 2
    x = to_device(sim, np.ones(1024, np.float32))
    with pytest.raises(tilecheck.RaceError):
        tilecheck.device_op((8,), I.inplace_halo, (x, 128), backend="cuda").graph()


@pytest.mark.parametrize("kernel,grid,racy", [(A.head_permute_swapped, (8, 8, 1), True),
                                              (A.head_permute_paper_fix, (8, 8, 1), True),
                                              (A.head_permute_safe, (8, 1, 1), False)])
def test_device_differential_runner_finds_the_head_permutation_races(sim, kernel, grid, racy):
    src, dst, H, BM, BD = A._perm_args()
    dsrc, ddst = to_device(sim, src), to_device(sim, dst)
    report = tilecheck.run_repeated(kernel, (dsrc, ddst, H, BM, BD), grid, runs=5, backend="cuda")
    host = tilecheck.run_repeated(kernel, (src, dst, H, BM, BD), grid, runs=5)
    assert report.backend == "cuda" and report.runs == 5
    assert report.deterministic is (not racy)
    out, ref = report.arrays["dst"], host.arrays["dst"]
    assert out.unwritten == ref.unwritten  # same sentinel bookkeeping as the cpu backend
    assert (out.fraction_differing_max > 0) is racy
    if racy:
        assert out.distinct_outcomes >= 2 and out.first_differing
        assert (out.differing_mask == 1).any()
    np.testing.assert_array_equal(to_host(sim, ddst), 0)  # the caller's arrays are left alone


def test_device_differential_runner_counts_beyond_the_kept_runs(sim):
    from tilecheck.runtime.cuda.differential import run_repeated_on_device
    from tilecheck.runtime.differential import argument_names, output_arrays
    from tilecheck.runtime.launcher import module_for

    src, dst, H, BM, BD = A._perm_args()
    args = (to_device(sim, src), to_device(sim, dst), H, BM, BD)
    module = module_for(A.head_permute_swapped, args)[0]
    written, pure = output_arrays(module)
    (outcome,) = run_repeated_on_device(A.head_permute_swapped, args, argument_names(module, args), written, pure,
                                        (8, 8, 1), runs=6, keep=1)
    result = outcome.result()
    assert sum(1 for c in outcome.counts if c) > 1
    assert not result.distinct_exact and result.distinct_outcomes == 2  # the reference + the one kept run


@pytest.mark.parametrize("dtype", ["i1", "i2", "i4", "i8"])
def test_the_backends_own_diff_kernel_is_verified_and_correct(dtype):
    ref = np.arange(3000).astype(dtype)
    cur = ref.copy()
    cur[[5, 77, 2999]] += 1
    mask, count = np.zeros(3000, np.int8), np.zeros(1, np.int32)
    mask[10] = 1
    args = (ref, cur, mask, count, 1024)
    assert tilecheck.verify(bitwise_diff, args, grid=(3, 1, 1)).status == "verified"
    tilecheck.launch((3, 1, 1), bitwise_diff, args)
    assert np.nonzero(mask)[0].tolist() == [5, 10, 77, 2999] and count[0] == 3


class _TorchLikeStream:
    cuda_stream = 0x1234


class _CupyLikeStream:
    ptr = 0x5678


class _CoreStream:
    def __cuda_stream__(self):
        return (0, 0x9ABC)


def test_stream_handles_from_every_library():
    assert stream_handle(None) == 0 and stream_handle(7) == 7
    assert stream_handle(_TorchLikeStream()) == 0x1234
    assert stream_handle(_CupyLikeStream()) == 0x5678
    assert stream_handle(_CoreStream()) == 0x9ABC
    with pytest.raises(tilecheck.TilecheckError, match="not a CUDA stream: str"):
        stream_handle("default")


def test_layouts_overlap_exactly_and_only_within_one_address_space():
    x = np.zeros((8, 8), np.float32)
    assert not layouts_overlap(layout_of(x[:, ::2]), layout_of(x[:, 1::2]))  # interleaved columns
    assert layouts_overlap(layout_of(x[:, ::2]), layout_of(x[1:, 2]))
    base = layout_of(x)
    device = ArrayLayout(base.ptr, base.shape, base.strides, base.typestr, "cuda")
    assert not layouts_overlap(base, device)
    assert layout_of(3) is None
    with pytest.raises(tilecheck.TilecheckError, match="malformed array interface"):
        layout_of(type("Bad", (), {"__cuda_array_interface__": {"shape": (4,)}})())


def test_torch_cpu_tensors_are_checked_for_aliasing():
    torch = pytest.importorskip("torch")
    a = torch.ones(1024)
    with pytest.raises(tilecheck.AliasingError, match="'c' is written and overlaps argument 'a'"):
        tilecheck.launch((64,), E.vector_add, (a, torch.ones(1024), a[0:1024], 16))


def test_without_a_gpu_the_real_backend_says_why():
    available, why = cuda_available()
    if available:
        pytest.skip("a CUDA device is present")
    assert why
    a = DeviceArray(0x1000, (64,), (4,), np.dtype("f4"))
    with pytest.raises(CudaError):
        tilecheck.launch((4,), E.vector_add, (a, DeviceArray(0x2000, (64,), (4,), np.dtype("f4")),
                                              DeviceArray(0x3000, (64,), (4,), np.dtype("f4")), 16), backend="cuda")


def test_cached_checks_still_catch_a_new_aliasing_arrangement_and_a_new_grid(sim):
    a, b, da, db, dc = _vectors(sim)
    for _ in range(2):  # the second launch hits the launcher's cache of checked launches
        tilecheck.launch((64,), E.vector_add, (da, db, dc, 16), backend="cuda")
    with pytest.raises(tilecheck.AliasingError, match="overlaps argument 'a'"):
        tilecheck.launch((64,), E.vector_add, (da, db, da, 16), backend="cuda")
    x = np.ones(1024, np.float32)
    tilecheck.launch((8,), I.inplace_halo, (x, 128), unsafe=True)
    with pytest.raises(tilecheck.RaceError):  # an unsafe launch is never remembered as checked
        tilecheck.launch((8,), I.inplace_halo, (x, 128))
    np.testing.assert_array_equal(to_host(sim, dc), a + b)


def test_device_differential_runner_uploads_host_arguments(sim):
    src, dst, H, BM, BD = A._perm_args()
    report = tilecheck.run_repeated(A.head_permute_swapped, (src, dst, H, BM, BD), (8, 8, 1), runs=4, backend="cuda")
    assert not report.deterministic and report.arrays["dst"].unwritten == 32768
    safe = tilecheck.run_repeated(A.head_permute_safe, (src, dst, H, BM, BD), (8, 1, 1), runs=4, backend="cuda")
    assert safe.deterministic and safe.arrays["dst"].unwritten == 0
    assert not dst.any()


def test_every_driver_api_name_the_real_driver_uses_exists_in_cuda_python():
    """The real driver cannot run without a GPU, but the names it calls can be checked against the
    installed cuda-python, so a typo or an API change fails here rather than on the first GPU."""
    import re
    from pathlib import Path

    cu = pytest.importorskip("cuda.bindings.driver")
    source = (Path(tilecheck.__file__).parent / "runtime" / "cuda" / "driver.py").read_text()
    names = set(re.findall(r"\bcu\.((?:\w+\.)*\w+)", source))
    assert {"cuStreamBeginCapture", "cuGraphInstantiate", "cuEventQuery", "cuMemcpyDtoDAsync"} <= names
    for dotted in sorted(names):
        obj = cu
        for part in dotted.split("."):
            assert hasattr(obj, part), f"cuda.bindings.driver has no {dotted}"
            obj = getattr(obj, part)


def test_streams_and_graphs_are_released():
    import gc

    driver = SimulatedDriver()
    with use_driver(driver):
        _, _, da, db, dc = _vectors(driver)
        streams = len(driver._queues)
        graph = tilecheck.device_op((64,), E.vector_add, (da, db, dc, 16), backend="cuda").graph()
        assert len(driver._queues) == streams + 1
        del graph
        gc.collect()
        assert len(driver._queues) == streams
        src, dst, H, BM, BD = A._perm_args()
        tilecheck.run_repeated(A.head_permute_safe, (src, dst, H, BM, BD), (8, 1, 1), runs=2, backend="cuda")
        assert len(driver._queues) == streams
        assert len(driver._buffers) == 3  # only the three vectors are still allocated


def test_the_backend_follows_the_arrays(sim):
    a, b, da, db, dc = _vectors(sim)
    tilecheck.launch((64,), E.vector_add, (da, db, dc, 16))  # device arrays: the cuda backend
    assert sim.log[-1] != "launch vector_add"  # queued, as on a GPU
    np.testing.assert_array_equal(to_host(sim, dc), a + b)
    assert tilecheck.device_op((64,), E.vector_add, (da, db, dc, 16)).backend == "cuda"
    assert tilecheck.device_op((64,), E.vector_add, (a, b, np.zeros_like(a), 16)).backend == "cpu"
    with pytest.raises(tilecheck.TilecheckError, match="mix host and device arrays"):
        tilecheck.launch((64,), E.vector_add, (da, b, dc, 16))
    with pytest.raises(tilecheck.TilecheckError, match=r"backend=.*takes one of 'cpu', 'cuda' or None, got 'gpu'"):
        tilecheck.launch((64,), E.vector_add, (da, db, dc, 16), backend="gpu")
    src, dst, H, BM, BD = A._perm_args()
    report = tilecheck.run_repeated(A.head_permute_safe, (to_device(sim, src), to_device(sim, dst), H, BM, BD),
                                    (8, 1, 1), runs=2)
    assert report.backend == "cuda"


def test_zipped_launches_fork_onto_side_streams_and_join_in_graphs_too(sim):
    a, b, da, db, dc = _vectors(sim)
    dd = to_device(sim, np.zeros_like(a))
    both = tilecheck.DeviceOp.zip(tilecheck.device_op((64,), E.vector_add, (da, db, dc, 16)),
                                  tilecheck.device_op((64,), E.vector_add, (db, da, dd, 16)))
    graph = both.graph()
    assert graph.launches == 2
    graph.replay()
    assert sim.log[-2:] == ["launch vector_add", "launch vector_add"]
    np.testing.assert_array_equal(to_host(sim, dc), a + b)
    np.testing.assert_array_equal(to_host(sim, dd), a + b)
    then = tilecheck.device_op((8,), I.inplace_scale, (dc, 128))
    both.then(then).sync()  # the join orders the scale after both branches
    np.testing.assert_array_equal(to_host(sim, dc), (a + b) * 2)


def test_a_capture_whose_fork_never_joins_is_an_error(sim):
    origin, side = sim.new_stream(), sim.new_stream()
    sim.begin_capture(origin)
    sim.wait_event(side, sim.record_event(origin))
    sim.memset8(sim.alloc(4), 0, 4, side)
    with pytest.raises(CudaError, match="UNJOINED"):
        sim.end_capture(origin)
    sim.synchronize(side)  # the side stream left the capture with it


class _DLPackOnly:
    """An array that only speaks DLPack (numpy's capsule), on whichever device it claims."""

    def __init__(self, array, device=(1, 0)):
        self.array, self.device = array, device
        self.shape, self.dtype, self.strides = array.shape, array.dtype, array.strides  # what cuTile reads

    def __dlpack__(self, stream=None):
        return self.array.__dlpack__()

    def __dlpack_device__(self):
        return self.device


def test_layouts_are_read_from_dlpack_capsules_in_place():
    x = np.arange(24, dtype=np.float32).reshape(4, 6)[:, 1::2]
    assert layout_of(_DLPackOnly(x)) == layout_of(x)
    on_device = layout_of(_DLPackOnly(x, (2, 0)))
    assert on_device.space == "cuda" and on_device.ptr == layout_of(x).ptr and on_device.strides == (24, 8)
    with pytest.raises(tilecheck.TilecheckError, match="DLPack device type 14"):
        layout_of(_DLPackOnly(x, (14, 0)))
    written = np.zeros(64, np.float32)
    with pytest.raises(tilecheck.AliasingError, match="'c' is written and overlaps argument 'a'"):
        tilecheck.launch((4,), E.vector_add, (_DLPackOnly(written), np.ones(64, np.float32), written, 16))


def test_torch_bfloat16_layouts_come_through_dlpack():
    torch = pytest.importorskip("torch")
    t = torch.ones(4, 6, dtype=torch.bfloat16, requires_grad=True).t()
    layout = layout_of(t)
    assert (layout.ptr, layout.shape, layout.strides, layout.itemsize) == (t.data_ptr(), (6, 4), (2, 12), 2)


def test_the_differential_runner_waits_for_pending_writes_to_its_inputs(sim):
    from tilecheck.runtime.cuda.differential import run_repeated_on_device
    from tilecheck.runtime.differential import argument_names, output_arrays
    from tilecheck.runtime.launcher import module_for

    src, dst, H, BM, BD = A._perm_args()
    dsrc, staged = to_device(sim, np.zeros_like(src)), to_device(sim, src)
    sim.copy_dtod(dsrc.ptr, staged.ptr, src.nbytes, sim.new_stream())  # still queued on another stream
    args = (dsrc, to_device(sim, dst), H, BM, BD)
    module = module_for(A.head_permute_safe, args)[0]
    written, pure = output_arrays(module)
    (outcome,) = run_repeated_on_device(A.head_permute_safe, args, argument_names(module, args), written, pure,
                                        (8, 1, 1), runs=2)
    expected = dst.copy()
    tilecheck.launch((8, 1, 1), A.head_permute_safe, (src, expected, H, BM, BD))
    np.testing.assert_array_equal(outcome.ref, expected)


def test_torch_tensors_are_read_through_dlpack_before_their_cuda_array_interface():
    x = np.arange(8, dtype=np.float32)

    class Tensor(_DLPackOnly):  # stands for a bfloat16 torch CUDA tensor
        __module__ = "torch"

        def data_ptr(self):
            return x.ctypes.data

        def detach(self):
            return self

        @property
        def __cuda_array_interface__(self):
            raise TypeError("Got unsupported ScalarType BFloat16")  # what torch raises for bf16

    layout = layout_of(Tensor(x, (2, 0)))
    assert (layout.space, layout.ptr, layout.shape) == ("cuda", x.ctypes.data, (8,))
