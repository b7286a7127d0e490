"""The corpus on the GPU: every manifest entry with a declared case is run ``--runs`` times on the
device through the differential runner, and its outputs compared bit for bit. The question is the
verifier's trust: a kernel the corpus labels race-free must give one outcome on real hardware;
a racy one may or may not show its race in a few runs (small corpus grids rarely do).

Run on a GPU machine:   python scripts/device_corpus.py [--runs 20] [--json OUT.json]
Without a GPU (CI):     python scripts/device_corpus.py --simulate
Entries labelled out-of-bounds are skipped (an illegal address poisons the CUDA context for every
later entry); entries guarded by spin locks run last, so a kernel that hangs costs only the rest
(scripts/device_check.sh runs this under a timeout and prints each row as it finishes).
"""
from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tilecheck.cases import cases_of
from tilecheck.collect import load_module
from tilecheck.errors import TilecheckError
from tilecheck.evaluation import load_manifest
from tilecheck.runtime import run_repeated
from tilecheck.runtime.cuda import CudaError, SimulatedDriver, current_driver, use_driver

SKIPPED_KINDS = {"out-of-bounds"}


def _last_if_locked(entry: dict[str, Any]) -> bool:
    text = f"{entry.get('kernel', '')} {entry.get('description', '')}".lower()
    return "lock" in text or "spin" in text


def entries(root: Path) -> list[dict[str, Any]]:
    """The manifest's Python entries, locked ones last (stable otherwise)."""
    runnable = [e for e in load_manifest(root) if e["file"].endswith(".py")]
    return sorted(runnable, key=_last_if_locked)


def run_entry(root: Path, entry: dict[str, Any], runs: int) -> dict[str, Any]:
    path = root / entry["file"]
    name = entry.get("kernel", path.stem)
    row: dict[str, Any] = {"entry": f"{entry['file']}::{name}" + (f" [case {entry['case']}]" if entry.get("case") else ""),
                           "expect": entry["expect"], "kinds": list(entry.get("kinds", []))}
    if SKIPPED_KINDS & set(row["kinds"]):
        row["skipped"] = "out-of-bounds entries would poison the CUDA context"
        return row
    kernel = getattr(load_module(path), name)
    case = cases_of(kernel)[entry.get("case", 0)]
    start = time.perf_counter()
    report = run_repeated(kernel, case.make_args(), case.grid, runs=runs, backend="cuda", progress=False)
    row.update(seconds=round(time.perf_counter() - start, 3), deterministic=report.deterministic,
               fraction_differing=round(report.fraction_differing, 4),
               outcomes=max((a.distinct_outcomes for a in report.arrays.values()), default=1))
    return row


def verdict(row: dict[str, Any]) -> str:
    """What the row says about trust: an alarm is a race-free label with a nondeterministic output."""
    if "skipped" in row or "error" in row:
        return "-"
    if row["expect"] == "verified":
        if "order-dependent-atomic" in row["kinds"]:  # race-free, but float atomics round by arrival order
            return "ok" if row["deterministic"] else "order-dependent (expected)"
        return "ok" if row["deterministic"] else "ALARM: nondeterministic"
    return "race seen" if not row["deterministic"] else "not seen"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", default=str(ROOT / "corpus"))
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--simulate", action="store_true", help="the simulated device (checks the script only)")
    parser.add_argument("--limit", type=int, default=None, help="only the first N entries")
    parser.add_argument("--json", default=None, help="also write the rows here")
    args = parser.parse_args(argv)
    root = Path(args.root)
    if args.simulate:
        context = use_driver(SimulatedDriver(seed=3))
    else:
        try:
            current_driver()
        except CudaError as exc:
            print(f"device_corpus: {exc}", file=sys.stderr)
            return 2
        context = contextlib.nullcontext()
    rows = []
    print("| entry | label | kinds | runs | outcomes | differing | on the device |\n|---|---|---|---:|---:|---:|---|",
          flush=True)
    with context:
        for entry in entries(root)[:args.limit]:
            try:
                row = run_entry(root, entry, args.runs)
            except (TilecheckError, CudaError, RuntimeError, ValueError, TypeError) as exc:
                row = {"entry": f"{entry['file']}::{entry.get('kernel', '')}", "expect": entry["expect"],
                       "kinds": list(entry.get("kinds", [])), "error": f"{type(exc).__name__}: {exc}"[:300]}
            rows.append(row)
            detail = row.get("skipped") or row.get("error")
            if detail:
                print(f"| {row['entry']} | {row['expect']} | {', '.join(row['kinds'])} | - | - | - | {detail} |", flush=True)
            else:
                print(f"| {row['entry']} | {row['expect']} | {', '.join(row['kinds'])} | {args.runs} | {row['outcomes']} | "
                      f"{row['fraction_differing']:.1%} | {verdict(row)} |", flush=True)
            if args.json:  # rewritten after every row: a hang later still leaves these
                Path(args.json).write_text(json.dumps(rows, indent=1))
    alarms = [r for r in rows if verdict(r).startswith("ALARM")]
    racy = [r for r in rows if r["expect"] == "race" and "deterministic" in r]
    errors = [r for r in rows if "error" in r]
    print(f"\n{len(rows)} entries: {len(alarms)} race-free-labelled with a nondeterministic output, "
          f"{sum(verdict(r) == 'race seen' for r in racy)} of {len(racy)} racy run ones showed their race, "
          f"{len(errors)} errors", flush=True)
    return 1 if alarms or errors else 0


if __name__ == "__main__":
    sys.exit(main())
