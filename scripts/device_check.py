"""The GPU check of issue 7, as one script: the head-permutation race on the GPU, launcher overhead
per op (sync / chained / graph) against raw ct.launch on the same stream, and elementwise-add
bandwidth through the launcher against a device-to-device copy. Prints Markdown for
docs/performance.md.

Run on a GPU machine:   python scripts/device_check.py
Without a GPU (CI):     python scripts/device_check.py --simulate
``--simulate`` runs every step on the simulated device at small sizes: it checks the script, not
the GPU; its numbers mean nothing.
"""
from __future__ import annotations

import argparse
import contextlib
import platform
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import tilecheck
from benchmarks.timing import median_seconds
from corpus.kernels import attention, elementwise, inplace
from tilecheck.runtime.cuda import CudaError, SimulatedDriver, current_driver, to_device, use_driver

# (B, H, M, D, BM): ours, not the paper's (its shapes were not available to us); M / BM = H, so the
# swapped store index stays in bounds on the head axis.
PERM_SHAPES = [(1, 8, 512, 64, 64), (2, 16, 1024, 64, 64), (4, 32, 2048, 128, 64)]
PERM_SHAPES_SMALL = [(1, 4, 64, 16, 16), (1, 8, 128, 16, 16), (2, 4, 64, 32, 16)]


def median_us(fn: Callable[[], None], ops: int, repeat: int) -> float:
    """Median over ``repeat`` rounds of the wall time per op of ``fn`` (which runs ``ops`` ops and waits)."""
    return median_seconds(fn, repeat) / ops * 1e6


def environment(simulate: bool) -> list[str]:
    lines = [f"- host: Python {platform.python_version()}, numpy {np.__version__}, tilecheck {tilecheck.__version__}"]
    if simulate:
        lines.append("- device: simulated (numbers below check the script only)")
        return lines
    import cuda.tile as ct

    try:  # cuda-tile has no device query of its own: torch's, where it is installed
        import torch

        major, minor = torch.cuda.get_device_capability(0)
        name = f"{torch.cuda.get_device_name(0)}, compute capability {major}.{minor}, CUDA {torch.version.cuda}"
    except Exception as exc:  # noqa: BLE001 - the name is informative only
        name = f"unknown ({exc})"
    lines.append(f"- device: {name}, cuda-tile {ct.__version__}")
    return lines


def head_permutation(shapes: list[tuple[int, ...]], runs: int) -> list[str]:
    driver = current_driver()
    lines = ["| shape (B, H, M, D), tile BM | kernel | runs | distinct outcomes | elements differing (max / mean) |",
             "|---|---|---:|---:|---:|"]
    for b, h, m, d, bm in shapes:
        src = np.arange(b * h * m * d, dtype=np.float32).reshape(b, h, m, d)
        dsrc, ddst = to_device(driver, src), to_device(driver, np.zeros_like(src))
        for kernel, grid in ((attention.head_permute_swapped, (b * h, h, 1)),
                             (attention.head_permute_paper_fix, (b * h, h, 1)),
                             (attention.head_permute_safe, (b * h, 1, 1))):
            report = tilecheck.run_repeated(kernel, (dsrc, ddst, h, bm, d), grid, runs=runs, backend="cuda")
            a = report.arrays["dst"]
            distinct = f"{a.distinct_outcomes}{'' if a.distinct_exact else '+'}"
            lines.append(f"| ({b}, {h}, {m}, {d}), {bm} | {report.kernel} | {runs} | {distinct} | "
                         f"{a.fraction_differing_max:.1%} / {a.fraction_differing_mean:.1%} |")
    return lines


def _vector_add(driver, n: int) -> tuple[tuple, tuple[int, int, int], int]:
    """Device arguments and grid for an n-element vector add, verified and compiled by one launch
    on a new stream (returned too)."""
    tile = min(1024, n)
    a, b, c = (to_device(driver, np.full(n, v, np.float32)) for v in (1.0, 1.0, 0.0))
    args, grid = (a, b, c, tile), (n // tile, 1, 1)
    stream = driver.new_stream()
    tilecheck.launch(grid, elementwise.vector_add, args, backend="cuda", stream=stream)
    driver.synchronize(stream)
    return args, grid, stream


def launcher_overhead(n: int, ops: int, repeat: int) -> list[str]:
    driver = current_driver()
    args, grid, stream = _vector_add(driver, n)
    c, tile = args[2], args[3]

    def raw() -> None:
        for _ in range(ops):
            driver.launch(stream, grid, elementwise.vector_add, args)
        driver.synchronize(stream)

    def checked() -> None:
        for _ in range(ops):
            tilecheck.launch(grid, elementwise.vector_add, args, backend="cuda", stream=stream)
        driver.synchronize(stream)

    scale = tilecheck.device_op((n // tile, 1, 1), inplace.inplace_scale, (c, tile), backend="cuda")
    chain = tilecheck.device_op(grid, elementwise.vector_add, args, backend="cuda")
    for _ in range(ops - 1):
        chain = chain.then(scale)

    def chained() -> None:
        chain.sync(stream)

    graph = chain.graph()

    def replay() -> None:
        graph.replay(sync=False)
        graph.synchronize()

    t_raw = median_us(raw, ops, repeat)
    rows = [("raw ct.launch, same stream", t_raw), ("tilecheck.launch (verified, cached)", median_us(checked, ops, repeat)),
            (f"DeviceOp chain of {ops}, .sync()", median_us(chained, ops, repeat)),
            (f"DeviceOp chain of {ops}, graph replay", median_us(replay, ops, repeat))]
    lines = [f"| {n} fp32 elements, {ops} ops per round | us per op (median of {repeat}) | vs raw |", "|---|---:|---:|"]
    lines += [f"| {name} | {t:.2f} | {t / t_raw:.2f}x |" for name, t in rows]
    return lines


def bandwidth(n: int, repeat: int) -> list[str]:
    driver = current_driver()
    args, grid, stream = _vector_add(driver, n)
    a, c = args[0], args[2]

    def timed(fn: Callable[[], None]) -> float:
        times = []
        for _ in range(repeat):
            start = driver.record_event(stream)
            fn()
            end = driver.record_event(stream)
            times.append(driver.elapsed_ms(start, end) / 1e3)
            driver.destroy_event(start)
            driver.destroy_event(end)
        return statistics.median(times)

    t_add = timed(lambda: tilecheck.launch(grid, elementwise.vector_add, args, backend="cuda", stream=stream))
    t_copy = timed(lambda: driver.copy_dtod(c.ptr, a.ptr, n * 4, stream))
    add_gbs, copy_gbs = 3 * n * 4 / t_add / 1e9, 2 * n * 4 / t_copy / 1e9
    return [f"| {n} fp32 elements | median (ms) | GB/s (read + written) | vs copy |", "|---|---:|---:|---:|",
            f"| device-to-device copy | {t_copy * 1e3:.3f} | {copy_gbs:.0f} | 1.00x |",
            f"| vector add through tilecheck.launch | {t_add * 1e3:.3f} | {add_gbs:.0f} | {add_gbs / copy_gbs:.2f}x |"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--simulate", action="store_true", help="run on the simulated device (no GPU; small sizes)")
    parser.add_argument("--runs", type=int, default=None, help="differential runs per kernel and shape")
    parser.add_argument("--repeat", type=int, default=None, help="timing rounds per measurement")
    args = parser.parse_args(argv)
    small = args.simulate
    runs = args.runs or (4 if small else 50)
    repeat = args.repeat or (3 if small else 21)
    if args.simulate:
        context = use_driver(SimulatedDriver(seed=7))
    else:
        try:
            current_driver()  # fail early, with CUDA's reason, when there is no usable GPU
        except CudaError as exc:
            print(f"device_check: {exc}", file=sys.stderr)
            return 2
        context = contextlib.nullcontext()
    with context:
        sections = [("Environment", lambda: environment(args.simulate)),
                    ("Head permutation on the device", lambda: head_permutation(
                        PERM_SHAPES_SMALL if small else PERM_SHAPES, runs)),
                    ("Launcher overhead", lambda: launcher_overhead(4096 if small else 1 << 16, 4 if small else 100,
                                                                   repeat)),
                    ("Elementwise bandwidth", lambda: bandwidth(1 << 14 if small else 1 << 28, repeat))]
        failed = 0
        for title, section in sections:
            print(f"\n### {title}\n", flush=True)
            try:
                print("\n".join(section()), flush=True)
            except Exception as exc:  # noqa: BLE001 - report every section, then fail at the end
                failed += 1
                print(f"FAILED: {type(exc).__name__}: {exc}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
