"""The op map of the Triton frontend: one small function per TTIR op family (see lower.py)."""
from __future__ import annotations

import math
import re

from tilecheck.ir import types as T
from tilecheck.ir.attrs import DenseElements, float_to_bits
from tilecheck.ir.core import Block, Region, Value
from tilecheck.ir.triton.lower import (
    _Lowering,
    _Unsupported,
    handles,
    signature,
    touches_memory,
    typed_value,
)
from tilecheck.ir.triton.ttir import TOp, split_top, value_refs
from tilecheck.ir.triton.types import tile_type, with_element, with_shape


def _types(text: str) -> list[str]:
    """``(a, b) -> c`` or ``a, b`` -> the type texts, in order (a trailing ``-> r`` included)."""
    out: list[str] = []
    for part in split_top(text, "->"):
        part = part.strip()
        if part.startswith("(") and part.endswith(")"):
            part = part[1:-1]
        out += [t.strip() for t in split_top(part, ",") if t.strip()]
    return out


def _operands(L: _Lowering, text: str) -> list[Value]:
    return [L.value(r) for r in value_refs(text)]


def _attr(text: str, name: str) -> str | None:
    m = re.search(rf"\b{name}\s*=\s*([^,}}]+)", text)
    return m.group(1).strip() if m else None


def _int_attr(text: str, name: str) -> int:
    value = _attr(text, name)
    if value is None:
        raise _Unsupported(f"missing attribute {name}")
    return int(value.split(":")[0].strip())


def _i32s(text: str, name: str) -> tuple[int, ...]:
    m = re.search(rf"\b{name}\s*=\s*array<i32(?::\s*([^>]*))?>", text)
    if m is None:
        raise _Unsupported(f"missing attribute {name}")
    return tuple(int(x) for x in (m.group(1) or "").split(",") if x.strip())


def _tile(v: Value) -> T.TileType:
    assert isinstance(v.type, T.TileType)
    return v.type


def _scalar(t: T.TileType) -> T.ScalarType:
    assert isinstance(t.element, T.ScalarType)
    return t.element


# ---- constants -----------------------------------------------------------------------------------
@handles("arith.constant")
def constant(L: _Lowering, top: TOp) -> None:
    value, type_text = signature(top)
    value = value.strip()
    t = tile_type(type_text) if type_text else T.TileType((), T.I1)
    element = _scalar(t)
    if value.startswith("dense<") and value.endswith(">"):
        value = value[len("dense<"):-1]
    items = [x.strip() for x in value.replace("[", " ").replace("]", " ").split(",") if x.strip()]
    if not items:
        raise _Unsupported("an empty constant")
    values = tuple(_element_bits(element, x) for x in items)
    if len(values) > 1 and all(v == values[0] for v in values):
        values = values[:1]
    if len(values) not in (1, math.prod(t.shape)):
        raise _Unsupported(f"a constant of {len(values)} values for {t}")
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
def binary(L: _Lowering, top: TOp) -> None:
    name, attrs = _BINARY[top.name]
    operands, type_text = signature(top)
    lhs, rhs = _operands(L, operands)[:2]
    L.bind(top, L.emit(name, {"lhs": [lhs], "rhs": [rhs]}, [tile_type(type_text)], attrs).results)


@handles(*_UNARY)
def unary(L: _Lowering, top: TOp) -> None:
    operands, type_text = signature(top)
    (x,) = _operands(L, operands)[:1]
    L.bind(top, L.emit(_UNARY[top.name], {"source": [x]}, [tile_type(type_text)]).results)


@handles("math.fma")
def fma(L: _Lowering, top: TOp) -> None:
    operands, type_text = signature(top)
    a, b, c = _operands(L, operands)[:3]
    L.bind(top, L.emit("fma", {"lhs": [a], "rhs": [b], "acc": [c]}, [tile_type(type_text)]).results)


_INT_PREDICATES = {"eq": ("equal", "signed"), "ne": ("not_equal", "signed"), "slt": ("less_than", "signed"),
                   "sle": ("less_than_or_equal", "signed"), "sgt": ("greater_than", "signed"),
                   "sge": ("greater_than_or_equal", "signed"), "ult": ("less_than", "unsigned"),
                   "ule": ("less_than_or_equal", "unsigned"), "ugt": ("greater_than", "unsigned"),
                   "uge": ("greater_than_or_equal", "unsigned")}
_FLOAT_PREDICATES = {"eq": "equal", "ne": "not_equal", "lt": "less_than", "le": "less_than_or_equal",
                     "gt": "greater_than", "ge": "greater_than_or_equal"}


@handles("arith.cmpi", "arith.cmpf")
def compare(L: _Lowering, top: TOp) -> None:
    operands, type_text = signature(top)
    predicate, _, rest = operands.strip().partition(",")
    lhs, rhs = _operands(L, rest)[:2]
    result = with_element(tile_type(type_text), T.I1)
    predicate = predicate.strip()
    if top.name == "arith.cmpi":
        name, signedness = _INT_PREDICATES[predicate]
        attrs = {"comparison_predicate": name, "signedness": signedness}
        L.bind(top, L.emit("cmpi", {"lhs": [lhs], "rhs": [rhs]}, [result], attrs).results)
        return
    if predicate in ("ord", "uno", "true", "false") or predicate[1:] not in _FLOAT_PREDICATES:
        raise _Unsupported(f"arith.cmpf {predicate}")
    attrs = {"comparison_predicate": _FLOAT_PREDICATES[predicate[1:]],
             "comparison_ordering": "ordered" if predicate[0] == "o" else "unordered"}
    L.bind(top, L.emit("cmpf", {"lhs": [lhs], "rhs": [rhs]}, [result], attrs).results)


@handles("arith.select")
def select(L: _Lowering, top: TOp) -> None:
    operands, type_text = signature(top)
    cond, yes, no = _operands(L, operands)[:3]
    t = tile_type(_types(type_text)[-1])
    cond = L.broadcast_to(cond, t.shape)
    L.bind(top, L.emit("select", {"cond": [cond], "val_if_true": [yes], "val_if_false": [no]}, [t]).results)


_CASTS = {
    "arith.extsi": ("exti", _SIGNED), "arith.extui": ("exti", _UNSIGNED), "arith.trunci": ("trunci", {}),
    "arith.sitofp": ("itof", _SIGNED), "arith.uitofp": ("itof", _UNSIGNED),
    "arith.fptosi": ("ftoi", _SIGNED), "arith.fptoui": ("ftoi", _UNSIGNED),
    "arith.extf": ("ftof", {}), "arith.truncf": ("ftof", {}), "tt.fp_to_fp": ("ftof", {}),
    "arith.bitcast": ("bitcast", {}), "tt.bitcast": ("bitcast", {}),
    "tt.int_to_ptr": ("int_to_ptr", {}), "tt.ptr_to_int": ("ptr_to_int", {}),
}


@handles(*_CASTS, "arith.index_cast", "arith.index_castui")
def cast(L: _Lowering, top: TOp) -> None:
    operands, type_text = signature(top)
    (x,) = _operands(L, operands)[:1]
    sep = " to " if " to " in type_text else "->"
    target = tile_type(split_top(type_text, sep)[-1])
    if top.name.startswith("arith.index_cast"):
        source = _scalar(_tile(x))
        if source.bitwidth == _scalar(target).bitwidth:
            L.bind(top, [x])
            return
        signed = _SIGNED if top.name == "arith.index_cast" else _UNSIGNED
        name, attrs = ("exti", signed) if source.bitwidth < _scalar(target).bitwidth else ("trunci", {})
    else:
        name, attrs = _CASTS[top.name]
    L.bind(top, L.emit(name, {"source": [x]}, [target], attrs).results)


# ---- grid ----------------------------------------------------------------------------------------
_AXES = {"x": 0, "y": 1, "z": 2}


@handles("tt.get_program_id", "tt.get_num_programs")
def program_id(L: _Lowering, top: TOp) -> None:
    axis_text = signature(top)[0].strip()
    axis = _AXES.get(axis_text, None)
    if axis is None:
        m = re.search(r"axis\s*=\s*(\d+)", axis_text)
        if m is None:
            raise _Unsupported(f"{top.name} {axis_text}")
        axis = int(m.group(1))
    values = L.block_ids if top.name == "tt.get_program_id" else L.num_blocks
    L.bind(top, [values[axis]])


# ---- shapes --------------------------------------------------------------------------------------
@handles("tt.make_range")
def make_range(L: _Lowering, top: TOp) -> None:
    attrs, type_text = signature(top)
    start, end = _int_attr(attrs, "start"), _int_attr(attrs, "end")
    t = tile_type(type_text)
    v = L.emit("iota", {}, [t]).result
    if start:
        v = L.emit("addi", {"lhs": [v], "rhs": [L.constant(start, t)]}, [t]).result
    L.bind(top, [v])
    del end


@handles("tt.splat")
def splat(L: _Lowering, top: TOp) -> None:
    operands, type_text = signature(top)
    (x,) = _operands(L, operands)[:1]
    t = tile_type(_types(type_text)[-1])
    L.bind(top, [L.broadcast_to(x, t.shape)])
    _keep_origin(L, top, operands)


@handles("tt.broadcast", "tt.expand_dims", "tt.reshape")
def reshape(L: _Lowering, top: TOp) -> None:
    operands, type_text = signature(top)
    (x,) = _operands(L, operands)[:1]
    t = tile_type(_types(type_text)[-1])
    if top.name == "tt.reshape" and "allow_reorder" in operands:
        raise _Unsupported("tt.reshape with allow_reorder (the element order is the compiler's choice)")
    name = "broadcast" if top.name == "tt.broadcast" else "reshape"
    L.bind(top, L.emit(name, {"source": [x]}, [t]).results)
    _keep_origin(L, top, operands)


@handles("tt.trans")
def trans(L: _Lowering, top: TOp) -> None:
    operands, type_text = signature(top)
    (x,) = _operands(L, operands)[:1]
    t = tile_type(_types(type_text)[-1])
    order = _i32s(operands, "order")
    L.bind(top, L.emit("permute", {"source": [x]}, [t], {"permutation": order}).results)
    _keep_origin(L, top, operands)


@handles("tt.cat")
def cat(L: _Lowering, top: TOp) -> None:
    operands, type_text = signature(top)
    a, b = _operands(L, operands)[:2]
    t = tile_type(_types(type_text)[-1])
    L.bind(top, L.emit("cat", {"lhs": [a], "rhs": [b]}, [t], {"dim": 0}).results)


@handles("tt.join")
def join(L: _Lowering, top: TOp) -> None:
    operands, type_text = signature(top)
    a, b = _operands(L, operands)[:2]
    t = tile_type(_types(type_text)[-1])
    parts = [L.emit("reshape", {"source": [v]}, [with_shape(_tile(v), (*_tile(v).shape, 1))]).result for v in (a, b)]
    L.bind(top, L.emit("cat", {"lhs": [parts[0]], "rhs": [parts[1]]}, [t], {"dim": len(t.shape) - 1}).results)


def _keep_origin(L: _Lowering, top: TOp, operands: str) -> None:
    refs = value_refs(operands)
    if refs and refs[0] in L.origin:
        for name in top.results:
            L.origin[name] = L.origin[refs[0]]


# ---- pointers and memory -------------------------------------------------------------------------
@handles("tt.addptr")
def addptr(L: _Lowering, top: TOp) -> None:
    operands, type_text = signature(top)
    ptr_name, off_name = value_refs(operands)[:2]
    ptr, off = L.value(ptr_name), L.value(off_name)
    array = L.origin.get(ptr_name)
    if array is None:
        raise _Unsupported("pointer arithmetic on a pointer whose array is not known (not derived from a "
                           "pointer parameter)")
    t = _tile(off)
    wide = with_element(t, T.I64)
    if _scalar(t) != T.I64:
        off = L.emit("exti", {"source": [off]}, [wide], {"signedness": "signed"}).result
    scaled = L.emit("muli", {"lhs": [off], "rhs": [L.broadcast_to(L.stride[array], t.shape)]}, [wide]).result
    L.bind(top, L.emit("offset", {"ptr": [ptr], "offset": [scaled]}, [_tile(ptr)]).results)
    for name in top.results:
        L.origin[name] = array


def _mem_attrs(order: str = "weak", scope: str | None = None) -> dict[str, object]:
    attrs: dict[str, object] = {"memory_ordering_semantics": order}
    if scope is not None:
        attrs["memory_scope"] = scope
    return attrs


@handles("tt.load")
def load(L: _Lowering, top: TOp) -> None:
    operands, type_text = signature(top)
    refs = value_refs(operands.split("{")[0])
    ptr = L.value(refs[0])
    t = _tile(ptr)
    if not isinstance(t.element, T.PointerType):
        raise _Unsupported("tt.load of a block pointer")
    groups: dict[str, list[Value]] = {"source": [ptr]}
    if len(refs) > 1:
        groups["mask"] = [L.broadcast_to(L.value(refs[1]), t.shape)]
    if len(refs) > 2:
        groups["paddingValue"] = [L.broadcast_to(L.value(refs[2]), t.shape)]
    op = L.memory("load_ptr_tko", groups, [with_element(t, t.element.pointee)], _mem_attrs())
    L.bind(top, op.results[:1])


@handles("tt.store")
def store(L: _Lowering, top: TOp) -> None:
    operands, _ = signature(top)
    refs = value_refs(operands.split("{")[0])
    ptr, value = L.value(refs[0]), L.value(refs[1])
    t = _tile(ptr)
    if not isinstance(t.element, T.PointerType):
        raise _Unsupported("tt.store to a block pointer")
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
        raise _Unsupported(f"memory order {order} at scope {scope}")
    return _mem_attrs(order, _SCOPES[scope])


@handles("tt.atomic_rmw")
def atomic_rmw(L: _Lowering, top: TOp) -> None:
    operands, type_text = signature(top)
    words = [w.strip() for w in operands.split(",")]
    mode, order, scope = words[:3]
    if mode not in _RMW_MODES:
        raise _Unsupported(f"tt.atomic_rmw {mode}")
    refs = value_refs(",".join(words[3:]))
    ptr, arg = L.value(refs[0]), L.value(refs[1])
    t = _tile(ptr)
    groups: dict[str, list[Value]] = {"pointers": [ptr], "arg": [L.broadcast_to(arg, t.shape)]}
    if len(refs) > 2:
        groups["mask"] = [L.broadcast_to(L.value(refs[2]), t.shape)]
    element = _tile(arg).element
    attrs = {**_order_scope(order, scope), "mode": _RMW_MODES[mode]}
    op = L.memory("atomic_rmw_tko", groups, [with_element(t, element)], attrs)
    L.bind(top, op.results[:1])


@handles("tt.atomic_cas")
def atomic_cas(L: _Lowering, top: TOp) -> None:
    operands, _ = signature(top)
    words = [w.strip() for w in operands.split(",")]
    order, scope = words[:2]
    refs = value_refs(",".join(words[2:]))
    ptr, cmp, val = (L.value(r) for r in refs[:3])
    t = _tile(ptr)
    groups = {"pointers": [ptr], "cmp": [L.broadcast_to(cmp, t.shape)], "val": [L.broadcast_to(val, t.shape)]}
    op = L.memory("atomic_cas_tko", groups, [with_element(t, _tile(val).element)], _order_scope(order, scope))
    L.bind(top, op.results[:1])


@handles("gpu.barrier")
def barrier(L: _Lowering, top: TOp) -> None:
    """``tl.debug_barrier()``: the program's memory ops are already in program order (module doc)."""


@handles("tt.assert")
def assert_(L: _Lowering, top: TOp) -> None:
    operands, _ = signature(top)
    (cond,) = _operands(L, operands)[:1]
    m = re.search(r'"((?:[^"\\]|\\.)*)"', operands)
    L.emit("assert", {"condition": [cond]}, [], {"message": m.group(1) if m else ""})


@handles("tt.return")
def return_(L: _Lowering, top: TOp) -> None:
    if value_refs(top.rest):
        raise _Unsupported("a kernel that returns values")
    L.emit("return", {"operands": []}, [])


# ---- matrix multiply -----------------------------------------------------------------------------
@handles("tt.dot")
def dot(L: _Lowering, top: TOp) -> None:
    operands, type_text = signature(top)
    a, b, c = _operands(L, operands)[:3]
    t = tile_type(_types(type_text.replace(" * ", ", "))[-1])
    if _scalar(t).is_float:
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
        raise _Unsupported("a reduction whose combine function is not one of add, mul, min, max, and, or, "
                           "xor (its identity is not known)")
    name = ops[0].name
    bits = element.bitwidth
    if name in ("arith.maxsi", "arith.minsi"):
        return -(1 << (bits - 1)) if name == "arith.maxsi" else (1 << (bits - 1)) - 1
    if name not in _IDENTITIES:
        raise _Unsupported(f"a reduction combined by {name} (its identity is not known)")
    value = _IDENTITIES[name]
    if name in ("arith.andi", "arith.minui"):
        return (1 << bits) - 1 if bits > 1 else 1
    return value


@handles("tt.reduce", "tt.scan")
def reduction(L: _Lowering, top: TOp) -> None:
    operands, type_text = signature(top)
    inputs = _operands(L, operands.split("<{")[0])
    axis = _int_attr(operands, "axis")
    region = top.regions[0]
    n = len(inputs)
    if len(region.args) != 2 * n:
        raise _Unsupported(f"{top.name} with {len(region.args)} combine arguments for {n} operands")
    if n != 1:
        raise _Unsupported(f"{top.name} of {n} tensors together (argmin/argmax-style combines)")
    element = _scalar(_tile(inputs[0]))
    identity = _identity(region.ops, [name for name, _ in region.args], element)
    result_types = [tile_type(t) for t in _types(type_text)[n:]]
    lhs = tuple(Value(T.TileType((), _scalar(_tile(v)))) for v in inputs)
    block_args = lhs + tuple(Value(a.type) for a in lhs)
    saved_ops = L.ops
    L.ops = []
    for (name, _), v in zip(region.args, block_args):
        L.env[name] = v

    def finish(ret: TOp) -> None:
        L.emit("yield", {"operands": _operands(L, signature(ret)[0])}, [])

    L.region(region, terminator=finish)
    body = Block(block_args, L.ops)
    L.ops = saved_ops
    attrs: dict[str, object] = {"dim": axis, "identities": (typed_value(element, identity),)}
    name = "reduce" if top.name == "tt.reduce" else "scan"
    if name == "scan":
        attrs["reverse"] = (_attr(operands, "reverse") or "false").startswith("true")
    op = L.emit(name, {"operands": inputs}, result_types, attrs, [Region((body,))])
    L.bind(top, op.results)


# ---- control flow --------------------------------------------------------------------------------
@handles("scf.for")
def for_(L: _Lowering, top: TOp) -> None:
    head, type_text = signature(top)
    m = re.match(r"\s*(%[\w$.\-]+)\s*=\s*(%\S+)\s+to\s+(%\S+)\s+step\s+(%[\w$.\-#]+)(.*)$", head)
    if m is None:
        raise _Unsupported("scf.for of an unexpected form")
    iv_name, lb, ub, step, tail = m.groups()
    lb_v, ub_v, step_v = L.value(lb), L.value(ub), L.value(step)
    if "iter_args" not in tail:
        tail = ""
    iter_names, init_names = _iter_args(L, tail)
    _pass_origins(L, init_names, iter_names, top.results)
    inits = [L.value(n) for n in init_names]
    carry = touches_memory(top.regions[0])
    init_values = inits + ([L.token] if carry else [])
    iv = Value(_tile(lb_v))
    args = (iv, *(Value(v.type) for v in init_values))
    body = _loop_body(L, top.regions[0], [iv_name, *iter_names], args, carry, "continue")
    op = L.emit("for", {"lowerBound": [lb_v], "upperBound": [ub_v], "step": [step_v], "initValues": init_values},
                [v.type for v in init_values], {}, [Region((body,))])
    L.bind(top, op.results[:len(inits)])
    if carry:
        L.token = op.results[-1]


def _iter_args(L: _Lowering, tail: str) -> tuple[list[str], list[str]]:
    """``iter_args(%a = %x, ...)`` (or a while's ``(%a = %x, ...)``): argument and init names."""
    m = re.search(r"\((.*?)\)\s*(->|$)", tail)
    if m is None or not m.group(1).strip():
        return [], []
    names, inits = [], []
    for item in split_top(m.group(1), ","):
        name, _, init = item.partition("=")
        names.append(name.strip())
        inits.append(init.strip())
    return names, inits


def _pass_origins(L: _Lowering, inits: list[str], *targets: list[str]) -> None:
    """A pointer carried by a loop keeps the array of its initial value (a loop that moved a pointer
    to another array would be caught by the verifier: the yielded pointer names a different array)."""
    for k, init in enumerate(inits):
        if init in L.origin:
            for names in targets:
                if k < len(names):
                    L.origin[names[k]] = L.origin[init]


def _loop_body(L: _Lowering, region, names: list[str], args: tuple[Value, ...], carry: bool,
               terminator: str) -> Block:
    saved_ops, saved_token = L.ops, L.token
    L.ops = []
    for name, v in zip(names, args):
        L.env[name] = v
    if carry:
        L.token = args[-1]

    def finish(y: TOp) -> None:
        values = _operands(L, signature(y)[0])
        L.emit(terminator, {"operands": values + ([L.token] if carry else [])}, [])

    L.region(region, terminator=finish)
    if not L.ops or L.ops[-1].name != terminator:
        finish(TOp("scf.yield", [], "", 0))
    body = Block(args, L.ops)
    L.ops, L.token = saved_ops, saved_token
    return body


@handles("scf.if")
def if_(L: _Lowering, top: TOp) -> None:
    head, _ = signature(top)
    cond_name = value_refs(head)[0]
    cond = L.value(cond_name)
    result_types = [tile_type(t) for t in _types(head.split("->", 1)[1])] if "->" in head else []
    carry = any(touches_memory(r) for r in top.regions)
    token_in = L.token
    regions = []
    for k in range(2):
        region = top.regions[k] if k < len(top.regions) else None
        saved_ops = L.ops
        L.ops = []
        L.token = token_in

        def finish(y: TOp) -> None:
            values = _operands(L, signature(y)[0])
            L.emit("yield", {"operands": values + ([L.token] if carry else [])}, [])

        if region is not None:
            L.region(region, terminator=finish)
        if not L.ops or L.ops[-1].name != "yield":
            finish(TOp("scf.yield", [], "", 0))
        regions.append(Region((Block((), L.ops),)))
        L.ops = saved_ops
    L.token = token_in
    types = result_types + ([T.TOKEN] if carry else [])
    op = L.emit("if", {"condition": [cond]}, types, {}, regions)
    L.bind(top, op.results[:len(result_types)])
    if carry:
        L.token = op.results[-1]


@handles("scf.while")
def while_(L: _Lowering, top: TOp) -> None:
    """``scf.while``: a Tile IR ``loop`` whose body runs the condition region, breaks when the
    condition is false (with the values the condition forwards), then runs the body region."""
    head, type_text = signature(top)
    names, init_names = _iter_args(L, head)
    inits = [L.value(n) for n in init_names]
    _pass_origins(L, init_names, names)
    types = _types(type_text)
    n_results = len(top.results)
    result_types: list[T.Type] = [tile_type(t) for t in types[len(types) - n_results:]] if n_results else []
    before, after = top.regions[0], top.regions[1]
    carry = touches_memory(before) or touches_memory(after)
    init_values = inits + ([L.token] if carry else [])
    args = tuple(Value(v.type) for v in init_values)
    saved_ops, saved_token = L.ops, L.token
    L.ops = []
    for name, v in zip(names, args):
        L.env[name] = v
    if carry:
        L.token = args[-1]
    forwarded: list[Value] = []
    forwarded_names: list[str] = []

    def condition(c: TOp) -> None:
        text = signature(c)[0]
        refs = value_refs(text)
        cond = L.value(refs[0])
        forwarded_names[:] = refs[1:]
        forwarded[:] = [L.value(r) for r in refs[1:]]
        exit_ops, L.ops = L.ops, []
        L.emit("break", {"operands": forwarded + ([L.token] if carry else [])}, [])
        on_false = Region((Block((), L.ops),))
        L.ops = []
        L.emit("yield", {"operands": []}, [])
        on_true = Region((Block((), L.ops),))
        L.ops = exit_ops
        L.emit("if", {"condition": [cond]}, [], {}, [on_true, on_false])

    L.region(before, terminator=condition)
    _pass_origins(L, forwarded_names, [name for name, _ in after.args], top.results)
    for (name, _), v in zip(after.args, forwarded):
        L.env[name] = v

    def finish(y: TOp) -> None:
        values = _operands(L, signature(y)[0])
        L.emit("continue", {"operands": values + ([L.token] if carry else [])}, [])

    L.region(after, terminator=finish)
    if not L.ops or L.ops[-1].name != "continue":
        finish(TOp("scf.yield", [], "", 0))
    body = Block(args, L.ops)
    L.ops, L.token = saved_ops, saved_token
    loop_types = result_types + ([T.TOKEN] if carry else [])
    op = L.emit("loop", {"initValues": init_values}, loop_types, {}, [Region((body,))])
    L.bind(top, op.results[:n_results])
    if carry:
        L.token = op.results[-1]
