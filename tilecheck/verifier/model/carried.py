"""Loop-carried scalars, iteration by iteration.

Symbolic execution walks a loop body once, for a symbolic iteration ``v``. A scalar the loop
carries that has no closed form (``start += size[g]``, a flag, a ``while`` loop's cursor) is an
uninterpreted function ``x(outer..., v)`` of the block, the enclosing iterations and ``v``; the
engine records the facts that define it (a ``Carried``):

    x(outer, first) == init                        (once per instance of the loop)
    proceeds(v)  ->  x(outer, v + step) == next(v) (at every iteration v)

where ``next`` is the value the iteration's ``continue`` passes on (the first ``continue`` taken,
when there are several) and ``proceeds`` says that one is taken. A ``while`` loop's result is
``exit(outer)``'s break value, with ``exit >= 0``, the loop breaking there and proceeding before.

Every fact holds in every execution, so adding any of them is sound; leaving them out is the
over-approximation of before (a carried value is any value). A query gets them for the function
applications it mentions, unrolled for up to ``MAX_ITERATIONS`` iterations per loop instance at a
level with concrete shapes (``facts``): a prefix sum over a launch's offsets becomes the sums of the
given contents. Past the cap the value stays unconstrained, which can only cost a verdict
(``unknown`` after unconfirmed witnesses), never make one wrong.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tilecheck.verifier.solver import smt

# iterations unrolled per loop instance in one query, and facts added to one query in all
MAX_ITERATIONS = 64
MAX_FACTS = 4096
# iterations a concrete evaluation follows per loop instance (``Carried.value``, ``rows.Evaluator``):
# values computed one iteration after another, not facts the solver must reason through, so the
# cap is the work's, not the solver's (TileGym's grouped GEMM walks 128 experts per tile; past 64
# its offsets were untracked and four launches unknown)
EVALUATED_ITERATIONS = 4096

Pairs = Sequence[tuple[smt.Expr, smt.Expr]]  # substitutions: (symbol, value)


@dataclass(frozen=True)
class Carried:
    """A function the engine defines by facts, over the template context ``outer`` (block ids and
    enclosing loop variables) and the loop's variable ``var``, whose iterations are ``first, first +
    step, ...`` below ``bound`` (None: no bound is known). Either a carried value
    ``func(*outer, v)`` (``init`` and ``following`` given), or a ``loop``'s exit iteration
    ``func(*outer)`` (``broke`` and ``reached`` given). ``proceeds``: the iteration ends in a
    continue."""

    func: smt.FuncDecl
    outer: tuple[smt.IntExpr, ...]
    var: smt.IntExpr
    first: smt.IntExpr
    step: smt.IntExpr
    bound: smt.IntExpr | None
    proceeds: smt.BoolExpr
    init: smt.Expr | None = None
    following: smt.Expr | None = None
    broke: smt.BoolExpr | None = None
    reached: smt.BoolExpr | None = None

    @property
    def once(self) -> tuple[smt.BoolExpr, ...]:
        """The facts over ``outer``, once per instance of the loop."""
        if self.init is not None:
            return (self.func(*self.outer, self.first) == self.init,)
        at = self.func(*self.outer)
        return (smt.Implies(self.reached, smt.And(at >= 0, smt.substitute(self.broke, (self.var, at)))),)

    @property
    def each(self) -> tuple[smt.BoolExpr, ...]:
        """The facts over ``outer`` and ``var``, at every iteration."""
        if self.init is not None:
            following = self.func(*self.outer, self.var + self.step) == self.following
            return (smt.Implies(self.proceeds, following),)
        return (smt.Implies(smt.And(self.reached, self.var < self.func(*self.outer)), self.proceeds),)

    def unrolled(self, ctx: Sequence[smt.Expr], concrete: Pairs, budget: int,
                 corners: Sequence[Pairs] = ()) -> list[smt.BoolExpr]:
        """The facts for one instance of the loop (its context ``ctx``), over at most ``budget``
        facts: as many iterations as the trip count allows (computed with the level's
        ``concrete`` values where they fix it), at most ``MAX_ITERATIONS``."""
        pairs = list(zip(self.outer, ctx))
        first = smt.substituted(self.first, pairs)
        step = smt.substituted(self.step, pairs)
        out = [smt.substitute(f, *pairs) for f in self.once][:budget]
        each = self.each
        iterations = min(MAX_ITERATIONS, _trips(first, step, self.bound, pairs, concrete, corners),
                         (budget - len(out)) // len(each))
        v = first
        for _ in range(iterations):
            out += [smt.substituted(f, [*pairs, (self.var, v)]) for f in each]
            v = smt.substituted(v + step, [])
        return out

    def value(self, args: Sequence[int], evaluate: Callable[[smt.Expr], Any],
              known: dict[tuple[int, ...], Any] | None = None) -> int | bool | None:
        """The function's value at concrete ``args``, computed iteration by iteration with
        ``evaluate`` (a term with no template variables left -> its value, or None): None where an
        iteration's outcome is not known or past ``EVALUATED_ITERATIONS``. ``known``: the function's
        values computed before (arguments -> value), taken instead of recomputed, and given each
        iteration's value computed here."""
        known = {} if known is None else known
        ctx = [smt.IntVal(a) for a in args[:len(self.outer)]]
        pairs = list(zip(self.outer, ctx))

        def at(term: smt.Expr, v: int, this: tuple[smt.Expr, Any] | None = None) -> Any:
            term = smt.substitute(term, *pairs, (self.var, smt.IntVal(v)))
            if this is not None:  # the function's own value at iteration v
                term = smt.substitute(term, (this[0], smt.value_of(this[1])))
            return evaluate(term)

        first = evaluate(smt.substitute(self.first, *pairs))
        step = evaluate(smt.substitute(self.step, *pairs))
        if not isinstance(first, int) or not isinstance(step, int) or step <= 0:
            return None
        if self.init is None:  # the exit iteration: the first that breaks
            if evaluate(smt.substitute(self.reached, *pairs)) is not True:
                return None
            for j in range(EVALUATED_ITERATIONS):
                if at(self.broke, j) is True:
                    return j
                if at(self.proceeds, j) is not True:
                    return None
            return None
        target = args[len(self.outer)]
        prefix = tuple(args[:len(self.outer)])
        x, v = known.get((*prefix, first)), first
        if x is None:
            x = evaluate(smt.substitute(self.init, *pairs))
        for _ in range(EVALUATED_ITERATIONS):
            if x is None or v == target:
                return x if v == target else None
            if v > target:
                return None
            known[(*prefix, v)] = x
            if (*prefix, v + step) in known:  # this iteration computed before (it proceeded then)
                x, v = known[(*prefix, v + step)], v + step
                continue
            this = (self.func(*ctx, smt.IntVal(v)), x)
            if at(self.proceeds, v, this) is not True:
                return None
            x, v = at(self.following, v, this), v + step
        return None


def _trips(first: smt.IntExpr, step: smt.IntExpr, bound: smt.IntExpr | None, pairs: Pairs, concrete: Pairs,
           corners: Sequence[Pairs] = ()) -> int:
    """The loop's trip count where the level's values fix it, the largest over ``corners``
    (substitutions of what is left, e.g. the block ids at the grid's corners) where they do not;
    else the cap. Only precision rests on it: iterations past the real ones get facts guarded by
    ``proceeds`` (vacuous), and iterations left out keep any value."""
    if bound is None:
        return MAX_ITERATIONS
    fixed = list(concrete)
    lo, s = smt.substituted(first, fixed), smt.const_value(smt.substituted(step, fixed))
    hi = smt.substituted(smt.substitute(bound, *pairs) if pairs else bound, fixed)
    if s is None or s <= 0:
        return MAX_ITERATIONS
    counts = []
    for corner in ([()] if smt.const_value(hi) is not None and smt.const_value(lo) is not None else corners):
        a = smt.const_value(smt.substituted(lo, list(corner)))
        b = smt.const_value(smt.substituted(hi, list(corner)))
        if a is None or b is None:
            return MAX_ITERATIONS
        counts.append(max(0, -(-(b - a) // s)))
    return max(counts, default=MAX_ITERATIONS)


Key = tuple[str, tuple[int, ...]]


@dataclass
class Memo:
    """Per carried value and loop instance (``Key``): its context terms (kept alive for their ids),
    its unrolled facts and the carried values they mention; and per key, every key it leads to."""

    facts: dict[Key, tuple[list[smt.Expr], list[smt.BoolExpr], list[tuple[str, smt.Expr]]]] = \
        field(default_factory=dict)
    closures: dict[Key, list[Key]] = field(default_factory=dict)
    # per application's term id: the application (kept alive, so that its id names it) and its key
    keys: dict[int, tuple[smt.Expr, Key]] = field(default_factory=dict)


def facts(formula: smt.BoolExpr, carried: dict[str, Carried], concrete: Pairs,
          corners: Sequence[Pairs] = (), memo: Memo | None = None) -> list[smt.BoolExpr]:
    """The defining facts of every carried value ``formula`` mentions, and of those the facts
    mention in turn (a prefix sum read by another loop's bound), up to ``MAX_FACTS``. ``concrete``
    and ``corners``: see ``_trips``. ``memo`` keeps, per carried value and loop instance, its
    facts and those they lead to, for the queries of one level (which mention the same values
    again and again): the facts are true in every execution, so any of them may be given."""
    if not carried:
        return []
    memo = Memo() if memo is None else memo
    out: list[smt.BoolExpr] = []
    given: set[Key] = set()
    for name, app in _carried_apps([formula], carried):
        for key in _closure(_key(name, app, carried, concrete, corners, memo), carried, concrete, corners, memo):
            if key in given or len(out) >= MAX_FACTS:
                continue
            given.add(key)
            out += memo.facts[key][1][:MAX_FACTS - len(out)]
    return out


def _carried_apps(terms: list[smt.Expr], carried: dict[str, Carried]) -> list[tuple[str, smt.Expr]]:
    found = smt.new_applications(terms, names=carried.keys())
    return [(name, app) for name, apps in found.items() for app in apps]


def _key(name: str, app: smt.Expr, carried: dict[str, Carried], concrete: Pairs, corners: Sequence[Pairs],
         memo: Memo) -> Key:
    """The key of the carried value ``app`` (its facts unrolled into ``memo`` on first sight)."""
    known = memo.keys.get(smt.term_id(app))
    if known is not None:  # one application, met again (the facts of many lead to it)
        return known[1]
    c = carried[name]
    key = (name, smt.argument_ids(app, len(c.outer)))
    if key not in memo.facts:
        ctx = [app.arg(i) for i in range(len(c.outer))]
        unrolled = c.unrolled(ctx, concrete, MAX_FACTS, corners)
        memo.facts[key] = (ctx, unrolled, _carried_apps(unrolled, carried))
    memo.keys[smt.term_id(app)] = (app, key)
    return key


def _closure(key: Key, carried: dict[str, Carried], concrete: Pairs, corners: Sequence[Pairs],
             memo: Memo) -> list[Key]:
    """``key`` and every key its facts lead to, depth first, each once."""
    if key not in memo.closures:
        order: list[Key] = []
        seen = {key}
        todo = [key]
        while todo:
            k = todo.pop()
            order.append(k)
            for name, app in reversed(memo.facts[k][2]):
                inner = _key(name, app, carried, concrete, corners, memo)
                if inner not in seen:
                    seen.add(inner)
                    todo.append(inner)
        memo.closures[key] = order
    return memo.closures[key]
