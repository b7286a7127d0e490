"""``tilecheck.detect``: the exact race detector for one launch (DESIGN §5).

It runs the launch on the interpreter and records, per array element, which blocks touched it and
how (``recorder``). Two accesses to one element conflict when at least one writes and not both are
atomic, and

- they come from different blocks that no spin lock (as executed) keeps apart: ``write-write`` or
  ``read-write``;
- they come from one block and neither a token path nor a data dependence orders the two ops
  (the order graph the verifier uses): ``unordered-in-block``.

If no conflict is found, no block read what another block wrote, so every block computed the same
addresses and took the same branches as in any other schedule: the answer holds for every schedule
of this launch, its data included. Where an address may depend on the value an atomic returned
(tickets, work queues) or on data read under a lock, that argument does not hold, so the launch is
also run under several seeded adversarial schedules, and the report says so.

Pair finding (which recorded accesses conflict) is ``pairs``; turning a conflicting pair into a
``Finding`` with its ``Witness`` is ``witness``.
"""
from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tilecheck.arrays import flat_arguments
from tilecheck.grid import normalize_grid
from tilecheck.interp import witness
from tilecheck.interp.engine import Interpreter, InterpreterError
from tilecheck.interp.wave import StepLimitError, TripLimitError
from tilecheck.interp.memory import as_host_array
from tilecheck.interp.pairs import InBlockSearch, conflicts, new_sync, static_facts
from tilecheck.interp.recorder import Recorder
from tilecheck.interp.runs import copies
from tilecheck.interp.schedule import Schedule
from tilecheck.ir import Module
from tilecheck.ir import triton as triton_frontend
from tilecheck.ir.summary import validated_loads
from tilecheck.ir.cutile import module_for
from tilecheck.report import Finding, Report, WeakLaunch
from tilecheck.requirements import check_named, with_requirements

LEVEL = "this launch"
SEEDED_ORDERS = 4  # extra schedules when a footprint may depend on the order of blocks
MAX_SEEDS = 10_000  # detect(seeds=...): each seed is a whole run of the launch


# detector runs started in this process: a caller that remembers a verdict can tell whether the
# exact detector (whose verdict may follow float contents too) decided it
runs_started = 0


def detect(kernel: Any, args: Sequence[Any], grid: Any, *, assume: Sequence[Any] = (),
           seeds: int = SEEDED_ORDERS, max_elements: int | None = None, max_steps: int | None = None) -> Report:
    """Find every data race of this launch: ``kernel`` run on ``args`` over ``grid``, under every
    schedule of its blocks. The arguments are not modified (the run works on copies).

    Returns a ``Report`` like ``verify``'s, with ``level == "this launch"``: ``race`` with a witness
    per racing pair of ops, ``verified`` when none exists, ``unknown`` when the launch could not be
    run (the reason says why). ``max_elements`` bounds each run's work (array elements moved), and
    ``max_steps`` all its runs' work together (``Interpreter.count_step``: ops run for a wave, and the
    values they compute; deterministic): past either the answer is ``unknown``."""
    global runs_started
    from tilecheck import checks
    from tilecheck.requirements import preconditions

    checks.kernel("detect(kernel=...)", kernel, module=True)
    checks.arguments("detect(args=...)", args, by_name=True)
    assume = preconditions("detect(assume=...)", assume)
    seeds = checks.integer("detect(seeds=...)", seeds, minimum=0, maximum=MAX_SEEDS)
    max_elements = checks.integer("detect(max_elements=...)", max_elements, minimum=1, none=True)
    steps = _Steps(checks.integer("detect(max_steps=...)", max_steps, minimum=1, none=True))
    runs_started += 1
    assume = with_requirements(kernel, assume)  # and the kernel's own @tilecheck.requires
    kernel, args = triton_frontend.resolve(kernel, args)
    start = time.perf_counter()
    grid3 = normalize_grid(grid)
    args = tuple(args)
    module, _ = module_for(kernel, args)
    report = Report(module.name, "unknown", level=LEVEL, launch=WeakLaunch(kernel, args, grid3))
    report.assumptions.append("the given arguments, their contents and this grid; "
                              "every schedule of the blocks")
    for pre in assume:
        violation = _violated(pre, module, args)
        report.assumptions.append(pre.describe())
        if violation:
            report.notes.append(violation)
    function = module.entry
    pairs, locks, written, order_dependent = static_facts(function)
    detail = {p.x for p in pairs} | {p.y for p in pairs}
    orders = [None]
    if order_dependent:
        orders += list(range(seeds))
        report.assumptions.append(
            f"addresses or branches may depend on values returned by atomics or read under a lock: checked "
            f"in the lockstep order and {seeds} seeded adversarial orders, not in every order")
    findings: dict[tuple[Any, ...], Finding] = {}
    case = (kernel, args, grid3)
    runs = 0
    undecided = False  # a happens-before question too large to answer
    failed: list[str] = []  # why some orders could not run to the end (a spin that never ends in them)
    guesses = validated_loads(function)
    try:
        for seed in orders:
            first = run_once(module, args, grid3, seed, Recorder(grid3, locks, None, detail, written, new_sync(function),
                                                             InBlockSearch(pairs), guesses), max_elements, failed, steps)
            runs += 1
            watch = conflicts(first)
            recorder = first
            if any(m.any() for m in watch.values()):
                recorder = run_once(module, args, grid3, seed, Recorder(grid3, locks, watch, (), written,
                                                                    new_sync(function), None, guesses), max_elements, [], steps)
                runs += 1
                for f in witness.cross_block(module, recorder, grid3, case):
                    findings.setdefault(_key(f), f)
                undecided |= recorder.sync is not None and recorder.sync.undecided
            for f in witness.in_block(module, first, pairs, grid3, case):
                findings.setdefault(_key(f), f)
            for f in witness.out_of_bounds(module, first, grid3, case):
                findings.setdefault(_key(f), f)
            for f in [*witness.order_dependent(module, first, grid3, case),
                      *witness.steered_results(module, first, grid3, case)]:
                findings.setdefault(_key(f), f)
            for f in witness.mixed_aliasing(module, first, case):
                findings.setdefault(_key(f), f)
    except StepLimitError as exc:
        report.reasons.append(f"the exact detector stopped at its work limit before it decided this launch: "
                              f"{steps.limit} steps (ops run for a wave, and the values they compute), spent by "
                              f"{exc.loc.outermost() if exc.loc else 'the launch'} (detect(max_steps=...); "
                              f"under the launcher and the pytest plugin $TILECHECK_DETECT_STEPS)")
        report.stats = {"runs": runs, "total_s": round(time.perf_counter() - start, 4), "steps": steps.spent,
                        "limit": "steps"}
        return report
    except InterpreterError as exc:
        report.reasons.append(f"the interpreter could not run this launch: {exc}")
        report.stats = {"runs": runs, "total_s": round(time.perf_counter() - start, 4)}
        return report
    report.findings = sorted(findings.values(), key=_order)
    if failed and not report.races:
        report.reasons.append(f"the interpreter could not run this launch: {failed[0]}")
        report.stats = {"runs": runs, "total_s": round(time.perf_counter() - start, 4)}
        return report
    if failed:  # what ran is a prefix of a real execution: its races are races
        report.notes.append(f"in {len(failed)} of {len(orders)} block orders the launch did not end: {failed[0]}")
    report.status = "race" if report.races else \
        "out-of-bounds" if any(f.kind == "out-of-bounds" for f in report.findings) else "verified"
    if undecided and report.status == "verified":
        report.status = "unknown"
        report.reasons.append("whether release/acquire synchronisation orders some accesses of two blocks "
                              "was not decided within the detector's walk limit")
    report.stats = {"runs": runs, "total_s": round(time.perf_counter() - start, 4), "steps": steps.spent}
    return report


# ---- running ---------------------------------------------------------------------------------------
# Trips of one loop after which the detector calls a block order one that does not end: blocks that
# wait for others are stepped in turn, so a legitimate spin lasts about as many trips as the other
# blocks have memory operations before they release it. Past it the order's races still count; with
# none found anywhere the launch is unknown (docs/semantics/synchronisation.md), never verified.
DETECT_TRIPS = 20_000


@dataclass
class _Steps:
    """The work all of a detection's runs may still spend (``Interpreter.steps``; None: no limit)."""

    limit: int | None
    spent: int = 0

    def left(self) -> int | None:
        return None if self.limit is None else max(self.limit - self.spent, 1)


def run_once(module: Module, args: tuple[Any, ...], grid: tuple[int, int, int], seed: int | None,
             recorder: Recorder, max_elements: int | None = None, failed: list[str] | None = None,
             steps: _Steps | None = None) -> Recorder:
    """One order of the launch under ``recorder``. With ``failed``, a loop that does not end in this
    order (a block spinning on a flag already past the value it waits for) stops the run and is
    noted there: the records so far are a prefix of a real execution. ``steps``: the work this run
    may spend is what is left there, and what it spends is charged to it."""
    # a spin that outlasts DETECT_TRIPS in one order ends that order (its races so far still count)
    schedule = Schedule(seed=seed, max_elements=max_elements, max_trips=DETECT_TRIPS if failed is not None else None,
                        max_steps=steps.left() if steps is not None else None)
    # where blocks read and write, not what they compute: pure ops that decide nothing are skipped
    interp = Interpreter(module, copies(module, args, only_written=True), grid, schedule, recorder=recorder,
                         deciding_only=True)
    recorder.bind(interp.arrays)
    try:
        interp.run()
    except TripLimitError as exc:
        if failed is None:
            raise
        failed.append(str(exc))
    finally:
        if steps is not None:
            steps.spent += interp.steps
    return recorder


def _violated(pre: Any, module: Module, args: tuple[Any, ...]) -> str | None:
    names = [p.name for p in module.params if p.kind == "array"]
    values = dict(zip([p.name for p in module.params], flat_arguments(args))) if module.params else {}
    check_named((pre,), [n for n in names if n in values], module.name)
    problem = pre.violation(as_host_array(pre.array, values[pre.array]))
    return f"the given '{pre.array}' violates its precondition: {problem}" if problem else None


def _key(f: Finding) -> tuple[Any, ...]:
    return (f.kind, f.loc, f.related_locs)


def _order(f: Finding) -> tuple[Any, ...]:
    w = f.witness
    return (f.kind, str(f.loc), w.element or () if w else (), w.offset or 0 if w else 0)
