"""Host time the launcher adds per launch, measured without a GPU.

The cuda backend's driver is replaced by one whose launch does nothing, so what is left is exactly
what tilecheck adds on top of ct.launch (cache lookup, argument checks, DeviceOp bookkeeping). On a
GPU, ct.launch's own host time comes on top of every row; scripts/device_check.py measures that.
A graph replay adds nothing per op: it is one cuGraphLaunch for the whole graph.

Run: python benchmarks/bench_launcher.py [--repeat N] [--ops N]
Medians measured side by side in one run.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import tilecheck
from benchmarks.timing import median_seconds
from corpus.kernels import elementwise, inplace
from tilecheck.runtime.cuda import SimulatedDriver, to_device, use_driver
from tilecheck.runtime.launcher import _CHECKED


class NullLaunchDriver(SimulatedDriver):
    """The simulated device with launches that do nothing (and cost nothing)."""

    def launch(self, stream, grid, kernel, args) -> None:
        pass


def per_op_us(fn, ops: int, repeat: int) -> float:
    return median_seconds(fn, repeat) / ops * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--ops", type=int, default=2000)
    opts = parser.parse_args()
    ops, repeat = opts.ops, opts.repeat
    with use_driver(NullLaunchDriver()) as driver:
        n, tile = 1 << 16, 1024
        a, b, c = (to_device(driver, np.ones(n, np.float32)) for _ in range(3))
        args, grid = (a, b, c, tile), (n // tile, 1, 1)
        start = time.perf_counter()
        tilecheck.launch(grid, elementwise.vector_add, args, backend="cuda")
        first_ms = (time.perf_counter() - start) * 1e3

        def raw():
            for _ in range(ops):
                driver.launch(0, grid, elementwise.vector_add, args)

        def checked():
            for _ in range(ops):
                tilecheck.launch(grid, elementwise.vector_add, args, backend="cuda")

        def unchecked():
            for _ in range(ops):
                tilecheck.launch(grid, elementwise.vector_add, args, backend="cuda", unsafe=True)

        def uncached():
            for _ in range(ops // 20):
                _CHECKED.clear()
                tilecheck.launch(grid, elementwise.vector_add, args, backend="cuda")

        scale = tilecheck.device_op(grid, inplace.inplace_scale, (c, tile), backend="cuda")
        chain = tilecheck.device_op(grid, elementwise.vector_add, args, backend="cuda")
        for _ in range(99):
            chain = chain.then(scale)
        chain.sync()  # warm: the first run checks the launches it has not seen

        def chained():
            for _ in range(ops // 100):
                chain.sync()

        rows = [("driver launch alone (no-op)", per_op_us(raw, ops, repeat)),
                ("tilecheck.launch, checks cached", per_op_us(checked, ops, repeat)),
                ("tilecheck.launch, unsafe=True", per_op_us(unchecked, ops, repeat)),
                ("tilecheck.launch, checks redone (cache cleared)", per_op_us(uncached, ops // 20, repeat)),
                ("DeviceOp chain of 100, .sync()", per_op_us(chained, ops, repeat))]
    print(f"first launch (compile + verify): {first_ms:.0f} ms")
    print("| per launch, host side only | us (median) |")
    print("|---|---:|")
    for name, t in rows:
        print(f"| {name} | {t:.2f} |")


if __name__ == "__main__":
    main()
