"""Corpus verification time of this tree against a baseline tree, side by side in one run.

Run: python benchmarks/bench_corpus_eval.py --baseline /path/to/other/checkout [--rounds 1]
(e.g. a `git worktree add /tmp/base HEAD~1`). Each round verifies the labelled corpus once with the
baseline's tilecheck and once with this tree's, each in a fresh process, alternating, and prints
median / p95 / max seconds per kernel, the ratio, and whether the verdicts agree with the labels.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_ONE = """
import json, sys, time
sys.path.insert(0, sys.argv[1])
from tilecheck.evaluation import evaluate
result = evaluate(sys.argv[1] + "/corpus")
print(json.dumps({"times": [e.seconds for e in result.entries], "recall": result.recall,
                  "precision": result.precision, "disagreements": len(result.disagreements)}))
"""


def _run(tree: Path) -> dict:
    out = subprocess.run([sys.executable, "-c", _ONE, str(tree)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _stats(times: list[float]) -> tuple[float, float, float]:
    ordered = sorted(times)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))], ordered[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", required=True, help="another checkout of tilecheck")
    parser.add_argument("--rounds", type=int, default=1)
    opts = parser.parse_args()
    runs: dict[str, list[dict]] = {"baseline": [], "this tree": []}
    for _ in range(opts.rounds):
        runs["baseline"].append(_run(Path(opts.baseline).resolve()))
        runs["this tree"].append(_run(ROOT))
    print("| tree | kernels | median s | p95 s | max s | recall | precision | disagreements |")
    print("|---|---|---|---|---|---|---|---|")
    medians = {}
    for name, results in runs.items():
        times = [t for r in results for t in r["times"]]
        med, p95, top = _stats(times)
        medians[name] = med
        last = results[-1]
        print(f"| {name} | {len(results[-1]['times'])} | {med:.3f} | {p95:.3f} | {top:.3f} | {last['recall']:.3f} | "
              f"{last['precision']:.3f} | {last['disagreements']} |")
    print(f"\nmedian ratio (this tree / baseline): {medians['this tree'] / medians['baseline']:.2f}")


if __name__ == "__main__":
    main()
