"""The state of one TTIR -> Tile IR lowering: values by TTIR name, the ops being built, the token of
the program's last memory op, each pointer's array (lower.py says what the lowering does)."""
from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from tilecheck.ir import types as T
from tilecheck.ir.attrs import Bounded, DenseElements, float_to_bits
from tilecheck.ir.core import Block, Function, Op, Region, Value
from tilecheck.ir.loc import Loc
from tilecheck.ir.opdefs import OPS
from tilecheck.ir.triton.registry import HANDLERS, Unsupported
from tilecheck.ir.triton.ttir import Locations, TFunc, TOp, TRegion, split_top, value_refs
from tilecheck.ir.triton.types import UnsupportedType, tile_type, with_shape

_OPAQUE = T.ScalarType("opaque")  # the type of a value whose TTIR type has no Tile IR counterpart


class Param:
    """A parameter as the lowering sees it: a pointer (array) or a scalar, with its entry arguments."""

    def __init__(self, name: str, type_text: str, index_type: T.ScalarType, descriptor: int = 0,
                 origin: int = 0) -> None:
        self.name = name
        self.type_text = type_text
        self.index_type = index_type  # of an array's extent and stride arguments
        # the element of its array the pointer points at (past those a negative stride reaches below it)
        self.origin = origin
        # a host tensor descriptor of this rank (``!tt.tensordesc<BxT>``): an array over its base,
        # viewed through the shape and stride arguments that follow it
        self.descriptor = descriptor
        if descriptor:
            element = re.fullmatch(r"!tt\.tensordesc<(?:\d+x)*([^,>]+)(?:,.*)?>", type_text.strip())
            if element is None:
                raise UnsupportedType(type_text)
            type_text = f"!tt.ptr<{element.group(1)}>"
        self.type = tile_type(type_text)
        self.is_array = isinstance(self.type.element, T.PointerType)


class Lowering:
    def __init__(self, func: TFunc, locs: Locations, params: Sequence[Param]) -> None:
        self.func, self.locs, self.params = func, locs, params
        self.env: dict[str, Value] = {}
        self.origin: dict[str, int] = {}  # TTIR pointer value -> index of its parameter
        # TTIR pointer value chosen between two (a select: cat, stack) -> (condition, each side's value
        # and where it points: a parameter's index, or a choice of the same form)
        self.choices: dict[str, tuple[Value, tuple[Value, Any], tuple[Value, Any]]] = {}
        self.ops: list[Op] = []
        self.token: Value | None = None
        self.stride: dict[int, Value] = {}  # parameter index -> its stride as a 0-d i64 tile
        self.block_ids: tuple[Value, ...] = ()
        self.num_blocks: tuple[Value, ...] = ()
        self.loc = Loc.unknown()
        self.cfg: list[dict[str, TRegion]] = []  # the labelled blocks of the regions being lowered
        # tensor descriptors by TTIR name: (base pointer's name, shape values, stride values)
        self.descriptors: dict[str, tuple[str, list[Value], list[Value]]] = {}

    # ---- building --------------------------------------------------------------------------
    def emit(self, name: str, operands: dict[str, Sequence[Value]], result_types: Sequence[T.Type],
             attrs: dict[str, Any] | None = None, regions: Sequence[Region] = ()) -> Op:
        opdef = OPS[name]
        flat: list[Value] = []
        segments = []
        for o in opdef.operands:
            group = list(operands.get(o.name, ()))
            flat += group
            segments.append((o.name, len(group)))
        full = dict(attrs or {})
        for a in opdef.attrs:
            if a.name not in full and a.default is not None:
                full[a.name] = a.default
        op = Op(name, tuple(flat), tuple(Value(t) for t in result_types), full, tuple(regions), self.loc,
                tuple(segments))
        self.ops.append(op)
        return op

    def unknown(self, top: TOp, reason: str, result_types: Sequence[T.Type] | None = None) -> None:
        """An op the model does not know: kept, so the verifier says ``unknown`` and names it."""
        types = result_types if result_types is not None else [T.TileType((), _OPAQUE)] * len(top.results)
        operands = tuple(self.env[r] for r in value_refs(top.rest) if r in self.env)
        op = Op(top.name, operands, tuple(Value(t) for t in types), {"reason": reason}, (), self.loc,
                (("operands", len(operands)),))
        self.ops.append(op)
        self.bind(top, op.results)

    def bind(self, top: TOp, values: Sequence[Value]) -> None:
        for name, value in zip(top.results, values):
            self.env[name] = value

    def constant(self, value: int | float, t: T.TileType) -> Value:
        element = t.element
        assert isinstance(element, T.ScalarType)
        if element.is_float:
            dense = DenseElements(element.name, (float_to_bits(element.name, float(value)),), True)
        else:
            dense = DenseElements(element.name, (int(value),), False)
        return self.emit("constant", {}, [t], {"value": dense}).result

    def broadcast_to(self, v: Value, shape: tuple[int, ...]) -> Value:
        """``v`` (a tile of rank 0 or of ``len(shape)``) broadcast to ``shape``."""
        t = v.type
        assert isinstance(t, T.TileType)
        if t.shape == shape:
            return v
        if len(t.shape) != len(shape):
            ones = (1,) * (len(shape) - len(t.shape)) + t.shape
            v = self.emit("reshape", {"source": [v]}, [with_shape(t, ones)]).result
        return self.emit("broadcast", {"source": [v]}, [with_shape(t, shape)]).result

    def value(self, name: str) -> Value:
        try:
            return self.env[name]
        except KeyError:
            raise Unsupported(f"value {name} is used before it is defined") from None

    # ---- the function ----------------------------------------------------------------------
    def run(self) -> Function:
        entry_args: list[Value] = []
        arrays: list[tuple[int, Value, Value, Value]] = []
        for i, p in enumerate(self.params):
            ptr = Value(p.type, p.name)
            entry_args.append(ptr)
            if p.is_array:
                extent, stride = Value(T.TileType((), p.index_type)), Value(T.TileType((), p.index_type))
                entry_args += [extent, stride]
                arrays.append((i, ptr, extent, stride))
            self.env[self.func.args[i][0]] = ptr
            if p.is_array:
                self.origin[self.func.args[i][0]] = i
        for i, p in enumerate(self.params):
            if p.descriptor:  # its shape and strides are the parameters after it
                names = [self.func.args[i + 1 + k][0] for k in range(2 * p.descriptor)]
                self.descriptors[self.func.args[i][0]] = (
                    self.func.args[i][0], [self.env[n] for n in names[:p.descriptor]],
                    [self.env[n] for n in names[p.descriptor:]])
        self.loc = self.locs.resolve(self.func.loc_text)
        self.token = self.emit("make_token", {}, [T.TOKEN]).result
        # what cuTile's frontend states of an array's arguments (the given case must satisfy it)
        for i, ptr, extent, stride in arrays:
            for arg in (extent, stride):
                self.emit("assume", {"value": [arg]}, [arg.type], {"predicate": Bounded(0, None)})
            wide = stride
            if self.params[i].index_type != T.I64:
                wide = self.emit("exti", {"source": [stride]}, [T.TileType((), T.I64)],
                                 {"signedness": "signed"}).result
            self.stride[i] = wide
            origin = self.params[i].origin
            if origin:  # the pointer points ``origin`` elements into its array (compiled in, per launch form)
                shift = self.emit("muli", {"lhs": [self.constant(origin, T.TileType((), T.I64))], "rhs": [wide]},
                                  [T.TileType((), T.I64)]).result
                self.env[self.func.args[i][0]] = self.emit("offset", {"ptr": [ptr], "offset": [shift]},
                                                           [ptr.type]).result
        i32 = T.TileType((), T.I32)
        self.block_ids = self.emit("get_tile_block_id", {}, [i32] * 3).results
        self.num_blocks = self.emit("get_num_tile_blocks", {}, [i32] * 3).results
        self.region(self.func.body, terminator=None)
        body = Block(tuple(entry_args), self.ops)
        ftype = T.FunctionType(tuple(v.type for v in entry_args), ())
        return Function(self.func.name, ftype, body, True, self.locs.resolve(self.func.loc_text))

    def region(self, region: TRegion, terminator: Callable[[TOp], None] | None) -> None:
        """Lower a region's entry block (its other blocks are lowered where a branch reaches them)."""
        self.cfg.append(region.blocks)
        try:
            self.run_ops(region.ops, terminator)
        finally:
            self.cfg.pop()

    def scope_of(self, top: TOp) -> list[TOp]:
        """The TTIR ops that can use ``top``'s results: those of its block, nested ones included.
        (Triton's names repeat across sibling regions: an unrolled ``tl.static_range`` prints
        ``%a_i_24`` in each of its ``scf.if`` bodies, and one body's block argument may share the
        name of another body's value.)"""
        def walk(ops: Sequence[TOp]) -> list[TOp]:
            out: list[TOp] = []
            for op in ops:
                out.append(op)
                for inner in op.regions:
                    out += walk([*inner.ops, *(o for b in inner.blocks.values() for o in b.ops)])
            return out

        def find(region: TRegion) -> list[TOp] | None:
            for ops in (region.ops, *(b.ops for b in region.blocks.values())):
                if any(op is top for op in ops):
                    return walk(ops)
                for op in ops:
                    for inner in op.regions:
                        found = find(inner)
                        if found is not None:
                            return found
            return None
        return find(self.func.body) or self.all_ops()

    def all_ops(self) -> list[TOp]:
        """Every TTIR op of the function, nested ones included (for questions about uses)."""
        out: list[TOp] = []

        def walk(region: TRegion) -> None:
            for op in (*region.ops, *(o for b in region.blocks.values() for o in b.ops)):
                out.append(op)
                for inner in op.regions:
                    walk(inner)
        walk(self.func.body)
        return out

    def run_ops(self, ops: Sequence[TOp], terminator: Callable[[TOp], None] | None) -> None:
        for top in ops:
            self.loc = self.locs.resolve(top.loc_text)
            if top.name in ("scf.yield", "scf.condition", "tt.reduce.return", "tt.scan.return") \
                    and terminator is not None:
                terminator(top)
                continue
            handler = HANDLERS.get(top.name)
            try:
                if handler is None:
                    raise Unsupported(f"'{top.name}' has no Tile IR counterpart in tilecheck's Triton frontend")
                handler(self, top)
            except (Unsupported, UnsupportedType) as exc:
                reason = str(exc) if isinstance(exc, Unsupported) else f"type {exc} is not supported"
                self.unknown(top, reason, self._result_types(top))

    def _result_types(self, top: TOp) -> list[T.Type] | None:
        parts = split_top(top.rest, " : ")
        if len(parts) < 2 or not top.results:
            return None
        tail = split_top(parts[-1], "->")[-1].strip().strip("()")
        types = [t.strip() for t in split_top(tail, ",") if t.strip()]
        try:
            out: list[T.Type] = [tile_type(t) for t in types]
        except UnsupportedType:
            return None
        return out if len(out) == len(top.results) else None

    # ---- tokens --------------------------------------------------------------------------------
    def memory(self, name: str, operands: dict[str, Sequence[Value]], result_types: Sequence[T.Type],
               attrs: dict[str, Any]) -> Op:
        """A memory op, ordered after the program's previous one."""
        assert self.token is not None
        op = self.emit(name, {**operands, "token": [self.token]}, [*result_types, T.TOKEN], attrs)
        self.token = op.results[-1]
        return op


