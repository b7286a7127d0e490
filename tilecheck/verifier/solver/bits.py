"""Bit-vector arithmetic as integer arithmetic, where a level's values make its operands constants.

The engine encodes a bitwise and/or/xor or a shift whose operand is a constant in linear integer
arithmetic (``symbolic/ops/arith.py``: ``_with_constant``), and any other on Z3 bit-vectors:
``ite(T <s 0, bv2int(T) - 2^w, bv2int(T))`` with ``T`` the operation on ``int2bv`` of its operands.
A scalar argument is no constant to the engine, so a bitonic sort's partner ``i ^ j`` is a
bit-vector term, and Z3 bit-blasts it: slow, and at the given case of a large launch undecided
within a query's budget. A level with concrete values (the given case) fixes ``j``; ``arithmetic``
then writes each such ``T`` as the integer its bits make (``i ^ 1 == i + 1 - 2 * (i mod 2)``), in
linear arithmetic with divisions by powers of two, which the solver decides in milliseconds.

The rewrite is exact: each rule below is an identity on the unsigned values of ``w``-bit patterns,
and the level's values it substitutes are those its base constraints fix (they stay in the query,
so a model still names them). A term it cannot write (two operands that are not constants, an
operation not listed) stays a bit-vector term.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import z3

from tilecheck.verifier.solver import intervals, smt, term_dag, z3walk

# a constant operand of and/or/xor with at most this many set bits is written bit by bit (here and
# in the engine, ``symbolic/ops/arith.py``); more would make a longer sum than a bit-vector term
FEW_BITS = 8


def arithmetic(formula: smt.BoolExpr, concrete: Sequence[tuple[smt.Expr, smt.Expr]]) -> smt.BoolExpr:
    """``formula`` with every bit-vector island it can write as integer arithmetic so written, the
    level's ``concrete`` values substituted inside them (``formula`` itself when there is none)."""
    roots = _islands(formula)
    if not roots:
        return formula
    box = intervals.box_of([formula])
    pairs = []
    for root in roots:
        fixed = smt.substituted(root, list(concrete))
        value = _unsigned(fixed, box, {})
        if value is None:
            continue
        width = root.size()
        pairs.append((z3.BV2Int(root), value))
        pairs.append((root < 0, value >= (1 << (width - 1))))  # bvslt(T, 0): its top bit is set
    return smt.substitute(formula, *pairs) if pairs else formula


def _islands(formula: smt.BoolExpr) -> list[Any]:
    """The bit-vector terms ``formula``'s integers read: the arguments of its ``bv2int``s (an
    island's inside is the rewrite's, not another root)."""
    c, ctx = formula.ctx.ref(), formula.ctx
    found: dict[int, Any] = {}
    for app in term_dag.applications_of_kinds(formula, (z3.Z3_OP_BV2INT,)):
        arg = z3walk.C.Z3_get_app_arg(c, app, 0)
        found.setdefault(z3walk.C.Z3_get_ast_id(c, arg), arg)
    return [z3.BitVecRef(a, ctx) for a in found.values()]


def _unsigned(t: Any, box: intervals.Box, memo: dict[int, Any]) -> smt.IntExpr | None:
    """The unsigned value of bit-vector term ``t`` as an integer term, or None."""
    key = t.get_id()
    if key not in memo:
        memo[key] = _write(t, box, memo)
    return memo[key]


def _write(t: Any, box: intervals.Box, memo: dict[int, Any]) -> smt.IntExpr | None:
    width = t.size()
    top = 1 << width
    if z3.is_bv_value(t):
        return smt.IntVal(t.as_long())
    kind = t.decl().kind()
    args = t.children()
    if kind == z3.Z3_OP_INT2BV:
        x = args[0]
        lo, hi = intervals.range_of(x, box)
        return x if 0 <= lo and hi < top else x % top
    if kind == z3.Z3_OP_EXTRACT:
        high, low = t.params()
        inner = _unsigned(args[0], box, memo)
        return None if inner is None else (inner / (1 << low)) % (1 << (high - low + 1))
    if kind == z3.Z3_OP_CONCAT:
        out: smt.IntExpr | None = smt.IntVal(0)
        for part in args:
            value = _unsigned(part, box, memo)
            if value is None:
                return None
            out = out * (1 << part.size()) + value
        return out
    values = [_unsigned(a, box, memo) for a in args]
    if any(v is None for v in values):
        return None
    if kind == z3.Z3_OP_BNOT:
        return (top - 1) - values[0]
    if kind in (z3.Z3_OP_BADD, z3.Z3_OP_BSUB) and len(values) == 2:
        return (values[0] + values[1] if kind == z3.Z3_OP_BADD else values[0] - values[1]) % top
    if kind in (z3.Z3_OP_BSHL, z3.Z3_OP_BLSHR, z3.Z3_OP_BASHR):
        amount = smt.const_value(values[1])
        if amount is None or not 0 <= amount < width:
            return None
        if kind == z3.Z3_OP_BSHL:
            return (values[0] * (1 << amount)) % top
        if kind == z3.Z3_OP_BLSHR:
            return values[0] / (1 << amount)
        signed = smt.If(values[0] >= top // 2, values[0] - top, values[0])
        return (signed / (1 << amount)) % top  # floor division: the arithmetic shift
    if kind in _BITWISE and len(values) == 2:
        for x, c in ((values[0], smt.const_value(values[1])), (values[1], smt.const_value(values[0]))):
            if c is None:
                continue
            c %= top
            if (c + 1) & c == 0:  # 0, or a low mask: x & c is x mod 2^k
                return with_constant(_BITWISE[kind], x, c, width, both=x % (c + 1))
            return with_constant(_BITWISE[kind], x, c, width) if c.bit_count() <= FEW_BITS else None
    return None


_BITWISE = {z3.Z3_OP_BAND: "and", z3.Z3_OP_BOR: "or", z3.Z3_OP_BXOR: "xor"}


def with_constant(op: str, x: smt.IntExpr, c: int, width: int, both: smt.IntExpr | None = None) -> smt.IntExpr:
    """x & c, x | c or x ^ c (``op``) on ``width``-bit unsigned values, for a constant ``c``, in linear
    integer arithmetic from x & c (``both``; by default the sum of x's bits at c's set positions)."""
    if both is None:
        both = smt.IntVal(0)
        for i in range(width):
            if c >> i & 1:
                both = both + ((x / (1 << i)) % 2) * (1 << i)
    return {"and": both, "or": x + c - both, "xor": x + c - 2 * both}[op]
