"""The op map of the Triton frontend: one small function per TTIR op family (see lower.py)."""
from __future__ import annotations

import math
import re
from typing import Any

from tilecheck.ir import types as T
from tilecheck.ir.attrs import DenseElements, float_to_bits
from tilecheck.ir.core import Block, Region, Value
from tilecheck.ir.triton.builder import Lowering
from tilecheck.ir.triton.registry import (
    Unsupported,
    attr_text,
    handles,
    int_attr,
    operands_of,
    scalar_of,
    signature,
    tile_of,
    typed_value,
    types_of,
)
from tilecheck.ir.triton.ttir import TOp, split_top, value_refs
from tilecheck.ir.triton.types import tile_type, with_element, with_shape


# ---- constants -----------------------------------------------------------------------------------
@handles("arith.constant")
def constant(L: Lowering, top: TOp) -> None:
    value, type_text = signature(top)
    value = value.strip()
    t = tile_type(type_text) if type_text else T.TileType((), T.I1)
    element = scalar_of(t)
    if value.startswith("dense<") and value.endswith(">"):
        value = value[len("dense<"):-1]
    items = [x.strip() for x in value.replace("[", " ").replace("]", " ").split(",") if x.strip()]
    if not items:
        raise Unsupported("an empty constant")
    values = tuple(_element_bits(element, x) for x in items)
    if len(values) > 1 and all(v == values[0] for v in values):
        values = values[:1]
    if len(values) not in (1, math.prod(t.shape)):
        raise Unsupported(f"a constant of {len(values)} values for {t}")
    op = L.emit("constant", {}, [t], {"value": DenseElements(element.name, values, element.is_float)})
    L.bind(top, op.results)


def _element_bits(element: T.ScalarType, text: str) -> int:
    text = text.split(":")[0].strip()
    if text in ("true", "false"):
        return int(text == "true")
    if element.is_float:
        if text.lower().startswith("0x"):
            return int(text, 16)
        return float_to_bits(element.name, float(text))
    return int(text, 0)


# ---- arithmetic ----------------------------------------------------------------------------------
_SIGNED, _UNSIGNED = {"signedness": "signed"}, {"signedness": "unsigned"}
_BINARY = {
    "arith.addi": ("addi", {}), "arith.subi": ("subi", {}), "arith.muli": ("muli", {}),
    "arith.divsi": ("divi", _SIGNED), "arith.divui": ("divi", _UNSIGNED),
    "arith.ceildivsi": ("divi", {**_SIGNED, "rounding": "positive_inf"}),
    "arith.ceildivui": ("divi", {**_UNSIGNED, "rounding": "positive_inf"}),
    "arith.floordivsi": ("divi", {**_SIGNED, "rounding": "negative_inf"}),
    "arith.remsi": ("remi", _SIGNED), "arith.remui": ("remi", _UNSIGNED),
    "arith.andi": ("andi", {}), "arith.ori": ("ori", {}), "arith.xori": ("xori", {}),
    "arith.shli": ("shli", {}), "arith.shrsi": ("shri", _SIGNED), "arith.shrui": ("shri", _UNSIGNED),
    "arith.maxsi": ("maxi", _SIGNED), "arith.maxui": ("maxi", _UNSIGNED),
    "arith.minsi": ("mini", _SIGNED), "arith.minui": ("mini", _UNSIGNED),
    "arith.addf": ("addf", {}), "arith.subf": ("subf", {}), "arith.mulf": ("mulf", {}),
    "arith.divf": ("divf", {}), "tt.precise_divf": ("divf", {}), "arith.remf": ("remf", {}),
    "arith.maximumf": ("maxf", {"propagate_nan": True}), "arith.minimumf": ("minf", {"propagate_nan": True}),
    "arith.maxnumf": ("maxf", {}), "arith.minnumf": ("minf", {}),
    "math.powf": ("pow", {}), "math.atan2": ("atan2", {}), "tt.mulhiui": ("mulhii", {}),
}
_UNARY = {
    "math.exp": "exp", "math.exp2": "exp2", "math.log": "log", "math.log2": "log2", "math.sqrt": "sqrt",
    "tt.precise_sqrt": "sqrt", "math.rsqrt": "rsqrt", "math.sin": "sin", "math.cos": "cos",
    "math.tan": "tan", "math.tanh": "tanh", "math.sinh": "sinh", "math.cosh": "cosh",
    "math.absf": "absf", "math.absi": "absi", "math.floor": "floor", "math.ceil": "ceil",
    "arith.negf": "negf",
}


@handles(*_BINARY)
def binary(L: Lowering, top: TOp) -> None:
    name, attrs = _BINARY[top.name]
    operands, type_text = signature(top)
    lhs, rhs = operands_of(L, operands)[:2]
    L.bind(top, L.emit(name, {"lhs": [lhs], "rhs": [rhs]}, [tile_type(type_text)], attrs).results)


@handles(*_UNARY)
def unary(L: Lowering, top: TOp) -> None:
    operands, type_text = signature(top)
    (x,) = operands_of(L, operands)[:1]
    L.bind(top, L.emit(_UNARY[top.name], {"source": [x]}, [tile_type(type_text)]).results)


@handles("tt.clampf")
def clampf(L: Lowering, top: TOp) -> None:
    """``tl.clamp(x, lo, hi)``: ``minf(maxf(x, lo), hi)`` (NaN handling as its propagateNan says)."""
    operands, type_text = signature(top)
    x, lo, hi = operands_of(L, operands)[:3]
    t = tile_type(type_text)
    nan = {"propagate_nan": "all" in (attr_text(operands, "propagateNan") or "")}
    low = L.emit("maxf", {"lhs": [x], "rhs": [lo]}, [t], nan).result
    L.bind(top, L.emit("minf", {"lhs": [low], "rhs": [hi]}, [t], nan).results)


@handles("math.fma")
def fma(L: Lowering, top: TOp) -> None:
    operands, type_text = signature(top)
    a, b, c = operands_of(L, operands)[:3]
    L.bind(top, L.emit("fma", {"lhs": [a], "rhs": [b], "acc": [c]}, [tile_type(type_text)]).results)


_INT_PREDICATES = {"eq": ("equal", "signed"), "ne": ("not_equal", "signed"), "slt": ("less_than", "signed"),
                   "sle": ("less_than_or_equal", "signed"), "sgt": ("greater_than", "signed"),
                   "sge": ("greater_than_or_equal", "signed"), "ult": ("less_than", "unsigned"),
                   "ule": ("less_than_or_equal", "unsigned"), "ugt": ("greater_than", "unsigned"),
                   "uge": ("greater_than_or_equal", "unsigned")}
_FLOAT_PREDICATES = {"eq": "equal", "ne": "not_equal", "lt": "less_than", "le": "less_than_or_equal",
                     "gt": "greater_than", "ge": "greater_than_or_equal"}


@handles("arith.cmpi", "arith.cmpf")
def compare(L: Lowering, top: TOp) -> None:
    operands, type_text = signature(top)
    predicate, _, rest = operands.strip().partition(",")
    lhs, rhs = operands_of(L, rest)[:2]
    result = with_element(tile_type(type_text), T.I1)
    predicate = predicate.strip()
    if top.name == "arith.cmpi":
        name, signedness = _INT_PREDICATES[predicate]
        attrs = {"comparison_predicate": name, "signedness": signedness}
        L.bind(top, L.emit("cmpi", {"lhs": [lhs], "rhs": [rhs]}, [result], attrs).results)
        return
    if predicate in ("ord", "uno", "true", "false") or predicate[1:] not in _FLOAT_PREDICATES:
        raise Unsupported(f"arith.cmpf {predicate}")
    attrs = {"comparison_predicate": _FLOAT_PREDICATES[predicate[1:]],
             "comparison_ordering": "ordered" if predicate[0] == "o" else "unordered"}
    L.bind(top, L.emit("cmpf", {"lhs": [lhs], "rhs": [rhs]}, [result], attrs).results)


@handles("arith.select")
def select(L: Lowering, top: TOp) -> None:
    operands, type_text = signature(top)
    cond, yes, no = operands_of(L, operands)[:3]
    t = tile_type(types_of(type_text)[-1])
    cond = L.broadcast_to(cond, t.shape)
    L.bind(top, L.emit("select", {"cond": [cond], "val_if_true": [yes], "val_if_false": [no]}, [t]).results)
    names = value_refs(operands)[1:3]
    sides = [_pointing(L, name) for name in names]
    if len(names) == 2 and all(side is not None for side in sides):  # pointers: where each side points
        L.choices[top.results[0]] = (cond, (yes, sides[0]), (no, sides[1]))


def _pointing(L: Lowering, name: str) -> Any:
    """Where the TTIR pointer ``name`` points: its parameter's index, a choice between two (the form
    ``Lowering.choices`` keeps), or None when not known."""
    if name in L.origin:
        return L.origin[name]
    return L.choices.get(name)


_CASTS = {
    "arith.extsi": ("exti", _SIGNED), "arith.extui": ("exti", _UNSIGNED), "arith.trunci": ("trunci", {}),
    "arith.sitofp": ("itof", _SIGNED), "arith.uitofp": ("itof", _UNSIGNED),
    "arith.fptosi": ("ftoi", _SIGNED), "arith.fptoui": ("ftoi", _UNSIGNED),
    "arith.extf": ("ftof", {}), "arith.truncf": ("ftof", {}), "tt.fp_to_fp": ("ftof", {}),
    "arith.bitcast": ("bitcast", {}), "tt.bitcast": ("bitcast", {}),
    "tt.int_to_ptr": ("int_to_ptr", {}), "tt.ptr_to_int": ("ptr_to_int", {}),
}


@handles(*_CASTS, "arith.index_cast", "arith.index_castui")
def cast(L: Lowering, top: TOp) -> None:
    operands, type_text = signature(top)
    (x,) = operands_of(L, operands)[:1]
    sep = " to " if " to " in type_text else "->"
    target = tile_type(split_top(type_text, sep)[-1])
    if top.name.startswith("arith.index_cast"):
        source = scalar_of(tile_of(x))
        if source.bitwidth == scalar_of(target).bitwidth:
            L.bind(top, [x])
            return
        signed = _SIGNED if top.name == "arith.index_cast" else _UNSIGNED
        name, attrs = ("exti", signed) if source.bitwidth < scalar_of(target).bitwidth else ("trunci", {})
    else:
        name, attrs = _CASTS[top.name]
    L.bind(top, L.emit(name, {"source": [x]}, [target], attrs).results)


# ---- grid ----------------------------------------------------------------------------------------
_AXES = {"x": 0, "y": 1, "z": 2}


@handles("tt.get_program_id", "tt.get_num_programs")
def program_id(L: Lowering, top: TOp) -> None:
    axis_text = signature(top)[0].strip()
    axis = _AXES.get(axis_text, None)
    if axis is None:
        m = re.search(r"axis\s*=\s*(\d+)", axis_text)
        if m is None:
            raise Unsupported(f"{top.name} {axis_text}")
        axis = int(m.group(1))
    values = L.block_ids if top.name == "tt.get_program_id" else L.num_blocks
    L.bind(top, [values[axis]])


# ---- pointers and memory -------------------------------------------------------------------------
@handles("tt.addptr")
def addptr(L: Lowering, top: TOp) -> None:
    operands, type_text = signature(top)
    ptr_name, off_name = value_refs(operands)[:2]
    array = L.origin.get(ptr_name)
    ptr = L.value(ptr_name)
    if array is None and ptr_name in L.choices:  # a choice between arrays (cat, stack): each side moved
        value, where = _choice_plus(L, L.choices[ptr_name], L.value(off_name))
        L.bind(top, [value])
        L.choices[top.results[0]] = where
        return
    if array is None and not isinstance(tile_of(ptr).element, T.PointerType):
        raise Unsupported("pointer arithmetic on a pointer whose array is not known (not derived from a "
                           "pointer parameter)")
    # (a pointer chosen between arrays by a branch the lowering does not follow: every array a Triton
    # parameter points into is one of elements, stride 1, so the offset needs no array's stride)
    L.bind(top, [pointer_plus(L, ptr, array, L.value(off_name))])
    for name in top.results:
        if array is not None:
            L.origin[name] = array


def _choice_plus(L: Lowering, choice: Any, off: Value) -> tuple[Value, Any]:
    """``select(c, yes, no) + off`` as ``select(c, yes + off, no + off)``, each side scaled by its own
    array's stride: the static model then knows each lane's array and coordinates."""
    cond, yes, no = choice
    sides = [(pointer_plus(L, L.broadcast_to(value, tile_of(off).shape), at, off), at) if isinstance(at, int)
             else _choice_plus(L, at, off) for value, at in (yes, no)]
    t = tile_of(sides[0][0])
    cond = L.broadcast_to(cond, t.shape)
    value = L.emit("select", {"cond": [cond], "val_if_true": [sides[0][0]], "val_if_false": [sides[1][0]]}, [t]).result
    return value, (cond, sides[0], sides[1])


def pointer_plus(L: Lowering, ptr: Value, array: int | None, off: Value) -> Value:
    """``ptr + off`` elements of parameter ``array``: an ``offset`` by ``off`` times the array's
    stride (1 where the array is one of several)."""
    t = tile_of(off)
    wide = with_element(t, T.I64)
    if scalar_of(t) != T.I64:
        off = L.emit("exti", {"source": [off]}, [wide], {"signedness": "signed"}).result
    if array is not None:
        off = L.emit("muli", {"lhs": [off], "rhs": [L.broadcast_to(L.stride[array], t.shape)]}, [wide]).result
    return L.emit("offset", {"ptr": [ptr], "offset": [off]}, [tile_of(ptr)]).result


def _mem_attrs(order: str = "weak", scope: str | None = None) -> dict[str, object]:
    attrs: dict[str, object] = {"memory_ordering_semantics": order}
    if scope is not None:
        attrs["memory_scope"] = scope
    return attrs


def _not_a_pointer(what: str, type_text: str) -> str:
    """Why a load's or store's address is no tile of pointers: a block pointer (``!tt.ptr<tensor<``),
    or a value the frontend could not follow (an op it does not map made it: named above)."""
    if "!tt.ptr<tensor<" in type_text:
        return f"{what} a block pointer"
    return (f"{what} a pointer whose array is not known (made by an op named above, e.g. a branch that chooses "
            "between arrays)")


@handles("tt.load")
def load(L: Lowering, top: TOp) -> None:
    operands, type_text = signature(top)
    refs = value_refs(operands.split("{")[0])
    ptr = L.value(refs[0])
    t = tile_of(ptr)
    if not isinstance(t.element, T.PointerType):
        raise Unsupported(_not_a_pointer("tt.load of", type_text))
    groups: dict[str, list[Value]] = {"source": [ptr]}
    if len(refs) > 1:
        groups["mask"] = [L.broadcast_to(L.value(refs[1]), t.shape)]
    if len(refs) > 2:
        groups["paddingValue"] = [L.broadcast_to(L.value(refs[2]), t.shape)]
    op = L.memory("load_ptr_tko", groups, [with_element(t, t.element.pointee)], _mem_attrs())
    L.bind(top, op.results[:1])


@handles("tt.store")
def store(L: Lowering, top: TOp) -> None:
    operands, _ = signature(top)
    refs = value_refs(operands.split("{")[0])
    ptr, value = L.value(refs[0]), L.value(refs[1])
    t = tile_of(ptr)
    if not isinstance(t.element, T.PointerType):
        raise Unsupported(_not_a_pointer("tt.store to", signature(top)[1]))
    groups: dict[str, list[Value]] = {"destination": [ptr], "value": [value]}
    if len(refs) > 2:
        groups["mask"] = [L.broadcast_to(L.value(refs[2]), t.shape)]
    L.memory("store_ptr_tko", groups, [], _mem_attrs())


_RMW_MODES = {"and": "and", "or": "or", "xor": "xor", "add": "add", "fadd": "addf", "max": "max", "min": "min",
              "umax": "umax", "umin": "umin", "exch": "xchg"}
_SCOPES = {"gpu": "device", "cta": "tl_blk", "sys": "sys"}
_ORDERS = ("relaxed", "acquire", "release", "acq_rel")


def _order_scope(order: str, scope: str) -> dict[str, object]:
    if order not in _ORDERS or scope not in _SCOPES:
        raise Unsupported(f"memory order {order} at scope {scope}")
    return _mem_attrs(order, _SCOPES[scope])


@handles("tt.atomic_rmw")
def atomic_rmw(L: Lowering, top: TOp) -> None:
    operands, type_text = signature(top)
    words = [w.strip() for w in operands.split(",")]
    mode, order, scope = words[:3]
    if mode not in _RMW_MODES:
        raise Unsupported(f"tt.atomic_rmw {mode}")
    refs = value_refs(",".join(words[3:]))
    ptr, arg = L.value(refs[0]), L.value(refs[1])
    t = tile_of(ptr)
    groups: dict[str, list[Value]] = {"pointers": [ptr], "arg": [L.broadcast_to(arg, t.shape)]}
    if len(refs) > 2:
        groups["mask"] = [L.broadcast_to(L.value(refs[2]), t.shape)]
    element = tile_of(arg).element
    attrs = {**_order_scope(order, scope), "mode": _RMW_MODES[mode]}
    op = L.memory("atomic_rmw_tko", groups, [with_element(t, element)], attrs)
    L.bind(top, op.results[:1])


@handles("tt.atomic_cas")
def atomic_cas(L: Lowering, top: TOp) -> None:
    operands, _ = signature(top)
    words = [w.strip() for w in operands.split(",")]
    order, scope = words[:2]
    refs = value_refs(",".join(words[2:]))
    ptr, cmp, val = (L.value(r) for r in refs[:3])
    t = tile_of(ptr)
    groups = {"pointers": [ptr], "cmp": [L.broadcast_to(cmp, t.shape)], "val": [L.broadcast_to(val, t.shape)]}
    op = L.memory("atomic_cas_tko", groups, [with_element(t, tile_of(val).element)], _order_scope(order, scope))
    L.bind(top, op.results[:1])


@handles("gpu.barrier", "ttg.barrier")
def barrier(L: Lowering, top: TOp) -> None:
    """``tl.debug_barrier()``: the program's memory ops are already in program order (module doc)."""


@handles("tt.assert")
def assert_(L: Lowering, top: TOp) -> None:
    operands, _ = signature(top)
    (cond,) = operands_of(L, operands)[:1]
    m = re.search(r'"((?:[^"\\]|\\.)*)"', operands)
    L.emit("assert", {"condition": [cond]}, [], {"message": m.group(1) if m else ""})


@handles("tt.return")
def return_(L: Lowering, top: TOp) -> None:
    if value_refs(top.rest):
        raise Unsupported("a kernel that returns values")
    L.emit("return", {"operands": []}, [])


# ---- matrix multiply -----------------------------------------------------------------------------
@handles("tt.dot")
def dot(L: Lowering, top: TOp) -> None:
    operands, type_text = signature(top)
    a, b, c = operands_of(L, operands)[:3]
    t = tile_type(types_of(type_text.replace(" * ", ", "))[-1])
    if scalar_of(t).is_float:
        L.bind(top, L.emit("mmaf", {"lhs": [a], "rhs": [b], "acc": [c]}, [t]).results)
    else:
        attrs = {"signedness_lhs": "signed", "signedness_rhs": "signed"}
        L.bind(top, L.emit("mmai", {"lhs": [a], "rhs": [b], "acc": [c]}, [t], attrs).results)


# ---- reductions ----------------------------------------------------------------------------------
# identity of a recognised combine (one op of the two block arguments), by op name
_IDENTITIES = {"arith.addf": 0.0, "arith.addi": 0, "arith.mulf": 1.0, "arith.muli": 1, "arith.ori": 0,
               "arith.xori": 0, "arith.andi": -1, "arith.maxnumf": -math.inf, "arith.maximumf": -math.inf,
               "arith.minnumf": math.inf, "arith.minimumf": math.inf, "arith.maxui": 0, "arith.minui": -1}


def _identity(body_ops: list[TOp], args: list[str], element: T.ScalarType) -> float | int:
    ops = [op for op in body_ops if not op.name.endswith(".return")]
    if len(ops) != 1 or sorted(value_refs(ops[0].rest)) != sorted(args):
        raise Unsupported("a reduction whose combine function is not one of add, mul, min, max, and, or, "
                           "xor (its identity is not known)")
    name = ops[0].name
    bits = element.bitwidth
    if name in ("arith.maxsi", "arith.minsi"):
        return -(1 << (bits - 1)) if name == "arith.maxsi" else (1 << (bits - 1)) - 1
    if name not in _IDENTITIES:
        raise Unsupported(f"a reduction combined by {name} (its identity is not known)")
    value = _IDENTITIES[name]
    if name in ("arith.andi", "arith.minui"):
        return (1 << bits) - 1 if bits > 1 else 1
    return value


@handles("tt.reduce", "tt.scan")
def reduction(L: Lowering, top: TOp) -> None:
    operands, type_text = signature(top)
    inputs = operands_of(L, operands.split("<{")[0])
    axis = int_attr(operands, "axis")
    region = top.regions[0]
    n = len(inputs)
    if len(region.args) != 2 * n:
        raise Unsupported(f"{top.name} with {len(region.args)} combine arguments for {n} operands")
    element = scalar_of(tile_of(inputs[0]))
    try:
        if n != 1:  # several tensors combined together (argmax with its index, Welford's mean and M2)
            raise Unsupported("a combine of several tensors")
        identities: tuple[object, ...] = (typed_value(element, _identity(region.ops, [n for n, _ in region.args],
                                                                           element)),)
    except Unsupported:
        # a combine of several ops (Liger's segmented add for tl.associative_scan), or of several
        # tensors: it has no identity to name, and needs none: the fold starts from the first element
        identities = ()
    result_types = [tile_type(t) for t in types_of(type_text)[n:]]
    lhs = tuple(Value(T.TileType((), scalar_of(tile_of(v)))) for v in inputs)
    block_args = lhs + tuple(Value(a.type) for a in lhs)
    saved_ops = L.ops
    L.ops = []
    for (name, _), v in zip(region.args, block_args):
        L.env[name] = v

    def finish(ret: TOp) -> None:
        L.emit("yield", {"operands": operands_of(L, signature(ret)[0])}, [])

    L.region(region, terminator=finish)
    body = Block(block_args, L.ops)
    L.ops = saved_ops
    attrs: dict[str, object] = {"dim": axis, "identities": identities}
    name = "reduce" if top.name == "tt.reduce" else "scan"
    if name == "scan":
        attrs["reverse"] = (attr_text(operands, "reverse") or "false").startswith("true")
    op = L.emit(name, {"operands": inputs}, result_types, attrs, [Region((body,))])
    L.bind(top, op.results)


# ---- tensor descriptors ----------------------------------------------------------------------------
@handles("tt.make_tensor_descriptor")
def make_tensor_descriptor(L: Lowering, top: TOp) -> None:
    """A descriptor is remembered, not emitted: its loads and stores become masked pointer tiles."""
    head = signature(top)[0]
    groups = re.findall(r"\[([^\]]*)\]", head)
    base = value_refs(head.split("[", 1)[0])
    if len(groups) != 2 or len(base) != 1 or base[0] not in L.origin:
        raise Unsupported("a tensor descriptor over a pointer whose array is not known")
    shape = [L.value(r) for r in value_refs(groups[0])]
    strides = [L.value(r) for r in value_refs(groups[1])]
    L.descriptors[top.results[0]] = (base[0], shape, strides)


def _descriptor_tile(L: Lowering, text: str, block: tuple[int, ...]) -> tuple[Value, Value]:
    """The pointer tile and in-bounds mask of a descriptor access ``%desc[%o0, ...]`` of ``block``:
    element (i, j, ...) is at (o0 + i, o1 + j, ...), inside when every coordinate is in [0, shape)."""
    name = value_refs(text.split("[", 1)[0])[0]
    if name not in L.descriptors:
        raise Unsupported("a tensor descriptor not made in this kernel")
    base_name, shape, strides = L.descriptors[name]
    offsets = [L.value(r) for r in value_refs(text.split("[", 1)[1].split("]", 1)[0])]
    if len(offsets) == len(shape) == len(strides) > len(block):
        # Triton drops a block's leading unit dimensions from the tile it loads ([1, M, K] -> [M, K])
        pointers, inside = _descriptor_tile(L, text, (1,) * (len(offsets) - len(block)) + tuple(block))
        return tuple(L.emit("reshape", {"source": [v]}, [with_shape(tile_of(v), tuple(block))]).result
                     for v in (pointers, inside))
    if not (len(offsets) == len(shape) == len(strides) == len(block)):
        raise Unsupported("a tensor descriptor access of another rank than its block")
    i64, i1 = T.TileType(block, T.I64), T.TileType(block, T.I1)
    linear = inside = None
    for d, (off, extent, stride) in enumerate(zip(offsets, shape, strides)):
        lanes = L.emit("iota", {}, [T.TileType((block[d],), T.I32)]).result
        lanes = L.emit("exti", {"source": [lanes]}, [T.TileType((block[d],), T.I64)], {"signedness": "signed"}).result
        ones = tuple(n if k == d else 1 for k, n in enumerate(block))
        lanes = L.broadcast_to(L.emit("reshape", {"source": [lanes]}, [T.TileType(ones, T.I64)]).result, block)
        coord = L.emit("addi", {"lhs": [lanes], "rhs": [L.broadcast_to(_wide(L, off), block)]}, [i64]).result
        lo = L.emit("cmpi", {"lhs": [coord], "rhs": [L.constant(0, i64)]}, [i1],
                    {"comparison_predicate": "greater_than_or_equal", "signedness": "signed"}).result
        hi = L.emit("cmpi", {"lhs": [coord], "rhs": [L.broadcast_to(_wide(L, extent), block)]}, [i1],
                    {"comparison_predicate": "less_than", "signedness": "signed"}).result
        ok = L.emit("andi", {"lhs": [lo], "rhs": [hi]}, [i1]).result
        inside = ok if inside is None else L.emit("andi", {"lhs": [inside], "rhs": [ok]}, [i1]).result
        term = L.emit("muli", {"lhs": [coord], "rhs": [L.broadcast_to(_wide(L, stride), block)]}, [i64]).result
        linear = term if linear is None else L.emit("addi", {"lhs": [linear], "rhs": [term]}, [i64]).result
    base = L.value(base_name)
    pointers = pointer_plus(L, L.broadcast_to(base, block), L.origin[base_name], linear)
    return pointers, inside


def _wide(L: Lowering, v: Value) -> Value:
    """``v`` as a 0-d i64 tile."""
    if scalar_of(tile_of(v)) == T.I64:
        return v
    return L.emit("exti", {"source": [v]}, [T.TileType(tile_of(v).shape, T.I64)], {"signedness": "signed"}).result


@handles("tt.descriptor_load")
def descriptor_load(L: Lowering, top: TOp) -> None:
    operands, type_text = signature(top)
    t = tile_type(types_of(type_text)[-1])
    pointers, inside = _descriptor_tile(L, operands, t.shape)
    padding = L.constant(0, t)
    op = L.memory("load_ptr_tko", {"source": [pointers], "mask": [inside], "paddingValue": [padding]}, [t],
                  _mem_attrs())
    L.bind(top, op.results[:1])


@handles("tt.descriptor_store")
def descriptor_store(L: Lowering, top: TOp) -> None:
    operands, _ = signature(top)
    value = L.value(value_refs(operands.split("]", 1)[1])[0])
    pointers, inside = _descriptor_tile(L, operands, tile_of(value).shape)
    L.memory("store_ptr_tko", {"destination": [pointers], "value": [value], "mask": [inside]}, [], _mem_attrs())
