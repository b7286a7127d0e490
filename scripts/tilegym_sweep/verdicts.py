"""One line per TileGym kernel at its captured launch: verdict, kinds, witnesses, reasons, time;
optionally what the exact detector (``tilecheck.detect``) says about the same launch.

    python scripts/tilegym_sweep/verdicts.py TILEGYM_SRC CAPTURE.pkl OUT.jsonl [--detect] [--only SUBSTR]
                                             [--skip SUBSTR ...] [--limit S]
    python scripts/tilegym_sweep/verdicts.py --compare A.jsonl B.jsonl     # verdict changes between two runs
    python scripts/tilegym_sweep/verdicts.py --summary A.jsonl [B.jsonl]   # counts, p95/max, races, unknowns

CAPTURE.pkl comes from /work/shared/tools/tilegym_capture.py; the records are chosen as
run_tilegym.py chooses them (the first record of each kernel that compiled). Each kernel is verified
with ``tilecheck.verify(kernel, args, grid)``; with ``--detect`` the same launch is also given to
``tilecheck.detect`` (if this tilecheck has it), so a ``race`` verdict can be triaged: detect says
race => genuine at this launch; detect says verified => the race needs other index contents (the
witness says "when idx[i] = v") or it is a false alarm. A ``verified`` verdict where detect finds a
race would be a wrong proof. Works with older tilecheck versions: run each version from its own
``git worktree`` with PYTHONPATH=<worktree> (a shared tree that changes mid-run mixes versions).
``--limit S`` bounds verify and detect per kernel (SIGALRM, checked between Python bytecodes); detect
on liger tvd's launch needs more memory than a 23 GB machine has: ``--skip _tv_distance_kernel_ct``.
Not part of CI; docs/corpus.md has the last results.
"""
from __future__ import annotations

import collections
import importlib
import json
import os
import pickle
import signal
import sys
import time
import traceback


class _Timeout(Exception):
    pass


def _alarm(_signum, _frame):
    raise _Timeout()


def _describe():
    # look in the imported tilecheck's own tree: an editable install of another tree would
    # otherwise supply a module this one lacks
    import tilecheck
    if os.path.exists(os.path.join(os.path.dirname(tilecheck.__file__), "report.py")):
        from tilecheck.report import describe
    else:  # before the report moved out of the verifier
        from tilecheck.verifier.report import describe
    return describe


def _findings(rep, describe) -> list[str]:
    out = []
    for f in rep.findings:
        loc = f"{getattr(f.loc, 'file', None)}:{getattr(f.loc, 'line', 0)}"
        others = ",".join(f"{getattr(o, 'line', 0)}" for o in getattr(f, "related_locs", ()) if o != f.loc)
        text = describe(f.witness) if f.witness is not None else f.message
        out.append(f"{f.kind} @ {loc}" + (f" (+{others})" if others else "") + f": {text}")
    return out


def _kernel(rec):
    import cuda.tile as ct
    kern = getattr(importlib.import_module(rec["module"]), rec["kernel_name"].split(".")[-1])
    if rec.get("kernel_ref") == "pyfunc":
        kern = ct.kernel(kern, **(rec.get("compiler_options") or {}))
    elif rec.get("compiler_options"):
        kern = kern.replace_hints(**rec["compiler_options"])
    return kern


def _records(pkl: str) -> list[dict]:
    with open(pkl, "rb") as fh:
        records = pickle.load(fh)
    seen, kept = set(), []
    for r in records:
        if not r.get("compile_ok"):
            continue
        key = (r["module"], r["kernel_name"])
        if key not in seen:
            seen.add(key)
            kept.append(r)
    return kept


def sweep(src: str, pkl: str, out: str, with_detect: bool, only: str | None, limit_s: int,
          skip: list[str]) -> None:
    sys.path.insert(0, src + "/src")
    import tilecheck as tc
    describe = _describe()
    detect = getattr(tc, "detect", None) if with_detect else None
    signal.signal(signal.SIGALRM, _alarm)
    with open(out, "w") as fh:
        for rec in _records(pkl):
            label = f"{rec['module']}.{rec['kernel_name']}"
            if (only and only not in label) or any(x in label for x in skip):
                continue
            row = {"kernel": label, "file": rec.get("source_file"), "line": rec.get("lineno"),
                   "grid": list(rec["grid"]), "tilecheck": tc.__file__}
            try:
                kern = _kernel(rec)
                signal.alarm(limit_s)
                t0 = time.perf_counter()
                try:
                    rep = tc.verify(kern, tuple(rec["args"]), grid=tuple(rec["grid"]))
                finally:
                    row["time_s"] = round(time.perf_counter() - t0, 4)
                    signal.alarm(0)
                row["status"] = str(rep.status)
                row["level"] = rep.level
                row["kinds"] = sorted({str(f.kind) for f in rep.findings})
                row["findings"] = _findings(rep, describe)
                row["reasons"] = list(rep.reasons)
                row["notes"] = list(getattr(rep, "notes", []))
            except _Timeout:
                row["status"], row["error"] = "error", f"verify took over {limit_s} s"
            except Exception as e:  # noqa: BLE001 -- one kernel's crash is a result, not the end of the sweep
                row["status"], row["error"] = "error", f"{type(e).__name__}: {e}"
                row["traceback"] = traceback.format_exc()[-3000:]
            if detect is not None and row["status"] != "error":
                signal.alarm(limit_s)
                t0 = time.perf_counter()
                try:
                    d = detect(kern, tuple(rec["args"]), tuple(rec["grid"]))
                    row["detect"] = {"status": str(d.status), "kinds": sorted({str(f.kind) for f in d.findings}),
                                     "findings": _findings(d, describe)[:6], "reasons": list(d.reasons)}
                except _Timeout:
                    row["detect"] = {"status": "error", "error": f"detect took over {limit_s} s"}
                except Exception as e:  # noqa: BLE001 -- likewise for the detector
                    row["detect"] = {"status": "error", "error": f"{type(e).__name__}: {str(e)[:300]}"}
                finally:
                    signal.alarm(0)
                    row["detect_s"] = round(time.perf_counter() - t0, 3)
            fh.write(json.dumps(row) + "\n")
            fh.flush()
            det = row.get("detect", {}).get("status", "-")
            print(f"{row['status']:8s} detect={det:8s} {row.get('time_s', 0):7.2f}s {label} "
                  f"{','.join(row.get('kinds', []))} {row.get('error', '')}", flush=True)


def _load(path: str) -> dict[str, dict]:
    with open(path) as fh:
        return {r["kernel"]: r for r in map(json.loads, fh)}


VERDICT_KEYS = ("status", "kinds", "findings", "reasons")


def compare(a: str, b: str) -> int:
    ra, rb = _load(a), _load(b)
    changed = 0
    for k in sorted(set(ra) | set(rb)):
        x, y = ra.get(k, {}), rb.get(k, {})
        for key in VERDICT_KEYS:
            if x.get(key) != y.get(key):
                changed += 1
                print(f"{k}: {key}: {x.get(key)!r} != {y.get(key)!r}")
    print(f"{len(set(ra) | set(rb))} kernels, {changed} differences in {', '.join(VERDICT_KEYS)}")
    return 1 if changed else 0


def _pct(times: list[float], q: float) -> float:
    s = sorted(times)
    return s[min(len(s) - 1, round(q * (len(s) - 1)))] if s else float("nan")


def summary(paths: list[str]) -> None:
    for path in paths:
        rows = list(_load(path).values())
        counts = collections.Counter(r["status"] for r in rows)
        times = [r["time_s"] for r in rows if "time_s" in r]
        print(f"{path}: {len(rows)} kernels: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
        print(f"  time per kernel: median {_pct(times, 0.5):.3f} s, p95 {_pct(times, 0.95):.3f} s, "
              f"max {max(times):.3f} s ({max(rows, key=lambda r: r.get('time_s', 0))['kernel']})")
        slow = sorted(rows, key=lambda r: -r.get("time_s", 0))[:5]
        print("  slowest: " + "; ".join(f"{r['kernel'].split('.')[-1]} {r.get('time_s', 0):.2f}s" for r in slow))
        dcounts = collections.Counter((r["status"], r.get("detect", {}).get("status")) for r in rows)
        if any(d for _, d in dcounts):
            print("  (verify, detect): " + ", ".join(f"{k} {v}" for k, v in sorted(dcounts.items(), key=str)))
        for r in rows:
            flagged = r["status"] not in ("verified", "unknown", "error")  # race, out-of-bounds
            if flagged or (r["status"] == "verified" and r.get("detect", {}).get("status") == "race"):
                print(f"  {r['status']}: {r['kernel']} ({r['file']}) {r['kinds']} detect="
                      f"{r.get('detect', {}).get('status')} {r.get('detect', {}).get('kinds', '')}")
                for f in r["findings"]:
                    print(f"      {f[:400]}")
        reasons = collections.Counter()
        for r in rows:
            if r["status"] == "unknown":
                reasons.update(set(r["reasons"]) or {"(no reason)"})
            if r["status"] == "error":
                reasons[r.get("error", "")[:200]] += 1
        for reason, k in reasons.most_common(40):
            print(f"  {k:3d} x {reason[:300]}")


def main(argv: list[str]) -> int:
    if argv[0] == "--compare":
        return compare(argv[1], argv[2])
    if argv[0] == "--summary":
        summary(argv[1:])
        return 0
    only = argv[argv.index("--only") + 1] if "--only" in argv else None
    limit = int(argv[argv.index("--limit") + 1]) if "--limit" in argv else 600
    skip = [argv[i + 1] for i, a in enumerate(argv) if a == "--skip"]
    sweep(argv[0], argv[1], argv[2], "--detect" in argv, only, limit, skip)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
