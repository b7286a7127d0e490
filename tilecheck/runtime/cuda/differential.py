"""The differential runner on the device.

Each array argument (device arrays, or host arrays, which are uploaded once) gets a pristine device
copy (pure outputs: filled with the sentinel) and a working copy with the caller's strides. Run 0 restores the working copies, runs the kernel and
keeps its outputs as the reference. Every later run is one replay of a CUDA graph that restores the
working copies, runs the kernel, and compares each output with the reference on the device, bit for
bit (``bitwise_diff``: OR-ing a per-element mask and counting differing elements). Only the counts
cross to the host per run, plus the outputs of the first ``keep`` differing runs (for the number of
distinct outcomes and the largest difference).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tilecheck.arrays import ArrayLayout, flat_arguments, layout_of, rebuild_arguments
from tilecheck.runtime.cuda.backend import launchable
from tilecheck.runtime.cuda.driver import current_driver
from tilecheck.runtime.cuda.memory import Allocation, array_in, flat_words, host_bytes, host_view, to_host
from tilecheck.runtime.outcomes import Outcomes, sentinel_value

KEEP = 16


class _Output:
    def __init__(self, driver: Any, name: str, layout: ArrayLayout, working: Allocation, sentinel: bool) -> None:
        self.name, self.layout, self.working, self.sentinel = name, layout, working, sentinel
        self.words = layout.extent // layout.itemsize
        self.ref = Allocation(driver, layout.extent)
        self.mask = Allocation(driver, self.words)
        self.count = Allocation(driver, 4)


def run_repeated_on_device(kernel: Any, args: tuple[Any, ...], names: Sequence[str], written: Sequence[str],
                           pure: set[str], grid: tuple[int, int, int], runs: int, keep: int = KEEP) -> list[Outcomes]:
    from tilecheck.runtime.cuda.kernels import DIFF_TILE, bitwise_diff

    driver = current_driver()
    launchable(driver, kernel)
    driver.synchronize_device()  # the caller's arrays may still be written by work on any stream
    stream = driver.new_stream()
    flat = flat_arguments(args)
    fresh = list(flat)
    restores: list[tuple[int, int, int]] = []  # (working, pristine, nbytes)
    outputs: list[_Output] = []
    keepalive: list[Allocation] = []
    for i, (name, a) in enumerate(zip(names, flat)):
        layout = layout_of(a)
        if layout is None:
            continue
        pristine, working = Allocation(driver, layout.extent), Allocation(driver, layout.extent)
        keepalive += [pristine, working]
        sentinel = sentinel_value(np.dtype(layout.typestr)) if name in pure else None
        if sentinel is not None:
            driver.copy_htod(pristine.ptr, np.full(layout.extent // layout.itemsize, sentinel, layout.typestr), stream)
        elif layout.space == "host":  # host inputs are uploaded once, then restored on the device
            driver.copy_htod(pristine.ptr, host_bytes(layout), stream)
        else:
            driver.copy_dtod(pristine.ptr, layout.lowest, layout.extent, stream)
        restores.append((working.ptr, pristine.ptr, layout.extent))
        fresh[i] = array_in(working, layout)
        if name in written:
            outputs.append(_Output(driver, name, layout, working, sentinel is not None))

    def one_run() -> None:
        for dst, src, nbytes in restores:
            driver.copy_dtod(dst, src, nbytes, stream)
        driver.launch(stream, grid, kernel, rebuild_arguments(args, fresh))

    one_run()
    outcomes = []
    for out in outputs:
        driver.copy_dtod(out.ref.ptr, out.working.ptr, out.layout.extent, stream)
        driver.memset8(out.mask.ptr, 0, out.words, stream)
        outcomes.append(Outcomes(out.name, to_host(driver, array_in(out.ref, out.layout), stream), out.sentinel))
    graph = None
    if runs > 1:
        driver.begin_capture(stream)
        try:
            one_run()
            for out in outputs:
                driver.memset8(out.count.ptr, 0, 4, stream)
                item = out.layout.itemsize
                diff_args = (flat_words(out.ref.ptr, out.layout.extent, item),
                             flat_words(out.working.ptr, out.layout.extent, item),
                             flat_words(out.mask.ptr, out.words, 1), flat_words(out.count.ptr, 4, 4), DIFF_TILE)
                driver.launch(stream, (-(-out.words // DIFF_TILE), 1, 1), bitwise_diff, diff_args)
        finally:
            graph = driver.end_capture(stream)
        count = np.zeros(1, np.int32)
        for _ in range(runs - 1):
            driver.graph_launch(graph, stream)
            for out, outcome in zip(outputs, outcomes):
                driver.copy_dtoh(count, out.count.ptr, stream)
                n = int(count[0])
                kept = sum(1 for c in outcome.counts if c) < keep
                values = to_host(driver, array_in(out.working, out.layout), stream) if n and kept else None
                outcome.add_count(n, values)
        for out, outcome in zip(outputs, outcomes):
            mask = np.empty(out.words, np.uint8)
            driver.copy_dtoh(mask, out.mask.ptr, stream)
            element_strides = tuple(s // out.layout.itemsize for s in out.layout.strides)
            mask_layout = ArrayLayout(0, out.layout.shape, element_strides, "|u1", "host")
            outcome.differ = host_view(mask, mask_layout).astype(bool)
    driver.synchronize(stream)
    if graph is not None:
        driver.destroy_graph(graph)
    driver.destroy_stream(stream)
    for alloc in keepalive:
        alloc.free()
    for out in outputs:
        for alloc in (out.ref, out.mask, out.count):
            alloc.free()
    return outcomes
