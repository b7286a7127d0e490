"""TritonRaceBench (triton-viz's labelled benchmark, 56 Triton launches) through tilecheck's Triton
frontend: per row, ``verify`` at its launch and ``detect``, whether a race's witness names the planted
racing lines, and the time (frontend included: TTIR compile, lowering, the check).

    git -C <triton-viz clone> archive race-detector-z3-demo | tar -x -C /tmp/tviz-full
    python benchmarks/bench_tritonracebench.py /tmp/tviz-full [--rows trb012,trb025] [--markdown] [--runs R]

With ``--runs R``, each row is also run R times on the CPU interpreter (``tilecheck.run_repeated``,
adversarial schedules): whether it runs (the stock Triton interpreter cannot run three rows) and
whether its outputs differ between runs.

The rows come from ../shared/tools/tritonracebench_rows.py (or $TRITONRACEBENCH_ROWS), which imports
the corpus from the exported tree. Each row runs in this one process, in corpus order, with the
proof cache off (a cold proof per row, as the peer's figures are).
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ["TILECHECK_NO_CACHE"] = "1"

import tilecheck  # noqa: E402

VERDICT = {"race": "race", "race-free": "verified"}


def _rows_module():
    path = Path(os.environ.get("TRITONRACEBENCH_ROWS", ROOT.parent / "shared" / "tools" / "tritonracebench_rows.py"))
    spec = importlib.util.spec_from_file_location("tritonracebench_rows", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _line(loc) -> str:
    try:
        return Path(loc.file).read_text().splitlines()[loc.line - 1]
    except (OSError, IndexError, TypeError):
        return ""


def _names_pair(report, pair) -> bool | None:
    """Does some race of ``report`` name planted lines on both sides (``pair``: the planted lines as
    source substrings, two or more)? None for a row without planted lines."""
    if not pair:
        return None
    for f in report.races:
        lines = [_line(loc) for loc in (f.loc, *f.related_locs)] or [""]
        hits = [{p for p in pair if p in line} for line in lines]
        if all(hits) and len(set().union(*hits)) >= min(len(pair), 2):
            return True
    return False


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("tree", help="an exported triton-viz tree (branch race-detector-z3-demo)")
    parser.add_argument("--rows", default="", help="comma-separated substrings of row names to run")
    parser.add_argument("--markdown", action="store_true", help="print the per-row table as markdown")
    parser.add_argument("--runs", type=int, default=0, help="also run each row this many times (run_repeated)")
    parser.add_argument("--corpus", default="tritonracebench",
                        help="another corpus of the tree, e.g. liger (needs liger-kernel==0.8.0, as the peer ran)")
    opts = parser.parse_args()
    rows = _rows_module().load_rows(opts.tree, corpus=opts.corpus)
    wanted = [w for w in opts.rows.split(",") if w]
    out = []
    ran_by_row: dict[str, str] = {}
    for row in rows:
        if wanted and not any(w in row.name for w in wanted):
            continue
        start = time.perf_counter()
        try:
            report = tilecheck.verify(row.fn, row.kwargs(0), row.grid)
            verdict, named = report.status, _names_pair(report, row.race_pair)
        except tilecheck.TilecheckError as exc:  # e.g. Triton itself cannot compile the kernel
            verdict, named, report = f"error: {exc}".splitlines()[0][:80], None, None
        except RuntimeError as exc:  # the corpus's own argument factory (a version skew)
            verdict, named, report = f"harness: {exc}".splitlines()[0][:80], None, None
        verify_s = time.perf_counter() - start
        start = time.perf_counter()
        try:
            detected = tilecheck.detect(row.fn, row.kwargs(0), row.grid).status
        except (tilecheck.TilecheckError, RuntimeError) as exc:
            detected = f"error: {exc}".splitlines()[0][:80]
        detect_s = time.perf_counter() - start
        ran = ""
        if opts.runs:
            try:
                runs = tilecheck.run_repeated(row.fn, row.kwargs(0), row.grid, runs=opts.runs, progress=False)
                ran = "nondeterministic" if not runs.deterministic else "deterministic"
            except (tilecheck.TilecheckError, RuntimeError) as exc:
                ran = f"error: {exc}".splitlines()[0][:80]
            ran_by_row[row.name] = ran
        out.append((row, verdict, named, verify_s, detected, detect_s))
        print(f"{row.name:42s} {str(row.label):9s} verify={verdict:9s} {verify_s:6.2f}s  "
              f"detect={detected:9s} {detect_s:6.2f}s  witness-on-planted-lines={named}"
              + (f"  runs={ran}" if ran else ""), flush=True)
    labelled = [o for o in out if o[0].label in VERDICT]
    decided = [o for o in out if o[1] in ("race", "verified", "out-of-bounds")]
    said_race = [o for o in labelled if o[1] in ("race", "out-of-bounds")]
    true_race = [o for o in labelled if o[0].label == "race"]
    tp = sum(1 for o in said_race if o[0].label == "race")
    precision = tp / len(said_race) if said_race else 1.0
    recall = tp / len(true_race) if true_race else 1.0
    times = sorted(o[3] for o in out)
    p95 = times[min(len(times) - 1, int(round(0.95 * (len(times) - 1))))] if times else 0.0
    named = [o for o in true_race if o[0].race_pair]  # racy rows whose planted lines are given
    print(f"\nrows {len(out)}, decided {len(decided)}, verify P = {precision:.3f}, R = {recall:.3f}; "
          f"detect agrees with the label on {sum(1 for o in labelled if o[4] == VERDICT[o[0].label])}"
          f"/{len(labelled)}; race witnesses on the planted lines {sum(1 for o in named if o[2])}/{len(named)}; "
          f"verify time per row: median {statistics.median(times):.2f} s, p95 {p95:.2f} s, max {times[-1]:.2f} s")
    if ran_by_row:
        failed = sorted(n for n, r in ran_by_row.items() if r.startswith("error"))
        shown = sum(1 for o in out if o[4] == "race" and ran_by_row.get(o[0].name) == "nondeterministic")
        print(f"run_repeated ({opts.runs} runs): ran {len(ran_by_row) - len(failed)}/{len(ran_by_row)} rows"
              + (f" (not: {', '.join(failed)})" if failed else "")
              + f"; outputs differ between runs on {shown} of the {sum(1 for o in out if o[4] == 'race')} rows "
              f"detect finds racy")
    if opts.markdown:
        print("\n| row | label | verify | witness on planted lines | verify s | detect | detect s |")
        print("|---|---|---|---|---|---|---|")
        for row, verdict, named_, vs, det, ds in out:
            mark = "" if named_ is None else ("yes" if named_ else "no")
            print(f"| {row.name} | {row.label or 'unlabelled'} | {verdict} | {mark} | {vs:.2f} | {det} | {ds:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
