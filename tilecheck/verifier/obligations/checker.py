"""The proof obligations (DESIGN §4), each a Z3 query whose model is a witness.

1-2. write/write and read/write across blocks      4. atomics (order-dependent float atomics)
3.   unordered conflicting accesses inside a block   5. out-of-bounds pointer accesses
7.   accesses inside one spin-lock critical section do not race (the lock orders them)
(6, aliasing of arguments, is checked on concrete arguments in ``api``.)
"""
from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any

from tilecheck.ir.loc import Loc
from tilecheck.ir.order import OrderGraph
from tilecheck.ir.summary import CROSS_BLOCK_SCOPES, validated_loads
from tilecheck.report import Finding
from tilecheck.verifier.concrete import enumeration, given_case
from tilecheck.verifier.concrete.contents import ContentQuestions
from tilecheck.verifier.contracts import shapes as shape_contract
from tilecheck.verifier.contracts.levels import Level, LevelResult
from tilecheck.verifier.contracts.preconditions import Precondition
from tilecheck.verifier.model import carried
from tilecheck.verifier.model.engine import GRID, Footprints
from tilecheck.verifier.model.footprints import (
    Access,
    Instance,
    block_vars,
    corners,
    fixed_values,
    grid_stride_relaxed,
    instantiate,
    pinned,
    rename_blocks,
    same_element,
)
from tilecheck.verifier.obligations import synchronisation
from tilecheck.verifier.obligations.in_block import InBlockOrdering, inside
from tilecheck.verifier.obligations.locks import LockExclusion, SpinLock
from tilecheck.verifier.obligations.synchronisation import AtomicOrder, Synchronising
from tilecheck.verifier.obligations.witnesses import WitnessBuilding
from tilecheck.verifier.solver import bits, intervals, smt

# the largest grid extent per axis a launch can have (CUDA: 2^31 - 1 blocks in x, 65535 in y and z)
GRID_LIMITS = ((1 << 31) - 1, 65535, 65535)
TENTATIVE_RLIMIT = 1_000_000  # a shortcut query (Checker.solve(tentative=True)): small, it has a fallback
# the query about the two instances an enumeration found on one element (``_pinned_first``): every
# variable is pinned, so its model is found quickly or a mask the listing took as true rules it
# out (TileBench's bitonic step: 2.4M units); past this its fallback decides (a 70-expert
# scheduler's clash ran 20M units, 16 s, unknown, and the exact detector found the race in 1.3 s)
CLASH_RLIMIT = 4_000_000
# a query with bit-vector arithmetic (xor, and, or, shifts of indices) where something else decides
# it: at a level with symbolic shapes (the given case enumerates such addresses) or at a given case
# whose launch verify's exact detector runs. Z3 bit-blasts it, and its work units cost far more time
# than arithmetic's (TileBench's bitonic sort: 659K units in 11 s, against about 1M per second
# elsewhere; its radix sort's scatter: 2M units, 2.8 s, to end unknown before the detector ran)
SYMBOLIC_BITWISE_RLIMIT = 50_000
# ... and elsewhere, at most this much: a bit-blasted unit costs Z3 two to sixteen times the time of
# an arithmetic one, so this is about the time of the level's usual budget (TileBench's radix
# scatter at 19,532 blocks, where neither the detector nor pinned contents decide: four queries ran
# to 2M units, 1.6-2.1 s each, and all ended unknown; no query of TileBench's or TileGym's with
# bit-vector arithmetic proved past 0.25M)
BITWISE_RLIMIT = 500_000
# an across-blocks question asked first without the block ids of grid-stride loops
# (``grid_stride_relaxed``) gets this share of the query's budget: 0.2M at a contract search's last
# tier, where TileGym's swizzled GEMMs prove in 0.02-0.14M; 0.1M at the tiers before it, where they
# do not prove at all and the simpler persistent kernels prove in under 0.05M
GRID_STRIDE_SHARE = 5
# a question enumeration would decide by listing this many lanes or more is asked of the solver
# first, when the level's values turn its bit-vector arithmetic into integer arithmetic
# (``Checker._before_listing``)
LARGE_LISTING = 1 << 20
# an across-blocks question at a contract search's tier before the last: there, TileGym's proved in
# under 0.08M units, and the ones undecided at 0.5M (the GEMMs and mhc's split GEMM, 0.16-0.26 s
# each) were proved by the last tier, whose rules make them easy (0.02M)
SEARCH_TIER_ACROSS_RLIMIT = 200_000


class _Abort(Exception):
    pass


class Checker(ContentQuestions, WitnessBuilding, LockExclusion, AtomicOrder, InBlockOrdering):
    """Runs every obligation of one kernel at one level.

    With ``stop_early`` (a level that a more specific one follows), the first race or unknown
    ends the level: the next level will be tried anyway.
    """

    def __init__(self, fp: Footprints, graph: OrderGraph, locks: list[SpinLock],
                 preconditions: list[Precondition], level: Level,
                 stop_early: bool = False, confirm: Any = None, rlimit: int = smt.DEFAULT_RLIMIT,
                 witnesses: bool | None = None, confirm_exact: bool = True,
                 max_queries: int | None = None, pin_given: bool = False,
                 proved: set[tuple[Any, ...]] = frozenset(), data_rlimit: int | None = None,
                 memo: dict[str, Any] | None = None, early_tier: bool = False,
                 detector_follows: bool = False, open_is_final: bool = False,
                 like: Checker | None = None) -> None:
        self.fp, self.graph, self.locks, self.level = fp, graph, locks, level
        # confirm(witness, contents) -> bool: do the witness's blocks touch its element when run
        # with the case's arguments (read-only arrays holding the model's ``contents``)?
        self.confirmer = confirm
        self.confirm = getattr(confirm, "run", None)
        # contents -> the entries that differ from the given arguments (what the race needs)
        self.given_contents = getattr(confirm, "differing", None)
        self.rlimit = rlimit
        # for a query that reads array contents, when the launch's own data decides what this
        # level cannot (verify's data step): a smaller budget before that step takes over
        self.data_rlimit = data_rlimit
        self._read_memory = False  # the last ``content_facts`` formula read array contents
        self.asked: tuple[Any, ...] | None = None  # the obligation of the last ``solve``
        self.stop_early = stop_early
        # findings carry canonical, confirmed witnesses (a level that stops early only looks for one)
        self.witnesses = not stop_early if witnesses is None else witnesses
        # False: a model of a query that reads no memory contents and no untracked value is exact,
        # and is not run on the interpreter here (the caller confirms the witness it keeps)
        self.confirm_exact = confirm_exact
        self.max_queries = max_queries  # a deterministic budget of solver queries for the level
        # every read of a small integer array is its given element: a question about this launch's data
        self.pin_given = pin_given
        # obligations proved at this level under fewer constraints: they stay proved, not asked again
        self.known_proved = proved
        # what the levels of one contract search share: they differ only in the rules they assume,
        # which interval arithmetic does not read (``_ranges``, ``never_wraps``)
        self.memo = {} if memo is None else memo
        # a contract search's tier before its last: an undecided question moves the search on
        self.early_tier = early_tier
        # verify's exact detector decides this launch when the level leaves anything undecided: a
        # query with bit-vector arithmetic gets SYMBOLIC_BITWISE_RLIMIT (as at a level with symbolic
        # shapes, which the given case follows), and once an obligation is open that the given
        # contents do not settle, every query gets a late probe's budget (PROBE_OPEN_RLIMIT)
        self.detector_follows = detector_follows
        # ... or nothing after this level decides what it leaves open beyond the pinned run (the
        # data step follows, but the launch is past its exact detector): an open obligation the
        # given contents do not settle makes the verdict unknown, and then only a race would change
        # it; the queries left get the late probe's budget as well
        self.open_is_final = open_is_final
        self._written: tuple[smt.BoolExpr, smt.BoolExpr] | None = None  # ``in_integers``'s last
        self.short_bitwise = detector_follows or level.shapes is None
        # work a pinned question may take past its query's budget, for the whole level
        # (``given_case.pinned``: the data step's pinned run moved forward, at most one run's worth)
        self.pinned_allowance = given_case.PINNED_RLIMIT
        self.settled = 0  # unknowns recorded for obligations that hold with the given contents pinned
        self.preconditions = {p.array: [q for q in preconditions if q.array == p.array]
                              for p in preconditions}
        self.result = LevelResult(level)
        self.seen: set[tuple[str, int, int | None]] = set()
        self.names = {i: info.name for i, info in fp.arrays.items()}
        self.concrete = fixed_values(fp, level)
        self.corners = corners(level)
        self._carried: dict[int, tuple[smt.BoolExpr, list[smt.BoolExpr]]] = {}  # keeps the formula alive
        self._base: dict[tuple[tuple[str, ...], bool], list[smt.BoolExpr]] = {}
        self._unrolled = carried.Memo()  # carried values' facts, per value and loop instance
        # the applications in each base constraint, walked once (``smt.applications_of``) per level
        # (not per search: kept alive across its tiers, the terms moved the ids Z3 gives later ones,
        # and a swizzled GEMM's grid-stride question went from 55K units to past its 0.2M)
        self._apps: dict[int, tuple[smt.Expr, dict[str, list[smt.Expr]], set[int]]] = {}
        self._shared: set[int] = set()
        self._sync: Synchronising | None = None
        # each access's enumerated elements (enumeration.compare), and the accesses it lists together
        self._enumerated: dict[Any, Any] = {"accesses": tuple(fp.accesses)}
        # per obligation, listing its pair at the given contents (``_list_with_given_contents``)
        self.given_listings: dict[tuple[Any, ...], Callable[[], Any]] = {}
        if like is not None:
            self._reuse(like)
        self.protected: dict[int, list[SpinLock]] = {}
        for lock in locks:
            for index in lock.protected:
                self.protected.setdefault(index, []).append(lock)

    def _reuse(self, like: Checker) -> None:
        """Take the caches of ``like``, a checker of the same kernel at the same level (the data
        step's runs again at the given case, under preconditions or pins): the base constraints,
        the term walks, the carried values' facts and interval ranges depend on neither; the
        enumerated elements depend on the pins, so are taken at the same pins only. (Making them
        again was a third of a grouped GEMM's data step.)"""
        if like.fp is not self.fp or like.level is not self.level:
            raise ValueError("a checker reuses the caches of one at the same kernel and level only")
        self.memo = like.memo
        self._carried, self._base, self._unrolled = like._carried, like._base, like._unrolled
        self._apps, self._shared = like._apps, like._shared
        if like.pin_given == self.pin_given:
            self._enumerated = like._enumerated

    # ---- constraints shared by every query ---------------------------------------------------
    def base(self, tags: tuple[str, ...], facts: bool = True) -> list[smt.BoolExpr]:
        """The constraints every query about blocks ``tags`` shares: the level's grid, shapes,
        strides and scalars, the block ranges, and (``facts``) the kernel's assume facts per block
        (made once per level: renaming the facts was most of a query's Python time)."""
        key = (tags, facts)
        if key not in self._base:
            self._base[key] = self._make_base(tags, facts)
            self._shared |= {smt.term_id(c) for c in self._base[key]}
        return list(self._base[key])

    def _make_base(self, tags: tuple[str, ...], facts: bool) -> list[smt.BoolExpr]:
        out: list[smt.BoolExpr] = []
        for d, g in enumerate(GRID):
            out.append(g >= 1)
            if self.level.grid is not None:
                out.append(g == self.level.grid[d])
            elif self.level.grid_max is not None:  # a contract's box, within CUDA's grid limits
                out.append(g <= (GRID_LIMITS[d] if self.level.grid_max[d] is None else self.level.grid_max[d]))
        out += list(self.level.rules)
        for info in self.fp.arrays.values():
            out += [s >= 0 for s in info.shape]
            if self.level.shapes is not None and info.name in self.level.shapes:
                out += [s == v for s, v in zip(info.shape, self.level.shapes[info.name])]
            if self.level.strides is not None and info.name in self.level.strides:
                out += [s == v for s, v in zip(info.strides, self.level.strides[info.name])]
        if self.level.scalars is not None:
            out += [self.fp.scalars[i] == v for i, v in self.level.scalars.items() if i in self.fp.scalars]
        for tag in tags:
            block = block_vars(tag)
            out += [smt.And(b >= 0, b < g) for b, g in zip(block, GRID)]
            if facts:
                out += [rename_blocks(f, tag) for f in self.fp.facts]
        return out

    @property
    def _ranges(self) -> intervals.Box:
        """Block 'b1''s variables' ranges under the level's base and index widths, and CUDA's grid
        limits (a fact of every launch, kept out of the solver's queries); each array's contents'
        range (by content function): once per level, or per search (``memo``)."""
        if "ranges" in self.memo:
            return self.memo["ranges"]
        limits = [g <= bound for g, bound in zip(GRID, GRID_LIMITS)]
        # a tracked rule is an implication, which interval bounds do not read: left out of the walk
        rules = {smt.term_id(r) for r in self.level.rules} if self.level.tracked else set()
        base = [c for c in self.base(("b1",)) if smt.term_id(c) not in rules]
        box = intervals.box_of([*base, *(self.level.widths or ()), *limits])
        for index, func in self.fp.memory.items():
            if (span := self._contents_range(index)) is not None:
                box[func.name()] = span
        self.memo["ranges"] = box
        return box

    def never_wraps(self, value: smt.IntExpr, lo: int, hi: int, live: smt.BoolExpr) -> bool:
        """Block 'b1''s ``value`` stays in ``[lo, hi]`` wherever ``live`` holds, by interval
        arithmetic alone (``intervals``: no solver, so no rule of a contract is used)."""
        return intervals.within(value, lo, hi, intervals.box_of([live], self._ranges, rounds=2))

    def solve(self, constraints: list[smt.BoolExpr], what: str, locs: tuple[Loc, ...],
              key: tuple[Any, ...] | None = None, tentative: bool = False,
              limit: int | None = None) -> smt.Result:
        """Decide one query; ``key`` names an obligation (proved ones are recorded in the result,
        and ones proved under fewer constraints are not asked again). A ``tentative`` query (a
        shortcut whose questions are asked one by one when it fails) has a small work limit, and
        its ``unknown`` is neither recorded nor the end of the level (``limit``: a smaller one; for
        another query, a smaller budget than the level's)."""
        if key is not None and key in self.known_proved:
            self.result.proved.add(key)
            return smt.Unsat()
        self.asked = key
        if self.max_queries is not None and self.result.queries >= self.max_queries:
            self.result.unknowns.append(f"the level's budget of {self.max_queries} solver queries ran out")
            raise _Abort
        asked = smt.And(*constraints)
        formula = self.in_integers(asked)
        extra = self.content_facts(formula)
        about_contents = self.about_contents
        rlimit = self.data_rlimit if self.data_rlimit is not None and self._read_memory else self.rlimit
        if tentative:  # a shortcut about contents gets no more than a late probe of one of its
            # questions: each is asked alone after it anyway (TileGym: every such shortcut that
            # proved took under 0.1M units; one that ran to 0.5M ended unknown, 0.25 s)
            rlimit = min(rlimit, TENTATIVE_RLIMIT if limit is None else limit,
                         given_case.PROBE_OPEN_RLIMIT if about_contents else rlimit)
        elif limit is not None:
            rlimit = min(rlimit, limit)
        # (the bit-vector budget of the question as asked: written in integers, a radix digit's
        # content question is no more decidable, and ran to the level's 2M units again)
        rlimit = self.after_open(self.bitwise_limit(asked, rlimit))
        start = time.perf_counter()
        probe = about_contents and not tentative
        result = given_case.probed(self, formula, extra, rlimit, key) if probe else None
        if result is None:
            result = smt.check([formula, *extra], rlimit, self.level.tracked)
        self.result.solver_s += time.perf_counter() - start
        self.result.queries += 1
        if isinstance(result, smt.Unknown) and not tentative:
            where = ", ".join(loc.short() for loc in locs if loc.is_known())
            self.leave_open(f"{what} ({where}): solver answered unknown ({result.reason})", key)
            if self.stop_early:
                raise _Abort
        elif isinstance(result, smt.Unsat):
            self.result.cores |= result.core
            if key is not None:
                self.result.prove([key])
        return result

    def in_integers(self, formula: smt.BoolExpr) -> smt.BoolExpr:
        """``formula`` with the bit-vector arithmetic the level's values make constant written in
        integers (``bits``), at a level with concrete values; else ``formula``."""
        if not (self.fp.bitwise and self.level.grid is not None and self.level.shapes is not None):
            return formula
        # the last one written, kept with its formula (alive, so that its id names it): a question
        # asked first before enumeration (``_before_listing``) is written once, not again to ask it
        if self._written is None or self._written[0] is not formula and not self._written[0].eq(formula):
            self._written = (formula, bits.arithmetic(formula, self.concrete))
        return self._written[1]

    def bitwise_limit(self, formula: smt.BoolExpr, rlimit: int) -> int:
        """``rlimit``, or less for a query with bit-vector arithmetic (``SYMBOLIC_BITWISE_RLIMIT``
        where something else decides it, else ``BITWISE_RLIMIT``): every query of the level, its
        witnesses' and its pinned ones asked through here."""
        if self.fp.bitwise and smt.bitwise(formula):
            return min(rlimit, SYMBOLIC_BITWISE_RLIMIT if self.short_bitwise else BITWISE_RLIMIT)
        return rlimit

    # ---- obligations ---------------------------------------------------------------------------
    def run(self) -> LevelResult:
        try:
            self._run()
        except _Abort:
            pass
        return self.result

    def overflow_only(self) -> LevelResult:
        """Only the overflow obligation at this (concrete) level."""
        try:
            given_case.check_overflow(self)
        except _Abort:
            pass
        return self.result

    def _run(self) -> None:
        # a contract search's tier asks whether its assumptions can hold only once it has found no
        # model (a model satisfies them): most tiers end at a defect, and the question cost each
        # one a query (TileGym: 91 such tiers)
        if self.level.tracked:
            self._obligations()
            given_case.check_assumptions_last(self)
        elif given_case.check_assumptions(self):
            self._obligations()

    def _obligations(self) -> None:
        accesses = self.fp.accesses
        given_case.check_overflow(self)
        if self.level.widths is not None and shape_contract.check_overflow(self) and self.stop_early:
            return
        self.check_locks()
        self.all_in_bounds()
        validated = validated_loads(self.fp.function)  # a CAS retry's guess: strong (docs/semantics.md)
        for i, x in enumerate(accesses):
            if not x.checks_bounds and ("bounds", x.index) not in self.result.proved:
                self.bounds(x)
            for y in accesses[i:]:
                if x.array != y.array or not (x.writes or y.writes):
                    continue
                if (_strong(x) or x.op in validated) and (_strong(y) or y.op in validated):
                    # morally strong (memory model): atomics, or relaxed/acquire/release loads and
                    # stores, at a scope spanning blocks: no data race across blocks; the value may
                    # depend on the order. Inside one block, tokens must still order them.
                    self.order_dependent(x, y)
                    if not (x.is_atomic and y.is_atomic):
                        self.inside_block(x, y)
                    continue
                if x.is_atomic and y.is_atomic:  # a tile-block-scoped atomic orders nothing across blocks
                    self.across_blocks(x, y)
                    continue
                self.across_blocks(x, y)
                self.inside_block(x, y)
        synchronisation.steered_results(self)

    def two_blocks(self, x: Access, y: Access) -> tuple[Instance, Instance, list[smt.BoolExpr]] | None:
        """x in block b1 and y in block b2 != b1 touch one element (None when not comparable)."""
        a, b = instantiate(x, "b1"), instantiate(y, "b2")
        same = same_element(a, b)
        if same is None:
            return None
        differ = smt.Or(*[p != q for p, q in zip(a.block, b.block)])
        return a, b, [*self.base(("b1", "b2")), differ, a.active, b.active, same, *inside(a), *inside(b)]

    def across_blocks(self, x: Access, y: Access) -> None:
        pair = self.two_blocks(x, y)
        if pair is None:
            return
        a, b, constraints = pair
        locked = self.lock_exclusion(a, b)
        constraints += locked
        kind = "write-write" if x.writes and y.writes else "read-write"
        key = ("across", x.index, y.index)
        found = early = None
        if not locked and self.level.grid is not None and key not in self.known_proved:
            early = self._before_listing(x, y, constraints, f"{kind} across blocks", key)
            if isinstance(early, smt.Unsat):
                return  # proved (``solve`` recorded it)
            if not isinstance(early, smt.Sat):
                found = enumeration.compare(x, y, self.level.grid, self.concrete, self.enumerated_functions(),
                                            self._enumerated)
                if found is None:
                    self._list_with_given_contents(x, y, key)
        if found is True:
            self.result.proved.add(key)  # every tile of the case enumerated: no two blocks share one
            return
        result, constraints = self._pinned_first(found, a, b, constraints, f"{kind} across blocks",
                                                 (x.op.loc, y.op.loc))
        result = early if isinstance(early, smt.Sat) else result
        whole = result is None  # the constraints state the obligation, not one enumerated clash
        if not isinstance(result, smt.Sat) and self.level.grid is None and key not in self.known_proved \
                and (relaxed := grid_stride_relaxed(a, b, constraints)) is not None:
            first = self.solve(relaxed, f"{kind} across blocks", (x.op.loc, y.op.loc), key, tentative=True,
                               limit=self.rlimit // GRID_STRIDE_SHARE)
            if isinstance(first, smt.Unsat):
                return  # proved (``solve`` recorded it); a model of the weaker question proves nothing
            if isinstance(first, smt.Unknown) and self.early_tier:
                # the weaker question is the easier one: undecided, the whole one is left to the
                # last tier (TileGym's swizzled GEMMs: undecided at 0.5M at every tier before it)
                where = f"{x.op.loc.short()}, {y.op.loc.short()}"
                self.leave_open(f"{kind} across blocks ({where}): solver answered unknown ({first.reason})", key)
                if self.stop_early:
                    raise _Abort
                return
        if not isinstance(result, smt.Sat):
            limit = SEARCH_TIER_ACROSS_RLIMIT if self.early_tier else None
            if isinstance(found, enumeration.Clash):  # listed on one element: a proof is unlikely
                limit = min(limit or self.rlimit, CLASH_RLIMIT)
            result = self.solve(constraints, f"{kind} across blocks", (x.op.loc, y.op.loc), key, limit=limit)
        if isinstance(result, smt.Sat) and (sync := self.synchronising().ordering(x, y)) is not None:
            release, acquire = sync
            self.result.unknowns.append(
                f"{kind} across blocks ({x.op.loc.short()}, {y.op.loc.short()}): the two blocks may be "
                f"ordered by release/acquire synchronisation ({release.op.name} at {release.op.loc.short()} "
                f"-> {acquire.op.name} at {acquire.op.loc.short()}), which the static check does not "
                "decide; tilecheck.detect decides it at a launch")
            if self.stop_early:
                raise _Abort
            return
        if isinstance(result, smt.Sat):
            writer, other = (a, b) if x.writes else (b, a)
            message = (f"two blocks {'write' if kind == 'write-write' else 'write and read'} the same "
                       f"element of '{self.names.get(x.array, x.array)}' with no ordering between blocks")
            self.add(kind, message, writer, other, result, constraints, key if whole else None)

    def _list_with_given_contents(self, x: Access, y: Access, key: tuple[Any, ...]) -> None:
        """Where the launch's data follows this level (a confirmer, no pins), a pair enumeration
        could not list without contents may be listed with the small arrays at their given
        contents: when no two blocks share a tile, the obligation holds pinned. Offered to its pinned
        query (``given_case.pinned``), which lists it where the solver does not decide it soon."""
        if self.pin_given or not self._given_memory or key in self.result.proved_pinned:
            return
        self.given_listings[key] = lambda: enumeration.compare(
            x, y, self.level.grid, self.concrete, self.enumerated_functions(given=True),
            self.enumerated(given=True))

    def _before_listing(self, x: Access, y: Access, constraints: list[smt.BoolExpr], what: str,
                        key: tuple[Any, ...]) -> smt.Result | None:
        """A question enumeration would decide by listing at least ``LARGE_LISTING`` lanes, asked
        first as a tentative query, when its bit-vector arithmetic becomes integer arithmetic with
        the level's values (``bits``): TileBench's largest bitonic step lists 2^24 lanes per access,
        5 s, where the solver proves its partners ``i ^ 1`` apart in milliseconds. None: not asked
        (its unknown: enumeration decides as before)."""
        if not self.fp.bitwise or not enumeration.large_listing(x, y, self.level.grid, LARGE_LISTING):
            return None
        if smt.bitwise(self.in_integers(smt.And(*constraints))):
            return None
        return self.solve(constraints, what, (x.op.loc, y.op.loc), key, tentative=True)

    def _pinned_first(self, found: Any, a: Instance, b: Instance, constraints: list[smt.BoolExpr], what: str,
                      locs: tuple[Loc, ...]) -> tuple[smt.Result | None, list[smt.BoolExpr]]:
        """With an enumerated ``Clash``, the query asked about its two instances first (a small,
        tentative question: a mask the enumeration took as true can make it unsatisfiable). Its
        model, and the constraints the witness is then made canonical under; else None."""
        if not isinstance(found, enumeration.Clash):
            return None, constraints
        pins = [*pinned(a, found.x), *pinned(b, found.y)]
        result = self.solve([*constraints, *pins], what, locs, tentative=True, limit=min(self.rlimit, CLASH_RLIMIT))
        return (result, [*constraints, *pins]) if isinstance(result, smt.Sat) else (None, constraints)

    def synchronising(self) -> Synchronising:
        if self._sync is None:
            self._sync = Synchronising.of(self.fp, self.locks)
        return self._sync

    def all_in_bounds(self) -> None:
        """The bounds obligations asked as one disjunction first (a kernel has one per access, and
        usually all hold): proved together when it has no model; otherwise ``bounds`` asks each,
        for its witness."""
        pending = [x for x in self.fp.accesses if not x.checks_bounds and x.coords is not None
                   and ("bounds", x.index) not in self.known_proved]
        if len(pending) < 2:
            return
        outside = {}
        for x in pending:
            a = instantiate(x, "b1")
            outside[("bounds", x.index)] = smt.And(a.active, smt.Not(a.in_bounds))
        self.none_holds(outside, "bounds", tuple(x.op.loc for x in pending))

    def none_holds(self, claims: dict[tuple[Any, ...], smt.BoolExpr], what: str,
                   locs: tuple[Loc, ...], given: list[smt.BoolExpr] = ()) -> bool:
        """Several obligations at once, one claim each (a violation, over block ``b1``), asked as one
        tentative disjunction (``given``: what is known of the given contents): when it has no
        model, every one is proved (True); otherwise the caller asks each on its own."""
        result = self.solve([*self.base(("b1",)), smt.Or(*claims.values()), *given], what, locs, tentative=True)
        if not isinstance(result, smt.Unsat):
            return False
        self.result.prove(claims)
        return True

    def bounds(self, x: Access) -> None:
        a = instantiate(x, "b1")
        if a.coords is None:
            self.result.unknowns.append(
                f"{x.op.name} ({x.op.loc.short()}): the pointer offset does not decompose into array "
                "coordinates, bounds not checked")
            return
        constraints = [*self.base(("b1",)), a.active, smt.Not(a.in_bounds)]
        result = self.solve(constraints, "bounds", (x.op.loc,), ("bounds", x.index))
        if isinstance(result, smt.Sat):
            self.add("out-of-bounds", f"{x.op.name} may touch an element outside "
                     f"'{self.names.get(x.array)}' and no mask excludes it", a, None, result, constraints)

    # ---- witnesses -----------------------------------------------------------------------------
    def add(self, kind: str, message: str, a: Instance, b: Instance | None, sat: smt.Sat,
            constraints: list[smt.BoolExpr], obligation: tuple[Any, ...] | None = None) -> None:
        """Record the defect ``sat`` witnesses (confirmed, made canonical, in the given contents
        where it can be: ``with_given_contents``, told the ``obligation`` the constraints state)."""
        key = (kind, a.access.index, b.access.index if b else None)
        if key in self.seen:
            return
        self.seen.add(key)
        self.result.reads_data |= self._read_memory  # the last query (this one's) read contents
        if self.witnesses:  # a canonical witness: smallest blocks, then iterations, then lanes
            confirmed = self.confirmed(kind, a, b, sat, constraints)
            if confirmed is None:
                return
            sat = confirmed
        related = (b.access.op.loc,) if b is not None else ()
        witness = self.witness(a, b, sat)
        if self.given_contents is not None:
            needed = self.given_contents(self.contents(sat, constraints))
            if needed and self.witnesses:  # a witness in the given contents is a defect of this launch
                given = self.with_given_contents(a, b, constraints, obligation)
                if given is not None:
                    witness, needed = self.witness(a, b, given), {}
            if needed:
                witness = dataclasses.replace(witness, contents=needed)
        self.result.findings.append(Finding(kind, message, a.access.op.loc, related, witness,
                                            self.level.number))
        if self.stop_early and kind != "order-dependent-atomic":
            raise _Abort


def _strong(x: Access) -> bool:
    """A strong access whose scope spans blocks (device or system): an atomic, or a load/store
    with a memory order other than weak. Two of them on one element are "morally strong": not a
    data race (Tile IR memory model)."""
    return (x.is_atomic or x.ordering != "weak") and x.op.attrs.get("memory_scope") in CROSS_BLOCK_SCOPES
