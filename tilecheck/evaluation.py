"""``tilecheck eval``: measure the verifier (and optionally the runtime) on a labelled corpus."""
from __future__ import annotations

import statistics
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tilecheck.errors import TilecheckError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


@dataclass
class EntryResult:
    id: str
    expect: str
    status: str
    kinds_expected: list[str]
    kinds_found: list[str]
    seconds: float
    description: str = ""
    level: str | None = None
    reasons: list[str] = field(default_factory=list)
    run: dict[str, Any] | None = None  # differential runner summary with --run
    detected: dict[str, Any] | None = None  # tilecheck.detect at the entry's launch, with --run
    error: str | None = None
    skipped: str | None = None  # why the entry was not decided: an optional frontend not installed

    @property
    def oracle_disagrees(self) -> bool:
        """The verifier and the exact detector contradict each other: "verified" where the launch
        races, or a race at the launch of an entry labelled race-free."""
        if self.detected is None or self.detected["status"] not in ("race", "out-of-bounds"):
            return False
        return self.status == "verified" or self.expect == "verified"

    @property
    def agrees(self) -> bool:
        if self.status == "skipped":
            return True  # not decided, and said so: never counted as right or wrong
        if self.status != self.expect:
            return False
        if not set(self.kinds_expected) <= set(self.kinds_found):
            return False
        if self.oracle_disagrees:
            return False
        if self.run is not None and self.expect == "verified" and not self.run["deterministic"]:
            return "order-dependent-atomic" in self.kinds_expected  # float atomics may vary
        return True


@dataclass
class Evaluation:
    entries: list[EntryResult]

    @property
    def skipped(self) -> list[EntryResult]:
        return [e for e in self.entries if e.status == "skipped"]

    def _count(self, expect: str, status: str) -> int:
        return sum(1 for e in self.entries if e.expect == expect and e.status == status)

    @property
    def confusion(self) -> dict[str, dict[str, int]]:
        return {exp: {got: self._count(exp, got) for got in ("race", "verified", "unknown", "error")}
                for exp in ("race", "verified")}

    @property
    def precision(self) -> float:
        tp, fp = self._count("race", "race"), self._count("verified", "race")
        return tp / (tp + fp) if tp + fp else 1.0

    @property
    def recall(self) -> float:
        racy = sum(1 for e in self.entries if e.expect == "race")
        return self._count("race", "race") / racy if racy else 1.0

    @property
    def false_verified(self) -> list[str]:
        return [e.id for e in self.entries if e.expect == "race" and e.status == "verified"]

    @property
    def disagreements(self) -> list[EntryResult]:
        return [e for e in self.entries if not e.agrees]

    def times(self) -> list[float]:
        return sorted(e.seconds for e in self.entries if e.error is None)

    @property
    def median_s(self) -> float:
        t = self.times()
        return statistics.median(t) if t else 0.0

    @property
    def p95_s(self) -> float:
        t = self.times()
        return t[min(len(t) - 1, round(0.95 * (len(t) - 1)))] if t else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"kernels": [asdict(e) | {"agrees": e.agrees} for e in self.entries],
                "count": len(self.entries), "precision": self.precision, "recall": self.recall,
                "false_verified": self.false_verified, "confusion": self.confusion,
                "disagreements": [e.id for e in self.disagreements],
                "skipped": [e.id for e in self.skipped], "median_s": round(self.median_s, 4),
                "p95_s": round(self.p95_s, 4)}

    def table(self) -> str:
        c = self.confusion
        racy = sum(c["race"].values())
        safe = sum(c["verified"].values())
        lines = [f"{len(self.entries) - len(self.skipped)} kernels: {racy} racy, {safe} race-free"]
        if self.skipped:
            needs = sorted({e.skipped or "" for e in self.skipped})
            lines.append(f"{len(self.skipped)} skipped: {'; '.join(needs)}")
        lines += ["",
                 "expected \\ verdict   race  verified  unknown  error",
                 (f"race               {c['race']['race']:6d} {c['race']['verified']:9d} {c['race']['unknown']:8d} "
                 f"{c['race']['error']:6d}"),
                 (f"verified           {c['verified']['race']:6d} {c['verified']['verified']:9d} "
                 f"{c['verified']['unknown']:8d} {c['verified']['error']:6d}"),
                 "",
                 (f"precision {self.precision:.1%}   recall {self.recall:.1%}   false verified: "
                 f"{len(self.false_verified)}"),
                 f"verification time: median {self.median_s * 1000:.0f} ms, p95 {self.p95_s * 1000:.0f} ms"]
        if self.disagreements:
            lines.append("")
            lines.append("disagreements:")
            for e in self.disagreements:
                why = e.error or f"expected {e.expect} {e.kinds_expected}, got {e.status} {e.kinds_found}"
                if e.run is not None and e.status == e.expect:
                    why = f"runs: {e.run}"
                if e.oracle_disagrees:
                    why = f"verify says {e.status}, tilecheck.detect finds {e.detected['kinds']} at this launch"
                lines.append(f"  {e.id}: {why}")
        return "\n".join(lines)


def load_manifest(root: Path) -> list[dict[str, Any]]:
    path = root / "manifest.toml" if root.is_dir() else root
    if not path.exists():
        raise TilecheckError(f"no manifest.toml in {root}")
    try:
        data = tomllib.loads(path.read_bytes().decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise TilecheckError(f"{path}: not a manifest ({exc})") from None
    except OSError as exc:
        raise TilecheckError(f"cannot read {path}: {exc.strerror or exc}") from None
    entries = data.get("kernel", [])
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise TilecheckError(f"{path}: expected [[kernel]] tables (file = ..., expect = ...)")
    for i, e in enumerate(entries):
        for key in ("file", "expect"):
            if key not in e:
                raise TilecheckError(f"{path}: entry {i + 1} has no '{key}'")
        if e["expect"] not in ("race", "verified"):
            raise TilecheckError(f"{path}: entry {i + 1}: expect must be 'race' or 'verified'")
    return entries


def evaluate(root: str | Path, *, run: bool = False, runs: int = 10, timeout_s: float = 600.0,
             progress: Any = None) -> Evaluation:
    """Verify (and with ``run``, repeatedly run) every manifest entry under ``root``."""
    from tilecheck.collect import MissingFrontend, load_module
    from tilecheck.interp import detect
    from tilecheck.ir import parse
    from tilecheck.requirements import parse as parse_precondition
    from tilecheck.runtime import run_repeated
    from tilecheck.verifier import verify

    root = Path(root)
    base = root if root.is_dir() else root.parent
    results = []
    for entry in load_manifest(root):
        path = base / entry["file"]
        name = entry.get("kernel", path.stem)
        ident = f"{entry['file']}::{name}" + (f" [{', '.join(entry['assume'])}]" if entry.get("assume") else "")
        data = entry.get("data", True)  # false: every index content at the given shapes, not this launch's
        ident += "" if data else " [any contents]"
        ident += f" [case {entry['case']}]" if entry.get("case") else ""
        result = EntryResult(ident, entry["expect"], "error", list(entry.get("kinds", [])), [], 0.0,
                             entry.get("description", ""))
        try:
            assume = [parse_precondition(s) for s in entry.get("assume", [])]
            if path.suffix == ".tileir":
                kernel, args = parse(path.read_text(), str(path)), None
                grid = tuple(entry.get("grid", ())) or None
            else:
                kernel = getattr(load_module(path), name, None)
                if kernel is None:
                    raise TilecheckError(f"{path} has no kernel '{name}'")
                from tilecheck.cases import cases_of

                cases = cases_of(kernel)
                if not cases:
                    raise TilecheckError(f"{ident}: no case declared")
                case = cases[entry.get("case", 0)]
                args, grid = case.make_args(), case.grid
            start = time.perf_counter()
            report = verify(kernel, args, grid, assume=assume, timeout_s=timeout_s, data=data)
            result.seconds = time.perf_counter() - start
            # the corpus labels defects "race": an out-of-bounds verdict meets a "race" label
            status = "race" if report.status == "out-of-bounds" else report.status
            result.status, result.level, result.reasons = status, report.level, report.reasons
            result.kinds_found = sorted({f.kind for f in report.findings})
            if run and args is not None:
                rep = run_repeated(kernel, args, grid, runs=runs, progress=False)
                result.run = {"deterministic": rep.deterministic,
                              "fraction_differing": round(rep.fraction_differing, 4), "runs": runs}
                found = detect(kernel, args, grid, assume=assume)
                result.detected = {"status": found.status, "kinds": sorted({f.kind for f in found.findings})}
        except MissingFrontend as exc:
            result.status, result.skipped = "skipped", f"needs {exc.extra}"
        except TilecheckError as exc:
            result.error = str(exc).splitlines()[0]
        results.append(result)
        if progress is not None:
            progress(result)
    return Evaluation(results)
