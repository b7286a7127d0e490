"""Decode Tile IR bytecode into a ``Module``, driven by the op table in ``opdefs``."""
from __future__ import annotations

from typing import Any

from tilecheck.ir import types as T
from tilecheck.ir.attrs import Bounded, DenseElements, Dictionary, DivBy, TypedValue
from tilecheck.ir.bytecode.sections import DebugInfo, Tables, decode_header, decode_sections
from tilecheck.ir.bytecode.stream import Stream
from tilecheck.ir.core import Block, Function, Module, Op, Region, Value
from tilecheck.ir.errors import BytecodeError
from tilecheck.ir.loc import Loc
from tilecheck.ir.opdefs import ENUMS, OPCODES, OpDef

_ENTRY_FLAG, _HINTS_FLAG = 0x02, 0x04
_TAG_INTEGER, _TAG_FLOAT, _TAG_BOOL, _TAG_TYPE, _TAG_STRING, _TAG_ARRAY = 1, 2, 3, 4, 5, 6
_TAG_DIV_BY, _TAG_DICTIONARY, _TAG_HINTS, _TAG_BOUNDED = 8, 10, 11, 12


def read_bytecode(data: bytes) -> Module:
    """Decode a whole bytecode file. Raises ``BytecodeError`` (section + offset) when malformed."""
    data = bytes(data)
    s = Stream(data)
    header = decode_header(s)
    sections = decode_sections(s)
    if "func" not in sections:
        raise s.error("no function section")
    tables = Tables(data, sections, header.version)
    debug = DebugInfo(data, sections.get("debug"), tables)
    start, end = sections["func"]
    return _FunctionReader(data, tables, debug, header.version).read_functions(start, end)


def _dense(s: Stream, op_start: int, data: bytes, result_types: list[T.Type]) -> DenseElements:
    element = result_types[0].element if result_types and isinstance(result_types[0], T.TileType) else None
    if not isinstance(element, T.ScalarType):
        raise BytecodeError("constant without a scalar tile result type", s.section, op_start)
    try:
        return DenseElements.from_bytes(element, data)
    except ValueError as exc:
        raise BytecodeError(str(exc), s.section, op_start) from None


class _FunctionReader:
    def __init__(self, data: bytes, tables: Tables, debug: DebugInfo, version: int) -> None:
        self.data, self.tables, self.debug, self.version = data, tables, debug, version
        self._values: list[Value] = []
        self._locs: list[int] = []  # debug attribute ids of the current function, pre-order
        self._next_loc = 0

    def read_functions(self, start: int, end: int) -> Module:
        s = Stream(self.data, start, end, "func")
        functions = tuple(self._function(s) for _ in range(s.varint()))
        return Module(functions)

    def _function(self, s: Stream) -> Function:
        name = self.tables.string(s)
        ftype = self.tables.type(s)
        if not isinstance(ftype, T.FunctionType):
            raise s.error(f"function {name} has non-function type {ftype}")
        flags = s.byte()
        debug_index = s.varint()
        attrs: dict[str, Any] = {}
        if flags & _HINTS_FLAG:
            attrs["optimization_hints"] = self._tagged(s)
        self._locs = self.debug.per_function[debug_index - 1] if 0 < debug_index <= len(
            self.debug.per_function) else []
        self._next_loc = 0
        loc = self._take_loc()
        body_len = s.varint()
        body = Stream(self.data, s.pos, s.pos + body_len, "func")
        s.take(body_len)
        self._values = [Value(t, f"arg{i}") for i, t in enumerate(ftype.inputs)]
        block = Block(tuple(self._values))
        while not body.at_end():
            block.ops.append(self._op(body))
        return Function(name, ftype, block, bool(flags & _ENTRY_FLAG), loc, attrs)

    def _take_loc(self) -> Loc:
        i = self._next_loc
        self._next_loc += 1
        return self.debug.loc(self._locs[i]) if i < len(self._locs) else Loc.unknown()

    def _value(self, s: Stream) -> Value:
        index = s.varint()
        if index >= len(self._values):
            raise s.error(f"operand refers to value %{index}, only {len(self._values)} defined")
        return self._values[index]

    def _op(self, s: Stream) -> Op:
        op_start = s.pos
        opcode = s.varint()
        opdef = OPCODES.get(opcode)
        if opdef is None:
            # The payload layout of an unknown opcode is unknown, so decoding cannot go on.
            raise s.error(f"unsupported opcode {opcode} (this tilecheck reads the Tile IR 13.1-13.4 ops)")
        if self.version < opdef.since:
            raise s.error(f"op {opdef.name} needs bytecode {opdef.since // 10000}.{opdef.since // 100 % 100}")
        loc = self._take_loc()
        result_types = self._result_types(s, opdef)
        flags = s.varint() if opdef.flags and self.version >= opdef.flags_since else 0
        flag_set = {name for bit, name in enumerate(opdef.flags) if flags >> bit & 1}
        attrs = self._attrs(s, opdef, flag_set)
        operands, segments = self._operands(s, opdef, flag_set)
        regions: tuple[Region, ...] = ()
        if opdef.regions:
            count = s.varint()
            if count != opdef.regions:
                raise s.error(f"{opdef.name} has {count} regions, expected {opdef.regions}")
            regions = tuple(self._region(s) for _ in range(count))
        results = tuple(Value(t) for t in result_types)
        self._values.extend(results)
        if "value" in attrs and isinstance(attrs["value"], bytes):
            attrs["value"] = _dense(s, op_start, attrs["value"], result_types)
        return Op(opdef.name, operands, results, attrs, regions, loc, segments)

    def _result_types(self, s: Stream, opdef: OpDef) -> list[T.Type]:
        count = s.varint() if opdef.results == "v" else int(opdef.results)
        return [self.tables.type(s) for _ in range(count)]

    def _attrs(self, s: Stream, opdef: OpDef, flag_set: set[str]) -> dict[str, Any]:
        attrs: dict[str, Any] = {}
        for a in opdef.attrs:
            if a.since and self.version < a.since:
                if a.default is not None:
                    attrs[a.name] = a.default
                continue
            if a.name in opdef.flags:
                if a.kind == "bool":
                    attrs[a.name] = a.name in flag_set
                    continue
                if a.name not in flag_set:
                    continue
            value = self._attr(s, a.kind)
            if a.kind == "bools" and not any(value):
                continue  # all-false "inbounds": the canonical form omits it, as the text form does
            attrs[a.name] = value
        return attrs

    def _attr(self, s: Stream, kind: str) -> Any:
        if kind in ENUMS:
            values = ENUMS[kind]
            raw = s.byte()
            if raw >= len(values):
                raise s.error(f"value {raw} is not a valid {kind}")
            return values[raw]
        if kind == "int":
            return s.varint()
        if kind == "bool":
            return bool(s.byte())
        if kind == "str":
            return self.tables.string(s)
        if kind == "type":
            return self.tables.type(s)
        if kind == "tagged":
            return self._tagged(s)
        if kind == "array":
            return tuple(self._tagged(s) for _ in range(s.varint()))
        if kind == "dense":
            return self.tables.constant(s)  # raw bytes; typed once the result type is known
        if kind == "i32s":
            return s.int_list(4)
        if kind == "bools":
            return tuple(bool(v) for v in s.int_list(1))
        if kind == "hints":
            return self._dictionary(s)
        raise s.error(f"attribute kind {kind} has no decoder")

    def _dictionary(self, s: Stream) -> Dictionary:
        return Dictionary(tuple((self.tables.string(s), self._tagged(s)) for _ in range(s.varint())))

    def _tagged(self, s: Stream) -> Any:
        tag = s.byte()
        if tag == _TAG_INTEGER:
            type_ = self.tables.type(s)
            raw = s.varint()
            width = type_.bitwidth if isinstance(type_, T.ScalarType) else 64
            if width > 1 and raw >= 1 << (width - 1):
                raw -= 1 << width
            return TypedValue(type_, raw)
        if tag == _TAG_FLOAT:
            type_ = self.tables.type(s)
            width = type_.bitwidth if isinstance(type_, T.ScalarType) else 32
            return TypedValue(type_, s.byte() if width <= 8 else s.signed_varint())
        if tag == _TAG_BOOL:
            return bool(s.byte())
        if tag == _TAG_TYPE:
            return self.tables.type(s)
        if tag == _TAG_STRING:
            return self.tables.string(s)
        if tag == _TAG_ARRAY:
            return tuple(self._tagged(s) for _ in range(s.varint()))
        if tag in (_TAG_DICTIONARY, _TAG_HINTS):
            return self._dictionary(s)
        if tag == _TAG_DIV_BY:
            divisor, present = s.varint(), s.byte()
            every = s.signed_varint() if present & 1 else None
            along = s.signed_varint() if present & 2 else None
            return DivBy(divisor, every, along)
        if tag == _TAG_BOUNDED:
            present = s.byte()
            lb = s.signed_varint() if present & 1 else None
            ub = s.signed_varint() if present & 2 else None
            return Bounded(lb, ub)
        raise s.error(f"unsupported attribute tag {tag}")

    def _operands(self, s: Stream, opdef: OpDef, flag_set: set[str]
                  ) -> tuple[tuple[Value, ...], tuple[tuple[str, int], ...]]:
        operands: list[Value] = []
        segments: list[tuple[str, int]] = []
        remaining = s.varint() if opdef.counted else 0
        if opdef.counted:
            fixed = sum(1 for o in opdef.operands if o.kind == "single")
            remaining -= fixed
            if remaining < 0:
                raise s.error(f"{opdef.name}: operand count smaller than its fixed operands")
        for o in opdef.operands:
            if o.kind == "single":
                n = 1
            elif o.kind == "optional":
                n = 1 if o.name in flag_set else 0
            elif o.kind == "sized":
                n = s.varint()
            else:
                n = remaining
            operands.extend(self._value(s) for _ in range(n))
            segments.append((o.name, n))
        return tuple(operands), tuple(segments)

    def _region(self, s: Stream) -> Region:
        n_blocks = s.byte()
        if n_blocks != 1:
            raise s.error(f"region with {n_blocks} blocks (Tile IR regions have one)")
        mark = len(self._values)
        args = tuple(Value(self.tables.type(s)) for _ in range(s.varint()))
        self._values.extend(args)
        block = Block(args)
        for _ in range(s.varint()):
            block.ops.append(self._op(s))
        del self._values[mark:]  # values defined in a region are not visible after it
        return Region((block,))
