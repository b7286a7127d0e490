"""Tile IR types. Each type prints itself in the MLIR text form (``str(t)``)."""
from __future__ import annotations

from dataclasses import dataclass

DYNAMIC = None  # a dimension or stride not known at compile time, printed as "?"

INTEGER_TYPES = ("i1", "i4", "i8", "i16", "i32", "i64")
FLOAT_TYPES = ("f16", "bf16", "f32", "tf32", "f64", "f8E4M3FN", "f8E5M2", "f8E8M0FNU", "f4E2M1FN",
               "fnv8E5M3FNU")


class Type:
    """Base of all Tile IR types."""


@dataclass(frozen=True)
class ScalarType(Type):
    """An element type: ``i32``, ``f16``, ``bf16``, ..."""

    name: str

    @property
    def is_integer(self) -> bool:
        return self.name in INTEGER_TYPES

    @property
    def is_float(self) -> bool:
        return self.name in FLOAT_TYPES

    @property
    def bitwidth(self) -> int:
        digits = "".join(ch for ch in self.name.split("E")[0] if ch.isdigit())
        return int(digits) if digits else 0

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class PointerType(Type):
    pointee: Type

    def __str__(self) -> str:
        return f"ptr<{self.pointee}>"


@dataclass(frozen=True)
class TokenType(Type):
    def __str__(self) -> str:
        return "token"


@dataclass(frozen=True)
class TileType(Type):
    """``tile<16x32xf32>``; a 0-d tile (``tile<i32>``) is a scalar."""

    shape: tuple[int, ...]
    element: Type

    @property
    def rank(self) -> int:
        return len(self.shape)

    def __str__(self) -> str:
        dims = "".join(f"{d}x" for d in self.shape)
        return f"tile<{dims}{self.element}>"


def _dims(values: tuple[int | None, ...], sep: str) -> str:
    return sep.join("?" if v is None else str(v) for v in values)


@dataclass(frozen=True)
class TensorViewType(Type):
    """A global-memory array: element type, shape and strides (``None`` where dynamic)."""

    element: Type
    shape: tuple[int | None, ...]
    strides: tuple[int | None, ...]

    @property
    def rank(self) -> int:
        return len(self.shape)

    def __str__(self) -> str:
        dims = "".join(f"{'?' if d is None else d}x" for d in self.shape)
        strides = f", strides=[{_dims(self.strides, ',')}]" if self.shape else ""
        return f"tensor_view<{dims}{self.element}{strides}>"


def _padding(padding: str | None) -> str:
    return f", padding_value = {padding}" if padding else ""


def _dim_map(dim_map: tuple[int, ...]) -> str:
    if dim_map == tuple(range(len(dim_map))):
        return ""
    return f", dim_map=[{', '.join(map(str, dim_map))}]"


@dataclass(frozen=True)
class PartitionViewType(Type):
    """A tensor view cut into a grid of ``tile_shape`` tiles; index ``i`` is tile units.

    ``dim_map[k]`` is the tensor dimension that tile dimension ``k`` runs along (``order=``).
    """

    tile_shape: tuple[int, ...]
    tensor_view: TensorViewType
    dim_map: tuple[int, ...]
    padding: str | None = None

    def __str__(self) -> str:
        return (f"partition_view<tile=({_dims(self.tile_shape, 'x')}){_padding(self.padding)}, "
                f"{self.tensor_view}{_dim_map(self.dim_map)}>")


@dataclass(frozen=True)
class StridedViewType(Type):
    """Like a partition view, but tile origins step by ``traversal_strides`` (tiles may overlap)."""

    tile_shape: tuple[int, ...]
    traversal_strides: tuple[int, ...]
    tensor_view: TensorViewType
    dim_map: tuple[int, ...]
    padding: str | None = None

    def __str__(self) -> str:
        return (f"strided_view<tile=({_dims(self.tile_shape, 'x')}), "
                f"traversal_strides=[{_dims(self.traversal_strides, ',')}]{_padding(self.padding)}, "
                f"{self.tensor_view}{_dim_map(self.dim_map)}>")


@dataclass(frozen=True)
class GatherScatterViewType(Type):
    tile_shape: tuple[int, ...]
    tensor_view: TensorViewType
    sparse_dim: int
    padding: str | None = None

    def __str__(self) -> str:
        return (f"gather_scatter_view<tile=({_dims(self.tile_shape, 'x')}), sparse_dim={self.sparse_dim}"
                f"{_padding(self.padding)}, {self.tensor_view}>")


@dataclass(frozen=True)
class FunctionType(Type):
    inputs: tuple[Type, ...]
    results: tuple[Type, ...]

    def __str__(self) -> str:
        return f"({', '.join(map(str, self.inputs))}) -> ({', '.join(map(str, self.results))})"


VIEW_TYPES = (PartitionViewType, StridedViewType, GatherScatterViewType)
I1 = ScalarType("i1")
I32 = ScalarType("i32")
I64 = ScalarType("i64")
TOKEN = TokenType()
