"""The searches for contracts, steps 4 and 6 of ``pipeline.prove``: each asks the obligations
(``obligations.checker``) under candidate rules, and keeps what a proof needed.

- ``every_shape``: the launch's contract over the shapes (``contracts.shapes``): the all-shapes
  level under the candidate rules this launch satisfies, its proof's cores the rules it needs;
- ``grid_contract``: when the given shapes race for some grid, for which grids they do not
  (``contracts.grid``: a box of extents, in symbolic form where one is proved).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from tilecheck.grid import normalize_grid
from tilecheck.ir import Module
from tilecheck.ir.identity import access_digest
from tilecheck.ir.lifting import lifted
from tilecheck.report import LEVELS, RACE_KINDS
from tilecheck.verifier.contracts import launch_check
from tilecheck.verifier.contracts import shapes as shape_contract
from tilecheck.verifier.contracts.grid import axes_read, exclude_overflow, infer_contract, symbolic_bounds
from tilecheck.verifier.contracts.levels import CONTRACT_LEVEL, Level, LevelResult
from tilecheck.verifier.contracts.preconditions import Bounded, Precondition
from tilecheck.verifier.data import launch_data
from tilecheck.verifier.model.engine import GRID, data_shape
from tilecheck.verifier.obligations.arguments import given_integer_arrays
from tilecheck.verifier.obligations.checker import Checker
from tilecheck.verifier.obligations.confirm import confirmer
from tilecheck.verifier.solver import smt
from tilecheck.verifier.steps import Model, Proof

Search = shape_contract.Search

# solver queries a contract search may spend in all (deterministic); past it the box stops growing
CONTRACT_QUERIES = 150
# each query of the search for a contract over the shapes: there, every query proved on TileGym took
# under 0.25M units, and a harder one only sends the launch to its given case (verified there)
SEARCH_RLIMIT = 1_000_000
# and at its tiers before the last, which a harder query leaves for the last tier (more rules, usually
# an easier question): on TileGym no query there proved past 0.47M units, and the GEMMs' write-write
# queries over unbounded grids ran to 1M, unknown, 0.4-0.9 s each, before the last tier proved them
SEARCH_TIER_RLIMIT = 500_000


def every_shape(model: Model, assume: list[Precondition], args: Sequence[Any], grid: tuple[int, int, int],
                data: bool, observed: Sequence[tuple[Sequence[Any], Any]],
                literals: frozenset[str] = frozenset()) -> Search:
    """The launch's contract over the shapes. With ``data`` (the verdict may rest on this launch's
    contents), a kernel whose addresses depend on index arrays' contents is searched again under the
    facts the given contents satisfy (their range, no duplicates, order: ``launch_data.facts_of``),
    which then belong to the contract. ``observed``: other launches, whose common rules are tried
    first. ``literals``: the scalars that are the kernel's lifted literals (``pipeline.spanning``)."""
    fp, params = model.fp, model.params
    start = smt.work_spent() or 0
    others = _observed_launches(model.kernel, model.module, observed)
    env, widths = shape_contract.launch_of(params, grid)
    index32 = tuple(info.name for info in fp.arrays.values() if widths.get(info.name) == 32)
    facts = tuple(shape_contract.width_facts(fp, index32))
    tiles = {1} | {n for a in fp.accesses for n in data_shape(a.op) if n > 1}
    pool = shape_contract.candidates(fp, [env, *others], axes_read(fp.function), tiles, literals)
    syms = shape_contract.symbols(fp)
    trees = shape_contract.fact_trees(fp)
    if trees is None or not all(launch_check.evaluate(t, env) is True for t in trees):
        return Search(shape_contract.ShapeContract(
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
            return Checker(fp, model.graph, model.locks, preconditions, level, stop_early=True, witnesses=False,
                           rlimit=SEARCH_RLIMIT if last else SEARCH_TIER_RLIMIT, proved=proved, memo=memo,
                           early_tier=not last).run()
        return check
    by_contents = bool(fp.memory) and data  # a defect that needs contents goes to the contents' facts
    found = shape_contract.search(checker(assume), pool, index32, stop_on_data=by_contents)
    if not found.contract.proved and others and found.contract.breaking is not None:
        # what the launches have in common does not prove it (one of them may race): this one's
        pool = shape_contract.candidates(fp, [env], axes_read(fp.function), tiles, literals)
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
                kept = given
                if (smt.work_spent() or 0) - start <= GENERALISE_AFTER_WORK:
                    kept = _general_contents(lambda facts: _proves(checker([*assume, *facts])(
                        found.contract.rules, set(), True)), given, arrays, env)
                found.contract = dataclasses.replace(found.contract, contents=tuple(kept))
    found.contract = dataclasses.replace(found.contract, facts=tuple(trees))
    if found.contract.proved and not found.contract.admits(env, widths, arrays):
        # never a proof about other launches only
        found.contract = dataclasses.replace(found.contract, proved=False,
                                             reason="the contract found does not admit this launch")
    if model.lock_facts and found.contract.proved:  # the locks counted rest on the lock arrays' contents
        found.contract = dataclasses.replace(found.contract, protocol=tuple(model.lock_facts))
    return found


# checks a contract on contents may spend making its facts less of this launch's data, and the
# search's own work past which it spends none: each check asks every obligation again. On TileGym
# the searches that end in a contract on contents took under 0.4M units for the cross entropies,
# JSD, GRPO and RoPE kernels (whose ranges widen), 0.66M-2.0M for the ragged GEMMs (whose offsets
# must stay sorted) and up to 2.7M for the fused MoE: checking those doubled their proofs' time
# and decided no launch more
GENERALISE_CHECKS = 4
GENERALISE_AFTER_WORK = 500_000


def _general_contents(proves: Any, given: list[Precondition], arrays: dict[str, Any],
                      env: dict[str, int]) -> list[Precondition]:
    """The facts of the given contents a contract keeps, less what was only this launch's: a
    range is widened to an index range ``[0, n - 1]`` of one of the launch's dimensions (the data's
    own range, ``[20, 1023]``, misses the next launch's ``[3, 1011]``), and the facts of order and
    distinctness the proof does not need are dropped; each kept only where the contract's rules and
    the facts then still prove every obligation (``proves``), within ``GENERALISE_CHECKS`` checks,
    the most general form (every range widened, nothing else) first."""
    kept = list(given)
    budget = GENERALISE_CHECKS
    sizes = sorted({v for name, v in env.items() if ".shape[" in name and v > 1})

    def widened(fact: Precondition) -> list[Precondition]:  # at the two smallest sizes holding it
        if not isinstance(fact, Bounded):
            return []
        return list(launch_data.widenings(fact, [n for n in sizes if n - 1 >= (fact.hi or 0)][:2],
                                          arrays[fact.array]))

    # the most general first, in one check (the usual answer: a cross entropy's labels need their
    # range, no order): each range at its first widening, nothing else
    general = [next(iter(widened(f)), f) for f in kept if isinstance(f, Bounded)]
    if general != kept:
        budget -= 1
        if proves(general):
            return general
    for i, fact in enumerate(list(kept)):
        for wider in widened(fact):
            if budget == 0:
                return kept
            budget -= 1
            trial = kept[:i] + [wider] + kept[i + 1:]
            if proves(trial):
                kept = trial
                break
    others = [f for f in kept if not isinstance(f, Bounded)]
    if others and budget > 0:
        fewer = [f for f in kept if isinstance(f, Bounded)]
        if proves(fewer):
            kept = fewer
    return kept


def _proves(result: LevelResult) -> bool:
    """A level's result proves every obligation: no defect, nothing undecided."""
    return not result.unknowns and not any(f.is_defect or f.kind == "overflow" for f in result.findings)


def grid_contract(model: Model, assume: list[Precondition], args: Sequence[Any] | None, proof: Proof,
                  final: LevelResult) -> tuple[Any, LevelResult]:
    """The given shapes race for some grid: for which grids they do not (a box of extents, instead
    of a note), with the smallest launch outside it that races, confirmed; and the final result,
    which without a grid given is the contract's own level when the box holds."""
    levels, given = proof.levels, proof.levels[-1]
    fp, graph, locks = model.fp, model.graph, model.locks
    spent = [0]
    channel = confirmer(model.module, args, None)

    def run(bounds: tuple[int | None, int | None, int | None]) -> LevelResult:
        level = dataclasses.replace(levels[1], grid=None, grid_max=bounds)
        result = Checker(fp, graph, locks, list(assume), level, stop_early=True, witnesses=True,
                         confirm=channel, rlimit=smt.GENERAL_LEVEL_RLIMIT, confirm_exact=False,
                         max_queries=max(CONTRACT_QUERIES - spent[0], 0)).run()
        spent[0] += result.queries
        return result
    inferred = infer_contract(run, axes_read(fp.function), given.grid)

    def overflows(bounds: tuple[int | None, int | None, int | None]) -> list[tuple[int, ...]]:
        level = dataclasses.replace(levels[1], grid=None, grid_max=bounds)
        return Checker(fp, graph, locks, list(assume), level, confirm=channel,
                       rlimit=smt.GENERAL_LEVEL_RLIMIT).overflow_only().overflow_blocks
    inferred = exclude_overflow(inferred, overflows)
    inferred = _symbolic_contract(inferred, model, list(assume), levels)
    breaking = inferred.breaking
    if breaking is not None and breaking.witness is not None:
        if breaking.kind in RACE_KINDS and channel is not None and not channel.run(
                breaking.witness, breaking.witness.contents):  # the one witness shown is confirmed
            inferred = dataclasses.replace(inferred, breaking=None)
        else:  # replayable
            inferred = dataclasses.replace(inferred, breaking=dataclasses.replace(
                breaking, case=(model.kernel, tuple(args or ()), breaking.witness.grid)))
    if given.grid is None and inferred.proved and not inferred.empty and inferred.extents != (1, 1, 1):
        final = LevelResult(dataclasses.replace(given, label=CONTRACT_LEVEL))  # verified inside the box
    return inferred, final


def contract_failure(contract: shape_contract.ShapeContract) -> str:
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
        same = _as_program(other, module)
        if same is not None:
            out.append(shape_contract.launch_of(same.params, normalize_grid(grid))[0])
    return out


def _as_program(other: Module, module: Module) -> Module | None:
    """``other`` (a launch's module) as a launch of ``module``'s program: itself when it is the same
    specialisation, its lifted module when ``module`` is a lifted program (``ir.lifting``) and
    ``other``'s literals lift to it; else None (other Tile IR)."""
    if other.functions is module.functions:
        return other
    lift = lifted(other)
    if lift is not None and (lift.module.functions is module.functions
                             or access_digest(lift.module) == access_digest(module)):
        return lift.module  # (what the proof cache takes for one program: its contracts' key)
    return None


def _symbolic_contract(inferred: Any, model: Model, assume: list[Precondition], levels: list[Level]) -> Any:
    """The contract's extents in the usual symbolic form, ``grid[k] <= cdiv(size, tile)``, when one
    of the candidate forms is proved at the all-shapes level (``contract.symbolic``)."""
    if not inferred.proved or inferred.empty or inferred.undecided or len(levels) < 2:
        return inferred
    fp = model.fp
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
        result = Checker(fp, model.graph, model.locks, assume, level, stop_early=True, witnesses=False,
                         rlimit=smt.GENERAL_LEVEL_RLIMIT).run()
        if not result.races and not result.unknowns:
            unread = [f"grid[{k}] {'==' if e == 1 else '<='} {e}" for k, e in enumerate(inferred.extents)
                      if not inferred.reads[k] and e is not None]
            return dataclasses.replace(inferred, symbolic=" and ".join([*map(str, bounds), *unread]))
    return inferred
