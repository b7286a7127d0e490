"""Types in the Tile IR text form: ``tile<16x32xf32>``, views, pointers, tokens."""
from __future__ import annotations

import re

from tilecheck.ir import types as T
from tilecheck.ir.text.lexer import Scanner

_DIMS = re.compile(r"((?:\d+|\?)x)*")
_PLAIN_DIMS = re.compile(r"(\d+|\?)(x(\d+|\?))*")  # matched at a position: never slice the text
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SCALARS = set(T.INTEGER_TYPES) | set(T.FLOAT_TYPES)


def parse_type_list(s: Scanner) -> list[T.Type]:
    if s.accept("("):
        types = [] if s.peek(")") else parse_type_list_flat(s)
        s.expect(")")
        return types
    return parse_type_list_flat(s)


def parse_type_list_flat(s: Scanner) -> list[T.Type]:
    types = [parse_type(s)]
    while s.peek(","):
        save = s.pos
        s.accept(",")
        if not at_type(s):
            s.pos = save
            break
        types.append(parse_type(s))
    return types


def at_type(s: Scanner) -> bool:
    s.skip()
    m = _WORD.match(s.text, s.pos)
    return bool(m) and (m.group(0) in _SCALARS or m.group(0) in (
        "tile", "token", "ptr", "tensor_view", "partition_view", "strided_view", "gather_scatter_view"))


def parse_type(s: Scanner) -> T.Type:
    start = s.mark()
    word = s.ident("a type")
    if word in _SCALARS:
        return T.ScalarType(word)
    if word == "token":
        return T.TOKEN
    if word == "ptr":
        s.expect("<")
        pointee = parse_type(s)
        s.expect(">")
        return T.PointerType(pointee)
    if word == "tile":
        s.expect("<")
        dims = parse_dims(s)
        element = parse_type(s)
        s.expect(">")
        if any(d is None for d in dims):
            raise s.error("tile shapes are static ('?' is not allowed)", start)
        return T.TileType(tuple(d for d in dims if d is not None), element)
    if word == "tensor_view":
        s.expect("<")
        shape = parse_dims(s)
        element = parse_type(s)
        strides: tuple[int | None, ...] = ()
        if s.accept(","):
            s.expect("strides")
            s.expect("=")
            strides = parse_bracket_dims(s)
        s.expect(">")
        if len(strides) != len(shape):
            raise s.error(f"tensor_view of rank {len(shape)} has {len(strides)} strides", start)
        return T.TensorViewType(element, shape, strides)
    if word in ("partition_view", "strided_view", "gather_scatter_view"):
        return _parse_view_type(s, word, start)
    raise s.error(f"unknown type '{word}'", start)


def _parse_view_type(s: Scanner, word: str, start: int) -> T.Type:
    s.expect("<")
    s.expect("tile")
    s.expect("=")
    s.expect("(")
    tile = parse_dims(s, trailing_x=False)
    s.expect(")")
    steps: tuple[int | None, ...] = ()
    sparse_dim = 0
    padding: str | None = None
    view: T.Type | None = None
    dim_map: tuple[int | None, ...] | None = None
    while s.accept(","):
        if s.accept("traversal_strides"):
            s.expect("=")
            steps = parse_bracket_dims(s)
        elif s.accept("padding_value"):
            s.expect("=")
            padding = s.ident("a padding value")
        elif s.accept("dim_map"):
            s.expect("=")
            dim_map = parse_bracket_dims(s)
        elif s.accept("sparse_dim"):
            s.expect("=")
            sparse_dim = s.integer()
        else:
            view = parse_type(s)
    s.expect(">")
    if not isinstance(view, T.TensorViewType):
        raise s.error(f"{word} needs a tensor_view", start)
    tile_t = tuple(int(d or 0) for d in tile)
    dims = tuple(int(d or 0) for d in dim_map) if dim_map is not None else tuple(range(len(tile_t)))
    if word == "partition_view":
        return T.PartitionViewType(tile_t, view, dims, padding)
    if word == "strided_view":
        return T.StridedViewType(tile_t, tuple(int(d or 0) for d in steps), view, dims, padding)
    return T.GatherScatterViewType(tile_t, view, sparse_dim, padding)


def parse_dims(s: Scanner, trailing_x: bool = True) -> tuple[int | None, ...]:
    s.skip()
    if not trailing_x:
        m = _PLAIN_DIMS.match(s.text, s.pos)
        text = m.group(0) if m else ""
        s.pos += len(text)
        return tuple(None if d == "?" else int(d) for d in text.split("x") if d)
    m = _DIMS.match(s.text, s.pos)
    text = m.group(0) if m else ""
    s.pos += len(text)
    return tuple(None if d == "?" else int(d) for d in text.split("x") if d)


def parse_bracket_dims(s: Scanner) -> tuple[int | None, ...]:
    s.expect("[")
    out: list[int | None] = []
    while not s.accept("]"):
        if out:
            s.expect(",")
        out.append(None if s.accept("?") else s.integer())
    return tuple(out)
