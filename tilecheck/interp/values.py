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
