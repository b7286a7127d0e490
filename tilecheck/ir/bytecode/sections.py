"""The bytecode envelope: header, sections, and the string/type/constant/debug tables."""
from __future__ import annotations

from dataclasses import dataclass

from tilecheck.ir import types as T
from tilecheck.ir.bytecode.stream import Stream
from tilecheck.ir.loc import Loc

MAGIC = b"\x7fTileIR\x00"
SECTION_NAMES = {0: "end", 1: "string", 2: "func", 3: "debug", 4: "constant", 5: "type", 6: "global"}
SUPPORTED_VERSIONS = range(130100, 130500)
INT64_MIN = -(1 << 63)  # how a dynamic dimension is stored in a shape list

_SIMPLE_TYPES = {0x00: "i1", 0x01: "i8", 0x02: "i16", 0x03: "i32", 0x04: "i64", 0x05: "f16",
                 0x06: "bf16", 0x07: "f32", 0x08: "tf32", 0x09: "f64", 0x0A: "f8E4M3FN",
                 0x0B: "f8E5M2", 0x12: "f8E8M0FNU", 0x13: "f4E2M1FN", 0x16: "i4", 0x82: "fnv8E5M3FNU"}
_TOKEN, _POINTER, _TILE, _TENSOR_VIEW, _PARTITION_VIEW, _FUNCTION = 0x11, 0x0C, 0x0D, 0x0E, 0x0F, 0x10
_GATHER_SCATTER_VIEW, _STRIDED_VIEW = 0x14, 0x15
PADDING_VALUES = ("zero", "neg_zero", "nan", "pos_inf", "neg_inf")


@dataclass(frozen=True)
class Header:
    version: int  # major * 10000 + minor * 100 + tag, as cuTile spells it (13.4 -> 130400)
    preview: bool


def decode_header(s: Stream) -> Header:
    magic = s.take(len(MAGIC)) if len(s.data) >= len(MAGIC) else s.data
    if magic != MAGIC:
        raise s.error("not Tile IR bytecode (bad magic number)")
    major, minor = s.byte(), s.byte()
    tag = s.fixed(2)
    version = major * 10000 + minor * 100 + (tag & ~1)
    if version - version % 100 not in SUPPORTED_VERSIONS:
        raise s.error(f"bytecode version {major}.{minor} is not supported (13.1-13.4 are)")
    return Header(version, bool(tag & 1))


def decode_sections(s: Stream) -> dict[str, tuple[int, int]]:
    """Map section name -> (start, end) byte range of its payload."""
    sections: dict[str, tuple[int, int]] = {}
    while True:
        s.section = "envelope"
        ident = s.byte()
        section_id, aligned = ident & 0x7F, bool(ident & 0x80)
        if section_id == 0:
            return sections
        name = SECTION_NAMES.get(section_id)
        if name is None:
            raise s.error(f"unknown section id {section_id:#x}")
        length = s.varint()
        if aligned:
            s.align(s.varint())
        start = s.pos
        s.take(length)
        sections[name] = (start, start + length)


def decode_table(s: Stream, index_width: int) -> list[tuple[int, int]]:
    """A table: count, aligned offset array, then the data; returns each entry's byte range."""
    count = s.varint()
    s.align(index_width)
    offsets = [s.fixed(index_width) for _ in range(count)]
    base = s.pos
    bounds = offsets[1:] + [s.end - base]
    ranges = [(base + a, base + b) for a, b in zip(offsets, bounds)]
    for a, b in ranges:
        if not base <= a <= b <= s.end:
            raise s.error("table entry lies outside its section")
    return ranges


class Tables:
    """Decoded string, type and constant tables, with types decoded lazily (they refer to each other)."""

    def __init__(self, data: bytes, sections: dict[str, tuple[int, int]], version: int) -> None:
        self.data, self.version = data, version
        self.strings = [bytes(data[a:b]).decode("utf-8", "replace")
                        for a, b in self._table(sections, "string", 4)]
        self.constants = self._table(sections, "constant", 8)
        self._type_ranges = self._table(sections, "type", 4)
        self._types: dict[int, T.Type] = {}

    def _table(self, sections: dict[str, tuple[int, int]], name: str, width: int) -> list[tuple[int, int]]:
        if name not in sections:
            return []
        start, end = sections[name]
        return decode_table(Stream(self.data, start, end, name), width)

    def string(self, s: Stream, index: int | None = None) -> str:
        index = s.varint() if index is None else index
        if index >= len(self.strings):
            raise s.error(f"string index {index} out of range ({len(self.strings)} strings)")
        return self.strings[index]

    def constant(self, s: Stream) -> bytes:
        index = s.varint()
        if index >= len(self.constants):
            raise s.error(f"constant index {index} out of range")
        a, b = self.constants[index]
        entry = Stream(self.data, a, b, "constant")
        return entry.take(entry.varint())

    def type(self, s: Stream, index: int | None = None) -> T.Type:
        index = s.varint() if index is None else index
        if index not in self._types:
            if index >= len(self._type_ranges):
                raise s.error(f"type index {index} out of range ({len(self._type_ranges)} types)")
            self._types[index] = None  # type: ignore[assignment]  # marks a cycle in progress
            a, b = self._type_ranges[index]
            self._types[index] = self._decode_type(Stream(self.data, a, b, "type"))
        result = self._types[index]
        if result is None:
            raise s.error(f"type {index} refers to itself")
        return result

    def _decode_type(self, s: Stream) -> T.Type:
        tag = s.varint()
        if tag in _SIMPLE_TYPES:
            return T.ScalarType(_SIMPLE_TYPES[tag])
        if tag == _TOKEN:
            return T.TOKEN
        v134 = self.version >= 130400
        unified = self.version >= 130300
        if tag == _POINTER:
            flags = s.varint() if v134 else 0
            pointee = self.type(s)
            if flags & 1:
                s.byte()  # pointer attribute (address space); not needed by tilecheck
            return T.PointerType(pointee)
        if tag == _TILE:
            element = self.type(s)
            return T.TileType(s.int_list(8), element)
        if tag == _TENSOR_VIEW:
            flags = s.varint() if v134 else 0
            element = self.type(s)
            shape, strides = s.int_list(8), s.int_list(8)
            if flags & 1:
                s.byte()
            return T.TensorViewType(element, _dynamic(shape), _dynamic(strides))
        if tag == _PARTITION_VIEW:
            flags = s.varint() if unified else 0
            tile_shape = s.int_list(4)
            view = self._tensor_view(s)
            dim_map = s.int_list(4)
            if not unified:
                flags = s.varint()
            padding = self._padding(s) if flags & 1 else None
            return T.PartitionViewType(tile_shape, view, dim_map, padding)
        if tag == _STRIDED_VIEW:
            flags = s.varint()
            tile_shape, steps = s.int_list(4), s.int_list(4)
            view = self._tensor_view(s)
            dim_map = s.int_list(4)
            padding = self._padding(s) if flags & 1 else None
            return T.StridedViewType(tile_shape, steps, view, dim_map, padding)
        if tag == _GATHER_SCATTER_VIEW:
            flags = s.varint()
            tile_shape = s.int_list(4)
            view = self._tensor_view(s)
            sparse_dim = s.varint()
            padding = self._padding(s) if flags & 1 else None
            return T.GatherScatterViewType(tile_shape, view, sparse_dim, padding)
        if tag == _FUNCTION:
            inputs = tuple(self.type(s) for _ in range(s.varint()))
            results = tuple(self.type(s) for _ in range(s.varint()))
            return T.FunctionType(inputs, results)
        raise s.error(f"unknown type tag {tag:#x}")

    def _tensor_view(self, s: Stream) -> T.TensorViewType:
        view = self.type(s)
        if not isinstance(view, T.TensorViewType):
            raise s.error(f"expected a tensor_view type, found {view}")
        return view

    @staticmethod
    def _padding(s: Stream) -> str:
        value = s.byte()
        if value >= len(PADDING_VALUES):
            raise s.error(f"unknown padding value {value}")
        return PADDING_VALUES[value]


def _dynamic(values: tuple[int, ...]) -> tuple[int | None, ...]:
    return tuple(None if v == INT64_MIN else v for v in values)


class DebugInfo:
    """Per function, the location of the function and of each op in pre-order."""

    _FILE, _COMPILE_UNIT, _LEXICAL_BLOCK, _LOC, _SUBPROGRAM, _CALL_SITE = 2, 1, 3, 4, 5, 6

    def __init__(self, data: bytes, span: tuple[int, int] | None, tables: Tables) -> None:
        self.per_function: list[list[int]] = []
        self._attr_ranges: list[tuple[int, int]] = []
        self._data, self._tables = data, tables
        self._locs: dict[int, Loc] = {}
        if span is None:
            return
        s = Stream(data, span[0], span[1], "debug")
        n_funcs = s.varint()
        s.align(4)
        starts = [s.fixed(4) for _ in range(n_funcs)]
        total = s.varint()
        s.align(8)
        ids = [s.fixed(8) for _ in range(total)]
        for i, start in enumerate(starts):
            end = starts[i + 1] if i + 1 < n_funcs else total
            self.per_function.append(ids[start:end])
        self._attr_ranges = decode_table(s, 4)

    def loc(self, attr_id: int) -> Loc:
        """The source location of debug attribute ``attr_id`` (ids start at 1; 0 = none)."""
        if attr_id == 0 or attr_id > len(self._attr_ranges):
            return Loc.unknown()
        if attr_id not in self._locs:
            self._locs[attr_id] = Loc.unknown()  # guards against cycles
            a, b = self._attr_ranges[attr_id - 1]
            self._locs[attr_id] = self._decode(Stream(self._data, a, b, "debug"))
        return self._locs[attr_id]

    def _decode(self, s: Stream) -> Loc:
        tag = s.byte()
        if tag == self._LOC:
            s.varint()  # scope (subprogram / lexical block)
            filename = self._tables.string(s)
            line, col = s.varint(), s.varint()
            return Loc(filename, line, col)
        if tag == self._CALL_SITE:
            callee, caller = self.loc(s.varint()), self.loc(s.varint())
            return Loc(callee.file, callee.line, callee.col, caller if caller.is_known() else None)
        return Loc.unknown()  # files, scopes and compile units locate no op
