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

from tilecheck.verifier.solver import smt

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
    elif kind == "ite":  # either branch, unless the ranges decide the condition
        cond, then, other = node.args
        decided = _decided(cond, nodes, box, memo)
        tlo, thi = _range(then, nodes, box, memo) if decided is not False else (INF, -INF)
        glo, ghi = _guard(cond, then, nodes)
        olo, ohi = _range(other, nodes, box, memo) if decided is not True else (INF, -INF)
        out = (min(max(tlo, glo), olo), max(min(thi, ghi), ohi))
    elif kind in ("add", "sub", "mul", "uminus", "div", "mod"):
        args = [_range(a, nodes, box, memo) for a in node.args]
        out = _apply(kind, args)
    elif kind in _BITVECTOR:
        out = _bitvector(node, [_range(a, nodes, box, memo) for a in node.args])
    else:  # content reads, bit-vector comparisons, anything else: no bound known
        out = (-INF, INF)
    memo[key] = out = (_clamp(out[0]), _clamp(out[1]))
    return out


def _decided(key: int, nodes: Mapping[int, smt.Node], box: Mapping[str, tuple[int, int]],
             memo: dict[int, tuple[int, int]]) -> bool | None:
    """A comparison's truth where the ranges of its sides decide it (None: they do not): the
    engine's signed view of a bit-vector, ``ite(bits <s 0, bits - 2^w, bits)``, takes one branch
    for bits below 2^(w-1)."""
    node = nodes[key]
    if node.kind == "not":
        inner = _decided(node.args[0], nodes, box, memo)
        return None if inner is None else not inner
    relation = _RELATIONS.get(node.kind)
    if relation is None or len(node.args) != 2:
        return None
    sides = [_range(a, nodes, box, memo) for a in node.args]
    if node.kind.startswith("bvs"):  # signed: the patterns' two's-complement values
        sides = [_bitvector(smt.Node("sbv2int", None, (), node.width), [side]) for side in sides]
    elif node.kind.startswith("bvu"):
        sides = [_unsigned(side, node.width) for side in sides]
    (alo, ahi), (blo, bhi) = sides
    if max(abs(alo), abs(ahi), abs(blo), abs(bhi)) >= INF:
        return None
    holds = {"lt": ahi < blo, "le": ahi <= blo, "gt": alo > bhi, "ge": alo >= bhi, "eq": alo == ahi == blo == bhi}
    fails = {"lt": alo >= bhi, "le": alo > bhi, "gt": ahi <= blo, "ge": ahi < blo, "eq": ahi < blo or bhi < alo}
    return True if holds[relation] else False if fails[relation] else None


_RELATIONS = {"lt": "lt", "le": "le", "gt": "gt", "ge": "ge", "eq": "eq", "bvslt": "lt", "bvsle": "le",
              "bvsgt": "gt", "bvsge": "ge", "bvult": "lt", "bvule": "le", "bvugt": "gt", "bvuge": "ge"}


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


# Bit-vector terms (the engine's exact bitwise and/or/xor, and what Z3's simplifier makes of them) as
# the range of their unsigned values, so that an index computed through ``i ^ j`` is bounded like
# any other (TileBench's bitonic sort: its partner index's overflow claims were enumerated over 2^24
# lanes, 4 s, where their bounds are a bit count). A bit-vector's value always lies in
# ``[0, 2^width)``: an argument's range is read within that, whatever it is.
_BITVECTOR = frozenset({"bvliteral", "int2bv", "bv2int", "sbv2int", "bvand", "bvor", "bvxor", "bvnot",
                        "bvadd", "bvsub", "extract", "concat"})


def _bitvector(node: smt.Node, args: list[tuple[int, int]]) -> tuple[int, int]:
    kind, width = node.kind, node.width
    if kind == "bvliteral":
        return node.value, node.value
    if kind == "int2bv":  # an integer's low ``width`` bits: itself when it lies in [0, 2^width)
        lo, hi = args[0]
        return (lo, hi) if 0 <= lo and hi < 1 << width else (0, (1 << width) - 1)
    if kind == "extract":
        high, low = node.value
        lo, hi = _unsigned(args[0], INF)  # whatever its width, no bit above ``hi``'s highest
        return (lo >> low, hi >> low) if hi < 1 << (high + 1) else (0, (1 << (high - low + 1)) - 1)
    if kind == "concat":  # monotone in each part: the first part's bits above the others'
        lo = hi = 0
        for (alo, ahi), bits in zip((_unsigned(a, w) for a, w in zip(args, node.value)), node.value):
            lo, hi = (lo << bits) + alo, (hi << bits) + ahi
        return lo, hi
    parts = [_unsigned(a, width) for a in args]  # same-width operands (a conversion: its argument's)
    mask = (1 << width) - 1
    if kind == "bv2int":
        return parts[0]
    if kind == "sbv2int":  # two's complement: the patterns from 2^(width-1) up are negative
        lo, hi = parts[0]
        half = 1 << (width - 1)
        return (lo, hi) if hi < half else (lo - (1 << width), hi - (1 << width)) if lo >= half else (-half, half - 1)
    if kind == "bvand":
        return 0, min(hi for _, hi in parts)
    if kind in ("bvor", "bvxor"):  # no bit above the highest any operand can set
        top = (1 << max(hi for _, hi in parts).bit_length()) - 1
        return (max(lo for lo, _ in parts) if kind == "bvor" else 0), top
    if kind == "bvnot":
        lo, hi = parts[0]
        return mask - hi, mask - lo
    if kind == "bvadd":
        lo, hi = sum(lo for lo, _ in parts), sum(hi for _, hi in parts)
    else:  # bvsub
        lo, hi = parts[0][0] - sum(h for _, h in parts[1:]), parts[0][1] - sum(lo for lo, _ in parts[1:])
    return (lo, hi) if 0 <= lo and hi <= mask else (0, mask)  # it may wrap around: any pattern


def _unsigned(bounds: tuple[int, int], width: int) -> tuple[int, int]:
    """A bit-vector argument's range within ``[0, 2^width)`` (``width`` INF: only non-negative)."""
    top = INF if width >= INF else (1 << width) - 1
    lo, hi = max(bounds[0], 0), min(bounds[1], top)
    return (lo, hi) if lo <= hi else (0, top)
