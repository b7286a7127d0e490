"""TTIR types (``i32``, ``!tt.ptr<f32>``, ``tensor<64x!tt.ptr<f16>>``) as Tile IR types.

Every TTIR value becomes a tile: a scalar is a 0-d tile, a tensor of pointers a tile of pointers.
"""
from __future__ import annotations

import re

from tilecheck.ir import types as T

# TTIR element names that Tile IR spells the same way
_SCALARS = set(T.INTEGER_TYPES) | set(T.FLOAT_TYPES)
_TENSOR = re.compile(r"^tensor<((?:\d+x)*)(.*)>$")


class UnsupportedType(Exception):
    """A TTIR type with no Tile IR counterpart here (block pointers, tensor descriptors)."""


def element_type(text: str) -> T.Type:
    text = text.strip()
    if text in _SCALARS:
        return T.ScalarType(text)
    if text.startswith("!tt.ptr<") and text.endswith(">"):
        inner = text[len("!tt.ptr<"):-1]
        inner = re.sub(r",\s*\d+$", "", inner)  # an address space
        pointee = element_type(inner)
        if not isinstance(pointee, T.ScalarType):
            raise UnsupportedType(text)
        return T.PointerType(pointee)
    raise UnsupportedType(text)


def tile_type(text: str) -> T.TileType:
    """The Tile IR tile type of a TTIR value type."""
    text = text.strip()
    m = _TENSOR.match(text)
    if m:
        dims = tuple(int(d) for d in m.group(1).split("x") if d)
        inner = m.group(2)
        if "," in inner and not inner.startswith("!tt.ptr"):  # an encoding: not in TTIR
            inner = inner.split(",", 1)[0]
        return T.TileType(dims, element_type(inner))
    return T.TileType((), element_type(text))


def with_element(t: T.TileType, element: T.Type) -> T.TileType:
    return T.TileType(t.shape, element)


def with_shape(t: T.TileType, shape: tuple[int, ...]) -> T.TileType:
    return T.TileType(shape, t.element)
