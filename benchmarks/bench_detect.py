"""The exact detector's cost against the plain interpreter: vector add 2^24 fp32, and every Python
entry of the corpus at its declared launch.

Run: python benchmarks/bench_detect.py [--repeat N]
Medians measured side by side in one run (interleaved: detect, then the interpreter, per repeat).
The interpreter runs on fresh copies of the arguments too, as detect does, so both pay for them.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
import tomllib
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from corpus.kernels import elementwise  # noqa: E402
from tilecheck.cases import cases_of  # noqa: E402
from tilecheck.collect import load_module  # noqa: E402
from tilecheck.interp import Interpreter, InterpreterError, Schedule, detect  # noqa: E402
from tilecheck.interp.memory import copies_keeping_overlaps  # noqa: E402
from tilecheck.ir.cutile import module_for  # noqa: E402


def side_by_side(kernel, args, grid, repeat: int) -> tuple[float, float]:
    module, _ = module_for(kernel, args)
    arrays = [i for i, a in enumerate(args) if isinstance(a, np.ndarray)]

    def plain() -> None:
        copies = copies_keeping_overlaps([args[i] for i in arrays])
        fresh = list(args)
        for i, c in zip(arrays, copies):
            fresh[i] = c
        Interpreter(module, tuple(fresh), grid, Schedule()).run()

    detect(kernel, args, grid)  # warm: compile, caches
    plain()
    t_detect, t_plain = [], []
    for _ in range(repeat):
        start = time.perf_counter()
        detect(kernel, args, grid)
        t_detect.append(time.perf_counter() - start)
        start = time.perf_counter()
        plain()
        t_plain.append(time.perf_counter() - start)
    return statistics.median(t_detect), statistics.median(t_plain)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    n, tile = 1 << 24, 1024
    a = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    b = np.random.default_rng(1).standard_normal(n).astype(np.float32)
    d, p = side_by_side(elementwise.vector_add, (a, b, np.empty_like(a), tile), (n // tile, 1, 1), args.repeat)
    print("| launch | detect (ms) | interpreter (ms) | ratio |")
    print("|---|---:|---:|---:|")
    print(f"| vector add 2^24 fp32 | {d * 1000:.1f} | {p * 1000:.1f} | {d / p:.1f}x |")
    manifest = tomllib.loads((ROOT / "corpus" / "manifest.toml").read_text())["kernel"]
    ratios, seen = [], set()
    rows = []
    for entry in manifest:
        key = (entry["file"], entry.get("kernel"), entry.get("case", 0))
        if not entry["file"].endswith(".py") or key in seen:
            continue
        seen.add(key)
        kernel = getattr(load_module(ROOT / "corpus" / entry["file"]), entry["kernel"])
        case = cases_of(kernel)[entry.get("case", 0)]
        try:
            d, p = side_by_side(kernel, case.make_args(), case.grid, max(3, args.repeat // 2))
        except InterpreterError:  # the plain interpreter stops at an out-of-bounds access; detect goes on
            continue
        ratios.append(d / p)
        rows.append((entry["kernel"], d, p))
    for name, d, p in sorted(rows, key=lambda r: -r[1] / r[2])[:8]:
        print(f"| {name} (corpus) | {d * 1000:.1f} | {p * 1000:.1f} | {d / p:.1f}x |")
    print(f"\ncorpus, {len(ratios)} launches: median ratio {statistics.median(ratios):.1f}x, "
          f"max {max(ratios):.1f}x (the slowest eight are listed above)")


if __name__ == "__main__":
    main()
