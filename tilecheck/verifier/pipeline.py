"""One verification, step by step (docs/architecture.md): ``prove`` reads as the steps of a proof,
each a function below with the value it hands to the next.

1. ``model_of``: the kernel's Tile IR, its accesses as footprints, their token order, its spin locks;
2. ``opened``: the report's assumptions, and the preconditions the given arguments break;
3. aliasing among the given arrays (a launch whose written arrays share memory goes to the data step);
4. ``search.every_shape``: a contract over the shapes, whose proof holds for every launch it admits;
5. ``prove_levels``: the obligations, from the most general level to the given case;
6. ``search.grid_contract``: the grids for which the given shapes are race-free;
7. ``overflow_at_given_case``: a general proof assumed no wrap-around, which the given case checks;
8. ``concluded``: the verdict, its findings, level, assumptions and notes;
9. ``data_step.decide``: what the proof left to the launch's own arrays.
"""
from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Sequence
from typing import Any

from tilecheck.errors import TilecheckError
from tilecheck.grid import normalize_grid
from tilecheck.ir import Module
from tilecheck.ir.lifting import lifted
from tilecheck.ir.order import order_graph
from tilecheck.report import LEVELS, Finding, Report
from tilecheck.requirements import check_named, with_requirements
from tilecheck.verifier import search
from tilecheck.verifier.contracts import shapes as shape_contract
from tilecheck.verifier.contracts.levels import EVERY_SHAPE_LEVEL, Level, LevelResult
from tilecheck.verifier.contracts.preconditions import Precondition
from tilecheck.verifier.data import data_step
from tilecheck.verifier.model.engine import execute
from tilecheck.verifier.model.footprints import reset_instances
from tilecheck.verifier.obligations.arguments import aliasing_in, broken_preconditions
from tilecheck.verifier.obligations.checker import Checker
from tilecheck.verifier.obligations.confirm import confirmer
from tilecheck.verifier.obligations.locks import find_spin_locks, locks_at_case
from tilecheck.verifier.solver import smt
from tilecheck.verifier.steps import Model, Proof

DEFAULT_ASSUMPTIONS = (
    "array arguments do not alias one another (cuTile's own assumption; checked on the given arrays)",
    "no written array overlaps itself: distinct in-bounds indices are distinct addresses",
    "integer index arithmetic does not overflow",
)


def prove(kernel: Any, args: Sequence[Any] | None, grid: Any, *, assume: Sequence[Precondition],
          data: bool, contract: bool | None, every_shape: bool = True,
          observed: Sequence[tuple[Sequence[Any], Any]] = (), data_follows: bool = False,
          span_literals: bool = False) -> Report:
    """``verify``'s proof, inside its Z3 context and budgets (``api.verify``). ``span_literals``:
    step 4 tries a proof over the kernel's literals first (``spanning``)."""
    start = time.perf_counter()
    assume = with_requirements(kernel, assume)  # and the kernel's @tilecheck.requires
    model = model_of(kernel, args, assume)
    phases = {"compile_s": model.compile_s}
    grid3 = None if grid is None else normalize_grid(grid)
    report, assume, broken = opened(model, assume, args)
    written = {model.fp.arrays[a.array].name for a in model.fp.accesses if a.writes and a.array in model.fp.arrays}
    aliasing = aliasing_in(model.module, written, model.params, args)
    if aliasing and not model.module.distinct_arrays and args is not None and grid3 is not None:
        return data_step.shared_memory_launch(model.module, args, grid3, report, aliasing, assume, start)
    levels = levels_of(model.fp, model.params, args, grid3)
    contract = grid3 is None if contract is None else contract
    every, results = None, []
    if every_shape and grid3 is not None and args is not None and model.params and not model.fp.unsupported:
        mark = time.perf_counter()
        every = spanning(model, assume, args, grid3, data, observed, span_literals)
        phases["search_s"] = time.perf_counter() - mark
        report.launch_contract = every.contract
        levels, results = after_search(levels, every, contract)
    mark = time.perf_counter()
    proof = prove_levels(model, levels, results, assume, args, grid3, searched=every is not None,
                         data_follows=data_follows)
    phases["levels_s"] = time.perf_counter() - mark
    final, given, inferred = proof.results[-1], levels[-1], None
    if (contract and given.shapes is not None and any(r.level.number == 2 and r.races for r in proof.results)
            and (given.grid is None or not final.races)):
        inferred, final = search.grid_contract(model, assume, args, proof, final)
        report.contract = inferred
    overflow_at_given_case(model, assume, args, grid3, final, given)
    report = concluded(report, model, proof, final, (kernel, tuple(args) if args is not None else None, grid3),
                       aliasing + [f for _, f in broken], every, inferred)
    report.stats = {"levels": [r.level.label for r in proof.results],
                    "queries": sum(r.queries for r in proof.results),
                    "solver_s": round(sum(r.solver_s for r in proof.results), 4),
                    "total_s": round(time.perf_counter() - start, 4), "accesses": len(model.fp.accesses),
                    **{k: round(v, 4) for k, v in phases.items()}}
    if data and grid3 is not None and args is not None and model.params:
        report = data_step.decide(report, kernel, model.module, args, grid3, list(assume), model.fp, model.graph,
                                  model.locks, proof.results[-1], given, start, like=proof.checker)
    if every is not None and report.launch_contract is None:  # the data step made a new report
        report.launch_contract = every.contract
    return report


def model_of(kernel: Any, args: Sequence[Any] | None, assume: Sequence[Precondition]) -> Model:
    """Step 1: the kernel compiled for these arguments, executed symbolically into footprints."""
    start = time.perf_counter()
    module, params = _module(kernel, args)
    compile_s = time.perf_counter() - start
    for pre in assume:
        if not isinstance(pre, Precondition):
            raise TilecheckError("assume= takes tilecheck.distinct(...), tilecheck.bounded(...) or "
                                 f"tilecheck.nondecreasing(...), got {pre!r}")
    reset_instances()
    return _executed(kernel, module, params, args, compile_s)


def _executed(kernel: Any, module: Module, params: tuple[Any, ...], args: Sequence[Any] | None,
              compile_s: float) -> Model:
    fp = execute(module)
    graph = order_graph(fp.function)
    locks, lock_facts, lock_notes, unchecked = locks_at_case(find_spin_locks(fp.function, fp.accesses, graph), fp,
                                                             params, args)
    return Model(kernel, module, params, fp, graph, locks, lock_facts, lock_notes, unchecked, compile_s)


def spanning(model: Model, assume: list[Precondition], args: Sequence[Any], grid3: tuple[int, int, int],
             data: bool, observed: Sequence[tuple[Sequence[Any], Any]], literals: bool) -> search.Search:
    """Step 4: the launch's contract over the shapes. Its contract is about the lifted program (the
    kernel's integer literals lifted into symbols, ``ir.lifting``), which the proof cache keys: with
    ``literals`` (the cache holds a proof of this program for other values of its literals, which
    only they kept from deciding this launch) the search is first over the literals as symbols, a
    proof that spans the values of the ``ct.Constant`` s they came from; otherwise, or when that
    proves nothing, over the kernel as compiled, its contract then holding every lifted literal at
    its value (the proof was about those values alone). A kernel launched with one set of
    constants pays no second search."""
    lift = lifted(model.module)
    if lift is not None and literals:
        over = _executed(model.kernel, lift.module, lift.module.params, args, 0.0)
        found = search.every_shape(over, assume, args, grid3, data, observed,
                                   literals=frozenset(name for name, _ in lift.literals))
        if found.contract.proved:
            return found
    found = search.every_shape(model, assume, args, grid3, data, observed)
    if lift is not None and found.contract.proved:
        found.contract = shape_contract.pinned(found.contract, lift.literals)
    return found


def opened(model: Model, assume: Sequence[Precondition], args: Sequence[Any] | None
           ) -> tuple[Report, list[Precondition], list[tuple[Precondition, Finding]]]:
    """Step 2: the report with what the proof assumes, the preconditions kept (those the given
    arguments break are dropped, and reported), and the broken ones with their findings."""
    fp, module = model.fp, model.module
    report = Report(module.name, "unknown")
    report.notes += model.lock_notes
    report.assumptions = list(DEFAULT_ASSUMPTIONS)
    check_named(assume, {info.name for info in fp.arrays.values()}, module.name)
    for pre in assume:
        if any(a.writes and fp.arrays[a.array].name == pre.array for a in fp.accesses):
            report.notes.append(f"precondition on '{pre.array}' ignored: the kernel writes that array")
        report.assumptions.append(pre.describe())
    broken = broken_preconditions(module, model.params, args, assume)
    kept = [pre for pre in assume if pre not in {b for b, _ in broken}]
    report.assumptions = [a for a in report.assumptions if a not in {b.describe() for b, _ in broken}]
    if fp.facts:
        report.assumptions.append("the kernel's own assume ops (e.g. shapes and strides are non-negative)")
    for lock in model.locks:
        loc = lock.acquire.op.loc.outermost()
        name = fp.arrays[lock.acquire.array].name
        held = "" if lock.needs_values is None else (
            f"; its array holds only {lock.needs_values[0]} and {lock.needs_values[1]} at launch: "
            + ("not checked, its contents are on the device (as a precondition on a device array)"
               if name in model.unchecked else "true of the given contents, and checked at every launch the "
                                                "verdict decides"))
        report.assumptions.append(
            f"the spin lock on '{name}' ({loc.short()}) orders its critical "
            f"section (if acquire and release use the same element{held})")
    for u in fp.unsupported:
        report.reasons.append(f"{u.reason} at {u.op.loc.outermost().short()}")
    return report, kept, broken


def levels_of(fp: Any, params: tuple[Any, ...], args: Sequence[Any] | None,
              grid: tuple[int, int, int] | None) -> list[Level]:
    """The levels to ask, most general first: all shapes and grids; the given shapes; the given case."""
    levels = [Level(1, LEVELS[1], None, None, None, None)]
    if args is not None and params:
        shapes = {p.name: p.shape for p in params if p.kind == "array"}
        strides = {p.name: p.strides for p in params if p.kind == "array"}
        scalars = {p.first_arg: int(p.value) for p in params
                   if p.kind == "scalar" and isinstance(p.value, int) and not isinstance(p.value, bool)}
        levels.append(Level(2, LEVELS[2], shapes, strides, scalars, None))
        if grid is not None:
            levels.append(Level(3, LEVELS[3], shapes, strides, scalars, grid))
    elif grid is not None:
        levels.append(Level(2, "all shapes, the given grid", None, None, None, grid))
    return levels


def after_search(levels: list[Level], every: search.Search, contract: bool
                 ) -> tuple[list[Level], list[LevelResult]]:
    """Step 4's outcome for step 5: the levels still to ask, and the results already had (a proof
    for every shape is the one result, at its own level)."""
    if every.contract.proved:
        level = dataclasses.replace(every.result.level, label=EVERY_SHAPE_LEVEL)
        return [level], [dataclasses.replace(every.result, level=level)]
    if contract:
        return levels[1:], []  # the search asked the all-shapes level, under more rules
    # and its last tier the given shapes for grids up to the given one: the given shapes for any
    # grid would rarely prove what that did not (never on TileGym, where it spent up to 1M units,
    # 0.3 s, on the kernels the search had left), so the given case next. A grid contract
    # (``contract=True``) still starts from the given shapes' races
    return levels[-1:], []


def prove_levels(model: Model, levels: list[Level], results: list[LevelResult], assume: list[Precondition],
                 args: Sequence[Any] | None, grid3: tuple[int, int, int] | None, *, searched: bool,
                 data_follows: bool) -> Proof:
    """Step 5: each level's obligations, most general first, until one holds (or the given case)."""
    checker: Checker | None = None  # the last level's
    results = list(results)
    for n, level in enumerate(levels):
        if results and results[-1].level is level:
            break
        last = n == len(levels) - 1
        # general levels are tried briefly: a harder query falls back to the more specific level.
        # After a contract search that failed, a general level only looks for a proof more general
        # than the given case (a race there is decided by the given case anyway): the search's budget
        rlimit = smt.DEFAULT_RLIMIT if last else search.SEARCH_RLIMIT if searched else smt.GENERAL_LEVEL_RLIMIT
        confirm = confirmer(model.module, args, grid3) if level.shapes is not None else None
        # at the given case, a query about array contents the launch's data step can decide gets
        # a smaller budget: that step (pinned contents, then the exact detector) follows
        data_next = data_follows and last and level.grid is not None and args is not None and bool(model.params)
        exact_next = data_next and math.prod(grid3) <= data_step.DATA_DETECT_BLOCKS
        if exact_next:
            # and when that step's exact detector runs this launch, every query gets that budget: an
            # answer past it would only name a more general level for the same verdict (TileBench's
            # bitonic sort: xor-indexed scatters, 14-36 s per query at the full budget)
            rlimit = data_step.DATA_STEP_RLIMIT
        checker = Checker(model.fp, model.graph, model.locks, list(assume), level, stop_early=not last,
                          confirm=confirm, rlimit=rlimit,
                          data_rlimit=data_step.DATA_STEP_RLIMIT if data_next else None,
                          detector_follows=exact_next, open_is_final=data_next and not exact_next)
        result = checker.run()
        results.append(result)
        if not result.races and not result.unknowns and not data_step.violated(result):
            break
    return Proof(levels, results, checker)


def overflow_at_given_case(model: Model, assume: list[Precondition], args: Sequence[Any] | None,
                           grid3: tuple[int, int, int] | None, final: LevelResult, given: Level) -> None:
    """Step 7: a proof more general than the given case assumed that index arithmetic does not
    overflow; the given case can say whether it does (and a wrap-around there undoes the proof):
    its findings and open questions join ``final``'s. An unsupported op leaves no proof to undo: the
    launch goes to the exact detector, which computes with wrapping."""
    if final.level is given or given.grid is None or given.shapes is None or final.races \
            or model.fp.unsupported or final.level.label == EVERY_SHAPE_LEVEL:
        return
    checked = Checker(model.fp, model.graph, model.locks, list(assume), given,
                      confirm=confirmer(model.module, args, grid3), rlimit=smt.DEFAULT_RLIMIT).overflow_only()
    if checked.findings or checked.unknowns:
        final.findings += checked.findings
        final.unknowns += checked.unknowns


def concluded(report: Report, model: Model, proof: Proof, final: LevelResult, case: tuple[Any, ...],
              given_findings: list[Finding], every: search.Search | None, inferred: Any) -> Report:
    """Step 8: the verdict, from the findings of the arguments (``given_findings``: aliasing,
    broken preconditions) and of the final level."""
    given = proof.levels[-1]
    report.findings = [dataclasses.replace(f, case=case) for f in given_findings + final.findings]
    report.level = final.level.label
    if final.level.label == EVERY_SHAPE_LEVEL:
        report.assumptions = ["integer arithmetic deciding what is accessed (addresses, masks, branches, loop "
                              "bounds) does not wrap around: proved for every launch the contract admits"
                              if a.startswith("integer index arithmetic") else a
                              for a in report.assumptions]
    elif given.grid is not None and given.shapes is not None:
        report.assumptions = [a + " (add, sub and mul deciding an address, a mask, a branch or a loop bound: "
                              "checked at this case, with the given array contents; where a value the model does not track "
                              "takes part, a possible overflow is unknown)"
                              if a.startswith("integer index arithmetic") else a for a in report.assumptions]
    report.reasons += final.unknowns
    if report.races:
        report.status = "race"
    elif any(f.kind == "out-of-bounds" for f in report.findings):
        report.status = "out-of-bounds"
    elif final.unknowns or model.fp.unsupported or data_step.violated(final):
        report.status = "unknown"
        if any(f.kind == "assumption-violated" for f in final.findings):
            report.reasons.append("the given arguments break the kernel's own assumptions (see the "
                                  "findings): nothing is proved for them")
        if any(f.kind == "overflow" for f in final.findings):
            report.reasons.append("index arithmetic overflows at the given case (see the findings); "
                                  "the model assumes it does not, so nothing is proved")
    else:
        report.status = "verified"
        general = [r for r in proof.results[:-1] if r.races]
        if every is not None and not every.contract.proved:
            report.notes.append(f"not verified for every shape: {search.contract_failure(every.contract)}; this "
                                f"verdict holds for the given case only")
        elif general and inferred is None:
            # the level is not named: whether 'all grids and shapes' finds its race or runs out of
            # work before 'the given shapes' finds one can turn on a query near its limit, and Z3's
            # work for one formula varies with what the process solved before (docs/semantics.md)
            w = general[-1].races[0]
            array = f" on '{w.witness.array}'" if w.witness is not None else ""
            report.notes.append(f"at a more general level (other shapes or grids) there is a race "
                                f"({w.kind}{array}); this verdict holds for the given case only"
                                + (" (verify(..., contract=True), or the CLI, says for which grids it "
                                   "holds)" if given.shapes is not None else ""))
    return report


def _module(kernel: Any, args: Sequence[Any] | None) -> tuple[Module, tuple[Any, ...]]:
    if isinstance(kernel, Module):
        return kernel, kernel.params
    if args is None:
        raise TilecheckError("verify(kernel, args): pass the launch arguments (the tuple given to "
                             "ct.launch), or a tilecheck.ir.Module to verify for all shapes")
    from tilecheck.ir.cutile import module_for

    module, _ = module_for(kernel, tuple(args))  # compiled once per kernel and argument signature
    return module, module.params
