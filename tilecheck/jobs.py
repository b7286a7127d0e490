"""Verification jobs: one kernel case each, runnable in a worker process (plain, picklable data).

``run_job`` never raises for a failing case (only ``KeyboardInterrupt`` escapes): a user error
(``TilecheckError``: bad arguments, a factory that raises, a kernel cuTile rejects) and an internal
failure (any other exception: a tilecheck bug) both become an ``error`` result for that case, so
the other cases of a run are still verified. An internal failure is never reported as a verdict.
"""
from __future__ import annotations

import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tilecheck.errors import TilecheckError


@dataclass(frozen=True)
class Job:
    path: str
    kernel: str | None  # None: a Tile IR file (its single entry)
    case: int
    timeout: float
    assume: tuple[str, ...] = ()
    grid: tuple[int, ...] | None = None  # Tile IR file: the grid to verify for (None: any grid)
    assume_from: str | None = None  # the pyproject.toml that ``assume`` came from

    @property
    def id(self) -> str:
        name = self.kernel or Path(self.path).stem
        return f"{self.path}::{name}" + (f"[{self.case}]" if self.kernel else "")


@dataclass
class JobResult:
    id: str
    path: str
    kernel: str | None  # None: an error about a whole file (it did not import, or holds no kernel)
    case: int | None
    status: str  # verified | race | out-of-bounds | unknown | error
    text: str
    report: dict[str, Any] | None = None
    seconds: float = 0.0
    grid: list[int] | None = None
    traceback: str | None = None  # errors: where it was raised (shown with --debug)
    internal: bool = False  # an error that is a tilecheck bug, not a problem with the input

    @property
    def cause(self) -> str:
        """An error's cause on one line (the first line of ``text``)."""
        return self.text.splitlines()[0] if self.text else ""


def error_result(job_id: str, path: str, kernel: str | None, case: int | None, message: str, *,
                 seconds: float = 0.0, exc: BaseException | None = None, internal: bool = False) -> JobResult:
    tb = "".join(traceback.format_exception(exc)) if exc is not None else None
    return JobResult(job_id, path, kernel, case, "error", message, None, seconds, None, tb, internal)


def worker_init() -> None:
    """In a worker process: leave Ctrl-C to the parent, which reports what finished and ends the
    workers (otherwise each worker prints its own traceback); die on SIGTERM (the parent sends it
    when it stops) and when the parent dies; send whatever user code prints to stderr, since the
    parent's stdout carries the report alone."""
    import os
    import signal
    import sys

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a forked worker inherits the parent's handler
    _die_with_parent()
    sys.stdout = sys.stderr
    try:
        os.dup2(2, 1)  # native code and subprocesses too
    except OSError:  # stderr closed: keep stdout as it is
        pass


def _die_with_parent() -> None:
    """Linux: SIGKILL this process when its parent dies (a parent killed with SIGKILL cannot stop
    its workers itself, and orphans would keep the output pipes open). Elsewhere nothing."""
    import ctypes
    import signal
    import sys

    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def internal_error_message(exc: BaseException) -> str:
    """One line for a tilecheck bug: the exception, the innermost frame, what to do."""
    if isinstance(exc, MemoryError):
        return ("out of memory (MemoryError) while checking this case: a smaller case (shapes, grid) needs less; "
                "rerun with --debug for the traceback")
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" at {Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else ""
    text = str(exc).strip()
    cause = text.splitlines()[0][:200] if text else ""
    return (f"internal error: {type(exc).__name__}{': ' + cause if cause else ''}{where} (a tilecheck bug, not a "
            "verdict; rerun with --debug for the traceback and please report it)")


def run_job(job: Job) -> JobResult:
    """Verify one job; every failure becomes an ``error`` result (see the module docstring)."""
    name = job.kernel or Path(job.path).stem
    start = time.perf_counter()
    try:
        return _run(job, name, start)
    except TilecheckError as exc:
        return error_result(job.id, job.path, name, job.case, str(exc), seconds=time.perf_counter() - start,
                            exc=exc)
    except Exception as exc:  # noqa: BLE001 - a bug must cost one case, not the run (and never a verdict)
        message = internal_error_message(exc)
        return error_result(job.id, job.path, name, job.case, message, seconds=time.perf_counter() - start,
                            exc=exc, internal=True)


def _run(job: Job, name: str, start: float) -> JobResult:
    from tilecheck.cases import cases_of
    from tilecheck.collect import load_module, read_ir
    from tilecheck.grid import normalize_grid
    from tilecheck.requirements import check_preconditions, configured, kernel_name
    from tilecheck.verifier import verify

    grid: Any = job.grid
    if job.kernel is None:
        kernel, args, assume = read_ir(Path(job.path)), None, []
    else:
        kernel = getattr(load_module(Path(job.path)), job.kernel)
        case = cases_of(kernel)[job.case]
        args, grid = case.make_args(), case.grid
        table = {kernel_name(kernel): list(job.assume)} if job.assume else {}
        assume = [*case.assume, *configured(kernel, table, job.assume_from)]
        check_preconditions(kernel, args, assume)
    # verify adds the kernel's own @tilecheck.requires
    report = verify(kernel, args, grid, assume=assume, timeout_s=job.timeout, contract=True)
    shown = None if grid is None else list(normalize_grid(grid))
    return JobResult(job.id, job.path, name, job.case, report.status, str(report), report.to_dict(),
                     time.perf_counter() - start, shown)
