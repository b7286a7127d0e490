"""A simulated CUDA device: the driver interface in host memory, kernels run by the interpreter.

It behaves like the device where the cuda backend's logic depends on it: work queued on a stream
runs only when something waits for it (``synchronize``, a finished event, a host copy), so code that
forgets to wait sees stale memory; graph capture records instead of running; new allocations hold a
garbage pattern, not zeros; every kernel launch runs under a fresh adversarial schedule, as blocks
on a GPU interleave differently from run to run. Used by the tests and by
``scripts/device_check.py --simulate``; it measures nothing about a real GPU.
"""
from __future__ import annotations

import bisect
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from tilecheck.arrays import layout_of
from tilecheck.runtime.cuda.driver import CudaError
from tilecheck.runtime.cuda.memory import host_view

GARBAGE = 0xA5  # what fresh device memory holds here
_BASE = 0x7F00_0000_0000


class _Event:
    def __init__(self, stream: int, capture: _Capture | None) -> None:
        self.stream = stream
        self.capture = capture  # recorded while its stream was capturing: usable only to order capture
        self.done = False
        self.time = 0.0

    def fire(self) -> None:
        self.done, self.time = True, time.perf_counter()


class _Capture:
    """One stream capture: the ops recorded, in the order they were queued (a valid order for a
    graph), and the streams that joined it through an event and have not rejoined the origin."""

    def __init__(self, origin: int) -> None:
        self.origin = origin
        self.ops: list[tuple[str, Callable[[], None]]] = []
        self.unjoined: set[int] = set()


class SimulatedDriver:
    name = "simulated"

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed
        self.launches = 0
        self.log: list[str] = []  # what ran, in order (for tests)
        self._bases: list[int] = []
        self._buffers: dict[int, np.ndarray] = {}
        self._next = _BASE
        self._queues: dict[int, deque[tuple[str, Callable[[], None]]]] = {0: deque()}
        self._capturing: dict[int, _Capture] = {}

    # ---- streams, events, graphs ---------------------------------------------------------------
    def new_stream(self) -> int:
        handle = 0x5000 + len(self._queues)
        self._queues[handle] = deque()
        return handle

    def destroy_stream(self, stream: int) -> None:
        self.synchronize(stream)  # CUDA lets queued work finish
        del self._queues[stream]

    def _enqueue(self, stream: int, what: str, fn: Callable[[], None]) -> None:
        if stream in self._capturing:
            self._capturing[stream].ops.append((what, fn))
        elif stream not in self._queues:
            raise CudaError(f"CUDA error CUDA_ERROR_INVALID_HANDLE (no stream 0x{stream:x})")
        else:
            self._queues[stream].append((what, fn))

    def _step(self, stream: int) -> bool:
        queue = self._queues[stream]
        if not queue:
            return False
        what, fn = queue.popleft()
        fn()
        if what:
            self.log.append(what)
        return True

    def synchronize(self, stream: int) -> None:
        if stream in self._capturing:
            raise CudaError("CUDA error CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED (synchronize during capture)")
        while self._step(stream):
            pass

    def synchronize_device(self) -> None:
        for stream in list(self._queues):
            self.synchronize(stream)

    def record_event(self, stream: int) -> _Event:
        capture = self._capturing.get(stream)
        event = _Event(stream, capture)
        if capture is None:
            self._enqueue(stream, "", event.fire)
        return event

    def wait_event(self, stream: int, event: _Event) -> None:
        capture = self._capturing.get(stream)
        if event.capture is not None:  # fork / join inside a capture, as CUDA graphs do it
            if capture is None:
                self._capturing[stream] = event.capture
                event.capture.unjoined.add(stream)
            elif capture is not event.capture:
                raise CudaError("CUDA error CUDA_ERROR_STREAM_CAPTURE_ISOLATION (event from another capture)")
            elif stream == capture.origin:
                capture.unjoined.discard(event.stream)
            return
        if capture is not None:
            raise CudaError("CUDA error CUDA_ERROR_STREAM_CAPTURE_ISOLATION (waiting on an event from outside)")

        def run() -> None:
            while not event.done:
                if not self._step(event.stream):
                    raise CudaError("CUDA error: waiting on an event that was never recorded")
        self._enqueue(stream, "", run)

    def event_done(self, event: _Event) -> bool:
        if event.capture is not None:
            raise CudaError("CUDA error CUDA_ERROR_STREAM_CAPTURE_ILLEGAL (query of an event recorded in capture)")
        if not event.done:
            self._step(event.stream)  # the device makes some progress per query
        return event.done

    def destroy_event(self, event: _Event) -> None:
        pass

    def elapsed_ms(self, start: _Event, end: _Event) -> float:
        while not end.done:
            self._step(end.stream)
        return (end.time - start.time) * 1000.0

    def begin_capture(self, stream: int) -> None:
        if stream in self._capturing:
            raise CudaError("CUDA error CUDA_ERROR_ILLEGAL_STATE (stream already capturing)")
        self._capturing[stream] = _Capture(stream)

    def end_capture(self, stream: int) -> tuple[tuple[str, Callable[[], None]], ...]:
        capture = self._capturing.get(stream)
        if capture is None or capture.origin != stream:
            raise CudaError("CUDA error CUDA_ERROR_ILLEGAL_STATE (stream is not the origin of a capture)")
        for s in [s for s, c in self._capturing.items() if c is capture]:
            del self._capturing[s]
        if capture.unjoined:
            raise CudaError("CUDA error CUDA_ERROR_STREAM_CAPTURE_UNJOINED (a forked stream never rejoined)")
        return tuple(capture.ops)

    def graph_launch(self, graph: tuple[tuple[str, Callable[[], None]], ...], stream: int) -> None:
        self._enqueue(stream, "graph", lambda: None)
        for what, fn in graph:
            self._enqueue(stream, what, fn)

    def destroy_graph(self, graph: tuple[tuple[str, Callable[[], None]], ...]) -> None:
        pass

    # ---- memory ------------------------------------------------------------------------------------
    def alloc(self, nbytes: int) -> int:
        ptr = self._next
        self._next += (max(nbytes, 1) + 511) // 256 * 256  # a gap between allocations: overruns stay visible
        self._buffers[ptr] = np.full(nbytes, GARBAGE, np.uint8)
        bisect.insort(self._bases, ptr)
        return ptr

    def free(self, ptr: int) -> None:
        if self._buffers.pop(ptr, None) is not None:
            self._bases.remove(ptr)

    def bytes_at(self, ptr: int, nbytes: int) -> np.ndarray:
        """The simulated device bytes [ptr, ptr + nbytes), as a writable host view."""
        i = bisect.bisect_right(self._bases, ptr) - 1
        if i >= 0:
            base = self._bases[i]
            buf = self._buffers[base]
            if ptr + nbytes <= base + len(buf):
                return buf[ptr - base:ptr - base + nbytes]
        raise CudaError(f"CUDA error CUDA_ERROR_INVALID_VALUE (0x{ptr:x}+{nbytes} is not simulated device memory)")

    def copy_dtod(self, dst: int, src: int, nbytes: int, stream: int) -> None:
        def run() -> None:
            self.bytes_at(dst, nbytes)[:] = self.bytes_at(src, nbytes)
        self._enqueue(stream, "copy", run)

    def copy_htod(self, dst: int, host: np.ndarray, stream: int) -> None:
        data = np.frombuffer(np.ascontiguousarray(host).tobytes(), np.uint8)

        def run() -> None:
            self.bytes_at(dst, len(data))[:] = data
        self._enqueue(stream, "upload", run)
        self.synchronize(stream)

    def copy_dtoh(self, host: np.ndarray, src: int, stream: int) -> None:
        self.synchronize(stream)
        host.reshape(-1).view(np.uint8)[:] = self.bytes_at(src, host.nbytes)

    def memset8(self, ptr: int, value: int, nbytes: int, stream: int) -> None:
        def run() -> None:
            self.bytes_at(ptr, nbytes)[:] = value
        self._enqueue(stream, "memset", run)

    # ---- kernels -----------------------------------------------------------------------------------
    def host_array(self, array: Any) -> Any:
        """The host view of a simulated device array (tuples item by item; other arguments pass
        through)."""
        if isinstance(array, tuple):
            return tuple(self.host_array(a) for a in array)
        layout = layout_of(array)
        if layout is None:
            return array
        if layout.space != "cuda":
            raise CudaError("CUDA error CUDA_ERROR_INVALID_VALUE (a host array was passed to a device kernel)")
        return host_view(self.bytes_at(layout.lowest, layout.extent), layout)

    def launch(self, stream: int, grid: tuple[int, int, int], kernel: Any, args: Sequence[Any]) -> None:
        from tilecheck.interp.engine import Interpreter
        from tilecheck.runtime.launcher import module_for
        from tilecheck.interp.schedule import Schedule

        def run() -> None:  # a fresh schedule per execution, graph replays included
            seed = self.seed * 1_000_003 + self.launches
            self.launches += 1
            host_args = tuple(self.host_array(a) for a in args)
            module = module_for(kernel, host_args)[0]
            Interpreter(module, host_args, grid, Schedule(seed=seed)).run()
        self._enqueue(stream, f"launch {_kernel_name(kernel)}", run)


def _kernel_name(kernel: Any) -> str:
    from tilecheck.ir import Module

    if isinstance(kernel, Module):
        return kernel.name
    func = getattr(kernel, "_pyfunc", None) or getattr(kernel, "__wrapped__", None) or kernel
    return getattr(func, "__name__", type(kernel).__name__)
