"""The real driver (CudaDriver) end to end, without a GPU: its cuda-python calls go to a stand-in
for ``cuda.bindings.driver`` that takes the real module's types and enums, returns results the way
cuda-python does (a tuple led by a CUresult), checks the argument types, and does the work on the
simulated device. What this cannot show is that CUDA behaves as the stand-in does; the GPU check
(scripts/device_check.sh) is for that."""
import asyncio
import ctypes

import numpy as np
import pytest

import tilecheck
from corpus.kernels import attention as A
from corpus.kernels import elementwise as E
from corpus.kernels import inplace as I
from tilecheck.runtime.cuda import CudaDriver, CudaError, SimulatedDriver, to_device, to_host, use_driver

real = pytest.importorskip("cuda.bindings.driver")

_TYPES = ("CUresult", "CUstream", "CUdeviceptr", "CUevent", "CUgraph", "CUgraphExec", "CUdevice", "CUcontext",
          "CUstream_flags", "CUevent_flags", "CUstreamCaptureMode")


class FakeCu:
    """cuda.bindings.driver's calling conventions over the simulated device."""

    def __init__(self, sim: SimulatedDriver) -> None:
        for name in _TYPES:
            setattr(self, name, getattr(real, name))
        self.sim = sim
        self.calls: list[str] = []
        self.fail: dict[str, object] = {}  # function name -> the CUresult it returns instead
        self._objects: dict[int, object] = {}
        self._next = 1

    def __getattribute__(self, name):
        if name.startswith("cu") and name[2:3].isupper():
            self.calls.append(name)
            if name in self.fail:
                return lambda *args: (self.fail[name],)
        return object.__getattribute__(self, name)

    def _ok(self, *values):
        return (real.CUresult.CUDA_SUCCESS, *values)

    def _handle(self, kind, obj):
        self._next += 1
        self._objects[self._next] = obj
        return kind(self._next)

    @staticmethod
    def _types(*pairs):
        for value, kind in pairs:
            assert isinstance(value, kind) and not isinstance(value, bool), f"{value!r} is not a {kind}"

    def cuInit(self, flags):
        self._types((flags, int))
        return self._ok()

    def cuDeviceGet(self, ordinal):
        self._types((ordinal, int))
        return self._ok(real.CUdevice(ordinal))

    def cuDevicePrimaryCtxRetain(self, device):
        self._types((device, real.CUdevice))
        return self._ok(real.CUcontext(1))

    def cuCtxSetCurrent(self, ctx):
        self._types((ctx, real.CUcontext))
        return self._ok()

    def cuGetErrorName(self, err):
        return self._ok(err.name.encode())

    def cuCtxSynchronize(self):
        self.sim.synchronize_device()
        return self._ok()

    def cuStreamCreate(self, flags):
        self._types((flags, int))
        return self._ok(real.CUstream(self.sim.new_stream()))

    def cuStreamDestroy(self, stream):
        self._types((stream, real.CUstream))
        self.sim.destroy_stream(int(stream))
        return self._ok()

    def cuStreamSynchronize(self, stream):
        self._types((stream, real.CUstream))
        self.sim.synchronize(int(stream))
        return self._ok()

    def cuEventCreate(self, flags):
        self._types((flags, int))
        return self._ok(self._handle(real.CUevent, None))

    def cuEventRecord(self, event, stream):
        self._types((event, real.CUevent), (stream, real.CUstream))
        self._objects[int(event)] = self.sim.record_event(int(stream))
        return self._ok()

    def cuStreamWaitEvent(self, stream, event, flags):
        self._types((stream, real.CUstream), (event, real.CUevent), (flags, int))
        self.sim.wait_event(int(stream), self._objects[int(event)])
        return self._ok()

    def cuEventQuery(self, event):
        self._types((event, real.CUevent))
        done = self.sim.event_done(self._objects[int(event)])
        return (real.CUresult.CUDA_SUCCESS if done else real.CUresult.CUDA_ERROR_NOT_READY,)

    def cuEventSynchronize(self, event):
        while not self.sim.event_done(self._objects[int(event)]):
            pass
        return self._ok()

    def cuEventElapsedTime(self, start, end):
        self._types((start, real.CUevent), (end, real.CUevent))
        return self._ok(self.sim.elapsed_ms(self._objects[int(start)], self._objects[int(end)]))

    def cuEventDestroy(self, event):
        self._types((event, real.CUevent))
        del self._objects[int(event)]
        return self._ok()

    def cuStreamBeginCapture(self, stream, mode):
        self._types((stream, real.CUstream), (mode, real.CUstreamCaptureMode))
        self.sim.begin_capture(int(stream))
        return self._ok()

    def cuStreamEndCapture(self, stream):
        self._types((stream, real.CUstream))
        return self._ok(self._handle(real.CUgraph, self.sim.end_capture(int(stream))))

    def cuGraphInstantiate(self, graph, flags):
        self._types((graph, real.CUgraph), (flags, int))
        return self._ok(self._handle(real.CUgraphExec, self._objects[int(graph)]))

    def cuGraphDestroy(self, graph):
        self._types((graph, real.CUgraph))
        del self._objects[int(graph)]
        return self._ok()

    def cuGraphExecDestroy(self, graph_exec):
        self._types((graph_exec, real.CUgraphExec))
        del self._objects[int(graph_exec)]
        return self._ok()

    def cuGraphLaunch(self, graph_exec, stream):
        self._types((graph_exec, real.CUgraphExec), (stream, real.CUstream))
        self.sim.graph_launch(self._objects[int(graph_exec)], int(stream))
        return self._ok()

    def cuMemAlloc(self, nbytes):
        self._types((nbytes, int))
        return self._ok(real.CUdeviceptr(self.sim.alloc(nbytes)))

    def cuMemFree(self, ptr):
        self._types((ptr, real.CUdeviceptr))
        self.sim.free(int(ptr))
        return self._ok()

    def cuMemcpyDtoDAsync(self, dst, src, nbytes, stream):
        self._types((dst, real.CUdeviceptr), (src, real.CUdeviceptr), (nbytes, int), (stream, real.CUstream))
        self.sim.copy_dtod(int(dst), int(src), nbytes, int(stream))
        return self._ok()

    def cuMemcpyHtoDAsync(self, dst, src_host, nbytes, stream):
        self._types((dst, real.CUdeviceptr), (src_host, int), (nbytes, int), (stream, real.CUstream))
        data = np.frombuffer((ctypes.c_ubyte * nbytes).from_address(src_host), np.uint8).copy()
        self.sim.copy_htod(int(dst), data, int(stream))
        return self._ok()

    def cuMemcpyDtoHAsync(self, dst_host, src, nbytes, stream):
        self._types((dst_host, int), (src, real.CUdeviceptr), (nbytes, int), (stream, real.CUstream))
        host = np.frombuffer((ctypes.c_ubyte * nbytes).from_address(dst_host), np.uint8)
        self.sim.copy_dtoh(host, int(src), int(stream))
        return self._ok()

    def cuMemsetD8Async(self, ptr, value, nbytes, stream):
        self._types((ptr, real.CUdeviceptr), (value, int), (nbytes, int), (stream, real.CUstream))
        self.sim.memset8(int(ptr), value, nbytes, int(stream))
        return self._ok()


@pytest.fixture
def driver():
    sim = SimulatedDriver(seed=11)
    fake = FakeCu(sim)
    driver = CudaDriver(cu=fake, launch=sim.launch)
    with use_driver(driver):
        yield driver


def test_launch_device_op_and_graphs_through_the_driver_calls(driver):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(1024).astype(np.float32), rng.standard_normal(1024).astype(np.float32)
    da, db, dc = to_device(driver, a), to_device(driver, b), to_device(driver, np.zeros_like(a))
    stream = driver.new_stream()
    tilecheck.launch((64,), E.vector_add, (da, db, dc, 16), stream)
    driver.synchronize(stream)
    np.testing.assert_array_equal(to_host(driver, dc), a + b)
    op = tilecheck.device_op((64,), E.vector_add, (da, db, dc, 16)).then(
        tilecheck.device_op((8,), I.inplace_scale, (dc, 128)))

    async def main():
        await op

    asyncio.run(main())
    np.testing.assert_array_equal(to_host(driver, dc), (a + b) * 2)
    graph = op.graph()
    graph.replay()
    graph.replay(sync=False)
    graph.synchronize()
    np.testing.assert_array_equal(to_host(driver, dc), (a + b) * 2)
    dd = to_device(driver, np.zeros_like(a))
    both = tilecheck.DeviceOp.zip(tilecheck.device_op((64,), E.vector_add, (da, db, dc, 16)),
                                  tilecheck.device_op((64,), E.vector_add, (db, da, dd, 16)))
    both.graph().replay()
    np.testing.assert_array_equal(to_host(driver, dd), a + b)
    calls = set(driver.cu.calls)
    assert {"cuStreamBeginCapture", "cuStreamEndCapture", "cuGraphInstantiate", "cuGraphDestroy", "cuGraphLaunch",
            "cuEventRecord", "cuEventQuery", "cuEventDestroy", "cuMemcpyHtoDAsync", "cuMemcpyDtoHAsync",
            "cuStreamWaitEvent"} <= calls


def test_differential_runner_through_the_driver_calls(driver):
    src, dst, H, BM, BD = A._perm_args()
    args = (to_device(driver, src), to_device(driver, dst), H, BM, BD)
    racy = tilecheck.run_repeated(A.head_permute_swapped, args, (8, 8, 1), runs=4)
    safe = tilecheck.run_repeated(A.head_permute_safe, args, (8, 1, 1), runs=4)
    assert not racy.deterministic and racy.arrays["dst"].unwritten == 32768
    assert safe.deterministic and safe.arrays["dst"].unwritten == 0
    assert {"cuMemsetD8Async", "cuMemcpyDtoDAsync", "cuGraphExecDestroy", "cuStreamDestroy",
            "cuMemFree", "cuCtxSynchronize"} <= set(driver.cu.calls)


def test_event_timing_through_the_driver_calls(driver):
    stream = driver.new_stream()
    start = driver.record_event(stream)
    end = driver.record_event(stream)
    assert driver.elapsed_ms(start, end) >= 0.0
    driver.destroy_event(start)
    driver.destroy_event(end)


def test_cuda_errors_become_tilecheck_errors(driver):
    driver.cu.fail["cuMemAlloc"] = real.CUresult.CUDA_ERROR_OUT_OF_MEMORY
    with pytest.raises(CudaError, match="CUDA error CUDA_ERROR_OUT_OF_MEMORY"):
        to_device(driver, np.zeros(16, np.float32))


def test_a_missing_driver_library_is_a_clear_error():
    class NoLibrary(FakeCu):
        def cuInit(self, flags):
            raise RuntimeError('"cuda" is an NVIDIA driver library and can only be found via system search')

    with pytest.raises(CudaError, match="no CUDA driver on this machine"):
        CudaDriver(cu=NoLibrary(SimulatedDriver()), launch=None)
