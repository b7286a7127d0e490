"""Renderings of ``tilecheck verify`` results: text, JSON (schema in docs/ci.md) and SARIF 2.1.0."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tilecheck.jobs import JobResult
from tilecheck.report import KINDS

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_RULE_TEXT = {
    "write-write": "Two tile blocks write the same element with no ordering between them",
    "read-write": "A tile block reads an element another block writes, with no ordering",
    "unordered-in-block": "Conflicting accesses inside one tile block that no token orders",
    "out-of-bounds": "A pointer access may leave its array and no mask excludes it",
    "order-dependent-atomic": "Atomics from several blocks whose result depends on their order (float add, exchange)",
    "assumption-violated": "The given arguments break one of the kernel's own assumptions: nothing is proved for them",
    "overflow": "Index arithmetic leaves its integer type's range at the given case (it wraps around)",
    "aliasing": "A written array overlaps another argument or itself",
    "unknown": "The kernel could not be verified",
}


def summary(results: list[JobResult], no_case: list[str]) -> dict[str, int]:
    counts = {s: sum(1 for r in results if r.status == s)
              for s in ("verified", "race", "out-of-bounds", "unknown", "error")}
    counts["no_case"] = len(no_case)
    counts["kernels"] = len(results) + len(no_case)
    return counts


def render_text(results: list[JobResult], no_case: list[str]) -> str:
    out = []
    for r in results:
        grid = f", grid {tuple(r.grid)}" if r.grid else ""
        out.append(f"== {r.id}{grid}  ({r.seconds * 1000:.0f} ms)")
        out.append(f"error: {r.text}" if r.status == "error" else r.text)
        out.append("")
    for k in no_case:
        out.append(f"== {k}: no case declared (add @tilecheck.case(grid=..., args=...))")
        out.append("")
    s = summary(results, no_case)
    oob = f"{s['out-of-bounds']} out of bounds, " if s["out-of-bounds"] else ""
    out.append(f"{s['kernels']} kernel case(s): {s['verified']} verified, {s['race']} racy, {oob}{s['unknown']} "
               f"unknown, {s['error']} error(s), {s['no_case']} without a case")
    return "\n".join(out)


def render_json(results: list[JobResult], no_case: list[str], shard: dict[str, int] | None = None) -> str:
    """The JSON report; ``shard`` (``{"index", "count", "dealt"}``) when it is one shard of a split run."""
    data = {"tool": "tilecheck", "version": 1, **({"shard": shard} if shard else {}),
            "results": [{"id": r.id, "file": r.path, "kernel": r.kernel, "case": r.case, "grid": r.grid,
                         "status": r.status, "seconds": round(r.seconds, 4),
                         "error": r.text if r.status == "error" else None,
                         **({k: r.report.get(k) for k in ("level", "findings", "assumptions", "reasons", "notes",
                                                          "contract", "launch_contract")}
                            if r.report else {"level": None, "findings": [], "assumptions": [], "reasons": [],
                                              "notes": [], "contract": None, "launch_contract": None})}
                        for r in results],
            "no_case": no_case, "summary": summary(results, no_case)}
    return json.dumps(data, indent=2, default=str)


def _uri(file: str | None, root: Path) -> str:
    if not file:
        return "unknown"
    path = Path(file)
    try:
        path = path.resolve().relative_to(root.resolve())
    except ValueError:
        pass
    return path.as_posix()


def _location(loc: dict[str, Any] | None, root: Path, fallback: str) -> dict[str, Any]:
    if not loc or not loc.get("file"):
        return {"physicalLocation": {"artifactLocation": {"uri": _uri(fallback, root)}}}
    region = {"startLine": max(1, int(loc.get("line") or 1))}
    if loc.get("col"):
        region["startColumn"] = int(loc["col"]) + 1  # cuTile columns are 0-based, SARIF's 1-based
    return {"physicalLocation": {"artifactLocation": {"uri": _uri(loc["file"], root)}, "region": region}}


def render_sarif(results: list[JobResult], root: Path, version: str, shard: dict[str, int] | None = None) -> str:
    sarif_results = []
    notifications: list[dict[str, Any]] = []  # cases that could not be checked: tool errors, not findings
    for r in results:
        if r.report is None:
            if r.status == "error":
                notifications.append({"level": "error", "message": {"text": f"{r.id}: {r.text}"},
                                      "locations": [_location(None, root, r.path)]})
            continue
        for f in r.report["findings"]:
            level = "warning" if f["kind"] == "order-dependent-atomic" else "error"
            entry: dict[str, Any] = {
                "ruleId": f["kind"], "level": level,
                "message": {"text": f"{r.kernel}: {f['message']}"},
                "locations": [_location(f["loc"], root, r.path)],
            }
            related = [_location(loc, root, r.path) | {"id": i + 1, "message": {"text": "the other access"}}
                       for i, loc in enumerate(f["related_locs"])]
            if related:
                entry["relatedLocations"] = related
            sarif_results.append(entry)
        if r.status == "unknown":
            sarif_results.append({"ruleId": "unknown", "level": "warning",
                                  "message": {"text": f"{r.kernel}: " + "; ".join(r.report["reasons"][:3])},
                                  "locations": [_location(None, root, r.path)]})
    rules = [{"id": k, "shortDescription": {"text": _RULE_TEXT[k]}} for k in (*KINDS, "unknown")]
    log = {"$schema": SARIF_SCHEMA, "version": "2.1.0",
           "runs": [{"tool": {"driver": {"name": "tilecheck", "version": version,
                                         "informationUri": "https://pypi.org/project/tilecheck/",
                                         "rules": rules}},
                     "invocations": [{"executionSuccessful": not notifications,
                                      "toolExecutionNotifications": notifications}],
                     "results": sarif_results,
                     # each case's contract over the shapes (proved: the verdict holds for every launch
                     # it admits), by case id
                     "properties": {"launchContracts": {
                         r.id: r.report["launch_contract"] for r in results
                         if r.report is not None and r.report.get("launch_contract") is not None},
                         **({"shard": shard} if shard else {})}}]}
    return json.dumps(log, indent=2)


def merge_reports(documents: list[dict[str, Any]]) -> dict[str, Any]:
    """One report from the JSON or SARIF reports of ``tilecheck verify --shard`` runs (all of one
    format): JSON results and kernels without a case concatenated in the order given, the summary
    recounted; SARIF results and tool notifications concatenated into one run."""
    if not documents:
        raise ValueError("nothing to merge")
    for n, d in enumerate(documents, 1):
        if not isinstance(d, dict):
            raise ValueError(f"report {n} is a JSON {type(d).__name__}, not a tilecheck report or SARIF log")
    if all(d.get("tool") == "tilecheck" and isinstance(d.get("results"), list) for d in documents):
        for n, d in enumerate(documents, 1):
            _checked_list(d.get("no_case", []), f"report {n}: 'no_case'")
            for r in d["results"]:
                if not isinstance(r, dict):
                    raise ValueError(f"report {n}: a result is a {type(r).__name__}, not an object")
        _check_shards([d.get("shard") for d in documents])
        results = [r for d in documents for r in d["results"]]
        ids = [r.get("id") for r in results]
        twice = sorted({i for i in ids if ids.count(i) > 1 and i is not None})
        if twice:
            raise ValueError(f"case(s) reported more than once: {', '.join(map(str, twice[:3]))} (the same shard given twice?)")
        no_case = [k for d in documents for k in d.get("no_case", [])]
        counts = {s: sum(1 for r in results if r.get("status") == s)
                  for s in ("verified", "race", "out-of-bounds", "unknown", "error")}
        counts |= {"no_case": len(no_case), "kernels": len(results) + len(no_case)}
        return {"tool": "tilecheck", "version": documents[0].get("version", 1), "results": results,
                "no_case": no_case, "summary": counts}
    if all(d.get("version") == "2.1.0" and isinstance(d.get("runs"), list) and len(d["runs"]) == 1
           and d["runs"][0].get("tool", {}).get("driver", {}).get("name") == "tilecheck" for d in documents):
        runs = [d["runs"][0] for d in documents]
        for n, run in enumerate(runs, 1):  # a torn or hand-edited shard is an error naming it, not a crash
            if not isinstance(run, dict):
                raise ValueError(f"SARIF log {n}: its run is a {type(run).__name__}, not an object")
            _checked_list(run.get("results", []), f"SARIF log {n}: 'results'")
            for inv in _checked_list(run.get("invocations", []), f"SARIF log {n}: 'invocations'"):
                if not isinstance(inv, dict):
                    raise ValueError(f"SARIF log {n}: an invocation is a {type(inv).__name__}, not an object")
                _checked_list(inv.get("toolExecutionNotifications", []), f"SARIF log {n}: 'toolExecutionNotifications'")
        _check_shards([(run.get("properties") or {}).get("shard") for run in runs])
        notifications = [n for run in runs for inv in run.get("invocations", [])
                         for n in inv.get("toolExecutionNotifications", [])]
        merged = dict(runs[0])
        merged["results"] = [r for run in runs for r in run.get("results", [])]
        contracts = {}
        for run in runs:  # every shard's contracts, not the first one's
            contracts.update((run.get("properties") or {}).get("launchContracts") or {})
        merged["properties"] = {**(runs[0].get("properties") or {}), "launchContracts": contracts}
        merged["properties"].pop("shard", None)
        merged["invocations"] = [{"executionSuccessful": all(inv.get("executionSuccessful", True) for run in runs
                                                             for inv in run.get("invocations", [])),
                                  "toolExecutionNotifications": notifications}]
        return dict(documents[0]) | {"runs": [merged]}
    raise ValueError("expected the JSON reports or the SARIF logs of `tilecheck verify`, all of one format")


def _check_shards(shards: list[Any]) -> None:
    """The shards of one split run, each once: all say their place (``--shard I/N``), all of the same
    N and the same number of cases dealt, indices 1..N each exactly once. Reports that are not
    shards are merged as given (and a case reported twice is refused by the caller)."""
    if all(s is None for s in shards):
        return
    for n, s in enumerate(shards, 1):
        if not (isinstance(s, dict) and all(isinstance(s.get(k), int) for k in ("index", "count", "dealt"))):
            raise ValueError(f"report {n} is not a shard of a `tilecheck verify --shard I/N` run, the others are")
    counts = sorted({s["count"] for s in shards})
    if len(counts) > 1:
        raise ValueError(f"shards of different splits ({' and '.join(f'{c}-way' for c in counts)})")
    dealt = sorted({s["dealt"] for s in shards})
    if len(dealt) > 1:
        raise ValueError(f"shards of different runs (they dealt {' and '.join(map(str, dealt))} cases)")
    indices = [s["index"] for s in shards]
    twice = sorted({i for i in indices if indices.count(i) > 1})
    if twice:
        raise ValueError(f"shard {', '.join(f'{i}/{counts[0]}' for i in twice)} given more than once")
    missing = sorted(set(range(1, counts[0] + 1)) - set(indices))
    if missing:
        raise ValueError(f"shard {', '.join(f'{i}/{counts[0]}' for i in missing)} missing: the merged report "
                         "would leave its cases out")


def _checked_list(value: Any, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise ValueError(f"{what} is {json.dumps(value)[:40]}, not a list")
    return value
