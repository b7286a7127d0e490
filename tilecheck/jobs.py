"""Verification jobs: one kernel case each, runnable in a worker process (plain, picklable data)."""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tilecheck.errors import TilecheckError


@dataclass(frozen=True)
class Job:
    path: str
    kernel: str | None  # None: a .tileir file (its single entry)
    case: int
    timeout: float
    assume: tuple[str, ...] = ()
    grid: tuple[int, ...] | None = None  # .tileir: the grid to verify for (None: any grid)

    @property
    def id(self) -> str:
        name = self.kernel or Path(self.path).stem
        return f"{self.path}::{name}" + (f"[{self.case}]" if self.kernel else "")


@dataclass
class JobResult:
    id: str
    path: str
    kernel: str
    case: int
    status: str  # verified | race | unknown | error
    text: str
    report: dict[str, Any] | None = None
    seconds: float = 0.0
    grid: list[int] | None = None


def run_job(job: Job) -> JobResult:
    """Verify one job; never raises for user errors (they become an ``error`` result)."""
    from tilecheck.cases import cases_of
    from tilecheck.collect import load_module
    from tilecheck.ir import parse
    from tilecheck.verifier import verify
    from tilecheck.verifier.preconditions import parse as parse_precondition

    name = job.kernel or Path(job.path).stem
    start = time.perf_counter()
    grid: Any = job.grid
    try:
        assume = [parse_precondition(s) for s in job.assume]
        if job.kernel is None:
            kernel, args = parse(Path(job.path).read_text(), job.path), None
        else:
            kernel = getattr(load_module(Path(job.path)), job.kernel)
            case = cases_of(kernel)[job.case]
            args, grid = case.make_args(), case.grid
        report = verify(kernel, args, grid, assume=assume, timeout_s=job.timeout)
    except TilecheckError as exc:
        return JobResult(job.id, job.path, name, job.case, "error", str(exc), None, time.perf_counter() - start)
    return JobResult(job.id, job.path, name, job.case, report.status, str(report), report.to_dict(),
                     time.perf_counter() - start, list(grid) if grid is not None else None)
