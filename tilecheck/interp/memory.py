"""Kernel arguments as memory: each array argument is a flat element view of the caller's buffer,
so loads and stores act in place on the caller's numpy arrays (as ``ct.launch`` does on a GPU)."""
from __future__ import annotations

import ctypes
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tilecheck.arrays import flat_arguments, is_torch_tensor
from tilecheck.errors import TilecheckError
from tilecheck.ir import Function, Module
from tilecheck.ir import types as T


WINDOW_PAGE = 1 << 16  # bytes a window copies at once


class Window:
    """A private copy of a span of the caller's memory, made a page at a time where a run first
    touches it: a confirmation runs two blocks of a launch, and copying every array they might
    write (in place: every array sharing memory with a written one) costs the whole arrays, where
    the blocks touch a few tiles. ``copy`` is allocated, not filled: the OS makes its pages when
    they are written. Every access of the interpreter to an array over a window goes through
    ``ArrayMemory.touch`` first."""

    __slots__ = ("origin", "copy", "loaded")

    def __init__(self, lo: int, hi: int) -> None:
        self.origin = np.frombuffer((ctypes.c_char * (hi - lo)).from_address(lo), np.uint8)
        self.copy = np.empty(hi - lo, np.uint8)
        self.loaded = np.zeros(-(-(hi - lo) // WINDOW_PAGE), bool)

    def load(self, pages: np.ndarray) -> None:
        new = pages[~self.loaded[pages]]
        for p in new.tolist():
            self.copy[p * WINDOW_PAGE:(p + 1) * WINDOW_PAGE] = self.origin[p * WINDOW_PAGE:(p + 1) * WINDOW_PAGE]
        self.loaded[new] = True


@dataclass
class ArrayMemory:
    name: str
    array: np.ndarray  # the caller's array
    flat: np.ndarray  # 1-D view over every element the array can address (stride 1 = one element)
    shape: tuple[int, ...]
    strides: tuple[int, ...]  # in elements
    window: Window | None = None  # ``flat`` lies in a window's copy, at byte ``window_offset``
    window_offset: int = 0

    def in_window(self, window: Window) -> None:
        """``flat`` lies in ``window``'s copy: every access copies its pages in first (``touch``)."""
        self.window = window
        self.window_offset = self.flat.__array_interface__["data"][0] - window.copy.__array_interface__["data"][0]

    def touch(self, offsets: Any, stop: int | None = None) -> None:
        """Before an access to ``flat[offsets]`` (an index array, or the run ``offsets:stop``):
        the window's pages under those elements are copied in (no-op without a window)."""
        window = self.window
        if window is None:
            return
        size = self.flat.itemsize
        if stop is not None:
            first = self.window_offset + int(offsets) * size
            last = self.window_offset + max(int(stop), int(offsets) + 1) * size - 1
            window.load(np.arange(first // WINDOW_PAGE, last // WINDOW_PAGE + 1))
            return
        starts = self.window_offset + np.asarray(offsets, np.int64).reshape(-1) * size
        if starts.size:
            window.load(np.unique(np.concatenate((starts // WINDOW_PAGE, (starts + size - 1) // WINDOW_PAGE))))


class ArgumentError(TilecheckError):
    """Launch arguments that do not fit the kernel."""


def _flat_view(name: str, arr: np.ndarray) -> tuple[np.ndarray, tuple[int, ...]]:
    itemsize = arr.itemsize
    if any(s % itemsize for s in arr.strides):
        raise ArgumentError(f"argument '{name}': strides {arr.strides} are not multiples of the element size")
    strides = tuple(s // itemsize for s in arr.strides)
    if any(s < 0 for s in strides):
        raise ArgumentError(f"argument '{name}': negative strides are not supported "
                            "(cuTile assumes strides >= 0)")
    extent = 1 + sum((n - 1) * s for n, s in zip(arr.shape, strides)) if arr.size else 0
    flat = as_strided(arr, (extent,), (itemsize,), writeable=arr.flags.writeable)
    return flat, strides


def bind_arguments(module: Module, function: Function,
                   args: Sequence[Any]) -> tuple[list[Any], dict[int, ArrayMemory]]:
    """Entry-argument values for ``args``: arrays expand to (pointer, shape..., strides...) by the
    module's parameter map (cuTile kernels), or map one to one onto a module's entry arguments."""
    values: list[Any] = []
    arrays: dict[int, ArrayMemory] = {}
    if module.params:
        args = flat_arguments(args)
        if len(args) != len(module.params):
            raise ArgumentError(f"kernel '{module.name}' takes {len(module.params)} arguments, "
                                f"got {len(args)}")
        for p, a in zip(module.params, args):
            if p.kind == "constant":
                continue
            if p.kind == "scalar":
                values.append(np.asarray(a))
                continue
            if p.kind == "list":
                arrays[len(values)] = _bind_list(p, a, arrays)
                # the table's base pointer (engine), the length
                values += [None, np.asarray(len(a), np.int32)]
                continue
            arr = as_host_array(p.name, a)
            if arr.ndim != p.ndim or str(arr.dtype) != p.dtype:
                raise ArgumentError(f"argument '{p.name}': the kernel was compiled for {p.dtype} with "
                                    f"{p.ndim} dimensions, got {arr.dtype} with {arr.ndim}")
            flat, strides = _flat_view(p.name, arr)
            arrays[len(values)] = ArrayMemory(p.name, arr, flat, tuple(arr.shape), strides)
            values.append(None)  # the base pointer: filled in by the engine
            values += [np.asarray(n) for n in arr.shape] + [np.asarray(s) for s in strides]
        return values, arrays
    entry_args = function.args
    if len(args) != len(entry_args):
        raise ArgumentError(f"entry @{function.name} takes {len(entry_args)} arguments, got {len(args)}")
    for i, (v, a) in enumerate(zip(entry_args, args)):
        t = v.type
        if isinstance(t, T.TileType) and isinstance(t.element, T.PointerType):
            arr = as_host_array(f"%arg{i}", a)
            flat, strides = _flat_view(f"%arg{i}", arr)
            arrays[i] = ArrayMemory(f"arg{i}", arr, flat, tuple(arr.shape), strides)
            values.append(None)
        else:
            values.append(np.asarray(a))
    return values, arrays


# A list's table holds, for array k of all lists bound so far (memory id -k), the word k * LIST_HANDLE
# where cuTile puts the data pointer: ``int_to_ptr`` turns such a word back into a pointer to that array.
LIST_HANDLE = 1 << 40


def _bind_list(p: Any, items: Any, arrays: dict[int, ArrayMemory]) -> ArrayMemory:
    """The arrays of list parameter ``p`` (memory ids -1, -2, ... in binding order) and its table,
    laid out as cuTile's: one row of i64 words per array (data pointer, shape, strides)."""
    if not isinstance(items, (list, tuple)) or len(items) != len(p.items):
        raise ArgumentError(f"argument '{p.name}': the kernel was compiled for a list of "
                            f"{len(p.items)} arrays")
    words = 1 + 2 * p.ndim
    table = np.zeros((len(items), words), np.int64)
    for k, item in enumerate(items):
        name = f"{p.name}[{k}]"
        arr = as_host_array(name, item)
        if arr.ndim != p.ndim or str(arr.dtype) != p.dtype:
            raise ArgumentError(f"argument '{name}': the kernel was compiled for {p.dtype} with {p.ndim} "
                                f"dimensions, got {arr.dtype} with {arr.ndim}")
        flat, strides = _flat_view(name, arr)
        handle = 1 + sum(1 for i in arrays if i < 0)
        arrays[-handle] = ArrayMemory(name, arr, flat, tuple(arr.shape), strides)
        table[k] = [handle * LIST_HANDLE, *arr.shape, *strides]
    return ArrayMemory(f"{p.name} (list)", table, table.reshape(-1), table.shape, (words, 1))


# numpy has no bfloat16 or fp8: ml_dtypes' types stand in (same bits, numpy casts round to nearest even)
class _NarrowFloats(Mapping[str, Any]):
    """Name -> ml_dtypes type, importing ml_dtypes on first use (the import alone takes about a
    second, and most runs and every verify without a narrow float array never need it)."""

    names = ("bfloat16", "float8_e4m3fn", "float8_e5m2")

    def __getitem__(self, name: str) -> Any:
        if name not in self.names:
            raise KeyError(name)
        import ml_dtypes

        return getattr(ml_dtypes, name)

    def __iter__(self) -> Iterator[str]:
        return iter(self.names)

    def __len__(self) -> int:
        return len(self.names)


NARROW_FLOATS = _NarrowFloats()


def as_host_array(name: str, a: Any) -> np.ndarray:
    """A numpy view of a host array argument (numpy, torch CPU — detached, so tensors that require
    grad work —, anything with DLPack or ``__array__``); bfloat16 and fp8 become ml_dtypes arrays
    over the same memory."""
    if isinstance(a, np.ndarray):
        return a
    if isinstance(a, list):
        raise ArgumentError(f"argument '{name}' is a list of arrays: launch, check_launch and detect take "
                            "list arguments; run_repeated and the differential runner do not yet")
    if is_torch_tensor(a):  # same memory; torch refuses to export a tensor that requires grad
        a = a.detach()
    narrow = NARROW_FLOATS.get(str(getattr(a, "dtype", "")).removeprefix("torch."))
    if narrow is not None and is_torch_tensor(a):
        import torch

        return a.view(torch.uint8 if np.dtype(narrow).itemsize == 1 else torch.int16).numpy().view(narrow)
    if is_torch_tensor(a) and getattr(a.device, "type", None) == "cpu":
        try:  # (numpy before 2.2 makes a DLPack import read-only: a kernel could not write it)
            return a.numpy()
        except (TypeError, RuntimeError):
            pass
    if hasattr(a, "__array__") or hasattr(a, "__dlpack__"):
        try:
            return np.from_dlpack(a) if hasattr(a, "__dlpack__") else np.asarray(a)
        except (TypeError, RuntimeError, BufferError) as exc:
            raise ArgumentError(f"argument '{name}': cannot view it as a host array ({exc})") from None
    raise ArgumentError(f"argument '{name}': expected an array, got {type(a).__name__}")


def is_float(dtype: np.dtype) -> bool:
    """numpy floats and the ml_dtypes narrow floats (kind "V" to numpy)."""
    return dtype.kind == "f" or dtype.name in NARROW_FLOATS


def copy_with_layout(a: np.ndarray) -> np.ndarray:
    """A writable copy with the same strides (a stride-0 or strided view stays one), so a run sees
    the memory layout the caller passed."""
    if a.flags.c_contiguous or a.size == 0 or any(s < 0 for s in a.strides):
        return np.array(a, copy=True)
    extent = 1 + sum((n - 1) * (s // a.itemsize) for n, s in zip(a.shape, a.strides))
    flat = as_strided(a, (extent,), (a.itemsize,)).copy()
    return as_strided(flat, a.shape, a.strides, writeable=True)


def as_strided(a: np.ndarray, shape: tuple[int, ...], strides: tuple[int, ...],
               writeable: bool = True) -> np.ndarray:
    """``numpy.lib.stride_tricks.as_strided`` for every dtype: numpy rebuilds the view from the array
    interface, whose type string ml_dtypes' fp8 e5m2 ("<f1") it cannot read back, so such arrays
    are re-strided as unsigned words of their size and viewed back."""
    words = a.view(f"u{a.itemsize}") if a.dtype.kind not in "biuf" \
        or is_float(a.dtype) and a.dtype.itemsize < 2 or a.dtype.name in NARROW_FLOATS else a
    view = np.lib.stride_tricks.as_strided(words, shape=shape, strides=strides, writeable=writeable)
    return view if words is a else view.view(a.dtype)


def copies_keeping_overlaps(arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Private copies of host arrays that overlap one another exactly as the originals do (two views
    of one buffer stay two views of one new buffer), so a run on the copies sees the aliasing the
    caller's arguments have, and the originals are left as they were."""
    return _rebased(arrays, lambda lo, hi: np.frombuffer((ctypes.c_char * (hi - lo)).from_address(lo),
                                                         np.uint8).copy())


def windows_keeping_overlaps(arrays: Sequence[np.ndarray]) -> tuple[list[np.ndarray], dict[int, Window]]:
    """``copies_keeping_overlaps`` made lazily: views of the same layout over windows (``Window``)
    of each group of overlapping arrays, and per view (by ``id``) its window; nothing is copied
    until a run touches it."""
    made: dict[int, Window] = {}  # by the buffer's id, then by each view's

    def window(lo: int, hi: int) -> np.ndarray:
        w = Window(lo, hi)
        made[id(w.copy)] = w
        return w.copy

    out = _rebased(arrays, window)
    return out, {id(a): made[id(a.base)] for a in out if id(a.base) in made}


def _rebased(arrays: Sequence[np.ndarray], buffer: Any) -> list[np.ndarray]:
    """Each array as a view of the same layout over ``buffer(lo, hi)``, one buffer per group of
    overlapping arrays spanning bytes [lo, hi); empty arrays copied."""
    out = [np.array(a, copy=True) if a.size == 0 else a for a in arrays]  # the rest are replaced below
    for lo, hi, group in _overlapping(arrays):
        made = buffer(lo, hi)
        for i in group:
            a = arrays[i]
            out[i] = np.ndarray(a.shape, a.dtype, buffer=made, offset=a.__array_interface__["data"][0] - lo,
                                strides=a.strides)
    return out


def _overlapping(arrays: Sequence[np.ndarray]) -> Iterator[tuple[int, int, list[int]]]:
    """The non-empty arrays' byte spans, grouped where they overlap: each group's span and members."""
    spans = []
    for i, a in enumerate(arrays):
        if a.size == 0:
            continue
        lo = a.__array_interface__["data"][0] + sum((n - 1) * s for n, s in zip(a.shape, a.strides) if s < 0)
        extent = a.itemsize + sum((n - 1) * abs(s) for n, s in zip(a.shape, a.strides))
        spans.append((lo, lo + extent, i))
    spans.sort()
    k = 0
    while k < len(spans):
        lo, hi, group = spans[k][0], spans[k][1], [spans[k][2]]
        k += 1
        while k < len(spans) and spans[k][0] < hi:
            group.append(spans[k][2])
            hi = max(hi, spans[k][1])
            k += 1
        yield lo, hi, group


def blank_with_layout(a: np.ndarray) -> np.ndarray:
    """A zeroed array with ``a``'s shape, dtype and strides, in a buffer of its own: for an array a
    run writes and never reads, whose contents decide nothing. ``np.zeros`` of a large buffer maps
    zero pages that are only made when touched, where a copy touches every page (a confirmation
    run of two blocks copied a 68 MB attention output first: 0.3 s of page faults)."""
    if a.size == 0:
        return np.array(a, copy=True)
    low = sum((n - 1) * s for n, s in zip(a.shape, a.strides) if s < 0)
    extent = a.itemsize + sum((n - 1) * abs(s) for n, s in zip(a.shape, a.strides))
    buffer = np.zeros(extent, np.uint8)
    return np.ndarray(a.shape, a.dtype, buffer=buffer, offset=-low, strides=a.strides)
