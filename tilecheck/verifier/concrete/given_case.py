"""Obligations only a concrete case can discharge (DESIGN §4, trust rules).

- The kernel's own assumptions (assume ops) hold for the given arguments: otherwise every query is
  unsatisfiable and a proof would be vacuous.
- Index arithmetic does not wrap around. The model computes integers without overflow (Tile IR
  integers wrap); at the given case that assumption is checked. Arithmetic on values read from
  arrays is checked against the given contents: the query is first asked with each array's values
  bounded by the given array's least and greatest element, and a model that needs other values is
  refined with the given values at the coordinates it read (a bounded number of rounds).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from tilecheck.ir.summary import decision_slice
from tilecheck.report import Finding, contents_items
from tilecheck.verifier.concrete import enumeration
from tilecheck.verifier.contracts import launch_check
from tilecheck.verifier.contracts import shapes as shape_contract
from tilecheck.verifier.model.engine import data_shape
from tilecheck.verifier.model.footprints import BLOCK_IDS, block_vars, rename_blocks
from tilecheck.verifier.solver import smt


class Checker(Protocol):
    """What the given case's questions use of the checker they work for (``obligations.checker.Checker``,
    whose concrete-case half this module is): its model, level and result, its confirmation channel, and
    the solver and content questions it asks. Named here, so that this room needs nothing above it."""

    fp: Any
    level: Any
    result: Any
    confirmer: Any
    names: dict[int, str]
    memo: dict[str, Any]
    concrete: Any
    rlimit: int
    pin_given: bool
    pinned_allowance: Any
    pinned_may_prove: Any
    given_listings: Any
    known_proved: Any

    def solve(self, *args: Any, **kwargs: Any) -> Any: ...
    def base(self, *args: Any, **kwargs: Any) -> Any: ...
    def bitwise_limit(self, *args: Any, **kwargs: Any) -> Any: ...
    def carried_facts(self, *args: Any, **kwargs: Any) -> Any: ...
    def contents(self, *args: Any, **kwargs: Any) -> Any: ...
    def enumerated(self, *args: Any, **kwargs: Any) -> Any: ...
    def enumerated_functions(self, *args: Any, **kwargs: Any) -> Any: ...
    def given_pins(self, *args: Any, **kwargs: Any) -> Any: ...
    def never_wraps(self, *args: Any, **kwargs: Any) -> Any: ...
    def none_holds(self, *args: Any, **kwargs: Any) -> Any: ...

# rounds of pinning model contents to the given ones before the overflow query answers unknown
PIN_ROUNDS = 16
# arrays up to this many elements are pinned whole at once (a Z3 array of their contents)
FULL_PIN_ELEMENTS = 256
# terms one model's evaluation may evaluate (loop-carried values iteration by iteration included)
EVALUATION_STEPS = 20_000


def check_assumptions(ch: Checker) -> bool:
    """No vacuous proofs: the kernel's own assumptions (cuTile's assume ops: strides >= 0,
    divisibility, bounds) must be satisfiable at this level. At a concrete case each one the
    arguments violate is an ``assumption-violated`` finding naming it; at a symbolic level the
    level is unknown. False when they cannot all hold."""
    fp = ch.fp
    if not fp.facts or _hold_at_case(ch):
        return True
    result = ch.solve(ch.base(("b1",)), "the kernel's assumptions", ())
    if not isinstance(result, smt.Unsat):
        return True
    if ch.level.shapes is None:
        ch.result.unknowns.append("the kernel's own assumptions (assume ops) cannot all hold at this level")
        return False
    plain = ch.base(("b1",), facts=False)
    symbols = symbol_names(ch)
    for fact, op in zip(fp.facts, fp.fact_ops or [None] * len(fp.facts)):
        if op is None or not isinstance(ch.solve([*plain, rename_blocks(fact, "b1")], "an assumption",
                                                 (op.loc,)), smt.Unsat):
            continue
        values = concrete_values(ch)
        named = sorted(symbols[n] for n in smt.free_constants(fact) if n in symbols)
        given = ", ".join(f"{symbols[n]} = {values[n]}" for n in sorted(smt.free_constants(fact))
                          if n in symbols and n in values)
        ch.result.findings.append(Finding(
            "assumption-violated", f"the given arguments break the kernel's assumption "
            f"`{smt.simplify(fact)}` ({given or ', '.join(named) or 'no argument named'}): a proof "
            "under it would be vacuous", op.loc, (), None, ch.level.number))
    if not any(f.kind == "assumption-violated" for f in ch.result.findings):
        ch.result.unknowns.append("the kernel's own assumptions (assume ops) cannot all hold for the "
                                  "given case")
    return False


def _hold_at_case(ch: Checker) -> bool:
    """At a case with its grid, shapes and strides given, every assume fact names only launch symbols
    and holds at their values: plain arithmetic answers the question (the case is a model of the
    level's base), no query. (Three data-step runs at the given case asked it again each.)"""
    level = ch.level
    if level.grid is None or level.shapes is None or level.strides is None:
        return False
    trees = ch.memo.get("fact_trees", False)
    if trees is False:
        trees = ch.memo["fact_trees"] = shape_contract.fact_trees(ch.fp)
    if trees is None:
        return False
    values = {smt.term_id(sym): smt.const_value(v) for sym, v in ch.concrete}  # the level's fixed values
    env = {name: values[key] for name, sym in shape_contract.symbols(ch.fp).items()
           if (key := smt.term_id(sym)) in values}
    return all(launch_check.evaluate(t, env) is True for t in trees)


def check_assumptions_last(ch: Checker) -> None:
    """``check_assumptions`` after a level's obligations found no model: when the assumptions cannot
    hold, its proofs are vacuous and are dropped (the level is then unknown)."""
    if ch.result.races or any(f.kind == "overflow" for f in ch.result.findings) or check_assumptions(ch):
        return
    ch.result.proved.clear()
    ch.result.cores.clear()


def check_overflow(ch: Checker) -> None:
    """At the given case (shapes and grid concrete): an address computation that leaves its integer
    type's range is an ``overflow`` finding with a witness, and the model does not hold. Arithmetic
    on array contents is checked against the given contents; where it also reads a value the model
    does not track, or an array whose contents are not given, an overflow the model allows is
    ``unknown`` with that reason."""
    if ch.level.shapes is None or ch.level.grid is None and ch.level.grid_max is None:
        return
    feeding = decision_slice(ch.fp.function)
    pending = [n for n, (op, *_) in enumerate(ch.fp.overflows)
               if op in feeding and ("overflow", n) not in ch.known_proved]
    ch.result.proved |= {("overflow", n) for n, (op, *_) in enumerate(ch.fp.overflows)
                         if op in feeding and n not in pending}  # cannot wrap under fewer constraints
    bounded = set()  # proved by interval arithmetic (``Checker.never_wraps``) or enumeration: not asked
    pins: dict[int, list[smt.BoolExpr]] = {}  # an instance enumeration found wrapping: its witness's
    for n in pending:
        op, term, lo, hi, live = ch.fp.overflows[n]
        if ch.never_wraps(rename_blocks(term, "b1"), lo, hi, rename_blocks(live, "b1")):
            bounded.add(n)
        elif ch.level.grid is not None and not smt.reads_data(term):
            found = _listed(ch, n, given=False)
            if found is True:
                bounded.add(n)
            elif found is not None:
                pins[n] = _pinned(found)
    ch.result.proved |= {("overflow", n) for n in bounded}
    asked = _wrapping_on_contents(ch, _wrapping(ch, [n for n in pending if n not in bounded and n not in pins]))
    # on contents, left by their disjunction: listed with the given contents, what each one's own
    # question asks with them pinned (TileGym's ragged block-scaled BMM: 16 claims whose questions
    # took 1.2M units; the LPT prefills' thirty are proved by the disjunction in 30K, before any listing)
    listed = {n for n in asked if ch.level.grid is not None and smt.reads_data(ch.fp.overflows[n][1])
              and _listed(ch, n, given=True) is True}
    ch.result.proved |= {("overflow", n) for n in listed}
    asked = [n for n in asked if n not in listed]
    for n in sorted({*asked, *pins}):
        op, term, lo, hi, live = ch.fp.overflows[n]
        key = ("overflow", n)
        value_term = rename_blocks(term, "b1")
        claim = smt.And(rename_blocks(live, "b1"), smt.Or(value_term < lo, value_term > hi))
        constraints = [*ch.base(("b1",)), claim]
        contract = ch.level.grid is None  # a contract's box: the smallest block that wraps, per op
        if contract and smt.reads_data(term):
            continue  # not checked for a box (docs/semantics/levels-and-contracts.md, "Grid contracts")
        if n in pins:  # the instance enumeration found: its model, the least block among those pinned
            result = ch.solve([*constraints, *pins[n]], "integer overflow", (op.loc,), tentative=True,
                              limit=ch.rlimit)
            if isinstance(result, smt.Sat):
                constraints = [*constraints, *pins[n]]
        if n in pins and isinstance(result, smt.Sat):
            value = result.eval(value_term)
        elif not smt.reads_data(term):
            result = ch.solve(constraints, "integer overflow", (op.loc,))
            if isinstance(result, smt.Sat):  # the least block that wraps: a canonical witness
                result = smt.minimize(constraints, list(block_vars("b1")), result)
            value = result.eval(value_term) if isinstance(result, smt.Sat) else None
        else:
            limit = PINNED_OVERFLOW_RLIMIT if ch.pin_given else None
            result, _, undecided, _ = solve_with_given_contents(
                ch, constraints, claim,
                lambda cs, loc=op.loc, key=key: ch.solve(cs, "integer overflow", (loc,), key, limit=limit))
            value = evaluate(ch, value_term, result) if isinstance(result, smt.Sat) else None
            if undecided is not None:
                where = op.loc.short() if op.loc.is_known() else op.name
                ch.result.unknowns.append(f"integer overflow ({where}): index arithmetic on values read "
                                          f"from memory may wrap around, and the given case cannot decide "
                                          f"it: {undecided}")
        if not isinstance(result, smt.Sat):
            if isinstance(result, smt.Unsat) and (not smt.reads_data(term) or undecided is None):
                ch.result.proved.add(key)
            continue
        where = tuple(result.eval(b) for b in block_vars("b1"))
        ch.result.overflow_blocks.append(where)
        read = describe_contents(ch, ch.contents(result, constraints))
        ch.result.findings.append(Finding(
            "overflow", f"{op.name} computes {value} in block {where}{read}, outside the "
            f"{op.results[0].type} range [{lo}, {hi}]: it wraps around, and what is accessed "
            "depends on it (an address, a mask, a branch or a loop bound)", op.loc, (), None, ch.level.number))


def _listed(ch: Checker, n: int, given: bool) -> bool | dict[str, int] | None:
    """Overflow obligation ``n`` evaluated at every block, iteration and lane of the given case
    (``enumeration.overflow``), ``given``: with the given contents of the small arrays."""
    op, term, lo, hi, live = ch.fp.overflows[n]
    return enumeration.overflow(term, lo, hi, live, ch.fp.overflow_loops[n], data_shape(op), ch.level.grid,
                                ch.concrete, ch.enumerated_functions(given=given),
                                ch.enumerated(given=given).setdefault("dags", {}))


def _pinned(values: dict[str, int]) -> list[smt.BoolExpr]:
    """An enumerated instance's values (by variable name: block ids, loop variables, lanes) as
    constraints on block 'b1''s query."""
    names = dict(zip((b.decl().name() for b in BLOCK_IDS), block_vars("b1")))
    return [(names[name] if name in names else smt.Int(name)) == value for name, value in values.items()]


def _wrapping(ch: Checker, pending: list[int]) -> list[int]:
    """``pending`` less the overflow obligations one query proves together: those on arithmetic
    that reads no array contents, asked as one disjunction (a kernel has tens of them, and at a
    given case none usually wraps: one query instead of one each). When that one has a model,
    each is asked on its own, for its witness."""
    plain = [n for n in pending if not smt.reads_data(ch.fp.overflows[n][1])]
    if len(plain) < 2:
        return pending
    claims = _claims(ch, plain)
    if not ch.none_holds(claims, "integer overflow", tuple(ch.fp.overflows[n][0].loc for n in plain)):
        return pending
    return [n for n in pending if n not in plain]


def _claims(ch: Checker, overflows: list[int]) -> dict[tuple[str, int], smt.BoolExpr]:
    """Each overflow obligation's claim over block 'b1' (its value leaves its type's range where
    it is computed), by obligation key."""
    claims = {}
    for n in overflows:
        _, term, lo, hi, live = ch.fp.overflows[n]
        value = rename_blocks(term, "b1")
        claims[("overflow", n)] = smt.And(rename_blocks(live, "b1"), smt.Or(value < lo, value > hi))
    return claims


def given_pins_and_reads(ch: Checker, formula: smt.BoolExpr) -> tuple[list[smt.BoolExpr], dict[int, list[smt.IntExpr]]]:
    """What ``formula`` knows of the given contents to start with: every read of a small array
    held at its given element, every read of a larger one within its given range; and the reads
    of those larger arrays, by array (their elements are pinned one model at a time)."""
    by_name = smt.applications_by_name(smt.And(formula, *ch.carried_facts(formula)))  # reads in loops too
    reads = {index: by_name.get(func.name(), []) for index, func in ch.fp.memory.items()}
    pins: list[smt.BoolExpr] = []
    for index, found in list(reads.items()):
        name = ch.names.get(index, "")
        values = ch.confirmer.contents(name) if found and ch.confirmer else None
        if values is not None and values.size <= FULL_PIN_ELEMENTS:  # small: every read is its given value
            pins += full_pins(found, values)
            del reads[index]
            continue
        bounds = ch.confirmer.value_range(name) if found and ch.confirmer else None
        if bounds is not None:
            pins += [smt.And(app >= bounds[0], app <= bounds[1]) for app in found]
    return pins, reads


def _wrapping_on_contents(ch: Checker, pending: list[int]) -> list[int]:
    """``pending`` less the overflow obligations on array contents one query proves together at the
    given case, as ``_wrapping`` does for the others: one disjunction with the given contents'
    first pins (``given_pins_and_reads``, the facts each claim's own question starts from). No
    model: each wraps for no model of the given contents, as its own question would show (TileGym's
    LPT prefills: thirty such questions, each proved in 5K units). A model, or no answer: each is
    asked on its own, for its witness."""
    on_data = [n for n in pending if smt.reads_data(ch.fp.overflows[n][1])]
    if len(on_data) < 2 or ch.level.grid is None or ch.confirmer is None:
        return pending
    claims = _claims(ch, on_data)
    pins, _ = given_pins_and_reads(ch, smt.And(*ch.base(("b1",)), *claims.values()))
    if not ch.none_holds(claims, "integer overflow", tuple(ch.fp.overflows[n][0].loc for n in on_data), pins):
        return pending
    return [n for n in pending if n not in on_data]


def solve_with_given_contents(ch: Checker, constraints: list[smt.BoolExpr], claim: smt.BoolExpr,
                              solve: Callable[[list[smt.BoolExpr]], smt.Result]
                              ) -> tuple[smt.Result, list[smt.BoolExpr], str | None, bool]:
    """Decide ``constraints`` (whose ``claim`` part reads array contents) with the contents equal to
    the given arguments'. Each read lies in its array's given range; a model is then evaluated
    concretely (its blocks, lanes and iterations, the given contents): if ``claim`` holds there, the
    answer is that model; if not, the coordinates it read are pinned to their given values and
    ``solve`` asked again. Returns the answer, the pins it needed, why it is undecided (a claim
    that depends on an untracked value, or too many rounds), and whether every read was of a small
    array, held whole at its given contents: then the answer is the pinned question's (``pinned``)."""
    pins, reads = given_pins_and_reads(ch, smt.And(*constraints))
    whole = not any(reads.values())
    for _ in range(PIN_ROUNDS):
        result = solve([*constraints, *pins])
        if not isinstance(result, smt.Sat):
            return result, pins, None, whole
        holds = evaluate(ch, claim, result)
        if holds is True:
            return result, pins, None, whole
        pinned = pin(ch, reads, result) if holds is False else []
        if not pinned:
            return smt.Unknown("untracked value"), pins, (
                "it reads a value the model does not track (or an array whose contents are not given)"), whole
        pins += pinned
    return smt.Unknown("rounds"), pins, f"no answer with the given array contents after {PIN_ROUNDS} rounds", whole


# a given-case query about array contents, when the data step follows: first asked within this
# much, and past it only if the given contents do not settle it (TileGym: all but one such query proved
# took under 0.5M units; the two that ran to 2M ended unknown, 2.5 s, and held pinned in 0.3 s)
PROBE_RLIMIT = 500_000
# ... and once the level has left an obligation open (the data step will decide the launch anyway),
# a probe is only asked for a race other contents make (whose candidate preconditions the data
# contract tries): TileGym's such races were found within 0.1M units
PROBE_OPEN_RLIMIT = 100_000
# the budget of the data step's pinned run (``data_step.proved_pinned``): a query with the small index
# arrays held at their given contents
PINNED_RLIMIT = smt.DEFAULT_RLIMIT
# ... but for an overflow claim on contents, each of its rounds gets the level's budget for such a
# query (``data_step.DATA_STEP_RLIMIT``): past 2M units, Z3 5.4's Diophantine solver spent 580 s on 17.7M
# units of one round of TileGym's 128-expert grouped GEMM (multiplying big numbers it does not charge
# to the work limit), and that test ran for 10 minutes; within 2M the round ended in 1 s
PINNED_OVERFLOW_RLIMIT = 2_000_000


def probed(ch: Checker, formula: smt.BoolExpr, extra: list[smt.BoolExpr], rlimit: int,
           key: tuple[Any, ...] | None = None) -> smt.Result | None:
    """A query about array contents at the given case, with the launch's data step to follow: asked
    within ``PROBE_RLIMIT`` first; undecided there, asked with the small arrays it reads held at
    their given contents (``pinned``, within ``rlimit``), and when that proves it, left unknown (the
    data step proves it on those contents; the query itself, for any contents, would rarely be
    decided in the rest of its budget). None: ask it with the whole budget.

    (Asking only the pinned question once the level had left an obligation open cut the LPT
    prefills' work by two thirds, but it stopped the level from finding the races that need other
    contents, whose candidate preconditions are what proves TileGym's 16-expert grouped GEMM: its
    test then ran the exact detector per configuration, 33 s -> 154 s. Not done.)"""
    if rlimit <= PROBE_RLIMIT or ch.confirmer is None:
        return None
    probe = PROBE_OPEN_RLIMIT if ch.result.unknowns else PROBE_RLIMIT
    first = smt.check([formula, *extra], probe, ch.level.tracked)
    if not isinstance(first, smt.Unknown):
        return first
    answer = pinned(ch, [formula, *extra], key, rlimit)
    if not isinstance(answer, smt.Unsat):
        return None
    return smt.Unknown(f"undecided for other contents within {probe} units; it holds for the "
                       "given ones")

# a pinned question enumeration can decide too, by listing the pair's tiles at the given contents
# (``Checker.given_listings``), is asked of the solver within this first and listed only when
# undecided there: TileGym's 16-expert grouped GEMM's scatter is proved pinned in 0.1M units and
# listed in 0.26 s; its ragged block-scaled BMM's store took 4.3M units (1 s), listed in 0.2 s
LISTED_AFTER_RLIMIT = 500_000


def pinned(ch: Checker, terms: list[smt.BoolExpr], key: tuple[Any, ...] | None, rlimit: int) -> smt.Result | None:
    """``terms`` asked with the small arrays they read held at their given contents (None: they
    read none). A proof is recorded for the data step's pinned run (``LevelResult.proved_pinned``:
    not asked again).

    An obligation's pinned question is the one the pinned run would ask within ``PINNED_RLIMIT``: it
    may take that budget now, from an allowance of one such budget past the queries' own for the
    whole level (the ragged block-scaled BMM's write-write question proves in 3.2M units here instead
    of failing at 2M, failing again for any contents, and proving in the pinned run), while every
    obligation the level left open so far holds pinned (``Checker.pinned_may_prove``: else the pinned
    run, which ends at the first one it cannot prove, may never ask this one). Run out of that
    budget, the pinned run still asks it: there its pins are among the level's facts, and Z3 may
    answer otherwise (TileGym's 16-expert grouped GEMM: unknown at 20M here, proved there; skipping
    that run sent each autotune configuration to the detector, 32 s -> 194 s). An overflow claim keeps
    its query's budget: a 128-expert grouped GEMM asks its claims pinned round after round, and at
    20M units each its test ran past ten minutes."""
    pins = ch.given_pins(terms)
    if not pins:
        return None
    if key is not None and key in ch.result.proved_pinned:
        return smt.Unsat(frozenset())  # proved so before
    budget = rlimit
    if key is not None and key[0] != "overflow" and ch.pinned_may_prove:
        budget = max(rlimit, min(PINNED_RLIMIT, rlimit + ch.pinned_allowance))
    before = smt.work_spent()
    asked, limit = [*terms, *pins], ch.bitwise_limit(smt.And(*terms), budget)
    answer = None
    if (listing := ch.given_listings.pop(key, None)) is not None and limit > LISTED_AFTER_RLIMIT:
        answer = smt.check(asked, LISTED_AFTER_RLIMIT, ch.level.tracked)
        if isinstance(answer, smt.Unknown):
            found = listing()
            # two blocks the listing finds on one element with the given contents: the pinned
            # question has that model (or one a mask it took as true rules out), so its whole
            # budget would be spent on a proof that does not exist (16 experts: 20M units, 5 s)
            answer = smt.Unsat(frozenset()) if found is True else \
                smt.Unknown("two blocks share an element with the given contents (listed)") if found else None
    if answer is None:
        answer = smt.check(asked, limit, ch.level.tracked)
    spent = budget if before is None else (smt.work_spent() or 0) - before  # no account: all of it
    ch.pinned_allowance -= max(0, spent - rlimit)
    if isinstance(answer, smt.Unsat) and key is not None:
        ch.result.proved_pinned.add(key)
    return answer


def full_pins(reads: list[smt.IntExpr], values: Any) -> list[smt.BoolExpr]:
    """Each in-bounds read of a small array equals the given element at its coordinates (a Z3 array
    holding the contents, indexed by the row-major position)."""
    table = smt.K(smt.IntSort(), smt.IntVal(0))
    for i, v in enumerate(values.reshape(-1).tolist()):
        table = smt.Store(table, i, int(v))
    out = []
    for app in reads:
        coords = app.children()
        if len(coords) != values.ndim:
            continue
        inside = smt.And(*(smt.And(c >= 0, c < n) for c, n in zip(coords, values.shape)))
        position = smt.IntVal(0)  # row-major, as reshape(-1) laid the table out
        for c, n in zip(coords, values.shape):
            position = position * n + c
        out.append(smt.Implies(inside, app == smt.Select(table, position)))
    return out


def pin(ch: Checker, reads: dict[int, list[smt.IntExpr]], sat: smt.Sat) -> list[smt.BoolExpr]:
    """Constraints giving the elements ``sat`` read, where its values differ from the given ones,
    their given values (for every read of the same array)."""
    out: list[smt.BoolExpr] = []
    for index, found in reads.items():
        name = ch.names.get(index, "")
        for app in found:
            coords = tuple(sat.eval(c) for c in app.children())
            given = ch.confirmer.value(name, coords) if ch.confirmer else None
            if given is None or sat.eval(app) == given:
                continue
            out += [smt.Implies(smt.And(*(c == v for c, v in zip(other.children(), coords))), other == given)
                    for other in found]
    return out


class Evaluation:
    """One model's concrete values (``evaluate``): the loop-carried values computed so far, per
    carried function and arguments, so that loops whose carried values read one another (an
    expert walk carrying its offset, its tile count and its match) are computed once per iteration,
    not again from the first iteration for every read; and the terms evaluated, bounded by
    ``EVALUATION_STEPS`` (deterministic work, not time: past it a value is untracked)."""

    def __init__(self) -> None:
        self.carried: dict[str, dict[tuple[int, ...], Any]] = {}
        self.steps = 0


def evaluate(ch: Checker, term: smt.Expr, sat: smt.Sat, memo: Evaluation | None = None) -> Any:
    """``term`` at the model's blocks, lanes, iterations and symbols, with the given array contents
    (reads of reads resolved in turn): a Python int or bool, or None where it still depends on a
    value the model does not track, on contents that are not given, or past the work bound."""
    memo = Evaluation() if memo is None else memo
    memo.steps += 1
    if memo.steps > EVALUATION_STEPS:
        return None
    values = [(c, sat.eval(c)) for c in smt.constants(term)]
    concrete = smt.substituted(term, [(c, smt.value_of(v)) for c, v in values if isinstance(v, (bool, int))])
    arrays = {func.name(): ch.names.get(index, "") for index, func in ch.fp.memory.items()}
    for _ in range(8):  # a read whose index is itself read, and so on
        pairs = []
        for app in smt.uninterpreted_applications(concrete):
            coords = tuple(smt.literal(c) for c in app.children())
            if any(not isinstance(c, int) or isinstance(c, bool) for c in coords):
                continue
            func = app.decl().name()
            name = arrays.get(func)
            given = None
            if name is not None:
                given = ch.confirmer.value(name, coords) if ch.confirmer else None
            elif (loop := ch.fp.carried.get(func)) is not None:  # a loop-carried value, computed
                known = memo.carried.setdefault(func, {})
                if coords not in known:
                    known[coords] = loop.value(coords, lambda t: evaluate(ch, t, sat, memo), known)
                given = known[coords]
            if given is not None:
                pairs.append((app, smt.value_of(given)))
        if not pairs:
            break
        concrete = smt.substituted(concrete, pairs)
    return smt.literal(concrete)


def describe_contents(ch: Checker, contents: dict[str, dict[tuple[int, ...], int]]) -> str:
    """`` reading idx[1] = 1073741824``: the array elements a witness read, with their given values."""
    def given(name: str, coords: tuple[int, ...], value: int) -> int:
        found = ch.confirmer.value(name, coords) if ch.confirmer else None
        return value if found is None else found

    items = contents_items({name: {c: given(name, c, v) for c, v in values.items()}
                            for name, values in sorted(contents.items())})
    return f" reading {', '.join(items[:4])}{' ...' if len(items) > 4 else ''}" if items else ""


def symbol_names(ch: Checker) -> dict[str, str]:
    """Names of the shape, stride and scalar symbols, as a user would write them."""
    out = {}
    for info in ch.fp.arrays.values():
        out.update({str(sym): f"{info.name}.shape[{d}]" for d, sym in enumerate(info.shape)})
        out.update({str(sym): f"{info.name}.strides[{d}]" for d, sym in enumerate(info.strides)})
    out.update({str(sym): ch.fp.scalar_name(i) for i, sym in ch.fp.scalars.items()})
    return out


def concrete_values(ch: Checker) -> dict[str, int]:
    out: dict[str, int] = {}
    level = ch.level
    for info in ch.fp.arrays.values():
        if level.shapes is not None and info.name in level.shapes:
            out.update({str(s): v for s, v in zip(info.shape, level.shapes[info.name])})
        if level.strides is not None and info.name in level.strides:
            out.update({str(s): v for s, v in zip(info.strides, level.strides[info.name])})
    if level.scalars is not None:
        out.update({str(ch.fp.scalars[i]): v for i, v in level.scalars.items() if i in ch.fp.scalars})
    return out
