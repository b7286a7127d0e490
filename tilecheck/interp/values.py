"""Runtime values. Every tile value carries a leading *wave* axis: one row per block executing
in lockstep (a 0-d tile of a wave of W blocks is an array of shape (W,))."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tilecheck.errors import TilecheckError
from tilecheck.ir import types as T

_NUMPY = {"i1": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
          "f16": np.float16, "f32": np.float32, "tf32": np.float32, "f64": np.float64,
          "bf16": np.float32, "f8E4M3FN": np.float32, "f8E5M2": np.float32}
# bf16 and fp8 tile values are carried in float32, rounded to their precision on conversion


def numpy_dtype(t: T.Type) -> np.dtype:
    element = t.element if isinstance(t, T.TileType) else t
    if isinstance(element, T.ScalarType) and element.name in _NUMPY:
        return np.dtype(_NUMPY[element.name])
    raise TilecheckError(f"the CPU interpreter has no numpy type for {t}")


@dataclass(frozen=True)
class Pointer:
    """A tile of pointers: array ``array`` (entry-argument index) at element ``offsets``."""

    array: int
    offsets: np.ndarray  # int64, shape (W, *tile_shape)


@dataclass(frozen=True)
class Pointers:
    """A tile of pointers into several arrays, lane by lane: ``arrays`` (entry-argument indexes) and
    ``offsets`` of one shape. What a select or a branch between pointers into different arrays makes
    (Triton's ``tl.where(c, a_ptr + i, b_ptr + j)`` in cat and stack, ``in_ptr = a if pid == 0
    else b``); a memory op through it touches each array with its own lanes."""

    arrays: np.ndarray  # int64, shape (W, *tile_shape)
    offsets: np.ndarray  # int64, the same shape

    def parts(self, mask: np.ndarray | None) -> list[tuple[Pointer, np.ndarray]]:
        """Per array its lanes: a plain pointer tile, and the mask that keeps only its lanes."""
        out = []
        for array in np.unique(self.arrays):
            mine = self.arrays == array
            out.append((Pointer(int(array), self.offsets), mine if mask is None else mine & broadcast(mask, mine.shape)))
        return out


def select_pointers(cond: np.ndarray, yes: Pointer | Pointers, no: Pointer | Pointers) -> Pointer | Pointers:
    """Lane by lane ``yes`` where ``cond`` holds, else ``no`` (cond broadcasts to the tiles)."""
    shape = np.broadcast_shapes(np.shape(cond), yes.offsets.shape, no.offsets.shape)
    offsets = np.where(cond, yes.offsets, no.offsets).reshape(shape)
    if isinstance(yes, Pointer) and isinstance(no, Pointer) and yes.array == no.array:
        return Pointer(yes.array, offsets)
    arrays = [np.broadcast_to(p.arrays if isinstance(p, Pointers) else np.int64(p.array), p.offsets.shape)
              for p in (yes, no)]
    return Pointers(np.where(cond, arrays[0], arrays[1]).reshape(shape).astype(np.int64), offsets)


def pointer_parts(ptr: Pointer | Pointers, mask: np.ndarray | None) -> list[tuple[Pointer, np.ndarray | None]]:
    """The plain pointer tiles a memory op goes through, each with its mask."""
    return ptr.parts(mask) if isinstance(ptr, Pointers) else [(ptr, mask)]


@dataclass(frozen=True)
class TensorView:
    array: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    base: int = 0  # element offset of the view's origin in the array (a slice's start)


@dataclass(frozen=True)
class TileView:
    tensor: TensorView
    tile: tuple[int, ...]
    steps: tuple[int, ...]
    dim_map: tuple[int, ...]
    padding: str | None
    strided: bool


TOKEN = None  # tokens carry no data at run time; ordering is the scheduler's business


def broadcast(a: object, shape: tuple[int, ...]) -> np.ndarray:
    """``np.broadcast_to`` (read it only), without its cost when ``a`` already has ``shape``: a
    wave of one block runs a memory op per loop trip, and the broadcasts were most of its time."""
    if type(a) is np.ndarray and a.shape == shape:
        return a
    return np.broadcast_to(a, shape)
