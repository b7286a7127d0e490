"""Sound reuse on a real suite (issue 49): every launch TileGym's tests made, in their order, through
``tilecheck.verify`` once with one proof cache for the whole run and once with no cache; the two
verdicts of each launch must be the same. Optionally a baseline tree side by side (each tree in a
fresh process, alternating), for the cost of the cached pass.

    python benchmarks/bench_reuse.py SRC CAPTURE.pkl [--baseline /path/to/other/checkout] [--out F.json]

Prints per tree: launches, launches the cache decided, proofs paid, launches whose cached verdict
differs from the fresh one (must be 0; each listed), the time of the cached pass (sum, median and
p95 per launch), and the warm check: each launch the cache decided, asked again through ``verify``
(median and p95). Run it with a Python that has torch (TileGym imports it), e.g. the capture's venv.
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
import importlib, json, pickle, sys, tempfile, time
tree, src, pkl = sys.argv[1:4]
sys.path.insert(0, tree)
sys.path.insert(0, src + "/src")
import cuda.tile as ct
import tilecheck as tc

cache = tempfile.mkdtemp(prefix="tc-reuse-")
kernels, rows = {}, []
for r in pickle.load(open(pkl, "rb")):
    if not r.get("compile_ok"):
        continue
    key = (r["module"], r["kernel_name"])
    if key not in kernels:
        k = getattr(importlib.import_module(r["module"]), r["kernel_name"].split(".")[-1])
        if r.get("kernel_ref") == "pyfunc":
            k = ct.kernel(k, **(r.get("compiler_options") or {}))
        elif r.get("compiler_options"):
            k = k.replace_hints(**r["compiler_options"])
        kernels[key] = k
    row = {"kernel": ".".join(key)}
    for mode, where in (("cached", cache), ("fresh", False)):
        t = time.perf_counter()
        try:
            rep = tc.verify(kernels[key], tuple(r["args"]), grid=tuple(r["grid"]), cache=where)
            row[mode] = rep.status
            row[mode + "_hit"] = (rep.stats or {}).get("cache") == "hit"
        except Exception as e:
            row[mode] = "error: " + str(e)[:100]
        row[mode + "_s"] = time.perf_counter() - t
    rows.append(row)
    row["_args"] = (key, tuple(r["args"]), tuple(r["grid"]))
# the warm check: each launch the cache decided, asked again (what a rerun of the suite pays per launch)
for row in rows:
    key, args, grid = row.pop("_args")
    if row.get("cached_hit"):
        t = time.perf_counter()
        tc.verify(kernels[key], args, grid=grid, cache=cache)
        row["warm_s"] = time.perf_counter() - t
print(json.dumps(rows))
"""


def _run(tree: Path, src: str, capture: str) -> list[dict]:
    out = subprocess.run([sys.executable, "-c", _ONE, str(tree), src, capture], capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _summary(name: str, rows: list[dict]) -> list[str]:
    cached = sorted(r["cached_s"] for r in rows)
    warm = sorted(r["warm_s"] for r in rows if "warm_s" in r) or [0.0]
    hits = sum(r.get("cached_hit", False) for r in rows)
    differ = [r for r in rows if r["cached"] != r["fresh"]]
    lines = [f"| {name} | {len(rows)} | {hits} | {len(rows) - hits} | {len(differ)} | {sum(cached):.1f} | "
             f"{statistics.median(cached) * 1000:.1f} | {cached[int(0.95 * (len(cached) - 1))] * 1000:.1f} | "
             f"{statistics.median(warm) * 1e6:.0f} | {warm[int(0.95 * (len(warm) - 1))] * 1e6:.0f} |"]
    return lines + [f"    differs: {r['kernel']}: cached {r['cached']}, fresh {r['fresh']}" for r in differ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("src")
    parser.add_argument("capture")
    parser.add_argument("--baseline", help="another checkout of tilecheck, run side by side")
    parser.add_argument("--out", help="save the rows as JSON")
    opts = parser.parse_args()
    trees = [("this tree", ROOT)] + ([("baseline", Path(opts.baseline))] if opts.baseline else [])
    results = {name: _run(tree, opts.src, opts.capture) for name, tree in trees}
    print("| tree | launches | decided by the cache | proofs paid | cached != fresh | cached pass s | "
          "median ms | p95 ms | warm check median us | warm p95 us |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, rows in results.items():
        print("\n".join(_summary(name, rows)))
    if opts.baseline:
        ratio = sum(r["cached_s"] for r in results["this tree"]) / sum(r["cached_s"] for r in results["baseline"])
        print(f"\ncached pass, this tree / baseline: {ratio:.2f}")
    if opts.out:
        Path(opts.out).write_text(json.dumps(results, indent=1))
    return 0 if not any(r["cached"] != r["fresh"] for r in results["this tree"]) else 1


if __name__ == "__main__":
    sys.exit(main())
