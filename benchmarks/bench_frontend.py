"""Frontend timing: compile+read one kernel vs the bytecode reader alone vs the text parser.

Run: python benchmarks/bench_frontend.py [--repeat N]
Prints a markdown table of medians (ms) measured side by side in one run, per kernel family.
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
from benchmarks.timing import median_seconds
from tilecheck import ir
from tilecheck.ir.cutile import compile_kernel

KERNELS = [("elementwise", "vector_add"), ("elementwise", "vector_add_gather"), ("elementwise", "transpose"),
           ("gemm", "matmul"), ("gemm", "batch_matmul"), ("norms", "softmax"), ("norms", "layer_norm_fwd"),
           ("norms", "layer_norm_bwd"), ("norms", "rms_norm"), ("attention", "rope"),
           ("attention", "flash_attention_fwd"), ("atomics", "moe_scatter"),
           ("attention", "head_permute_swapped")]


def median_ms(fn, repeat: int) -> float:
    return median_seconds(fn, repeat) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    print("| kernel | ops | first compile+read (ms) | compile+read, median (ms) | bytecode reader (ms) "
          "| text parser (ms) | reader share |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    totals = []
    for family, name in KERNELS:
        kernel = getattr(importlib.import_module(f"corpus.kernels.{family}"), name)
        kargs = tilecheck.cases_of(kernel)[0].make_args()
        start = time.perf_counter()
        compiled = compile_kernel(kernel, kargs)
        first = (time.perf_counter() - start) * 1000
        text = compiled.module.to_text()
        full = median_ms(lambda k=kernel, a=kargs: compile_kernel(k, a), args.repeat)
        reader = median_ms(lambda b=compiled.bytecode: ir.read_bytecode(b), args.repeat)
        parser_ms = median_ms(lambda t=text: ir.parse(t), args.repeat)
        n_ops = sum(1 for _ in compiled.module.walk())
        totals.append((full, reader))
        print(f"| {name} | {n_ops} | {first:.1f} | {full:.1f} | {reader:.2f} | {parser_ms:.2f} | {reader / full:.1%} |")
    full_med = statistics.median(t[0] for t in totals)
    reader_med = statistics.median(t[1] for t in totals)
    print(f"\nmedian over kernels: compile+read {full_med:.1f} ms, reader alone {reader_med:.2f} ms "
          f"({reader_med / full_med:.1%} of the total)")


if __name__ == "__main__":
    main()
