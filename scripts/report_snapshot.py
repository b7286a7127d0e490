"""Every report of a set of verifications, written as JSON lines, so that two trees can be compared
report by report (a restructuring must leave each verdict, level, finding, witness and contract as
it was; counts alone would hide a verdict that moved one way and another that moved back).

    python scripts/report_snapshot.py --corpus corpus/ --oracle 400 --seed 7 --out before.jsonl
    python scripts/report_snapshot.py --tilegym TILEGYM_SRC CAPTURE.pkl --out tilegym.jsonl
    python scripts/report_snapshot.py --diff before.jsonl after.jsonl

Run it with ``PYTHONPATH`` set to the tree under test. Timings are left out of each line (they are not
part of a verdict); everything else ``Report.to_dict`` gives is kept. The oracle's examples are
tests/oracle_kernels.py's grammar drawn with a fixed seed (generation only); TileGym's are one
captured launch per kernel (../shared/tools/README.md says how to capture them).
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import pickle
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TIMING = ("seconds", "time", "elapsed", "wall", "_ms", "_s")


def _plain(value: Any) -> Any:
    """``value`` without its timings (keys naming a duration), and with source files by their name
    (the tree compared, and the oracle's temporary modules, live in other folders), recursively."""
    if isinstance(value, dict):
        return {k: os.path.basename(v) if k == "file" and isinstance(v, str) else _plain(v)
                for k, v in value.items() if not any(t in str(k) for t in TIMING)}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _line(label: str, produce: Any) -> dict[str, Any]:
    try:
        return {"case": label, "report": _plain(produce().to_dict())}
    except Exception as exc:  # noqa: BLE001 - an error is a result to compare too
        return {"case": label, "error": f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"}


def corpus(root: Path) -> Iterator[dict[str, Any]]:
    import tilecheck
    from tilecheck.cases import cases_of
    from tilecheck.collect import MissingFrontend, load_module
    from tilecheck.evaluation import load_manifest
    from tilecheck.ir import parse
    from tilecheck.requirements import parse as parse_precondition

    for entry in load_manifest(root):
        path = root / entry["file"]
        name = entry.get("kernel", path.stem)
        label = (f"corpus {entry['file']}::{name} case={entry.get('case', 0)} data={entry.get('data', True)} "
                 f"assume={entry.get('assume', [])}")

        def produce(entry: dict[str, Any] = entry, path: Path = path, name: str = name) -> Any:
            assume = [parse_precondition(s) for s in entry.get("assume", [])]
            if path.suffix == ".tileir":
                return tilecheck.verify(parse(path.read_text(), str(path)), None,
                                        tuple(entry.get("grid", ())) or None, assume=assume)
            case = cases_of(getattr(load_module(path), name))[entry.get("case", 0)]
            return tilecheck.verify(getattr(load_module(path), name), case.make_args(), case.grid, assume=assume,
                                    data=entry.get("data", True))
        try:
            yield _line(label, produce)
        except MissingFrontend:
            yield {"case": label, "skipped": True}


def tilegym(source: Path, capture: Path) -> Iterator[dict[str, Any]]:
    import cuda.tile as ct

    import tilecheck

    sys.path.insert(0, str(source / "src"))
    seen = set()
    for r in pickle.load(open(capture, "rb")):
        key = (r["module"], r["kernel_name"])
        if not r.get("compile_ok") or key in seen:
            continue
        seen.add(key)

        def produce(r: dict[str, Any] = r) -> Any:
            kernel = getattr(importlib.import_module(r["module"]), r["kernel_name"].split(".")[-1])
            if r.get("kernel_ref") == "pyfunc":
                kernel = ct.kernel(kernel, **(r.get("compiler_options") or {}))
            elif r.get("compiler_options"):
                kernel = kernel.replace_hints(**r["compiler_options"])
            return tilecheck.verify(kernel, tuple(r["args"]), grid=tuple(r["grid"]))
        yield _line(f"tilegym {r['module']}.{r['kernel_name']}", produce)


def oracle(examples: int, seed_value: int) -> Iterator[dict[str, Any]]:
    sys.path.insert(0, str(ROOT))
    from hypothesis import HealthCheck, Phase, given, seed, settings

    import tilecheck
    from tests.oracle_kernels import cases
    from tests.oracle_relation import load

    work = Path(tempfile.mkdtemp(prefix="snapshot-"))
    drawn: list[Any] = []

    @seed(seed_value)
    @settings(max_examples=examples, phases=[Phase.generate], database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(cases())
    def draw(case: Any) -> None:
        drawn.append(case)

    draw()
    for case in drawn:
        def produce(case: Any = case) -> Any:
            loaded = load(case.source, work)
            return tilecheck.verify(loaded.kernel, loaded.args, loaded.grid, assume=loaded.assume)
        yield _line(f"oracle {case.digest}", produce)


def diff(before: Path, after: Path) -> int:
    def keyed(path: Path) -> dict[str, Any]:  # a case met twice (a draw repeats) keeps each line
        seen: dict[str, int] = {}
        out = {}
        for d in map(json.loads, path.read_text().splitlines()):
            seen[d["case"]] = seen.get(d["case"], 0) + 1
            out[f"{d['case']} #{seen[d['case']]}"] = _plain(d)
        return out
    old, new = keyed(before), keyed(after)
    changed = [c for c in old if c in new and old[c] != new[c]]
    missing = sorted(set(old) ^ set(new))
    for c in changed:
        print(f"changed: {c}\n  before: {json.dumps(old[c])[:400]}\n  after:  {json.dumps(new[c])[:400]}")
    for c in missing:
        print(f"only in {'before' if c in old else 'after'}: {c}")
    print(f"{len(old)} before, {len(new)} after: {len(changed)} changed, {len(missing)} in one only")
    return 1 if changed or missing else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path)
    parser.add_argument("--tilegym", nargs=2, type=Path, metavar=("SOURCE", "CAPTURE"))
    parser.add_argument("--oracle", type=int, default=0, metavar="EXAMPLES")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--diff", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    opts = parser.parse_args()
    if opts.diff:
        return diff(*opts.diff)
    if opts.out is None:
        parser.error("--out is required (or --diff)")
    streams = []
    if opts.corpus:
        streams.append(corpus(opts.corpus.resolve()))
    if opts.tilegym:
        streams.append(tilegym(*opts.tilegym))
    if opts.oracle:
        streams.append(oracle(opts.oracle, opts.seed))
    with open(opts.out, "w") as out:
        for stream in streams:
            for line in stream:
                out.write(json.dumps(line, sort_keys=True, default=str) + "\n")
                out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
