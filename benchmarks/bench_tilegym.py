"""Verify TileGym's real kernels at their captured launches: time, verdict, level, reasons and
witnesses per kernel, optionally against a baseline tree side by side, or under a profiler.

Run (the capture comes from ../shared/tools/tilegym_capture.py, TileGym exported to SRC):

    python benchmarks/bench_tilegym.py SRC CAPTURE.pkl [--out this.json] [--reverse] [--only SUBSTR]
    python benchmarks/bench_tilegym.py SRC CAPTURE.pkl --baseline /path/to/other/checkout
    python benchmarks/bench_tilegym.py SRC CAPTURE.pkl --only ragged --profile 25

One record per kernel (the first that compiled), each verified once in one process, the way a
user's CI job would. ``--baseline`` runs the baseline tree's sweep and this tree's, each in a fresh
process, alternating, and prints median / p95 / max per tree, their ratios, and every kernel whose
verdict, reasons or witnesses differ. ``--compare A.json B.json`` diffs two saved sweeps (e.g. three
concurrent runs, or a run with ``--reverse``).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_ONE = r"""
import cProfile, importlib, json, pickle, pstats, sys, time
tree, src, pkl, reverse, only, profile = sys.argv[1:7]
sys.path.insert(0, tree)
sys.path.insert(0, src + "/src")
import cuda.tile as ct
import tilecheck as tc

records, seen = [], set()
for r in pickle.load(open(pkl, "rb")):
    key = (r["module"], r["kernel_name"])
    if r.get("compile_ok") and key not in seen and only in f"{key[0]}.{key[1]}":
        seen.add(key)
        records.append(r)
if reverse == "1":
    records.reverse()
profiler = cProfile.Profile() if int(profile) else None
out = []
for r in records:
    label = f"{r['module']}.{r['kernel_name']}"
    kern = getattr(importlib.import_module(r["module"]), r["kernel_name"].split(".")[-1])
    if r.get("kernel_ref") == "pyfunc":
        kern = ct.kernel(kern, **(r.get("compiler_options") or {}))
    elif r.get("compiler_options"):
        kern = kern.replace_hints(**r["compiler_options"])
    t0 = time.perf_counter()
    try:
        if profiler is not None:
            profiler.enable()
        rep = tc.verify(kern, tuple(r["args"]), grid=tuple(r["grid"]))
        row = {"status": rep.status, "level": rep.level, "reasons": rep.reasons, "notes": rep.notes,
               "findings": [f"{f.kind}: {f.message} | {tc.report.describe(f.witness) if f.witness else ''}"
                            for f in rep.findings],
               "contract": str(rep.launch_contract) if rep.launch_contract is not None else None,
               "stats": {k: v for k, v in rep.stats.items() if not k.endswith("_s")},
               "phases": {k: v for k, v in rep.stats.items() if k.endswith("_s")}}
    except Exception as exc:
        row = {"status": "error", "reasons": [f"{type(exc).__name__}: {exc}"[:300]]}
    finally:
        if profiler is not None:
            profiler.disable()
    row.update(kernel=label, seconds=time.perf_counter() - t0)
    out.append(row)
    print(f"{row['seconds']:8.2f} s  {row['status']:9s} {label}  {row.get('level', '')}", file=sys.stderr, flush=True)
if profiler is not None:
    pstats.Stats(profiler, stream=sys.stderr).sort_stats("cumulative").print_stats(int(profile))
print(json.dumps(out))
"""


def sweep(tree: Path, src: str, pkl: str, reverse: bool = False, only: str = "", profile: int = 0) -> list[dict]:
    # cold proofs: a proof cache would decide every round after the first from the first's entries
    env = {**os.environ, "TILECHECK_NO_CACHE": "1"}
    done = subprocess.run([sys.executable, "-c", _ONE, str(tree), src, pkl, "1" if reverse else "0", only,
                           str(profile)], stdout=subprocess.PIPE, text=True, check=True, env=env)
    return json.loads(done.stdout.strip().splitlines()[-1])


def stats(rows: list[dict]) -> tuple[float, float, float]:
    ordered = sorted(r["seconds"] for r in rows)
    return (statistics.median(ordered), ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))],
            ordered[-1])


def counts(rows: list[dict]) -> str:
    tally: dict[str, int] = {}
    for r in rows:
        tally[r["status"]] = tally.get(r["status"], 0) + 1
    return ", ".join(f"{n} {s}" for s, n in sorted(tally.items()))


def differences(a: list[dict], b: list[dict]) -> list[str]:
    """Kernels whose verdict, level, reasons, notes, findings or launch contract differ between two
    sweeps (a sweep saved before contracts were recorded has none: not compared)."""
    by = {r["kernel"]: r for r in b}
    out = []
    for r in a:
        other = by.get(r["kernel"])
        if other is None:
            out.append(f"{r['kernel']}: missing")
            continue
        for key in ("status", "level", "reasons", "notes", "findings", "contract"):
            if key in r and key in other and r.get(key) != other.get(key):
                out.append(f"{r['kernel']}: {key}: {r.get(key)!r} != {other.get(key)!r}"[:400])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("src", nargs="?")
    parser.add_argument("capture", nargs="?")
    parser.add_argument("--baseline", help="another checkout of tilecheck, run side by side")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--reverse", action="store_true", help="verify the kernels in reverse order")
    parser.add_argument("--only", default="", help="only kernels whose module.name contains this")
    parser.add_argument("--profile", type=int, default=0, help="print the N costliest functions (cProfile)")
    parser.add_argument("--out", help="save this tree's sweep as JSON (and the baseline's beside it)")
    parser.add_argument("--compare", nargs=2, metavar="JSON", help="diff two saved sweeps and exit")
    opts = parser.parse_args()
    if opts.compare:
        a, b = (json.loads(Path(p).read_text()) for p in opts.compare)
        diff = differences(a, b)
        print("\n".join(diff) or f"identical: {len(a)} kernels")
        sys.exit(1 if diff else 0)
    if not (opts.src and opts.capture):
        parser.error("SRC and CAPTURE are required")
    trees = {"this tree": ROOT}
    if opts.baseline:
        trees = {"baseline": Path(opts.baseline).resolve(), **trees}
    runs: dict[str, list[list[dict]]] = {name: [] for name in trees}
    for n in range(opts.rounds):
        # the trees take turns going first: a sweep run second was up to 1.4x slower on kernels
        # neither tree changed (cuTile's compile included), which a fixed order charges to one tree
        order = list(trees.items()) if n % 2 == 0 else list(reversed(trees.items()))
        for name, tree in order:
            runs[name].append(sweep(tree, opts.src, opts.capture, opts.reverse, opts.only, opts.profile))
    if opts.out:
        Path(opts.out).write_text(json.dumps(runs["this tree"][-1], indent=1))
        if "baseline" in runs:  # beside it, for --compare and per-kernel ratios
            Path(opts.out).with_suffix(".baseline.json").write_text(json.dumps(runs["baseline"][-1], indent=1))
    print("| tree | kernels | verdicts | median s | p95 s | max s |")
    print("|---|---|---|---|---|---|")
    figures = {}
    for name, results in runs.items():
        rows = [row for result in results for row in result]
        figures[name] = stats(rows)
        med, p95, top = figures[name]
        print(f"| {name} | {len(results[-1])} | {counts(results[-1])} | {med:.3f} | {p95:.3f} | {top:.3f} |")
    if opts.baseline:
        ratios = [t / b for t, b in zip(figures["this tree"], figures["baseline"])]
        print(f"\nratios (this tree / baseline): median {ratios[0]:.2f}, p95 {ratios[1]:.2f}, max {ratios[2]:.2f}")
        diff = differences(runs["baseline"][-1], runs["this tree"][-1])
        print("\n".join(["", "verdicts that differ:", *diff] if diff else ["", "same verdicts, reasons and findings"]))
    slow = sorted(runs["this tree"][-1], key=lambda r: -r["seconds"])[:10]
    print("\nslowest (this tree):")
    for r in slow:
        print(f"  {r['seconds']:7.2f} s  {r['status']:9s} {r['kernel']}")


if __name__ == "__main__":
    main()
