"""The Triton frontend's shape ops: ranges, splats, broadcasts, reshapes, transposes, and the
cat / join / split family (registered by importing this module, see lower.py)."""
from __future__ import annotations

from tilecheck.ir import types as T
from tilecheck.ir.triton.builder import Lowering
from tilecheck.ir.triton.registry import (
    Unsupported,
    handles,
    i32s_attr,
    int_attr,
    operands_of,
    signature,
    tile_of,
    types_of,
)
from tilecheck.ir.triton.ttir import TOp, value_refs
from tilecheck.ir.triton.types import tile_type, with_shape


@handles("tt.make_range")
def make_range(L: Lowering, top: TOp) -> None:
    attrs, type_text = signature(top)
    start, end = int_attr(attrs, "start"), int_attr(attrs, "end")
    t = tile_type(type_text)
    v = L.emit("iota", {}, [t]).result
    if start:
        v = L.emit("addi", {"lhs": [v], "rhs": [L.constant(start, t)]}, [t]).result
    L.bind(top, [v])
    del end


@handles("tt.splat")
def splat(L: Lowering, top: TOp) -> None:
    operands, type_text = signature(top)
    (x,) = operands_of(L, operands)[:1]
    t = tile_type(types_of(type_text)[-1])
    L.bind(top, [L.broadcast_to(x, t.shape)])
    _keep_origin(L, top, operands)


@handles("tt.broadcast", "tt.expand_dims", "tt.reshape")
def reshape(L: Lowering, top: TOp) -> None:
    operands, type_text = signature(top)
    (x,) = operands_of(L, operands)[:1]
    t = tile_type(types_of(type_text)[-1])
    if top.name == "tt.reshape" and "allow_reorder" in operands and not _only_reduced(L, top):
        raise Unsupported("tt.reshape with allow_reorder (the element order is the compiler's choice) "
                          "whose result is used other than by a reduction")
    name = "broadcast" if top.name == "tt.broadcast" else "reshape"
    L.bind(top, L.emit(name, {"source": [x]}, [t]).results)
    _keep_origin(L, top, operands)


def _only_reduced(L: Lowering, top: TOp) -> bool:
    """Every use of ``top``'s result is a reduction (``tl.sum(x)`` over all axes flattens with
    allow_reorder first): the element order the compiler picks cannot change what a reduction whose
    combine is recognised (commutative) computes, so the reshape may keep the order."""
    name = top.results[0] if top.results else None
    users = [op for op in L.scope_of(top) if op is not top and name in value_refs(op.rest)]
    return bool(users) and all(op.name == "tt.reduce" for op in users)


@handles("tt.trans")
def trans(L: Lowering, top: TOp) -> None:
    operands, type_text = signature(top)
    (x,) = operands_of(L, operands)[:1]
    t = tile_type(types_of(type_text)[-1])
    order = i32s_attr(operands, "order")
    L.bind(top, L.emit("permute", {"source": [x]}, [t], {"permutation": order}).results)
    _keep_origin(L, top, operands)


@handles("tt.cat")
def cat(L: Lowering, top: TOp) -> None:
    operands, type_text = signature(top)
    a, b = operands_of(L, operands)[:2]
    t = tile_type(types_of(type_text)[-1])
    L.bind(top, L.emit("cat", {"lhs": [a], "rhs": [b]}, [t], {"dim": 0}).results)


@handles("tt.join")
def join(L: Lowering, top: TOp) -> None:
    operands, type_text = signature(top)
    a, b = operands_of(L, operands)[:2]
    t = tile_type(types_of(type_text)[-1])
    parts = [L.emit("reshape", {"source": [v]}, [with_shape(tile_of(v), (*tile_of(v).shape, 1))]).result for v in (a, b)]
    L.bind(top, L.emit("cat", {"lhs": [parts[0]], "rhs": [parts[1]]}, [t], {"dim": len(t.shape) - 1}).results)


@handles("tt.split")
def split(L: Lowering, top: TOp) -> None:
    """``tl.split``: a tile whose last dimension is 2 -> its two halves along it (join's inverse).
    Each is an ``extract`` of the subtile at index 0 or 1 of the last dimension, reshaped to drop it
    (the verifier takes an extract's values as unknown: exact on the interpreter, sound statically)."""
    operands, _ = signature(top)
    (x,) = operands_of(L, operands)[:1]
    source = tile_of(x)
    if not source.shape or source.shape[-1] != 2:
        raise Unsupported(f"tt.split of a {source}: its last dimension must be 2")
    half = with_shape(source, (*source.shape[:-1], 1))
    out = with_shape(source, source.shape[:-1])
    index = T.TileType((), T.I32)
    parts = []
    for k in (0, 1):
        indices = [L.constant(0, index)] * (len(source.shape) - 1) + [L.constant(k, index)]
        piece = L.emit("extract", {"source": [x], "indices": indices}, [half]).result
        parts.append(L.emit("reshape", {"source": [piece]}, [out]).result)
    L.bind(top, parts)


def _keep_origin(L: Lowering, top: TOp, operands: str) -> None:
    refs = value_refs(operands)
    if refs and refs[0] in L.origin:
        for name in top.results:
            L.origin[name] = L.origin[refs[0]]
    elif refs and refs[0] in L.choices and top.name == "tt.splat":
        # a choice between two scalar pointers splat to a tile: the same choice for every lane
        # (``ops._choice_plus`` broadcasts its sides and condition to the offset's shape)
        for name in top.results:
            L.choices[name] = L.choices[refs[0]]
