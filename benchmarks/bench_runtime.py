"""CPU runtime throughput: vector add through the interpreter vs numpy, and differential runs/s.

Run: python benchmarks/bench_runtime.py [--repeat N]
Medians measured side by side in one run.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import tilecheck
from benchmarks.timing import median_seconds
from corpus.kernels import attention, elementwise
from tilecheck.ir.cutile import compile_kernel
from tilecheck.interp.engine import Interpreter
from tilecheck.interp.schedule import Schedule


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    n, tile = 1 << 24, 1024
    a = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    b = np.random.default_rng(1).standard_normal(n).astype(np.float32)
    c = np.empty_like(a)
    kargs = (a, b, c, tile)
    grid = (n // tile, 1, 1)
    module = compile_kernel(elementwise.vector_add, kargs).module
    tilecheck.launch(grid, elementwise.vector_add, kargs)  # verifies once; later launches hit the cache
    assert np.array_equal(c, a + b)
    t_numpy = median_seconds(lambda: np.add(a, b), args.repeat)
    t_interp = median_seconds(lambda: Interpreter(module, kargs, grid, Schedule()).run(), args.repeat)
    t_launch = median_seconds(lambda: tilecheck.launch(grid, elementwise.vector_add, kargs), args.repeat)
    gb = 3 * n * 4 / 1e9  # bytes moved: two reads and a write
    print("| vector add, 2^24 fp32 | median (ms) | GB/s | vs numpy |")
    print("|---|---:|---:|---:|")
    for name, t in (("numpy a + b", t_numpy), ("interpreter (one lockstep wave)", t_interp),
                    ("tilecheck.launch (cached verification + compile)", t_launch)):
        print(f"| {name} | {t * 1000:.1f} | {gb / t:.2f} | {t_numpy / t:.2f}x |")

    shape_args = attention._perm_args()
    runs = 20
    for name, kernel, kgrid in (("head_permute_swapped (racy)", attention.head_permute_swapped, (8, 8, 1)),
                                ("head_permute_safe (race-free)", attention.head_permute_safe, (8, 1, 1))):
        t = median_seconds(lambda k=kernel, g=kgrid: tilecheck.run_repeated(k, shape_args, g, runs=runs, progress=False),
                     max(3, args.repeat // 2))
        print(f"\n{name}, small shape (1,8,128,64,32,64): {runs / t:.1f} runs/s "
              f"({t * 1000 / runs:.1f} ms per adversarial run)")


if __name__ == "__main__":
    main()
