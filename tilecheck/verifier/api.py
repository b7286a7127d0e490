"""``tilecheck.verify``: from a kernel (or a Module) and a case to a ``Report``."""
from __future__ import annotations

import contextlib
import dataclasses
import gc
import math
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from tilecheck import checks
from tilecheck.errors import TilecheckError
from tilecheck.grid import normalize_grid
from tilecheck.ir import Module
from tilecheck.verifier import data_step, launch_data, proof_cache, shape_contract, smt
from tilecheck.verifier.arguments import aliasing_in, broken_preconditions, given_integer_arrays
from tilecheck.verifier.cached import EVERY_SHAPE_LEVEL, lookup, remember
from tilecheck.verifier.confirm import confirmer
from tilecheck.verifier.contract import axes_read, exclude_overflow, infer_contract, symbolic_bounds
from tilecheck.verifier.footprints import reset_instances
from tilecheck.verifier.locks import find_spin_locks, locks_at_case
from tilecheck.verifier.levels import Level, LevelResult
from tilecheck.verifier.obligations import Checker
from tilecheck.verifier.preconditions import Precondition
from tilecheck.report import LEVELS, RACE_KINDS, Report
from tilecheck.ir import triton as triton_frontend
from tilecheck.requirements import check_named, with_requirements
from tilecheck.verifier.symbolic.engine import GRID, data_shape, execute
from tilecheck.ir.order import order_graph

# Budgets, not wall-clock time, decide verdicts (smt.smt.GENERAL_LEVEL_RLIMIT and the others), so the
# same input gives the same verdict on any machine under any load; ``timeout_s`` stays as a
# backstop only, for a whole verification.
BACKSTOP_S = 600.0
# the solver work a whole verify may spend (Z3 rlimit units, summed over its queries, witness
# minimisation and data-contract search included): about 20 of the hardest queries a level allows
WORK_BUDGET = 400_000_000
# solver queries a contract search may spend in all (deterministic); past it the box stops growing
CONTRACT_QUERIES = 150
# the level of a verdict without a grid, for the grids of the kernel's contract (report.contract)
CONTRACT_LEVEL = "the given shapes, for the grids of its contract"
# each query of the search for a contract over the shapes: there, every query proved on TileGym took
# under 0.25M units, and a harder one only sends the launch to its given case (verified there)
SEARCH_RLIMIT = 1_000_000
# and at its tiers before the last, which a harder query leaves for the last tier (more rules, usually
# an easier question): on TileGym no query there proved past 0.47M units, and the GEMMs' write-write
# queries over unbounded grids ran to 1M, unknown, 0.4-0.9 s each, before the last tier proved them
SEARCH_TIER_RLIMIT = 500_000
DEFAULT_ASSUMPTIONS = (
    "array arguments do not alias one another (cuTile's own assumption; checked on the given arrays)",
    "no written array overlaps itself: distinct in-bounds indices are distinct addresses",
    "integer index arithmetic does not overflow",
)


def verify(kernel: Any, args: Sequence[Any] | None = None, grid: Any = None, *,
           assume: Sequence[Precondition] = (), timeout_s: float = BACKSTOP_S, data: bool = True,
           contract: bool | None = None, work: int | None = WORK_BUDGET,
           cache: bool | str | Path | None = None, every_shape: bool = True,
           observed: Sequence[tuple[Sequence[Any], Any]] = (), data_follows: bool = False) -> Report:
    """Prove that ``kernel`` is race-free, or find a witness.

    ``kernel`` is a ``@ct.kernel`` (then ``args`` is the tuple passed to ``ct.launch``) or a
    ``tilecheck.ir.Module`` (shapes and grid may stay symbolic). ``grid=None`` means any grid.
    Each solver query has a deterministic work budget (Z3's rlimit), and the whole verification
    spends at most ``work`` units (None: no total), so the verdict does not depend on the machine or
    its load; ``timeout_s`` is a wall-clock backstop for the whole verification: past it the queries
    not yet decided answer ``unknown``, with a reason that says it was time. Running out of any of
    them makes the verdict ``unknown``, never verified.

    With arguments and a grid, defects that need index contents other than the given ones are
    decided on the given data (``data=False`` keeps them): verified at level "this launch's data"
    with the precondition to state suggested, or the exact detector's verdict (``launch_data``).
    With arguments, when the given shapes race for some grid, ``report.contract`` says for which
    grids they do not. The search costs a few more checker runs: it is done by default without a
    grid (where it is the answer) and by the CLI; ``contract=True`` / ``False`` forces it.

    With arguments and a grid, the launch's contract over the shapes is searched for first
    (``every_shape=False`` skips it): verified, the verdict holds for every launch it admits.
    ``observed``: other launches of the kernel, ``(args, grid)`` each (several cases, the launches a
    test suite made; ``args`` may also be the kernel's Module bound to that launch, as the launcher
    keeps it): a candidate rule is kept only when they satisfy it too, so the contract is what the
    launches have in common (those compiled to other Tile IR are left out).
    ``data_follows`` (with ``data=False``): the caller decides a verdict that rests on the launch's
    contents on that data itself (the launcher does): queries about array contents at the given case
    get the data step's smaller budget, as when verify's own data step follows.
    A launch verified for every shape under its contract is remembered in
    the proof cache (``cache``: None uses ``.tilecheck_cache`` beside the project unless
    ``$TILECHECK_NO_CACHE`` is set; False none; a path that directory): a later launch of the same
    Tile IR that satisfies a stored contract is decided by evaluating it, with no solver call.
    """
    checks.kernel("verify(kernel=...)", kernel, module=True)
    assume, work, timeout_s = _checked_options(args, assume, timeout_s, data, contract, work, cache, every_shape,
                                               observed, data_follows)
    assume = with_requirements(kernel, assume)  # read on the kernel the user wrote (Triton's included)
    kernel, args = triton_frontend.resolve(kernel, args) if args is not None else (kernel, args)
    store = proof_cache.resolve(cache) if args is not None and grid is not None else None
    options = {"data": data, "contract": contract, "work": work, "every_shape": every_shape,
               **({"data_follows": True} if data_follows and not data else {}),
               # the launches observed, named in the key of a launch's whole report only (made when needed)
               "observed": lambda: [_launch_identity(kernel, a, g) for a, g in observed]}
    case = None
    if store is not None:
        case, hit = lookup(store, kernel, args, grid, assume, options)
        if hit is not None:
            return hit
    # its own Z3 context: the same kernel gives the same formulas and answers, whatever was
    # verified before (and a verify run inside another leaves the outer one's terms valid)
    with _older_objects_frozen(), smt.backstop(timeout_s), smt.work_budget(work), smt.own_context():
        report = _verify(kernel, args, grid, assume=assume, timeout_s=timeout_s, data=data, contract=contract,
                         every_shape=every_shape, observed=observed, data_follows=data or data_follows)
        report.stats["work"] = smt.work_spent()  # deterministic: the same on any machine
    if store is not None and case is not None:
        remember(store, case, report, args, grid)
    return report


def _checked_options(args: Any, assume: Any, timeout_s: Any, data: Any, contract: Any, work: Any, cache: Any,
                     every_shape: Any, observed: Any, data_follows: Any
                     ) -> tuple[tuple[Precondition, ...], int | None, float]:
    """verify's arguments checked at the door (issue 50): the preconditions as a tuple, the work
    budget and the backstop as Python numbers."""
    from tilecheck.requirements import preconditions

    if args is not None:
        checks.arguments("verify(args=...)", args, by_name=True)
    work = checks.integer("verify(work=...) (solver work units)", work, minimum=1, none=True)
    timeout_s = checks.number("verify(timeout_s=...)", timeout_s)
    for where, value in (("data", data), ("every_shape", every_shape), ("data_follows", data_follows)):
        checks.flag(f"verify({where}=...)", value)
    checks.flag("verify(contract=...)", contract, none=True)
    if not (cache is None or isinstance(cache, (bool, str, Path))):
        raise checks.ArgumentTypeError(f"verify(cache=...) takes True, False, None or a directory (a str or a "
                                       f"Path), got {checks.show(cache)}")
    if not isinstance(observed, (tuple, list)) or not all(isinstance(o, (tuple, list)) and len(o) == 2
                                                          for o in observed):
        raise checks.ArgumentTypeError("verify(observed=...) takes a list of (args, grid) pairs, got "
                                       f"{checks.show(observed)}")
    return preconditions("verify(assume=...)", assume), work, timeout_s


def _verify(kernel: Any, args: Sequence[Any] | None, grid: Any, *, assume: Sequence[Precondition],
            timeout_s: float, data: bool, contract: bool | None, every_shape: bool = True,
            observed: Sequence[tuple[Sequence[Any], Any]] = (), data_follows: bool = False) -> Report:
    assume = with_requirements(kernel, assume)  # and the kernel's @tilecheck.requires
    start = time.perf_counter()
    module, params = _module(kernel, args)
    phases = {"compile_s": time.perf_counter() - start}
    grid3 = _grid(grid)
    for pre in assume:
        if not isinstance(pre, Precondition):
            raise TilecheckError("assume= takes tilecheck.distinct(...), tilecheck.bounded(...) or "
                                 f"tilecheck.nondecreasing(...), got {pre!r}")
    reset_instances()
    fp = execute(module)
    graph = order_graph(fp.function)
    locks, lock_facts, lock_notes, unchecked = locks_at_case(find_spin_locks(fp.function, fp.accesses, graph), fp,
                                                             params, args)
    report = Report(module.name, "unknown")
    report.notes += lock_notes
    report.assumptions = list(DEFAULT_ASSUMPTIONS)
    known_arrays = {info.name for info in fp.arrays.values()}
    check_named(assume, known_arrays, module.name)
    for pre in assume:
        written = any(a.writes and fp.arrays[a.array].name == pre.array for a in fp.accesses)
        if written:
            report.notes.append(f"precondition on '{pre.array}' ignored: the kernel writes that array")
        report.assumptions.append(pre.describe())
    broken = broken_preconditions(module, params, args, assume)
    assume = [pre for pre in assume if pre not in {b for b, _ in broken}]
    report.assumptions = [a for a in report.assumptions if a not in {b.describe() for b, _ in broken}]
    if fp.facts:
        report.assumptions.append("the kernel's own assume ops (e.g. shapes and strides are non-negative)")
    for lock in locks:
        loc = lock.acquire.op.loc.outermost()
        name = fp.arrays[lock.acquire.array].name
        held = "" if lock.needs_values is None else (
            f"; its array holds only {lock.needs_values[0]} and {lock.needs_values[1]} at launch: "
            + ("not checked, its contents are on the device (as a precondition on a device array)"
               if name in unchecked else "true of the given contents, and checked at every launch the verdict decides"))
        report.assumptions.append(
            f"the spin lock on '{name}' ({loc.short()}) orders its critical "
            f"section (if acquire and release use the same element{held})")
    for u in fp.unsupported:
        report.reasons.append(f"{u.reason} at {u.op.loc.outermost().short()}")

    written = {fp.arrays[a.array].name for a in fp.accesses if a.writes and a.array in fp.arrays}
    aliasing = aliasing_in(module, written, params, args)
    if aliasing and not module.distinct_arrays and args is not None and grid3 is not None:
        return data_step.shared_memory_launch(module, args, grid3, report, aliasing, list(assume), start)
    results: list[LevelResult] = []
    levels = _levels(fp, params, args, grid3)
    if contract is None:
        contract = grid3 is None
    every = None
    if every_shape and grid3 is not None and args is not None and params and not fp.unsupported:
        others = _observed_launches(kernel, module, observed)
        mark = time.perf_counter()
        every = _every_shape(fp, graph, locks, list(assume), params, args, grid3, data, others)
        if lock_facts and every.contract.proved:  # the locks counted rest on the lock arrays' contents
            every.contract = dataclasses.replace(every.contract, protocol=tuple(lock_facts))
        phases["search_s"] = time.perf_counter() - mark
        report.launch_contract = every.contract
        if every.contract.proved:
            levels = [dataclasses.replace(every.result.level, label=EVERY_SHAPE_LEVEL)]
            results.append(dataclasses.replace(every.result, level=levels[0]))
        elif contract:
            levels = levels[1:]  # the search asked the all-shapes level, under more rules
        else:
            # and its last tier the given shapes for grids up to the given one: the given shapes
            # for any grid would rarely prove what that did not (never on TileGym, where it spent
            # up to 1M units, 0.3 s, on the kernels the search had left), so the given case next.
            # A grid contract (``contract=True``) still starts from the given shapes' races
            levels = levels[-1:]
    mark = time.perf_counter()
    checker: Checker | None = None  # the last level's
    for n, level in enumerate(levels):
        if results and results[-1].level is level:
            break
        last = n == len(levels) - 1
        # general levels are tried briefly: a harder query falls back to the more specific level.
        # After a contract search that failed, a general level only looks for a proof more general
        # than the given case (a race there is decided by the given case anyway): the search's budget
        rlimit = smt.DEFAULT_RLIMIT if last else SEARCH_RLIMIT if every is not None else smt.GENERAL_LEVEL_RLIMIT
        confirm = confirmer(module, args, grid3) if level.shapes is not None else None
        # at the given case, a query about array contents the launch's data step can decide gets
        # a smaller budget: that step (pinned contents, then the exact detector) follows
        data_next = data_follows and last and level.grid is not None and args is not None and bool(params)
        exact_next = data_next and math.prod(grid3) <= data_step.DATA_DETECT_BLOCKS
        if exact_next:
            # and when that step's exact detector runs this launch, every query gets that budget: an
            # answer past it would only name a more general level for the same verdict (TileBench's
            # bitonic sort: xor-indexed scatters, 14-36 s per query at the full budget)
            rlimit = data_step.DATA_STEP_RLIMIT
        checker = Checker(fp, graph, locks, list(assume), level, stop_early=not last, confirm=confirm,
                          rlimit=rlimit, data_rlimit=data_step.DATA_STEP_RLIMIT if data_next else None,
                          detector_follows=exact_next, open_is_final=data_next and not exact_next)
        result = checker.run()
        results.append(result)
        if not result.races and not result.unknowns and not data_step.violated(result):
            break
    phases["levels_s"] = time.perf_counter() - mark
    final = results[-1]
    given = levels[-1]
    inferred = None
    if (contract and given.shapes is not None and any(r.level.number == 2 and r.races for r in results)
            and (given.grid is None or not final.races)):
        # the given shapes race for some grid: say for which (a box of extents), instead of a note
        spent = [0]

        def run(bounds: tuple[int | None, int | None, int | None]) -> LevelResult:
            level = dataclasses.replace(levels[1], grid=None, grid_max=bounds)
            result = Checker(fp, graph, locks, list(assume), level, stop_early=True, witnesses=True,
                             confirm=channel, rlimit=smt.GENERAL_LEVEL_RLIMIT, confirm_exact=False,
                             max_queries=max(CONTRACT_QUERIES - spent[0], 0)).run()
            spent[0] += result.queries
            return result
        channel = confirmer(module, args, None)
        inferred = infer_contract(run, axes_read(fp.function), given.grid)

        def overflows(bounds: tuple[int | None, int | None, int | None]) -> list[tuple[int, ...]]:
            level = dataclasses.replace(levels[1], grid=None, grid_max=bounds)
            return Checker(fp, graph, locks, list(assume), level, confirm=channel,
                           rlimit=smt.GENERAL_LEVEL_RLIMIT).overflow_only().overflow_blocks
        inferred = exclude_overflow(inferred, overflows)
        inferred = _symbolic_contract(inferred, fp, graph, locks, list(assume), levels)
        breaking = inferred.breaking
        if breaking is not None and breaking.witness is not None:
            if breaking.kind in RACE_KINDS and channel is not None and not channel.run(
                    breaking.witness, breaking.witness.contents):  # the one witness shown is confirmed
                inferred = dataclasses.replace(inferred, breaking=None)
            else:  # replayable
                inferred = dataclasses.replace(inferred, breaking=dataclasses.replace(
                    breaking, case=(kernel, tuple(args or ()), breaking.witness.grid)))
        report.contract = inferred
        if given.grid is None and inferred.proved and not inferred.empty and inferred.extents != (1, 1, 1):
            final = LevelResult(dataclasses.replace(given, label=CONTRACT_LEVEL))  # verified inside the box
    if final.level is not given and given.grid is not None and given.shapes is not None and not final.races \
            and not fp.unsupported and final.level.label != EVERY_SHAPE_LEVEL:
        # a more general proof assumed that index arithmetic does not overflow; the given case can
        # say whether it does (and a wrap-around there undoes the proof). An unsupported op leaves
        # no proof to undo: the launch goes to the exact detector, which computes with wrapping
        checked = Checker(fp, graph, locks, list(assume), given, confirm=confirmer(module, args, grid3),
                          rlimit=smt.DEFAULT_RLIMIT).overflow_only()
        if checked.findings or checked.unknowns:
            final.findings += checked.findings
            final.unknowns += checked.unknowns
    case = (kernel, tuple(args) if args is not None else None, grid3)
    report.findings = [dataclasses.replace(f, case=case)
                       for f in aliasing + [f for _, f in broken] + final.findings]
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
    elif final.unknowns or fp.unsupported or data_step.violated(final):
        report.status = "unknown"
        if any(f.kind == "assumption-violated" for f in final.findings):
            report.reasons.append("the given arguments break the kernel's own assumptions (see the "
                                  "findings): nothing is proved for them")
        if any(f.kind == "overflow" for f in final.findings):
            report.reasons.append("index arithmetic overflows at the given case (see the findings); "
                                  "the model assumes it does not, so nothing is proved")
    else:
        report.status = "verified"
        general = [r for r in results[:-1] if r.races]
        if every is not None and not every.contract.proved:
            report.notes.append(f"not verified for every shape: {_contract_failure(every.contract)}; this "
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
    report.stats = {"levels": [r.level.label for r in results], "queries": sum(r.queries for r in results),
                    "solver_s": round(sum(r.solver_s for r in results), 4),
                    "total_s": round(time.perf_counter() - start, 4), "accesses": len(fp.accesses),
                    **{k: round(v, 4) for k, v in phases.items()}}
    if data and grid3 is not None and args is not None and params:
        report = data_step.decide(report, kernel, module, args, grid3, list(assume), fp, graph, locks,
                                  results[-1], given, start, like=checker)
    if every is not None and report.launch_contract is None:  # the data step made a new report
        report.launch_contract = every.contract
    return report


def _every_shape(fp: Any, graph: Any, locks: Any, assume: list[Precondition], params: tuple[Any, ...],
                 args: Sequence[Any], grid: tuple[int, int, int], data: bool,
                 others: Sequence[dict[str, int]] = ()) -> shape_contract.Search:
    """The launch's contract over the shapes (``shape_contract``): the all-shapes level under the
    candidate rules this launch satisfies, its proof's cores the rules it needs. With ``data`` (the
    verdict may rest on this launch's contents), a kernel whose addresses depend on index arrays'
    contents is searched again under the facts the given contents satisfy (their range, no
    duplicates, order: ``launch_data.facts_of``), which then belong to the contract."""
    from tilecheck.verifier.contract import axes_read

    env, widths = shape_contract.launch_of(params, grid)
    index32 = tuple(info.name for info in fp.arrays.values() if widths.get(info.name) == 32)
    facts = tuple(shape_contract.width_facts(fp, index32))
    tiles = {1} | {n for a in fp.accesses for n in data_shape(a.op) if n > 1}
    pool = shape_contract.candidates(fp, [env, *others], axes_read(fp.function), tiles)
    syms = shape_contract.symbols(fp)
    trees = shape_contract.fact_trees(fp)
    if trees is None or not all(shape_contract.evaluate(t, env) is True for t in trees):
        return shape_contract.Search(shape_contract.ShapeContract(
            (), index32, reason="the kernel's own assumptions do not all hold at this launch, or name "
                                "more than its shapes and scalars"), None)

    terms: dict[shape_contract.Rule, Any] = {}  # each rule's formula, made once for every tier and search
    tracked: dict[tuple[int, shape_contract.Rule], tuple[Any, Any]] = {}  # (flag, flag => rule) by position

    def checker(preconditions: list[Precondition]) -> Any:
        memo: dict[str, Any] = {}  # what the search's levels share (``Checker.memo``)

        def check(rules: tuple[shape_contract.Rule, ...], proved: set[Any], last: bool) -> LevelResult:
            for i, r in enumerate(rules):
                if (i, r) not in tracked:  # flag ``rule!i`` implies the rule (the tiers share most)
                    if r not in terms:
                        terms[r] = r.smt(syms)
                    flag = smt.Bool(f"rule!{i}")
                    tracked[i, r] = (flag, smt.Implies(flag, terms[r]))
            level = Level(1, LEVELS[1], None, None, None, None, widths=facts,
                          tracked=tuple(tracked[i, r][0] for i, r in enumerate(rules)),
                          rules=tuple(tracked[i, r][1] for i, r in enumerate(rules)))
            return Checker(fp, graph, locks, preconditions, level, stop_early=True, witnesses=False,
                           rlimit=SEARCH_RLIMIT if last else SEARCH_TIER_RLIMIT, proved=proved, memo=memo,
                           early_tier=not last).run()
        return check
    by_contents = bool(fp.memory) and data  # a defect that needs contents goes to the contents' facts
    found = shape_contract.search(checker(assume), pool, index32, stop_on_data=by_contents)
    if not found.contract.proved and others and found.contract.breaking is not None:
        # what the launches have in common does not prove it (one of them may race): this one's
        pool = shape_contract.candidates(fp, [env], axes_read(fp.function), tiles)
        found = shape_contract.search(checker(assume), pool, index32, stop_on_data=by_contents)
    arrays = given_integer_arrays(params, args)
    # a defect (not an undecided query) the given contents' facts may exclude (its query reads
    # array contents): searched again
    if not found.contract.proved and found.contract.breaking is not None and by_contents \
            and found.result is not None and found.result.reads_data:
        read = sorted(fp.arrays[i].name for i in fp.memory if fp.arrays[i].name in arrays)
        given = [f for f in launch_data.facts_of(read, arrays) if f not in assume]
        if given:
            again = shape_contract.search(checker([*assume, *given]), pool, index32, resume=found.stopped)
            if again.contract.proved:
                found = again
                found.contract = dataclasses.replace(found.contract, contents=tuple(given))
    found.contract = dataclasses.replace(found.contract, facts=tuple(trees))
    if found.contract.proved and not found.contract.admits(env, widths, arrays):
        # never a proof about other launches only
        found.contract = dataclasses.replace(found.contract, proved=False,
                                             reason="the contract found does not admit this launch")
    return found


def _observed_launches(kernel: Any, module: Module, observed: Sequence[tuple[Sequence[Any], Any]]
                       ) -> list[dict[str, int]]:
    """The symbol values of the other launches seen that run this launch's Tile IR."""
    if not observed:
        return []
    from tilecheck.ir.cutile import module_for

    out = []
    for args, grid in observed:
        if isinstance(args, Module):  # a module bound to that launch's arguments (the launcher's)
            other = args
        elif isinstance(kernel, Module):
            continue
        else:
            other, _ = module_for(kernel, tuple(args))
        if other.functions is module.functions:  # the same specialisation, so the same Tile IR
            out.append(shape_contract.launch_of(other.params, normalize_grid(grid))[0])
    return out


def _launch_identity(kernel: Any, args: Sequence[Any], grid: Any) -> list[Any]:
    """An observed launch as the cache keys it: its parameters' shapes and values, and its grid."""
    from tilecheck.ir.cutile import argument_signature

    if isinstance(args, Module):
        return [repr(args.params), list(normalize_grid(grid))]
    return [repr(argument_signature(tuple(args))), list(normalize_grid(grid))]


def _contract_failure(contract: shape_contract.ShapeContract) -> str:
    """Why no contract over the shapes was proved, in a line."""
    found = contract.breaking
    if found is None:
        return contract.reason or "no proof"
    where = ""
    if found.witness is not None:
        w = found.witness
        shapes = ", ".join(f"{k} {tuple(v)}" for k, v in w.shapes.items())
        where = f" at grid {tuple(w.grid)}" + (f", {shapes}" if shapes else "")
    return f"{found.kind}{where}, a launch that every candidate contract allows ({found.message})"


def _symbolic_contract(inferred: Any, fp: Any, graph: Any, locks: Any, assume: list[Precondition],
                       levels: list[Level]) -> Any:
    """The contract's extents in the usual symbolic form, ``grid[k] <= cdiv(size, tile)``, when one
    of the candidate forms is proved at the all-shapes level (``contract.symbolic``)."""
    if not inferred.proved or inferred.empty or inferred.undecided or len(levels) < 2:
        return inferred
    given = levels[1]
    sizes = []
    for info in fp.arrays.values():
        shape = (given.shapes or {}).get(info.name)
        if shape is not None:
            sizes += [(f"{info.name}.shape[{d}]", sym, v) for d, (sym, v) in enumerate(zip(info.shape, shape))
                      if smt.is_const(sym)]
    sizes += [(fp.scalar_name(i), fp.scalars[i], v) for i, v in (given.scalars or {}).items()
              if i in fp.scalars and smt.is_const(fp.scalars[i])]
    tiles = {1} | {n for a in fp.accesses for n in data_shape(a.op) if n > 1}
    fixed = [GRID[k] <= e for k, e in enumerate(inferred.extents) if not inferred.reads[k] and e is not None]
    for bounds in symbolic_bounds(inferred, sizes, tiles):
        level = dataclasses.replace(levels[0], rules=(*fixed, *(b.rule(GRID) for b in bounds)))
        result = Checker(fp, graph, locks, assume, level, stop_early=True, witnesses=False,
                         rlimit=smt.GENERAL_LEVEL_RLIMIT).run()
        if not result.races and not result.unknowns:
            unread = [f"grid[{k}] {'==' if e == 1 else '<='} {e}" for k, e in enumerate(inferred.extents)
                      if not inferred.reads[k] and e is not None]
            return dataclasses.replace(inferred, symbolic=" and ".join([*map(str, bounds), *unread]))
    return inferred


@contextlib.contextmanager
def _older_objects_frozen() -> Iterator[None]:
    """The objects alive before this verification are left out of the cyclic collector's passes
    while it runs (``gc.freeze``) and handed back after (``gc.unfreeze``): a long process (a test
    session, a sweep over many kernels) holds hundreds of thousands of them (compiled kernels,
    cuTile's caches), and a full collection walking them all took up to 0.38 s of a 0.5 s verify.
    Garbage among them waits for the next collection after this one. Left alone when something
    else froze objects (a server that freezes before it forks, or a verify in another thread)."""
    if gc.get_freeze_count():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def _module(kernel: Any, args: Sequence[Any] | None) -> tuple[Module, tuple[Any, ...]]:
    if isinstance(kernel, Module):
        return kernel, kernel.params
    if args is None:
        raise TilecheckError("verify(kernel, args): pass the launch arguments (the tuple given to "
                             "ct.launch), or a tilecheck.ir.Module to verify for all shapes")
    from tilecheck.ir.cutile import module_for

    module, _ = module_for(kernel, tuple(args))  # compiled once per kernel and argument signature
    return module, module.params


def _grid(grid: Any) -> tuple[int, int, int] | None:
    return None if grid is None else normalize_grid(grid)


def _levels(fp: Any, params: tuple[Any, ...], args: Sequence[Any] | None,
            grid: tuple[int, int, int] | None) -> list[Level]:
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
