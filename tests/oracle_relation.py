"""The oracle relation (``tests/test_oracle.py``, ``scripts/oracle_long.py``): one generated launch,
written as a self-contained module and imported, then ``tilecheck.verify`` against the exact
detector ``tilecheck.detect``: verified with a race or out-of-bounds access at the launch is a
disagreement. The grammars that generate the modules: ``tests/oracle_kernels.py`` (cuTile) and
``tests/oracle_triton.py`` (Triton)."""
from __future__ import annotations

import hashlib
import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class OracleCase:
    """One generated launch: module source (kernel ``k``, ``make_args``, ``GRID``, ``ASSUME``)."""

    source: str
    features: frozenset[str] = frozenset()

    @property
    def digest(self) -> str:
        return hashlib.sha1(self.source.encode()).hexdigest()[:12]


@dataclass(frozen=True)
class Loaded:
    """A case imported from its file: what ``verify`` and ``detect`` take."""

    kernel: Any
    args: tuple[Any, ...] | dict[str, Any]
    grid: tuple[int, int, int]
    assume: tuple[Any, ...]
    path: Path


def load(case: OracleCase | str, directory: Path) -> Loaded:
    """Write the case's module under ``directory`` (cuTile reads a kernel's source file) and import it.

    The file name is the source's hash, so a cached source line never belongs to another case."""
    source = case.source if isinstance(case, OracleCase) else case
    digest = hashlib.sha1(source.encode()).hexdigest()[:12]
    path = Path(directory) / f"oracle_{digest}.py"
    if not path.exists():
        path.write_text(source)
    return load_file(path)


def load_file(path: Path) -> Loaded:
    name = f"_oracle_{path.stem}_{abs(hash(str(path))) % 10**8}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # cuTile resolves the helpers' globals through the module
    try:
        spec.loader.exec_module(module)
    finally:
        sys.modules.pop(name, None)
    args = module.make_args()
    args = args if isinstance(args, dict) else tuple(args)  # a Triton launch's arguments by name
    return Loaded(module.k, args, tuple(module.GRID), tuple(module.ASSUME), path)


# ---- the oracle relation --------------------------------------------------------------------------
DEFECTS = ("race", "out-of-bounds")  # report statuses that fail a launch


@dataclass(frozen=True)
class Outcome:
    """Both checkers' reports on one launch, and how they relate."""

    verify: Any
    detect: Any

    @property
    def disagreement(self) -> bool:
        """``verify`` proved the launch safe and ``detect`` found a race or an out-of-bounds access
        at it (equivalently: ``detect`` found one and ``verify`` said verified). ``unknown`` on
        either side is not a disagreement."""
        return self.verify.status == "verified" and self.detect.status in DEFECTS

    @property
    def false_alarm(self) -> bool:
        """``verify`` reports a defect that this launch does not have (allowed: the verifier
        over-approximates, e.g. the contents of index arrays)."""
        return self.verify.status in DEFECTS and self.detect.status == "verified"

    def describe(self) -> str:
        return f"verify: {self.verify}\n\ndetect: {self.detect}"


# Open disagreement classes: a predicate on (module source, outcome), and the file in
# tests/data/oracle/ whose strict xfail tracks the bug. The property test does not fail on them (it
# would fail on every example of a known bug); remove an entry when its file's xfail flips.
# Fixed so far: precondition_distinct_violated.py (d567c31), index_overflow_wraps.py (ae9e483),
# detect_cas_taken_as_lock.py (a392cc4), index_overflow_general_level.py (5028adb).
KNOWN: dict[str, Any] = {}


def _defect_lines(source: str, report: Any) -> list[str]:
    """The source lines of the accesses in a report's defects (a helper's line, not its call site):
    for KNOWN predicates that recognise a class by the statement involved."""
    lines = source.split("\n")
    return [lines[loc.line - 1] for f in report.findings if f.kind in ("write-write", "read-write",
                                                                       "unordered-in-block", "out-of-bounds")
            for loc in (f.loc, *f.related_locs) if 0 < loc.line <= len(lines)]


def known_class(source: str, outcome: Outcome) -> str | None:
    """The data file of the open disagreement class this outcome belongs to, if any."""
    if not outcome.disagreement:
        return None
    return next((name for name, matches in KNOWN.items() if matches(source, outcome)), None)


def check(loaded: Loaded) -> Outcome:
    import tilecheck

    kernel, args, grid, assume = loaded.kernel, loaded.args, loaded.grid, loaded.assume
    report = tilecheck.verify(kernel, args, grid, assume=assume)
    return Outcome(report, tilecheck.detect(kernel, args, grid, assume=assume))
