"""Triton frontend timing: TTIR by Triton's whole pipeline (``triton.compile``, down to the cubin)
vs the pipeline run to its ``ttir`` stage alone (``tilecheck.ir.triton.frontend._ttir_stage``),
side by side in one run, medians per kernel of the corpus's Triton kernels. Triton's on-disk cache is
bypassed (``knobs.compilation.always_compile``): a first compile of each specialisation is what a
verify of a new kernel, or of an autotune configuration, pays.

Run: python benchmarks/bench_triton_frontend.py [--repeat N]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    repeat = parser.parse_args().repeat
    import triton
    from triton import knobs
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from corpus.kernels import triton_kernels as K
    from tilecheck.ir.triton import frontend

    warnings.simplefilter("ignore", UserWarning)
    knobs.compilation.always_compile = True
    target = GPUTarget("cuda", frontend.TARGET_ARCH, 32)
    cases = [(name, fn) for name, fn in vars(K).items() if frontend.jit_function(fn) is not None]
    print("| kernel | whole pipeline ms | ttir stage ms | ratio |\n|---|---|---|---|")
    ratios = []
    for name, fn in cases:
        jit = frontend.jit_function(fn)
        params = [p for p in jit.params]
        signature = {p.name: ("constexpr" if p.is_constexpr else "*fp32" if p.name.endswith("ptr") else "i32")
                     for p in params}
        constexprs = {p.name: 64 for p in params if p.is_constexpr}
        src = ASTSource(fn=jit, signature=signature, constexprs=constexprs)
        try:
            frontend._ttir_stage(triton, src, target)
        except Exception:  # noqa: BLE001 - a kernel this generic signature does not fit
            continue
        whole, stage = [], []
        for _ in range(repeat):  # alternating, so load falls on both alike
            t = time.perf_counter()
            triton.compile(src, target=target)
            whole.append(time.perf_counter() - t)
            t = time.perf_counter()
            frontend._ttir_stage(triton, src, target)
            stage.append(time.perf_counter() - t)
        w, s = statistics.median(whole) * 1e3, statistics.median(stage) * 1e3
        ratios.append(w / s)
        print(f"| {name} | {w:.1f} | {s:.1f} | {w / s:.1f}x |")
    if ratios:
        print(f"\nmedian ratio over {len(ratios)} kernels: {statistics.median(ratios):.1f}x")


if __name__ == "__main__":
    main()
