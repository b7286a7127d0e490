"""What deciding a launch costs once its kernel's contract is proved (issue 51, item 4): the contract
check alone, a warm ``verify`` of a launch of a new shape (a cache hit), and the launcher's checks of
a launch with new arrays of a new shape (``checked_module``, what ``tilecheck.launch`` adds before it
runs the kernel). Each tree runs in its own process, alternating; medians over the launches.

    python benchmarks/bench_contract_check.py [--baseline /path/to/other/checkout] [--launches N] [--rounds R]
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_ONE = r"""
import json, os, sys, tempfile, time
tree, n = sys.argv[1], int(sys.argv[2])
sys.path.insert(0, tree)
os.environ.pop("TILECHECK_NO_CACHE", None)
os.environ["TILECHECK_CACHE_DIR"] = tempfile.mkdtemp() + "/cache"
import numpy as np
import tilecheck
from corpus.kernels.elementwise import vector_add
from tilecheck.runtime.launcher import checked_module
try:
    from tilecheck.verifier.contracts import shapes as shape_contract
except ImportError:  # a tree from before the verifier's rooms (issue 54)
    from tilecheck.verifier import shape_contract

def args(size):
    return (np.ones(size, np.float32), np.ones(size, np.float32), np.zeros(size, np.float32), 16)

first = tilecheck.verify(vector_add, args(64), (4, 1, 1))
assert first.launch_contract.proved, first
sizes = [16 * (8 + k) for k in range(3 * n)]
out = {}
times = []
for size in sizes[:n]:
    a = args(size)
    t = time.perf_counter()
    r = tilecheck.verify(vector_add, a, (size // 16, 1, 1))
    times.append(time.perf_counter() - t)
    assert r.stats.get("cache") == "hit", r
out["verify, a new shape (cache hit)"] = times
tilecheck.launch((4, 1, 1), vector_add, args(64))
times = []
for size in sizes[n:2 * n]:
    a = args(size)
    t = time.perf_counter()
    checked_module(vector_add, a, (size // 16, 1, 1), "cpu")
    times.append(time.perf_counter() - t)
out["launcher's checks, new arrays of a new shape"] = times
from tilecheck.ir.cutile import module_for
contract = first.launch_contract
times = []
for size in sizes[2 * n:]:
    module, _ = module_for(vector_add, args(size))
    t = time.perf_counter()
    env, widths = shape_contract.launch_of(module.params, (size // 16, 1, 1))
    assert contract.admits(env, widths)
    times.append(time.perf_counter() - t)
out["the contract check alone"] = times
print(json.dumps(out))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", help="another checkout of tilecheck, run side by side")
    parser.add_argument("--launches", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    opts = parser.parse_args()
    trees = [("this tree", ROOT)] + ([("baseline", Path(opts.baseline))] if opts.baseline else [])
    samples: dict[str, dict[str, list[float]]] = {name: {} for name, _ in trees}
    for _ in range(opts.rounds):
        for name, tree in trees:
            out = subprocess.run([sys.executable, "-c", _ONE, str(tree), str(opts.launches)], capture_output=True,
                                 text=True, check=True, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tree)})
            for what, times in json.loads(out.stdout.strip().splitlines()[-1]).items():
                samples[name].setdefault(what, []).extend(times)
    whats = list(samples["this tree"])
    print("| what | " + " | ".join(f"{name}, median us" for name, _ in trees)
          + (" | ratio |" if opts.baseline else " |"))
    print("|---|" + "---|" * (len(trees) + (1 if opts.baseline else 0)))
    for what in whats:
        medians = [statistics.median(samples[name][what]) * 1e6 for name, _ in trees]
        ratio = f" {medians[0] / medians[1]:.2f} |" if opts.baseline else ""
        print(f"| {what} | " + " | ".join(f"{m:.1f}" for m in medians) + " |" + ratio)


if __name__ == "__main__":
    main()
