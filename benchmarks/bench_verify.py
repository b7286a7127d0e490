"""Verifier timing: Z3 time and end-to-end time per kernel, and grid-size independence.

Run: python benchmarks/bench_verify.py [--repeat N]
Prints markdown tables of medians measured side by side in one run.
"""
from __future__ import annotations

import argparse
import importlib
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import tilecheck
from tilecheck import ir

KERNELS = [("elementwise", "vector_add"), ("elementwise", "vector_add_gather"), ("elementwise", "transpose"),
           ("gemm", "matmul"), ("gemm", "batch_matmul"), ("norms", "softmax"), ("norms", "layer_norm_fwd"),
           ("norms", "layer_norm_bwd"), ("attention", "rope"), ("attention", "flash_attention_fwd"),
           ("atomics", "moe_scatter"), ("attention", "head_permute_swapped"), ("attention", "head_permute_safe"),
           ("inplace", "inplace_halo")]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    print("| kernel | verdict | level | queries | Z3 (ms) | verify only (ms) | end to end (ms) |")
    print("|---|---|---|---:|---:|---:|---:|")
    z3_all, e2e_all = [], []
    for family, name in KERNELS:
        kernel = getattr(importlib.import_module(f"corpus.kernels.{family}"), name)
        case = tilecheck.cases_of(kernel)[0]
        kargs = case.make_args()
        module = ir.from_cutile(kernel, kargs)
        z3_ms, verify_ms, e2e_ms = [], [], []
        for _ in range(args.repeat):
            start = time.perf_counter()
            report = tilecheck.verify(kernel, kargs, case.grid)
            e2e_ms.append((time.perf_counter() - start) * 1000)
            z3_ms.append(report.stats["solver_s"] * 1000)
            start = time.perf_counter()
            tilecheck.verify(module, grid=case.grid)
            verify_ms.append((time.perf_counter() - start) * 1000)
        z3, e2e = statistics.median(z3_ms), statistics.median(e2e_ms)
        z3_all.append(z3)
        e2e_all.append(e2e)
        print(f"| {name} | {report.status} | {report.level} | {report.stats['queries']} | {z3:.1f} | "
              f"{statistics.median(verify_ms):.1f} | {e2e:.1f} |")
    print(f"\nmedian over kernels: Z3 {statistics.median(z3_all):.1f} ms, end to end "
          f"{statistics.median(e2e_all):.1f} ms (compile + verify from Python source)")

    print("\n| kernel (symbolic shapes) | grid 2^4 (ms) | grid 2^30 (ms) | ratio |")
    print("|---|---:|---:|---:|")
    for family, name in [("elementwise", "vector_add"), ("attention", "head_permute_safe"),
                         ("attention", "head_permute_swapped"), ("gemm", "batch_matmul")]:
        kernel = getattr(importlib.import_module(f"corpus.kernels.{family}"), name)
        module = ir.from_cutile(kernel, tilecheck.cases_of(kernel)[0].make_args())
        times = {}
        for exp in (4, 30):
            samples = []
            for _ in range(args.repeat):
                start = time.perf_counter()
                tilecheck.verify(module, grid=(2**exp, 1, 1))
                samples.append((time.perf_counter() - start) * 1000)
            times[exp] = statistics.median(samples)
        print(f"| {name} | {times[4]:.1f} | {times[30]:.1f} | {times[30] / times[4]:.2f} |")


if __name__ == "__main__":
    main()
