"""The few CUDA driver operations the cuda backend needs, behind one small interface.

``CudaDriver`` implements it on cuda-python (``cuda.bindings.driver``) and launches kernels with
``ct.launch``; ``SimulatedDriver`` (simulated.py) implements the same interface in host memory with
the interpreter, so the backend's logic runs in CI on machines without a GPU. Which one the cuda
backend uses is ``current_driver()``; ``use_driver()`` swaps it.
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any, Protocol

import numpy as np

from tilecheck.errors import TilecheckError


class CudaError(TilecheckError):
    """A CUDA driver call failed, or CUDA is not usable on this machine."""


class Driver(Protocol):
    """Streams are plain int handles (0: the legacy default stream); events and graphs are opaque."""

    name: str

    def new_stream(self) -> int: ...
    def destroy_stream(self, stream: int) -> None: ...
    def synchronize(self, stream: int) -> None: ...
    def synchronize_device(self) -> None: ...
    def record_event(self, stream: int) -> Any: ...
    def wait_event(self, stream: int, event: Any) -> None: ...
    def event_done(self, event: Any) -> bool: ...
    def destroy_event(self, event: Any) -> None: ...
    def elapsed_ms(self, start: Any, end: Any) -> float: ...
    def begin_capture(self, stream: int) -> None: ...
    def end_capture(self, stream: int) -> Any: ...
    def graph_launch(self, graph: Any, stream: int) -> None: ...
    def destroy_graph(self, graph: Any) -> None: ...
    def alloc(self, nbytes: int) -> int: ...
    def free(self, ptr: int) -> None: ...
    def copy_dtod(self, dst: int, src: int, nbytes: int, stream: int) -> None: ...
    def copy_htod(self, dst: int, host: np.ndarray, stream: int) -> None: ...
    def copy_dtoh(self, host: np.ndarray, src: int, stream: int) -> None: ...
    def memset8(self, ptr: int, value: int, nbytes: int, stream: int) -> None: ...
    def launch(self, stream: int, grid: tuple[int, int, int], kernel: Any, args: Sequence[Any]) -> None: ...


def stream_handle(stream: Any) -> int:
    """The raw ``CUstream`` handle of a stream given as an int, a torch stream (``.cuda_stream``), a
    CuPy stream (``.ptr``), a ``__cuda_stream__`` object (cuda.core) or a ``CUstream``. None is the
    legacy default stream, 0."""
    if stream is None:
        return 0
    if isinstance(stream, bool):
        raise TilecheckError(f"not a CUDA stream: {stream!r}")
    if isinstance(stream, int):
        return stream
    protocol = getattr(stream, "__cuda_stream__", None)
    if callable(protocol):
        _version, handle = protocol()
        return int(handle)
    for attr in ("cuda_stream", "ptr", "handle"):
        value = getattr(stream, attr, None)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    try:
        return int(stream)  # cuda.bindings CUstream
    except (TypeError, ValueError):
        raise TilecheckError(f"not a CUDA stream: {type(stream).__name__} (pass an int handle, a torch or CuPy "
                             "stream, or an object with __cuda_stream__)") from None


class CudaDriver:
    """The CUDA driver API through cuda-python, on device 0's primary context."""

    name = "cuda"

    def __init__(self, cu: Any = None, launch: Any = None) -> None:
        """``cu`` and ``launch`` stand in for ``cuda.bindings.driver`` and ``ct.launch`` in tests."""
        if cu is None:
            try:
                from cuda.bindings import driver as cu
            except ImportError:
                raise CudaError("the cuda backend needs cuda-python (pip install 'tilecheck[cuda]')") from None
        self.cu = cu
        try:
            self._call(cu.cuInit(0))
        except (RuntimeError, OSError) as exc:  # cuda-python's error when libcuda is missing
            raise CudaError(f"no CUDA driver on this machine ({exc})") from None
        device = self._call(cu.cuDeviceGet(0))
        self._call(cu.cuCtxSetCurrent(self._call(cu.cuDevicePrimaryCtxRetain(device))))
        if launch is None:
            import cuda.tile as ct

            # under the pytest plugin's launch check, use the launch it wraps: tilecheck has checked already
            launch = getattr(ct.launch, "__tilecheck_original__", ct.launch)
        self._ct_launch = launch

    def _call(self, result: Any) -> Any:
        err, *values = result if isinstance(result, tuple) else (result,)
        if err != self.cu.CUresult.CUDA_SUCCESS:
            name = self.cu.cuGetErrorName(err)[1]
            raise CudaError(f"CUDA error {name.decode() if isinstance(name, bytes) else name}")
        return values[0] if len(values) == 1 else (tuple(values) or None)

    def _stream(self, stream: int) -> Any:
        return self.cu.CUstream(stream)

    def new_stream(self) -> int:
        # a blocking stream: ordered with the legacy default stream, where torch and CuPy work by
        # default, so a graph replay sees their writes and they see its results
        return int(self._call(self.cu.cuStreamCreate(self.cu.CUstream_flags.CU_STREAM_DEFAULT.value)))

    def destroy_stream(self, stream: int) -> None:
        self._call(self.cu.cuStreamDestroy(self._stream(stream)))

    def synchronize(self, stream: int) -> None:
        self._call(self.cu.cuStreamSynchronize(self._stream(stream)))

    def synchronize_device(self) -> None:
        self._call(self.cu.cuCtxSynchronize())

    def record_event(self, stream: int) -> Any:
        event = self._call(self.cu.cuEventCreate(self.cu.CUevent_flags.CU_EVENT_DEFAULT.value))
        self._call(self.cu.cuEventRecord(event, self._stream(stream)))
        return event

    def wait_event(self, stream: int, event: Any) -> None:
        self._call(self.cu.cuStreamWaitEvent(self._stream(stream), event, 0))

    def event_done(self, event: Any) -> bool:
        (err,) = self.cu.cuEventQuery(event)
        if err == self.cu.CUresult.CUDA_ERROR_NOT_READY:
            return False
        self._call((err,))
        return True

    def destroy_event(self, event: Any) -> None:
        self._call(self.cu.cuEventDestroy(event))

    def elapsed_ms(self, start: Any, end: Any) -> float:
        self._call(self.cu.cuEventSynchronize(end))
        return float(self._call(self.cu.cuEventElapsedTime(start, end)))

    def begin_capture(self, stream: int) -> None:
        mode = self.cu.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_RELAXED
        self._call(self.cu.cuStreamBeginCapture(self._stream(stream), mode))

    def end_capture(self, stream: int) -> Any:
        graph = self._call(self.cu.cuStreamEndCapture(self._stream(stream)))
        try:
            return self._call(self.cu.cuGraphInstantiate(graph, 0))
        finally:
            self._call(self.cu.cuGraphDestroy(graph))  # the executable graph does not need it

    def graph_launch(self, graph: Any, stream: int) -> None:
        self._call(self.cu.cuGraphLaunch(graph, self._stream(stream)))

    def destroy_graph(self, graph: Any) -> None:
        self._call(self.cu.cuGraphExecDestroy(graph))

    def alloc(self, nbytes: int) -> int:
        return int(self._call(self.cu.cuMemAlloc(max(nbytes, 1))))

    def free(self, ptr: int) -> None:
        self._call(self.cu.cuMemFree(self.cu.CUdeviceptr(ptr)))

    def copy_dtod(self, dst: int, src: int, nbytes: int, stream: int) -> None:
        if nbytes:
            self._call(self.cu.cuMemcpyDtoDAsync(self.cu.CUdeviceptr(dst), self.cu.CUdeviceptr(src), nbytes,
                                                 self._stream(stream)))

    def copy_htod(self, dst: int, host: np.ndarray, stream: int) -> None:
        host = np.ascontiguousarray(host)
        self._call(self.cu.cuMemcpyHtoDAsync(self.cu.CUdeviceptr(dst), host.ctypes.data, host.nbytes,
                                             self._stream(stream)))
        self.synchronize(stream)  # the host buffer may go away after we return

    def copy_dtoh(self, host: np.ndarray, src: int, stream: int) -> None:
        self._call(self.cu.cuMemcpyDtoHAsync(host.ctypes.data, self.cu.CUdeviceptr(src), host.nbytes,
                                             self._stream(stream)))
        self.synchronize(stream)

    def memset8(self, ptr: int, value: int, nbytes: int, stream: int) -> None:
        if nbytes:
            self._call(self.cu.cuMemsetD8Async(self.cu.CUdeviceptr(ptr), value, nbytes, self._stream(stream)))

    def launch(self, stream: int, grid: tuple[int, int, int], kernel: Any, args: Sequence[Any]) -> None:
        self._ct_launch(stream, grid, kernel, tuple(args))


_override: list[Driver] = []  # a stack: the innermost use_driver() wins (process-wide, so threads see it too)
_real: list[CudaDriver] = []


def current_driver() -> Driver:
    """The driver the cuda backend uses: the one installed by ``use_driver``, else the real CUDA
    driver (created on first use; ``CudaError`` says why when CUDA is not usable)."""
    if _override:
        return _override[-1]
    if not _real:
        _real.append(CudaDriver())
    return _real[0]


@contextlib.contextmanager
def use_driver(driver: Driver) -> Iterator[Driver]:
    """Run the cuda backend on ``driver`` inside the block (e.g. a ``SimulatedDriver``)."""
    _override.append(driver)
    try:
        yield driver
    finally:
        _override.pop()


def cuda_available() -> tuple[bool, str]:
    """(True, "") when the real cuda backend can run here, else (False, why)."""
    try:
        if not _real:
            _real.append(CudaDriver())
    except (CudaError, ImportError) as exc:
        return False, str(exc)
    return True, ""
