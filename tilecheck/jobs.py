"""Verification jobs: one kernel case each, runnable in a worker process (plain, picklable data).

``run_job`` never raises for a failing case (only ``KeyboardInterrupt`` escapes): a user error
(``TilecheckError``: bad arguments, a factory that raises, a kernel cuTile rejects) and an internal
failure (any other exception: a tilecheck bug) both become an ``error`` result for that case, so
the other cases of a run are still verified. An internal failure is never reported as a verdict.
``run_jobs`` runs a list of them, in worker processes when there are several workers.
"""
from __future__ import annotations

import sys
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
    work: int | None = None  # the solver work budget (None: verify's default)
    cache: bool = True  # the proof cache (False: --no-cache)

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


# a kernel's other cases whose launches shape its contract over the shapes (each one's arguments
# are made once per job)
OBSERVED_CASES = 8


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
    # the kernel's other cases are launches it is meant for too: its contract is what they share
    others = [] if job.kernel is None else [c for i, c in enumerate(cases_of(kernel))
                                            if i != job.case and c.grid is not None][:OBSERVED_CASES]
    observed = [(c.make_args(), c.grid) for c in others]
    # verify adds the kernel's own @tilecheck.requires
    report = verify(kernel, args, grid, assume=assume, timeout_s=job.timeout, contract=True,
                    cache=None if job.cache else False, observed=observed,
                    **({"work": job.work} if job.work is not None else {}))
    shown = None if grid is None else list(normalize_grid(grid))
    return JobResult(job.id, job.path, name, job.case, report.status, str(report), report.to_dict(),
                     time.perf_counter() - start, shown)


# ---- running many jobs ------------------------------------------------------------------------------
class Interrupted(Exception):
    """Ctrl-C or SIGTERM (``signal``) during ``verify``: the results that finished before it."""

    def __init__(self, results: list[JobResult], signal: KeyboardInterrupt) -> None:
        super().__init__("interrupted")
        self.results = results
        self.signal = signal


def run_jobs(jobs: list[Job], workers: int) -> list[JobResult]:
    """Each job's result, in order. A job that fails is an error result, whatever it raised, in this
    process or in a worker (even one that dies); Ctrl-C raises ``Interrupted`` with what finished."""
    show = sys.stdout.isatty() and len(jobs) > 1
    results: list = [None] * len(jobs)
    count = [0]

    def tick() -> None:
        count[0] += 1
        _progress(show, count[0], len(jobs))

    try:
        if workers <= 1 or len(jobs) <= 1:
            for n, job in enumerate(jobs):
                results[n] = run_job(job)
                tick()
        else:
            lost = _in_pool(jobs, list(range(len(jobs))), workers, results, tick)
            if len(lost) > 1:  # which of them took the pool down? run each alone
                lost = [n for n in lost if _in_pool(jobs, [n], 1, results, tick)]
            for n in lost:
                results[n] = _died(jobs[n])
                tick()
    except KeyboardInterrupt as stop:
        if show:
            print(file=sys.stderr)
        raise Interrupted([r for r in results if r is not None], stop) from None
    if show:
        print(file=sys.stderr)
    return results


def _in_pool(jobs: list[Job], todo: list[int], workers: int, results: list, tick: Any) -> list[int]:
    """Run ``jobs[i]`` for ``i`` in ``todo`` in worker processes, filling ``results``; returns the
    indices lost to a worker that died (the pool is then broken, so every job still queued is lost)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool

    lost: list[int] = []
    before = {p.pid for p in multiprocessing.active_children()}
    pool = ProcessPoolExecutor(max_workers=min(workers, len(todo)), initializer=worker_init)
    try:
        futures = {pool.submit(run_job, jobs[n]): n for n in todo}
        for future in as_completed(futures):
            n = futures[future]
            try:
                results[n] = future.result()
            except BrokenProcessPool:
                lost.append(n)
                continue
            except Exception as exc:  # noqa: BLE001 - e.g. a result that cannot be sent back
                job = jobs[n]
                results[n] = error_result(job.id, job.path, job.kernel, job.case, internal_error_message(exc),
                                          exc=exc, internal=True)
            tick()
        pool.shutdown()
    except KeyboardInterrupt:
        # the workers ignore SIGINT (worker_init); end them now rather than after their current job, and
        # reap them: a worker left running would hold stdout and stderr open for whoever reads them.
        # Every child started since the pool was made, also one forked while the signal came (not yet
        # in the pool's table)
        processes = {p.pid: p for p in (getattr(pool, "_processes", None) or {}).values()}
        processes |= {p.pid: p for p in multiprocessing.active_children() if p.pid not in before}
        for process in processes.values():
            process.terminate()
        for process in processes.values():
            process.join(5)
            if process.is_alive():
                process.kill()
                process.join()
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    return sorted(lost)


def _died(job: Job) -> JobResult:
    return error_result(job.id, job.path, job.kernel, job.case,
                        "the worker process verifying this case died (killed, out of memory, or a crash in native "
                        "code); run it alone with -j 1 to see more", internal=True)


def _progress(show: bool, done: int, total: int) -> None:
    if show:
        bar = int(30 * done / total)
        print(f"\r  verifying [{'#' * bar}{'.' * (30 - bar)}] {done}/{total}", end="", file=sys.stderr, flush=True)
