"""Assertions for test suites: ``assert_race_free`` and ``assert_deterministic``."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def assert_race_free(kernel: Any, args: Sequence[Any], grid: Any = None, **kw: Any) -> Any:
    """Verify ``kernel`` for ``args``/``grid``; an ``AssertionError`` carrying the report (witness and
    source lines) unless the verdict is ``verified``. Returns the report."""
    __tracebackhide__ = True
    from tilecheck.verifier import verify

    report = verify(kernel, args, grid, **kw)
    if report.status != "verified":
        raise AssertionError(str(report))
    return report


def assert_deterministic(kernel: Any, args: Sequence[Any], grid: Any, runs: int = 20, backend: str | None = None,
                         **kw: Any) -> Any:
    """Run ``kernel`` ``runs`` times under adversarial schedules; an ``AssertionError`` with the
    nondeterminism summary if any output differs. Returns the report."""
    __tracebackhide__ = True
    from tilecheck.runtime import run_repeated

    report = run_repeated(kernel, args, grid, runs=runs, backend=backend, **kw)
    if not report.deterministic:
        raise AssertionError(str(report))
    return report
