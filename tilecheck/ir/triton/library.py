"""TTIR -> Tile IR for what Tile IR has no op of its own: libdevice's functions (those that are
Tile IR ops under another name, and ``erf`` written in Tile IR arithmetic) and ``tl.histogram``."""
from __future__ import annotations

from tilecheck.ir import types as T
from tilecheck.ir.core import Block, Region, Value
from tilecheck.ir.triton.builder import Lowering
from tilecheck.ir.triton.registry import (
    Unsupported,
    attr_text,
    handles,
    operands_of,
    scalar_of,
    signature,
    tile_of,
    typed_value,
    types_of,
)
from tilecheck.ir.triton.ttir import TOp
from tilecheck.ir.triton.types import tile_type, with_element, with_shape


# libdevice functions (``tt.extern_elementwise``, pure ones) that are Tile IR ops, by name without
# the ``__nv_`` prefix and the ``f`` of the float version
_LIBDEVICE = {"rsqrt": "rsqrt", "sqrt": "sqrt", "exp": "exp", "exp2": "exp2", "log": "log", "log2": "log2",
              "tanh": "tanh", "sin": "sin", "cos": "cos", "tan": "tan", "sinh": "sinh", "cosh": "cosh",
              "fabs": "absf", "floor": "floor", "ceil": "ceil", "pow": "pow", "atan2": "atan2",
              "fmax": "maxf", "fmin": "minf"}


# libdevice functions that lower to other Tile IR ops: correctly rounded division, a float to an
# integer power, the error function
_LIBDEVICE_LOWERED = {"fdiv_rn": "divf", "div_rn": "divf", "powif": "fpowi", "powi": "fpowi", "erff": "erf",
                      "erf": "erf"}


@handles("tt.extern_elementwise")
def extern_elementwise(L: Lowering, top: TOp) -> None:
    operands, type_text = signature(top)
    symbol = (attr_text(operands, "symbol") or "").strip('"')
    pure = (attr_text(operands, "pure") or "").startswith("true")
    base = symbol.removeprefix("__nv_")
    name = _LIBDEVICE_LOWERED.get(base) or _LIBDEVICE.get(base) or (
        _LIBDEVICE.get(base[:-1]) if base.endswith("f") else None)
    if not pure or name is None:
        raise Unsupported(f"the library function {symbol or '?'} (tt.extern_elementwise) has no Tile IR "
                          "counterpart here")
    args = operands_of(L, operands.split("{")[0])
    result = tile_type(types_of(type_text)[-1])
    if name == "erf" and len(args) == 1:
        L.bind(top, [erf(L, args[0], result)])
    elif len(args) == 1:
        L.bind(top, L.emit(name, {"source": args}, [result]).results)
    elif len(args) == 2:
        L.bind(top, L.emit(name, {"lhs": [args[0]], "rhs": [args[1]]}, [result]).results)
    else:
        raise Unsupported(f"the library function {symbol} with {len(args)} arguments")


# erfc(z) = t * exp(-z*z + P(t)), t = 1 / (1 + z/2), for z >= 0 (Numerical Recipes' Chebyshev fit:
# fractional error below 1.2e-7): Tile IR has no erf, and Triton's erf is libdevice's
_ERFC = (-1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806, 0.27886807, -1.13520398, 1.48851587,
         -0.82215223, 0.17087277)


def erf(L: Lowering, x: Value, t: T.TileType) -> Value:
    """``erf(x)`` in Tile IR ops: ``1 - erfc(|x|)``, its sign that of ``x``."""
    def binary(name: str, a: Value, b: Value) -> Value:
        return L.emit(name, {"lhs": [a], "rhs": [b]}, [t]).result

    z = L.emit("absf", {"source": [x]}, [t]).result
    one = L.constant(1.0, t)
    u = binary("divf", one, binary("addf", one, binary("mulf", z, L.constant(0.5, t))))
    poly = L.constant(_ERFC[-1], t)
    for c in reversed(_ERFC[:-1]):  # Horner: c0 + t*(c1 + t*(...))
        poly = binary("addf", L.constant(c, t), binary("mulf", u, poly))
    exponent = binary("subf", poly, binary("mulf", z, z))
    erfc = binary("mulf", u, L.emit("exp", {"source": [exponent]}, [t]).result)
    positive = binary("subf", one, erfc)
    below = L.emit("cmpf", {"lhs": [x], "rhs": [L.constant(0.0, t)]}, [with_element(t, T.I1)],
                   {"comparison_predicate": "less_than", "comparison_ordering": "ordered"}).result
    negative = L.emit("negf", {"source": [positive]}, [t]).result
    return L.emit("select", {"cond": [below], "val_if_true": [negative], "val_if_false": [positive]}, [t]).result


@handles("math.erf")
def math_erf(L: Lowering, top: TOp) -> None:
    operands, type_text = signature(top)
    (x,) = operands_of(L, operands)[:1]
    L.bind(top, [erf(L, x, tile_type(type_text))])



@handles("tt.histogram")
def histogram(L: Lowering, top: TOp) -> None:
    """``tl.histogram(x, BINS[, mask])``: bin ``b`` counts the lanes of ``x`` equal to ``b`` (values
    outside ``[0, BINS)`` and masked lanes count nowhere), as Tile IR: the lanes compared with every
    bin (a ``len(x) x BINS`` tile), then summed over the lanes."""
    operands, type_text = signature(top)
    refs = operands_of(L, operands.split("{")[0])
    x, mask = refs[0], (refs[1] if len(refs) > 1 else None)
    source, result = tile_of(x), tile_type(types_of(type_text)[-1])
    if len(source.shape) != 1 or len(result.shape) != 1:
        raise Unsupported("tt.histogram of a tile of rank other than 1")
    (lanes,), (bins,) = source.shape, result.shape
    element = scalar_of(source)
    grid = (lanes, bins)

    def column(v: Value, t: T.TileType) -> Value:  # (lanes,) -> (lanes, bins)
        return L.broadcast_to(L.emit("reshape", {"source": [v]}, [with_shape(t, (lanes, 1))]).result, grid)

    numbers = L.emit("iota", {}, [T.TileType((bins,), element)]).result
    row = L.broadcast_to(L.emit("reshape", {"source": [numbers]}, [T.TileType((1, bins), element)]).result, grid)
    hit = L.emit("cmpi", {"lhs": [column(x, source)], "rhs": [row]}, [T.TileType(grid, T.I1)],
                 {"comparison_predicate": "equal", "signedness": "signed"}).result
    if mask is not None:
        hit = L.emit("andi", {"lhs": [hit], "rhs": [column(mask, tile_of(mask))]}, [T.TileType(grid, T.I1)]).result
    counts = T.TileType(grid, scalar_of(result))
    ones = L.emit("select", {"cond": [hit], "val_if_true": [L.constant(1, counts)],
                             "val_if_false": [L.constant(0, counts)]}, [counts]).result
    scalar = T.TileType((), scalar_of(result))
    a, b = Value(scalar), Value(scalar)
    saved, L.ops = L.ops, []
    total = L.emit("addi", {"lhs": [a], "rhs": [b]}, [scalar]).result
    L.emit("yield", {"operands": [total]}, [])
    body = Block((a, b), L.ops)
    L.ops = saved
    op = L.emit("reduce", {"operands": [ones]}, [result],
                {"dim": 0, "identities": (typed_value(scalar_of(result), 0),)}, [Region((body,))])
    L.bind(top, op.results)
