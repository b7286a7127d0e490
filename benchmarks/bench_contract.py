"""A launch decided by a cached contract over the shapes (issue 20): the contract's evaluation alone,
a whole ``verify`` that hits the proof cache, and the launcher's check of a launch of a new shape.

Run: python benchmarks/bench_contract.py [--launches 200]

Each figure is the median over launches of distinct shapes (a shape seen before is the launcher's
own per-launch memo, not the cache). Everything runs in one process, side by side, after one cold
verify that stores the contract in a temporary cache directory.
"""

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import cuda.tile as ct  # noqa: E402
import numpy as np  # noqa: E402

ConstInt = ct.Constant[int]


@ct.kernel
def scale(x, y, T: ConstInt):
    b = ct.bid(0)
    ct.store(y, index=(b,), tile=ct.load(x, index=(b,), shape=(T,)) * 2.0)


def _args(n: int) -> tuple:
    return np.ones(n, np.float32), np.zeros(n, np.float32), 128


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--launches", type=int, default=200)
    opts = parser.parse_args()
    directory = tempfile.mkdtemp(prefix="tilecheck-cache-")
    os.environ["TILECHECK_CACHE_DIR"] = directory
    os.environ.pop("TILECHECK_NO_CACHE", None)
    import tilecheck
    from tilecheck.ir.cutile import module_for
    from tilecheck.runtime.launcher import check_launch
    from tilecheck.verifier.contracts import shapes as sc

    start = time.perf_counter()
    cold = tilecheck.verify(scale, _args(1024), (8, 1, 1))
    cold_s = time.perf_counter() - start
    contract = cold.launch_contract
    sizes = [1024 + 128 * k + k % 7 for k in range(1, opts.launches + 1)]
    evaluation, hits, launches = [], [], []
    for n in sizes:
        args, grid = _args(n), (-(-n // 128), 1, 1)
        module, _ = module_for(scale, args)
        env, widths = sc.launch_of(module.params, grid)
        t = time.perf_counter()
        admitted = contract.admits(env, widths)
        evaluation.append(time.perf_counter() - t)
        assert admitted
        t = time.perf_counter()
        report = tilecheck.verify(scale, args, grid)
        hits.append(time.perf_counter() - t)
        assert report.stats.get("cache") == "hit"
    for n in sizes:  # new arrays of new shapes: the launcher's memo cannot answer
        args, grid = _args(n + 3), (-(-(n + 3) // 128), 1, 1)
        t = time.perf_counter()
        check_launch(scale, args, grid)
        launches.append(time.perf_counter() - t)
    us = 1e6
    print(f"contract: {contract}")
    print(f"cold verify (proof + cache write): {cold_s * 1000:.0f} ms\n")
    print("| what (median over launches of new shapes) | us |")
    print("|---|---|")
    print(f"| the contract's evaluation alone (`ShapeContract.admits`) | {statistics.median(evaluation) * us:.1f} |")
    print(f"| `tilecheck.verify` answered by the proof cache | {statistics.median(hits) * us:.0f} |")
    print(f"| the launcher's check of a launch (`check_launch`) | {statistics.median(launches) * us:.0f} |")


if __name__ == "__main__":
    main()
