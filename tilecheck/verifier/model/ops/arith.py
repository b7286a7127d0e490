"""Integer and boolean arithmetic, comparisons, casts, constants."""
from __future__ import annotations

from tilecheck.ir import Op
from tilecheck.ir import types as T
from tilecheck.ir.attrs import Bounded, DenseElements, DivBy
from tilecheck.verifier.model import bounds as B
from tilecheck.verifier.model.registry import symbolic
from tilecheck.verifier.model.values import (
    LANES,
    BoolTile,
    IntTile,
    Pointer,
    Pointers,
    StrideForm,
    SymValue,
    choose,
    decided,
)
from tilecheck.verifier.solver import smt
from tilecheck.verifier.solver.bits import FEW_BITS, with_constant


def _shape(op: Op) -> tuple[int, ...]:
    t = op.results[0].type
    return t.shape if isinstance(t, T.TileType) else ()


def floordiv(a: smt.IntExpr, b: smt.IntExpr) -> smt.IntExpr:
    c = smt.const_value(b)
    if c is not None and c > 0:
        return a / b  # z3 integer division is floor division for a positive divisor
    return smt.If(b > 0, a / b, (-a) / (-b))


def truncdiv(a: smt.IntExpr, b: smt.IntExpr, a_bounds: B.Bound = B.UNKNOWN) -> smt.IntExpr:
    """Division rounding toward zero (C semantics). ``a_bounds``: what ``a`` lies in."""
    c = smt.const_value(b)
    if c is not None and c > 0:
        return a / b if B.non_negative(a_bounds) else smt.If(a >= 0, a / b, -((-a) / b))
    if B.non_negative(a_bounds):  # the general form's cases for a >= 0, the same term
        return smt.If(b > 0, a / b, -(a / -b))
    magnitude = smt.If(a >= 0, a, -a) / smt.If(b >= 0, b, -b)
    same_sign = smt.Or(smt.And(a >= 0, b > 0), smt.And(a < 0, b < 0))
    return smt.If(same_sign, magnitude, -magnitude)


def ceildiv(a: smt.IntExpr, b: smt.IntExpr) -> smt.IntExpr:
    return -floordiv(-a, b)


def _bits(op: Op) -> int:
    """The bit width of the op's integer result element (64 when it has none)."""
    t = op.results[0].type
    element = t.element if isinstance(t, T.TileType) else t
    bits = getattr(element, "bitwidth", None)
    return bits if isinstance(bits, int) and bits > 1 else 64


def _unsigned(op: Op) -> bool:
    return op.attrs.get("signedness") == "unsigned"


def as_unsigned(term: smt.IntExpr, bits: int) -> smt.IntExpr:
    """The unsigned value of a two's-complement ``bits``-wide pattern held as a signed value."""
    return smt.If(term < 0, term + (1 << bits), term)


def as_signed(term: smt.IntExpr, bits: int) -> smt.IntExpr:
    """The signed reading of an unsigned value in [0, 2^bits) (how the model holds every integer)."""
    return smt.If(term >= (1 << (bits - 1)), term - (1 << bits), term)


def _bitvector(fn, a: smt.IntExpr, b: smt.IntExpr, bits: int) -> smt.IntExpr:
    """``fn`` on the two's-complement bit patterns of a and b, read back as a signed value: exact
    bitwise and/or/xor (bitonic partners ``i ^ j``, xor swizzles)."""
    return smt.BV2Int(fn(smt.Int2BV(a, bits), smt.Int2BV(b, bits)), is_signed=True)


def _merge_forms(a: IntTile, b: IntTile, sign: int) -> StrideForm | None:
    if a.form is None and b.form is None:
        return None
    fa = a.form or StrideForm((), a.term)
    fb = b.form or StrideForm((), b.term)
    coefs = fa.as_dict()
    for key, coef in fb.coefs:
        coefs[key] = coefs[key] + sign * coef if key in coefs else sign * coef
    return StrideForm(tuple(coefs.items()), fa.rest + sign * fb.rest)


def _scale_form(form: StrideForm, by: smt.IntExpr) -> StrideForm:
    return StrideForm(tuple((k, c * by) for k, c in form.coefs), form.rest * by)


@symbolic("addi", "subi")
def add_sub(state, op: Op, lhs: SymValue, rhs: SymValue):
    if not (isinstance(lhs, IntTile) and isinstance(rhs, IntTile)):
        return (state.havoc(op.results[0].type),)
    sign = 1 if op.name == "addi" else -1
    term = lhs.term + rhs.term if sign > 0 else lhs.term - rhs.term
    state.may_overflow(op, term)
    bounds = B.add(lhs.bounds, rhs.bounds) if sign > 0 else B.sub(lhs.bounds, rhs.bounds)
    return (IntTile(term, _shape(op), _merge_forms(lhs, rhs, sign), bounds),)


@symbolic("muli")
def mul(state, op: Op, lhs: SymValue, rhs: SymValue):
    if not (isinstance(lhs, IntTile) and isinstance(rhs, IntTile)):
        return (state.havoc(op.results[0].type),)
    form = None
    if rhs.form is not None and lhs.form is None:
        form = _scale_form(rhs.form, lhs.term)
    elif lhs.form is not None and rhs.form is None:
        form = _scale_form(lhs.form, rhs.term)
    state.may_overflow(op, lhs.term * rhs.term)
    return (IntTile(lhs.term * rhs.term, _shape(op), form, B.mul(lhs.bounds, rhs.bounds)),)


@symbolic("divi")
def div(state, op: Op, lhs: SymValue, rhs: SymValue):
    if not (isinstance(lhs, IntTile) and isinstance(rhs, IntTile)):
        return (state.havoc(op.results[0].type),)
    rounding = op.attrs.get("rounding", "zero")
    if not _unsigned(op) and rounding in ("zero", "negative_inf") and B.non_negative(lhs.bounds) \
            and B.non_negative(rhs.bounds):
        # both roundings are Z3's div for these operands (a zero divisor: unspecified either way)
        return (IntTile(lhs.term / rhs.term, _shape(op), bounds=B.quotient(lhs.bounds, rhs.bounds)),)
    if _unsigned(op):  # both operands as unsigned bit patterns (non-negative: every rounding agrees)
        term = as_signed(floordiv(as_unsigned(lhs.term, _bits(op)), as_unsigned(rhs.term, _bits(op))), _bits(op))
    elif rounding in ("negative_inf",):
        term = _by_divisor(lhs, rhs, lambda k: lhs.term / k, floordiv(lhs.term, rhs.term))
        return (IntTile(term, _shape(op), bounds=B.floor_quotient(lhs.bounds, rhs.bounds)),)
    elif rounding == "positive_inf":  # cdiv(dim, tile): as large as the floor, or one more
        term = ceildiv(lhs.term, rhs.term)
        return (IntTile(term, _shape(op), bounds=B.ceiling(lhs.bounds, rhs.bounds)),)
    else:
        term = _by_divisor(lhs, rhs, lambda k: lhs.term / k,
                           truncdiv(lhs.term, rhs.term, lhs.bounds))
    return (IntTile(term, _shape(op)),)


SMALL_DIVISOR = 16  # a divisor at most this large is split into its values (each a linear division)


def _by_divisor(dividend: IntTile, divisor: IntTile, per_value, general: smt.IntExpr) -> smt.IntExpr:
    """A division by ``divisor`` whose bounds say it is at most ``SMALL_DIVISOR`` (a group swizzle's
    ``min(num_m - first_m, GROUP)``) as the case of each positive value it can take, a division by
    a constant, the ``general`` term where it is not positive: the solver gets linear arithmetic for
    the executions that happen."""
    lo, hi = divisor.bounds
    if not B.non_negative(dividend.bounds) or hi is None or not 1 <= hi <= SMALL_DIVISOR \
            or smt.const_value(divisor.term) is not None:
        return general
    first = 1 if lo is None else max(lo, 1)
    term = per_value(hi)
    for k in range(hi - 1, first - 1, -1):
        term = smt.If(divisor.term == k, per_value(k), term)
    return term if first == lo else smt.If(divisor.term >= 1, term, general)


@symbolic("remi")
def rem(state, op: Op, lhs: SymValue, rhs: SymValue):
    if not (isinstance(lhs, IntTile) and isinstance(rhs, IntTile)):
        return (state.havoc(op.results[0].type),)
    a, b = lhs.term, rhs.term
    if not _unsigned(op) and B.non_negative(lhs.bounds) and B.non_negative(rhs.bounds):
        # Z3's mod for these operands; a zero divisor leaves a, as the general form says
        term = a % b if rhs.bounds[0] >= 1 else smt.If(b > 0, a % b, a)  # type: ignore[operator]
        return (IntTile(term, _shape(op), bounds=B.remainder(lhs.bounds, rhs.bounds)),)
    if _unsigned(op):
        a, b = as_unsigned(a, _bits(op)), as_unsigned(b, _bits(op))
        term = as_signed(a - b * floordiv(a, b), _bits(op))
        return (IntTile(term, _shape(op)),)
    # rounding toward zero: the remainder has the dividend's sign and is no larger (it is the
    # dividend where the divisor is zero)
    term = _by_divisor(lhs, rhs, lambda k: a % k,
                       a - b * truncdiv(a, b, lhs.bounds))
    bounds = (0, lhs.bounds[1]) if B.non_negative(lhs.bounds) else B.UNKNOWN
    return (IntTile(term, _shape(op), bounds=bounds),)


@symbolic("maxi", "mini")
def min_max(state, op: Op, lhs: SymValue, rhs: SymValue):
    if not (isinstance(lhs, IntTile) and isinstance(rhs, IntTile)):
        return (state.havoc(op.results[0].type),)
    a, b = lhs.term, rhs.term
    if not _unsigned(op):
        decided = B.compare("greater_than_or_equal", lhs.bounds, rhs.bounds)
        if decided is not None:  # one operand is the larger for every execution
            return (lhs if decided == (op.name == "maxi") else rhs,)
    a_ge_b = smt.Not(_unsigned_less(a, b, False)) if _unsigned(op) else a >= b
    term = smt.If(a_ge_b, a, b) if op.name == "maxi" else smt.If(a_ge_b, b, a)
    bounds = B.UNKNOWN if _unsigned(op) else (B.maximum if op.name == "maxi" else B.minimum)(lhs.bounds, rhs.bounds)
    return (IntTile(term, _shape(op), bounds=bounds),)


@symbolic("negi")
def neg(state, op: Op, x: SymValue):
    if not isinstance(x, IntTile):
        return (state.havoc(op.results[0].type),)
    return (IntTile(-x.term, _shape(op), bounds=B.neg(x.bounds)),)


@symbolic("absi")
def abs_(state, op: Op, x: SymValue):
    if not isinstance(x, IntTile):
        return (state.havoc(op.results[0].type),)
    if B.non_negative(x.bounds):
        return (x,)
    return (IntTile(smt.If(x.term < 0, -x.term, x.term), _shape(op), bounds=B.absolute(x.bounds)),)


@symbolic("shli", "shri")
def shift(state, op: Op, lhs: SymValue, rhs: SymValue):
    amount = smt.const_value(rhs.term) if isinstance(rhs, IntTile) else None
    bits = _bits(op)
    if not isinstance(lhs, IntTile) or not isinstance(rhs, IntTile):
        return (state.havoc(op.results[0].type),)
    if amount is None or not 0 <= amount < bits:  # a shift by a variable amount: on the bit patterns
        if op.name == "shli":
            fn = lambda x, y: x << y
        else:
            fn = (lambda x, y: smt.LShR(x, y)) if _unsigned(op) else (lambda x, y: x >> y)
        state.bitwise = True
        return (IntTile(_bitvector(fn, lhs.term, rhs.term, bits), _shape(op)),)
    factor = smt.IntVal(1 << amount)
    if op.name == "shli":
        term = lhs.term * factor
        state.may_overflow(op, term)
        return (IntTile(term, _shape(op), bounds=B.mul(lhs.bounds, B.exact(1 << amount))),)
    # shri: arithmetic for signed, logical (the bit pattern as unsigned) for unsigned
    if _unsigned(op):
        term = as_signed(floordiv(as_unsigned(lhs.term, bits), factor), bits)
        return (IntTile(term, _shape(op)),)
    return (IntTile(floordiv(lhs.term, factor), _shape(op), bounds=B.quotient(lhs.bounds, B.exact(1 << amount))),)


@symbolic("andi", "ori", "xori")
def bitwise(state, op: Op, lhs: SymValue, rhs: SymValue):
    if isinstance(lhs, BoolTile) and isinstance(rhs, BoolTile):
        folded = _fold(op.name, lhs, rhs)
        if folded is not None:
            return (BoolTile(folded.term, _shape(op)),)
        fn = {"andi": smt.And, "ori": smt.Or, "xori": smt.Xor}[op.name]
        return (BoolTile(fn(lhs.term, rhs.term), _shape(op)),)
    if op.name == "andi" and isinstance(lhs, IntTile) and isinstance(rhs, IntTile):
        mask = smt.const_value(rhs.term)
        if mask is not None and mask >= 0 and (mask + 1) & mask == 0:  # x & (2^k - 1) == x mod 2^k
            return (IntTile(lhs.term % (mask + 1), _shape(op), bounds=(0, mask)),)
    if isinstance(lhs, IntTile) and isinstance(rhs, IntTile):
        bits = _bits(op)
        for x, c in ((lhs.term, smt.const_value(rhs.term)), (rhs.term, smt.const_value(lhs.term))):
            if c is not None and (c % (1 << bits)).bit_count() <= FEW_BITS:
                return (IntTile(_with_constant(op.name, x, c % (1 << bits), bits), _shape(op)),)
        fn = {"andi": lambda x, y: x & y, "ori": lambda x, y: x | y, "xori": lambda x, y: x ^ y}[op.name]
        state.bitwise = True
        return (IntTile(_bitvector(fn, lhs.term, rhs.term, bits), _shape(op)),)
    return (state.havoc(op.results[0].type),)


def _fold(name: str, lhs: BoolTile, rhs: BoolTile) -> BoolTile | None:
    """``and`` / ``or`` / ``xor`` of two i1 tiles one of which is a constant (a comparison the
    bounds decided): the other, or the constant; None when neither is one."""
    for known, other in ((lhs, rhs), (rhs, lhs)):
        if smt.is_true(known.term) or smt.is_false(known.term):
            value = smt.is_true(known.term)
            if name == "andi":
                return other if value else known
            if name == "ori":
                return known if value else other
            return BoolTile(smt.Not(other.term), other.shape) if value else other
    return None


def _with_constant(name: str, x: smt.IntExpr, c: int, bits: int) -> smt.IntExpr:
    """x & c, x | c or x ^ c for a constant c with few set bits, in linear integer arithmetic (cheaper
    for the solver than bit-vectors), on x's two's-complement pattern (``verifier.bits``)."""
    return as_signed(with_constant(name[:-1], as_unsigned(x, bits), c, bits), bits)


def _unsigned_less(a: smt.IntExpr, b: smt.IntExpr, equal: bool) -> smt.BoolExpr:
    """a < b (or <=) comparing two's-complement bit patterns as unsigned: a negative value has
    the top bit set, so it is larger than any non-negative one."""
    same = a <= b if equal else a < b
    return smt.If(a >= 0, smt.If(b >= 0, same, smt.BoolVal(True)), smt.If(b >= 0, smt.BoolVal(False), same))


@symbolic("cmpi")
def cmpi(state, op: Op, lhs: SymValue, rhs: SymValue):
    if isinstance(lhs, BoolTile) and isinstance(rhs, BoolTile):
        pred = op.attrs["comparison_predicate"]
        if pred in ("equal", "not_equal"):
            eq = lhs.term == rhs.term
            return (BoolTile(eq if pred == "equal" else smt.Not(eq), _shape(op)),)
    if not (isinstance(lhs, IntTile) and isinstance(rhs, IntTile)):
        return (state.havoc(op.results[0].type),)
    a, b = lhs.term, rhs.term
    pred = op.attrs["comparison_predicate"]
    unsigned = op.attrs.get("signedness") == "unsigned"
    decided = None if unsigned else B.compare(pred, lhs.bounds, rhs.bounds)
    if decided is not None:  # the same answer in every execution (a sign fix-up that never applies)
        return (BoolTile(smt.BoolVal(decided), _shape(op)),)
    if pred == "equal":
        term = a == b
    elif pred == "not_equal":
        term = a != b
    elif pred in ("less_than", "less_than_or_equal"):
        eq = pred.endswith("equal")
        term = _unsigned_less(a, b, eq) if unsigned else (a <= b if eq else a < b)
    else:
        eq = pred.endswith("equal")
        term = _unsigned_less(b, a, eq) if unsigned else (a >= b if eq else a > b)
    return (BoolTile(term, _shape(op)),)


@symbolic("select")
def select(state, op: Op, cond: SymValue, yes: SymValue, no: SymValue):
    if not isinstance(cond, BoolTile):
        return (state.havoc(op.results[0].type),)
    c = cond.term
    if (branch := decided(c, yes, no)) is not None:
        return (branch,)
    if isinstance(yes, IntTile) and isinstance(no, IntTile):
        return (IntTile(smt.If(c, yes.term, no.term), _shape(op), bounds=B.join(yes.bounds, no.bounds)),)
    if isinstance(yes, BoolTile) and isinstance(no, BoolTile):
        return (BoolTile(smt.If(c, yes.term, no.term), _shape(op)),)
    if isinstance(yes, Pointer) and isinstance(no, Pointer) and yes.array == no.array:
        coords = None
        if yes.coords is not None and no.coords is not None and len(yes.coords) == len(no.coords):
            coords = tuple(smt.If(c, a, b) for a, b in zip(yes.coords, no.coords))
        return (Pointer(yes.array, coords, smt.If(c, yes.linear, no.linear), _shape(op)),)
    if isinstance(yes, (Pointer, Pointers)) and isinstance(no, (Pointer, Pointers)):
        return (choose(c, yes, no, _shape(op)),)  # into different arrays, lane by lane
    if isinstance(yes, (Pointer, Pointers)) or isinstance(no, (Pointer, Pointers)):
        state.unsupported_op(op, "select between a pointer and another value")
    return (state.havoc(op.results[0].type),)


@symbolic("exti", "trunci")
def int_cast(state, op: Op, x: SymValue):
    if isinstance(x, IntTile):
        source = op.operands[0].type
        bits = getattr(source.element if isinstance(source, T.TileType) else source, "bitwidth", None)
        if op.name == "exti" and _unsigned(op) and bits is not None:  # zero-extension: the bit pattern
            if B.non_negative(x.bounds):
                return (IntTile(x.term, _shape(op), x.form, x.bounds),)
            return (IntTile(as_unsigned(x.term, bits), _shape(op), bounds=(0, (1 << bits) - 1)),)
        if op.name == "trunci":  # exact while the value fits: checked at the given case, like add/mul
            state.may_overflow(op, x.term)
        return (IntTile(x.term, _shape(op), x.form, x.bounds),)
    if isinstance(x, BoolTile) and op.name == "exti":
        one = -1 if op.attrs.get("signedness") == "signed" else 1
        return (IntTile(smt.If(x.term, smt.IntVal(one), smt.IntVal(0)), _shape(op), bounds=(min(one, 0), max(one, 0))),)
    return (state.havoc(op.results[0].type),)


@symbolic("constant")
def constant(state, op: Op):
    value = op.attrs["value"]
    shape = _shape(op)
    if not isinstance(value, DenseElements) or value.is_float:
        return (state.havoc(op.results[0].type),)
    items = value.values
    if value.element == "i1":
        terms = [smt.BoolVal(bool(v)) for v in items]
    else:
        terms = [smt.IntVal(v) for v in items]
    if len(terms) == 1:
        term = terms[0]
    elif len(shape) == 1 and len(terms) == shape[0] and len(terms) <= 256:
        term = terms[-1]
        for i in range(len(terms) - 2, -1, -1):
            term = smt.If(LANES[0] == i, terms[i], term)
    else:
        return (state.havoc(op.results[0].type),)
    if value.element == "i1":
        return (BoolTile(term, shape),)
    return (IntTile(term, shape, bounds=(min(items), max(items))),)


@symbolic("iota")
def iota(state, op: Op):
    shape = _shape(op)
    return (IntTile(LANES[0], shape, bounds=(0, shape[0] - 1) if shape and shape[0] > 0 else B.NON_NEGATIVE),)


@symbolic("assume")
def assume(state, op: Op, x: SymValue):
    pred = op.attrs.get("predicate")
    if isinstance(x, IntTile):
        if isinstance(pred, Bounded):
            parts = []
            if pred.lb is not None:
                parts.append(x.term >= pred.lb)
            if pred.ub is not None:
                parts.append(x.term <= pred.ub)
            recorded = len(state.facts)
            state.fact(smt.And(*parts) if parts else smt.BoolVal(True), op)
            if len(state.facts) > recorded:  # a fact of every execution: its bounds too
                return (IntTile(x.term, x.shape, x.form, B.meet(x.bounds, (pred.lb, pred.ub))),)
        elif isinstance(pred, DivBy) and pred.every is None and pred.divisor > 0:
            state.fact(x.term % pred.divisor == 0, op)
    return (x,)
