"""The launch's data step: what the static check leaves to the launch's own arrays.

A report whose defects all need other array contents, or that the static check could not decide,
is decided here on the given arguments: the given-case level asked again with the small index
arrays pinned to their contents (``proved_pinned``) or under a data contract's candidate
(``reverified``), and the exact detector when the launch is small enough to run inside verify
(``detect_if_small``). ``launch_data`` holds the policy (which facts, in which order); this module
holds the runs it calls. Functions are called by their module attribute so tests can replace them.
"""
from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any

from tilecheck.ir import Module
from tilecheck.report import Finding, Report
from tilecheck.verifier.contracts.levels import Level, LevelResult
from tilecheck.verifier.contracts.preconditions import Precondition
from tilecheck.verifier.data import launch_data
from tilecheck.verifier.obligations.arguments import given_integer_arrays
from tilecheck.verifier.obligations.checker import Checker
from tilecheck.verifier.obligations.confirm import confirmer
from tilecheck.verifier.solver import smt

# a given-case query that reads array contents, when this step follows (it decides what that
# query leaves open): on TileGym every such query proved took under 0.75M units and every model
# under 1.7M; those that ran on to 4M all ended unknown (the ragged GEMMs, 3-4 s each)
DATA_STEP_RLIMIT = 2_000_000
# the largest launch (in blocks, in the exact detector's work, and in array elements its memory ops
# move) whose data verify decides by running the exact detector: a few seconds. The work
# (``Interpreter.count_step``: ops run for a wave, and values computed) follows time where an
# element count did not: TileGym's group GEMM moves 40M elements in 21,000 steps (0.8 s), a
# persistent grouped GEMM takes 1.9M steps (14 s), TritonRaceBench's polling kernel (nine orders,
# its blocks spinning) 120,000 (4 s)
DATA_DETECT_BLOCKS = 1024
DATA_DETECT_STEPS = 250_000
DATA_DETECT_ELEMENTS = 64_000_000


def decide(report: Report, kernel: Any, module: Module, args: Sequence[Any], grid: tuple[int, int, int],
           assume: list[Precondition], fp: Any, graph: Any, locks: Any, last: LevelResult, given: Level,
           start: float, like: Checker | None = None) -> Report:
    """``report`` decided on the launch's data when its defects need other contents or it is
    undecided (``assume`` without the preconditions the arguments break); else ``report`` itself.
    ``like``: the checker that ran the given case, whose caches the runs again reuse."""
    from tilecheck.interp.detect import detect

    if launch_data.contents_dependent(report):
        report = launch_data.decide(
            report, given_integer_arrays(module.params, args),
            lambda extra: reverified(report, extra, assume, args, grid, fp, graph, locks, module, last, given,
                                     like),
            lambda: detect_if_small(detect, kernel, args, grid, assume),
            lambda: proved_pinned(args, grid, assume, fp, graph, locks, module, last, given, like))
        report.stats["total_s"] = round(time.perf_counter() - start, 4)
    elif launch_data.undecided(report):
        stats = report.stats
        # first the static check with the small index arrays holding their given contents (cheap,
        # and it scales with the solver, not with the launch's work); then the exact detector
        pinned = proved_pinned(args, grid, assume, fp, graph, locks, module, last, given, like)
        if pinned is not None:
            report = launch_data.proved_on_data(report, pinned)
        else:
            report = launch_data.decide_undecided(report, lambda: detect_if_small(detect, kernel, args, grid,
                                                                                   assume))
        report.stats = {**stats, "total_s": round(time.perf_counter() - start, 4)}
    return report


def proved_pinned(args: Sequence[Any], grid: tuple[int, int, int], assume: list[Precondition], fp: Any,
                   graph: Any, locks: Any, module: Module, last: LevelResult, given: Level,
                   like: Checker | None = None) -> list[str] | None:
    """The given-case level again, with every read of a small read-only integer array held at its
    given element: the names of those arrays when that proves the launch, else None. Only the
    obligations the level left open are asked again (pins only add constraints: a proved one stays
    proved, and what a probe proved with the same pins is not asked again);
    the first model or unknown ends it (``given_again``)."""
    from tilecheck.verifier.concrete.given_case import FULL_PIN_ELEMENTS, PINNED_RLIMIT

    arrays = given_integer_arrays(module.params, args)
    pinned = sorted(fp.arrays[i].name for i in fp.memory if fp.arrays[i].name in arrays
                    and arrays[fp.arrays[i].name].size <= FULL_PIN_ELEMENTS)
    if not pinned:
        return None
    result = given_again(fp, graph, locks, assume, module, args, grid, last, given, PINNED_RLIMIT, pin=True,
                         like=like)
    # an op the model does not know may touch memory the footprints miss: no proof at any level
    return pinned if proves(result) and not fp.unsupported else None


def reverified(report: Report, extra: list[Precondition], assume: list[Precondition], args: Sequence[Any],
                grid: tuple[int, int, int], fp: Any, graph: Any, locks: Any, module: Module, last: LevelResult,
                given: Level, like: Checker | None = None) -> Report:
    """The given-case level again under the preconditions ``extra`` (a data contract's candidate):
    ``report`` verified under them, or unknown. Only the obligations the level left open are asked
    again (preconditions only add constraints: a proved one stays proved)."""
    result = given_again(fp, graph, locks, [*assume, *extra], module, args, grid, last, given,
                          smt.GENERAL_LEVEL_RLIMIT, pin=False, like=like)
    ok = proves(result) and not fp.unsupported
    out = Report(report.kernel, "verified" if ok else "unknown", level=given.label,
                 findings=[f for f in report.findings if not f.is_defect],
                 assumptions=[*report.assumptions, *(p.describe() for p in extra)],
                 notes=list(report.notes), stats=dict(report.stats))
    out.reasons = [] if ok else list(result.unknowns) or ["a defect remains under these preconditions"]
    return out


def given_again(fp: Any, graph: Any, locks: Any, assume: list[Precondition], module: Module, args: Sequence[Any],
                 grid: tuple[int, int, int], last: LevelResult, given: Level, rlimit: int, pin: bool,
                 like: Checker | None = None) -> LevelResult:
    """The given-case level run again under more constraints (preconditions, or with ``pin`` the
    given contents of the small index arrays), asking only what ``last`` left open when it was that
    level: more constraints keep a proved obligation proved. The first race or unknown ends it.
    Only whether it proves the launch matters: a model is a defect of the run as it comes, neither
    run on the interpreter nor made canonical (a model that did not reproduce would leave the
    obligation open: not a proof either)."""
    proved = last.proved if last.level is given else frozenset()
    if pin and last.level is given:  # and what its probes proved with the same contents pinned
        proved = proved | last.proved_pinned
    # (the confirmer gives the pinned contents); a question with bit-vector arithmetic gets a short
    # try when the exact detector runs this launch next (``Checker.detector_follows``)
    return Checker(fp, graph, locks, assume, given, stop_early=True, witnesses=False,
                   confirm=confirmer(module, args, grid), rlimit=rlimit, pin_given=pin, proved=proved,
                   detector_follows=math.prod(grid) <= DATA_DETECT_BLOCKS,
                   like=like if like is not None and like.level is given and like.fp is fp else None).run()


def proves(result: LevelResult) -> bool:
    """The level found no defect, left nothing undecided, and its model holds for the case."""
    return not result.races and not result.unknowns and not violated(result)


def shared_memory_launch(module: Module, args: Sequence[Any], grid: tuple[int, int, int], report: Report,
                          aliasing: list[Finding], assume: list[Precondition], start: float) -> Report:
    """A launch whose arguments share memory, of a kernel whose language allows it
    (``Module.distinct_arrays`` False: Triton's in-place updates). The static model keeps arrays
    apart, so it proves nothing here: the exact detector decides the launch, following the shared
    memory element by element."""
    from tilecheck.interp.detect import detect

    shared = "; ".join(f.message for f in aliasing[:2])
    report.reasons.append(f"arguments share memory ({shared}); the static check assumes distinct arrays")
    report = launch_data.decide_undecided(report, lambda: detect_if_small(detect, module, args, grid, assume))
    report.stats["total_s"] = round(time.perf_counter() - start, 4)
    return report


def detect_if_small(detect: Any, kernel: Any, args: Sequence[Any], grid: tuple[int, int, int],
                     assume: Sequence[Precondition]) -> Report:
    """The exact detector's verdict on the launch, when it is small enough to run inside verify
    (a large launch is left to tilecheck.detect or tilecheck.launch: an unknown with that reason)."""
    blocks = grid[0] * grid[1] * grid[2]
    if blocks > DATA_DETECT_BLOCKS:
        report = Report(getattr(kernel, "name", "kernel"), "unknown")
        report.reasons.append(f"the launch has {blocks} blocks, more than verify runs exactly "
                              f"({DATA_DETECT_BLOCKS}); run tilecheck.detect on it, or state the precondition")
        return report
    report = detect(kernel, args, grid, assume=assume, max_elements=DATA_DETECT_ELEMENTS, max_steps=DATA_DETECT_STEPS)
    if report.status == "unknown" and any("elements moved" in r for r in report.reasons):
        report.reasons = [f"the launch moves more than {DATA_DETECT_ELEMENTS} array elements, more than "
                          "verify runs exactly; run tilecheck.detect on it, or state the precondition"]
    elif report.stats.get("limit") == "steps":
        report.reasons = [f"the launch needs more than {DATA_DETECT_STEPS} steps of the exact detector's work "
                          "(a few seconds), more than verify runs exactly; run tilecheck.detect on it, or "
                          "state the precondition"]
    return report


def violated(result: LevelResult) -> bool:
    """The model does not hold for the case: it breaks an assumption, or its index arithmetic overflows."""
    return any(f.kind in ("assumption-violated", "overflow") for f in result.findings)


