"""Interval bounds of integer terms, for proofs that need no solver.

Most overflow obligations are far from their limits: a 64-bit address computed from the indices of
an array whose extent fits in 32 bits, a 32-bit tile index made of a block id and a constant. Z3
proves such a claim, but the products of symbolic strides and indices make it non-linear, and
those queries were the largest class of solver time on TileGym's kernels. An interval evaluation
proves them in microseconds: each variable's range is read off the constraints that hold (the
level's base: grid, shapes, index widths; the operation's liveness: lanes, loop domains), then the
term's range follows by interval arithmetic. It is sound and incomplete: a claim it cannot bound
goes to the solver as before. Only plain bounds (``x <= t``, ``x == t`` with ``x`` a variable) are
read; implications (a contract's candidate rules) are not, so a proof here never rests on a rule.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from tilecheck.verifier import smt

# stands for "unbounded": exact integers throughout, clamped so that products stay small
INF = 1 << 100
Box = dict[str, tuple[int, int]]

_FLIP = {"le": "ge", "lt": "gt", "ge": "le", "gt": "lt", "eq": "eq"}


def box_of(constraints: Iterable[smt.BoolExpr], start: Mapping[str, tuple[int, int]] | None = None,
           rounds: int = 3) -> Box:
    """The range of each variable the conjunction of ``constraints`` bounds (by name), refining
    ``start``; a bound on one variable in terms of another is propagated ``rounds`` times. (An
    uninterpreted function's name may be given a range in ``start``: every application's.)"""
    root, nodes = smt.dag(smt.And(*constraints))
    atoms = []
    todo = [root]
    while todo:
        node = nodes[todo.pop()]
        if node.kind == "and":
            todo.extend(node.args)
        elif node.kind in _FLIP and len(node.args) == 2:
            atoms.append((node.kind, *node.args))
    box: Box = dict(start or {})
    for _ in range(rounds):
        changed = False
        for kind, left, right in atoms:
            for relation, var, other in ((kind, left, right), (_FLIP[kind], right, left)):
                name = _variable(nodes[var])
                if name is None:
                    continue
                lo, hi = box.get(name, (-INF, INF))
                olo, ohi = _range(other, nodes, box, {})
                new = (max(lo, olo) if relation in ("ge", "eq") else max(lo, olo + 1) if relation == "gt" else lo,
                       min(hi, ohi) if relation in ("le", "eq") else min(hi, ohi - 1) if relation == "lt" else hi)
                if new != (lo, hi):
                    box[name] = new
                    changed = True
        if not changed:
            break
    return box


def range_of(term: smt.Expr, box: Mapping[str, tuple[int, int]]) -> tuple[int, int]:
    """Bounds on the values of ``term`` for variables in ``box`` (``-INF`` / ``INF``: none)."""
    root, nodes = smt.dag(term)
    return _range(root, nodes, box, {})


def within(term: smt.Expr, lo: int, hi: int, box: Mapping[str, tuple[int, int]]) -> bool:
    """``term`` stays in ``[lo, hi]`` for every value the variables in ``box`` can take."""
    tlo, thi = range_of(term, box)
    return lo <= tlo and thi <= hi


def _variable(node: smt.Node) -> str | None:
    return node.value if node.kind == "symbol" and not node.args else None


def _clamp(v: int) -> int:
    return INF if v >= INF else -INF if v <= -INF else v


def _range(key: int, nodes: Mapping[int, smt.Node], box: Mapping[str, tuple[int, int]],
           memo: dict[int, tuple[int, int]]) -> tuple[int, int]:
    if key in memo:
        return memo[key]
    node = nodes[key]
    kind = node.kind
    if kind == "literal" and isinstance(node.value, int) and not isinstance(node.value, bool):
        out = (node.value, node.value)
    elif kind == "symbol":
        out = box.get(node.value, (-INF, INF))  # a function's entry bounds all its values
    elif kind == "ite":  # either branch
        cond, then, other = node.args
        tlo, thi = _range(then, nodes, box, memo)
        glo, ghi = _guard(cond, then, nodes)
        olo, ohi = _range(other, nodes, box, memo)
        out = (min(max(tlo, glo), olo), max(min(thi, ghi), ohi))
    elif kind in ("add", "sub", "mul", "uminus", "div", "mod"):
        args = [_range(a, nodes, box, memo) for a in node.args]
        out = _apply(kind, args)
    else:  # content reads, bit-vector terms, anything else: no bound known
        out = (-INF, INF)
    memo[key] = out = (_clamp(out[0]), _clamp(out[1]))
    return out


def _guard(cond: int, term: int, nodes: Mapping[int, smt.Node]) -> tuple[int, int]:
    """The literal bounds a conjunction ``cond`` puts on ``term`` itself: what an ``ite`` taking
    ``term`` when ``cond`` holds knows of it (the engine clamps an unknown integer into its type's
    range that way, ``values.in_range``)."""
    lo, hi = -INF, INF
    todo = [cond]
    while todo:
        node = nodes[todo.pop()]
        if node.kind == "and":
            todo.extend(node.args)
            continue
        if node.kind not in _FLIP or len(node.args) != 2:
            continue
        relation, left, right = node.kind, *node.args
        if right == term:
            relation, left, right = _FLIP[relation], right, left
        bound = nodes[right]
        if left != term or bound.kind != "literal" or isinstance(bound.value, bool):
            continue
        value = bound.value
        if relation in ("ge", "eq", "gt"):
            lo = max(lo, value + (relation == "gt"))
        if relation in ("le", "eq", "lt"):
            hi = min(hi, value - (relation == "lt"))
    return lo, hi


def _apply(kind: str, args: list[tuple[int, int]]) -> tuple[int, int]:
    if kind == "mod" and args[1][0] > 0:  # Z3's mod by a positive divisor lies in [0, divisor)
        return 0, args[1][1] - 1 if args[1][1] < INF else INF
    if any(abs(v) >= INF for a in args for v in a):  # "unbounded" is not a number to compute with
        return -INF, INF
    if kind == "add":
        return sum(a[0] for a in args), sum(a[1] for a in args)
    if kind == "sub":
        lo, hi = args[0]
        for a in args[1:]:
            lo, hi = lo - a[1], hi - a[0]
        return lo, hi
    if kind == "uminus":
        return -args[0][1], -args[0][0]
    if kind == "mul":
        lo, hi = args[0]
        for a in args[1:]:
            corners = [_clamp(x * y) for x in (lo, hi) for y in a]
            lo, hi = min(corners), max(corners)
        return lo, hi
    (alo, ahi), (blo, bhi) = args
    if kind != "div" or blo <= 0:  # a divisor that may be zero or negative: Z3 leaves it unconstrained
        return -INF, INF
    # Z3's div by a positive divisor is the floor; monotone in each argument
    corners = [x // y for x in (alo, ahi) for y in (blo, bhi)]
    return min(corners), max(corners)
