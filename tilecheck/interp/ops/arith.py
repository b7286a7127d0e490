"""Element-wise integer and float arithmetic, comparisons and casts on numpy wave arrays."""
from __future__ import annotations

import numpy as np

from tilecheck.ir import Op
from tilecheck.ir import types as T
from tilecheck.interp import unspecified
from tilecheck.interp.wave import InterpreterError
from tilecheck.interp.registry import interpret
from tilecheck.interp.memory import NARROW_FLOATS
from tilecheck.interp.values import Pointer, Pointers, numpy_dtype, select_pointers

_UNSIGNED = {np.dtype(np.int8): np.uint8, np.dtype(np.int16): np.uint16, np.dtype(np.int32): np.uint32,
             np.dtype(np.int64): np.uint64, np.dtype(np.bool_): np.bool_}


def out_type(op: Op) -> np.dtype:
    return numpy_dtype(op.results[0].type)


def unsigned(x: np.ndarray) -> np.ndarray:
    return x.view(_UNSIGNED[x.dtype]) if x.dtype in _UNSIGNED else x


def _quiet():
    return np.errstate(all="ignore")


def _unsigned_flag(op: Op) -> bool:
    return op.attrs.get("signedness") == "unsigned"


# ---- families registered in loops ---------------------------------------------------------------
_BINARY = {"addi": np.add, "subi": np.subtract, "muli": np.multiply, "andi": np.bitwise_and,
           "ori": np.bitwise_or, "xori": np.bitwise_xor, "addf": np.add, "subf": np.subtract, "mulf": np.multiply,
           "divf": np.divide, "remf": np.fmod, "pow": np.power, "atan2": np.arctan2}
_FLOAT_UNARY = {"absf": np.abs, "negf": np.negative, "exp": np.exp, "exp2": np.exp2, "log": np.log,
                "log2": np.log2, "sqrt": np.sqrt, "sin": np.sin, "cos": np.cos, "tan": np.tan, "sinh": np.sinh,
                "cosh": np.cosh, "tanh": np.tanh, "floor": np.floor, "ceil": np.ceil}


def _binary(fn):
    def rule(interp, ctx, op, lhs, rhs):
        with _quiet():  # integers wrap at their width, floats follow IEEE: no warnings
            return (fn(lhs, rhs).astype(out_type(op), copy=False),)
    return rule


def _float_unary(fn):
    def rule(interp, ctx, op, x):
        with _quiet():
            return (fn(x).astype(out_type(op), copy=False),)
    return rule


for _name, _fn in _BINARY.items():
    interpret(_name)(_binary(_fn))
for _name, _fn in _FLOAT_UNARY.items():
    interpret(_name)(_float_unary(_fn))


@interpret("rsqrt")
def rsqrt(interp, ctx, op, x):
    with _quiet():
        return ((1.0 / np.sqrt(x)).astype(out_type(op), copy=False),)


@interpret("fpowi")
def fpowi(interp, ctx, op, x, n):
    with _quiet():
        return (np.power(x, n.astype(np.float64)).astype(out_type(op), copy=False),)


@interpret("fma")
def fma(interp, ctx, op, a, b, c):
    with _quiet():
        return ((a.astype(np.float64) * b + c).astype(out_type(op)),)


@interpret("maxf", "minf")
def min_max_f(interp, ctx, op, lhs, rhs):
    nan = op.attrs.get("propagate_nan", False)
    fn = (np.maximum if nan else np.fmax) if op.name == "maxf" else (np.minimum if nan else np.fmin)
    return (fn(lhs, rhs).astype(out_type(op), copy=False),)


@interpret("maxi", "mini")
def min_max_i(interp, ctx, op, lhs, rhs):
    fn = np.maximum if op.name == "maxi" else np.minimum
    if _unsigned_flag(op):
        return (fn(unsigned(lhs), unsigned(rhs)).view(out_type(op)),)
    return (fn(lhs, rhs),)


@interpret("negi")
def negi(interp, ctx, op, x):
    with _quiet():
        return (np.negative(x),)


@interpret("absi")
def absi(interp, ctx, op, x):
    with _quiet():
        return (np.abs(x),)


def _safe_divisor(ctx, op: Op, rhs: np.ndarray) -> np.ndarray:
    """The divisor, 1 where it is zero: a GPU does not trap there, the lane's result is unspecified
    (marked so in an active block: interp/unspecified.py stops the run if it is ever used)."""
    zero = rhs == 0
    if not zero.any():
        return rhs
    unspecified.mark(ctx, op, zero & ctx.active.reshape((-1,) + (1,) * (zero.ndim - 1)))
    return np.where(zero, 1, rhs).astype(rhs.dtype)


@interpret("divi")
def divi(interp, ctx, op, lhs, rhs):
    safe = _safe_divisor(ctx, op, rhs)
    with _quiet():
        if _unsigned_flag(op):
            return ((unsigned(lhs) // unsigned(safe)).view(out_type(op)),)
        floor = np.floor_divide(lhs, safe)
        rounding = op.attrs.get("rounding", "zero")
        if rounding == "negative_inf":
            q = floor
        elif rounding == "positive_inf":
            q = -np.floor_divide(-lhs, safe)
        else:
            inexact = (lhs - floor * safe) != 0
            q = floor + (inexact & ((lhs < 0) != (safe < 0)))
        return (q.astype(out_type(op), copy=False),)


@interpret("remi")
def remi(interp, ctx, op, lhs, rhs):
    safe = _safe_divisor(ctx, op, rhs)
    with _quiet():
        if _unsigned_flag(op):
            return ((unsigned(lhs) % unsigned(safe)).view(out_type(op)),)
        return (np.fmod(lhs, safe).astype(out_type(op), copy=False),)


@interpret("shli")
def shli(interp, ctx, op, lhs, rhs):
    with _quiet():
        return (np.left_shift(lhs, rhs.astype(lhs.dtype)),)


@interpret("shri")
def shri(interp, ctx, op, lhs, rhs):
    with _quiet():
        if _unsigned_flag(op):
            return (np.right_shift(unsigned(lhs), unsigned(rhs.astype(lhs.dtype))).view(lhs.dtype),)
        return (np.right_shift(lhs, rhs.astype(lhs.dtype)),)


@interpret("mulhii")
def mulhii(interp, ctx, op, lhs, rhs):
    if lhs.dtype.itemsize > 4:
        raise InterpreterError(f"mulhii on {lhs.dtype} is not supported (at {op.loc.outermost()})", op.loc)
    bits = lhs.dtype.itemsize * 8
    return (((lhs.astype(np.int64) * rhs.astype(np.int64)) >> bits).astype(lhs.dtype),)


_CMP = {"equal": np.equal, "not_equal": np.not_equal, "less_than": np.less, "less_than_or_equal": np.less_equal,
        "greater_than": np.greater, "greater_than_or_equal": np.greater_equal}


@interpret("cmpi")
def cmpi(interp, ctx, op, lhs, rhs):
    fn = _CMP[op.attrs["comparison_predicate"]]
    if _unsigned_flag(op):
        return (fn(unsigned(lhs), unsigned(rhs)),)
    return (fn(lhs, rhs),)


@interpret("cmpf")
def cmpf(interp, ctx, op, lhs, rhs):
    with _quiet():
        result = _CMP[op.attrs["comparison_predicate"]](lhs, rhs)
    nan = np.isnan(lhs) | np.isnan(rhs)
    if op.attrs.get("comparison_ordering") == "ordered":
        return (result & ~nan,)
    return (result | nan,)


@interpret("select")
def select(interp, ctx, op, cond, yes, no):
    pointers = (Pointer, Pointers)
    if isinstance(yes, pointers) or isinstance(no, pointers):
        if not (isinstance(yes, pointers) and isinstance(no, pointers)):
            raise InterpreterError(f"select at {op.loc.outermost()} between a pointer and another value", op.loc)
        return (select_pointers(cond, yes, no),)  # (into two arrays: Triton's cat and stack)
    return (np.where(cond, yes, no),)


# ---- casts -------------------------------------------------------------------------------------
def _round_bf16(x: np.ndarray) -> np.ndarray:
    """Round float32 values to bfloat16 precision (nearest even), kept in float32."""
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    rounded = (bits + np.uint32(0x7FFF) + ((bits >> 16) & 1)) & np.uint32(0xFFFF0000)
    return np.where(np.isnan(x), x, rounded.view(np.float32))


_NARROW = {"f8E4M3FN": "float8_e4m3fn", "f8E5M2": "float8_e5m2"}  # Tile IR element -> NARROW_FLOATS


def _round_to(y: np.ndarray, element: str) -> np.ndarray:
    """A conversion's result rounded to a narrow float's precision (still carried in float32)."""
    if element == "bf16":
        return _round_bf16(y)
    narrow = _NARROW.get(element)
    return y.astype(NARROW_FLOATS[narrow]).astype(np.float32) if narrow is not None else y


def _element(op: Op, operand: bool = False) -> str:
    t = op.operands[0].type if operand else op.results[0].type
    return t.element.name if isinstance(t, T.TileType) and isinstance(t.element, T.ScalarType) else ""


@interpret("exti")
def exti(interp, ctx, op, x):
    src = unsigned(x) if _unsigned_flag(op) else x
    return (src.astype(out_type(op)),)


@interpret("trunci")
def trunci(interp, ctx, op, x):
    with _quiet():
        return (x.astype(out_type(op)),)


@interpret("ftof")
def ftof(interp, ctx, op, x):
    with _quiet():
        y = x.astype(out_type(op))
    return (_round_to(y, _element(op)),)


@interpret("itof")
def itof(interp, ctx, op, x):
    src = unsigned(x) if _unsigned_flag(op) else x
    y = src.astype(out_type(op))
    return (_round_to(y, _element(op)),)


@interpret("ftoi")
def ftoi(interp, ctx, op, x):
    dtype = out_type(op)
    with _quiet():
        t = np.trunc(x)
        info = np.iinfo(np.uint32 if _unsigned_flag(op) and dtype.itemsize == 4 else dtype)
        t = np.clip(np.nan_to_num(t), info.min, info.max)
        return (t.astype(dtype),)


@interpret("bitcast")
def bitcast(interp, ctx, op, x):
    if isinstance(x, (Pointer, Pointers)):  # a pointer to another element type of the same size: the same
        # elements (Triton reads and writes a bool tensor through ptr<i8>: numpy's bool is a byte)
        source, target = (_pointee_bytes(v.type) for v in (op.operands[0], op.results[0]))
        if source is None or source != target:
            raise InterpreterError(f"bitcast at {op.loc.outermost()}: {op.operands[0].type} to {op.results[0].type} "
                                   "reinterprets memory as elements of another size, which the CPU interpreter "
                                   "does not model", op.loc)
        return (x,)
    return (np.ascontiguousarray(x).view(out_type(op)),)


def _pointee_bytes(t: T.Type) -> int | None:
    """Bytes per element of an integer pointee, as memory holds it (i1 in a byte); None for another
    pointee (a float's bits read as an integer would need the memory's bytes, which the interpreter
    keeps as values)."""
    element = t.element if isinstance(t, T.TileType) else t
    if not isinstance(element, T.PointerType) or not isinstance(element.pointee, T.ScalarType) \
            or not element.pointee.is_integer:
        return None
    return max(element.pointee.bitwidth // 8, 1)
