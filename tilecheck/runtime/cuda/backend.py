"""The cuda backend of the launcher and of DeviceOp: checked launches on a stream, asyncio waiting
through events, and CUDA-graph capture and replay."""
from __future__ import annotations

import asyncio
import weakref
from collections.abc import Sequence
from typing import Any

from tilecheck.arrays import space_of
from tilecheck.errors import TilecheckError
from tilecheck.ir import Module
from tilecheck.runtime.cuda.driver import Driver, current_driver, stream_handle
from tilecheck.interp.memory import ArgumentError


def check_device_arguments(args: Sequence[Any]) -> None:
    """Every array argument must be device memory: ct.launch cannot read host arrays."""
    for i, a in enumerate(args):
        if space_of(a) == "host":
            raise ArgumentError(f"argument '#{i}' is a host array ({type(a).__name__}); the cuda backend needs "
                                "device arrays (torch or CuPy arrays on a GPU, or anything with "
                                "__cuda_array_interface__)")


def launchable(driver: Driver, kernel: Any) -> None:
    if isinstance(kernel, Module) and driver.name == "cuda":
        raise TilecheckError("a Tile IR module cannot be launched on the GPU through tilecheck; launch the "
                             "@ct.kernel it was compiled from")


def launch_on_stream(grid: tuple[int, int, int], kernel: Any, args: tuple[Any, ...], stream: Any) -> None:
    """Queue one launch whose arguments were checked; returns before the kernel finishes, as
    ct.launch does."""
    driver = current_driver()
    launchable(driver, kernel)
    driver.launch(stream_handle(stream), grid, kernel, args)


Launch = tuple[Any, tuple[Any, ...], tuple[int, int, int]]  # kernel, args, grid


def enqueue(stages: Sequence[Sequence[Launch]], stream: int) -> None:
    """Queue the stages in order on ``stream``. The launches of a zipped stage are independent, so
    they fork onto side streams and join back (events), free to run concurrently; the same
    fork/join pattern captures into a graph with parallel branches."""
    driver = current_driver()
    for stage in stages:
        if len(stage) == 1:
            kernel, args, grid = stage[0]
            launch_on_stream(grid, kernel, args, stream)
            continue
        sides = _side_streams(driver, len(stage) - 1)
        fork = driver.record_event(stream)
        for side in sides:
            driver.wait_event(side, fork)
        for (kernel, args, grid), target in zip(stage, [stream, *sides]):
            launch_on_stream(grid, kernel, args, target)
        for side in sides:
            done = driver.record_event(side)
            driver.wait_event(stream, done)
            driver.destroy_event(done)
        driver.destroy_event(fork)


_SIDE_STREAMS: weakref.WeakKeyDictionary[Any, list[int]] = weakref.WeakKeyDictionary()


def _side_streams(driver: Driver, n: int) -> list[int]:
    """``n`` streams for the branches of zipped launches, created once per driver and reused."""
    pool = _SIDE_STREAMS.setdefault(driver, [])
    while len(pool) < n:
        pool.append(driver.new_stream())
    return pool[:n]


def run_sync(stages: Sequence[Sequence[Launch]], stream: Any = None) -> None:
    handle = stream_handle(stream)
    enqueue(stages, handle)
    current_driver().synchronize(handle)


async def run_async(stages: Sequence[Sequence[Launch]], stream: Any = None) -> None:
    """Queue the work, then let the event loop run other tasks until an event after it has fired."""
    driver = current_driver()
    handle = stream_handle(stream)
    enqueue(stages, handle)
    event = driver.record_event(handle)
    delay = 20e-6
    try:
        while not driver.event_done(event):
            await asyncio.sleep(delay)
            delay = min(delay * 2, 1e-3)
    finally:
        driver.destroy_event(event)


class CudaGraph:
    """A CUDA graph captured from a DeviceOp on a private stream; ``replay`` launches it."""

    def __init__(self, stages: Sequence[Sequence[Launch]]) -> None:
        self.driver = current_driver()
        self.stream = self.driver.new_stream()
        self.launches = sum(len(s) for s in stages)
        self.driver.begin_capture(self.stream)
        try:
            enqueue(stages, self.stream)
        finally:
            self.exec = self.driver.end_capture(self.stream)
        release = weakref.finalize(self, _release_graph, self.driver, self.exec, self.stream)
        release.atexit = False  # at exit the driver may be gone; the process frees everything

    def replay(self, sync: bool = True) -> None:
        """Launch the graph; with ``sync=False`` return at once (``synchronize()`` waits)."""
        self.driver.graph_launch(self.exec, self.stream)
        if sync:
            self.driver.synchronize(self.stream)

    def synchronize(self) -> None:
        self.driver.synchronize(self.stream)


def _release_graph(driver: Driver, graph: Any, stream: int) -> None:
    driver.synchronize(stream)
    driver.destroy_graph(graph)
    driver.destroy_stream(stream)
