"""Where an argument lives: the address layout of numpy, torch, CuPy and any ``__cuda_array_interface__``
or ``__array_interface__`` array, without touching its memory.

The ownership checks (no written array overlaps another argument; zipped launches are independent)
work on these layouts, so they hold for device arrays as they do for numpy ones.
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tilecheck.errors import TilecheckError


@dataclass(frozen=True)
class ArrayLayout:
    """An array's address range: base pointer, shape, byte strides, element type, and which address
    space it lives in ("host" or "cuda")."""

    ptr: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]  # bytes
    typestr: str  # numpy array-interface type string, e.g. "<f4"
    space: str

    @property
    def itemsize(self) -> int:
        return typestr_itemsize(self.typestr)

    # the lowest address the array touches, and the bytes from it to one past the highest (None for
    # an element type without a size: ``extent`` then raises, as ``itemsize`` does): computed once, the
    # launcher compares every written array with every other at each launch
    _lowest: int = field(init=False, repr=False, compare=False)
    _extent: int | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_lowest", self.ptr + sum(
            (n - 1) * s for n, s in zip(self.shape, self.strides) if s < 0 and n > 0))
        try:
            size = self.itemsize
        except ValueError:
            object.__setattr__(self, "_extent", None)
            return
        object.__setattr__(self, "_extent", 0 if any(n == 0 for n in self.shape) else size + sum(
            (n - 1) * abs(s) for n, s in zip(self.shape, self.strides)))

    @property
    def extent(self) -> int:
        """Bytes from the lowest to one past the highest addressed byte (0 for an empty array)."""
        return self._extent if self._extent is not None else self.itemsize

    @property
    def lowest(self) -> int:
        """The lowest address the array touches (negative strides reach below ``ptr``)."""
        return self._lowest

    def address_view(self) -> np.ndarray:
        """A numpy array at this layout's addresses, for address arithmetic only (``np.shares_memory``):
        it must never be read, since the addresses may be device memory."""
        return np.asarray(_AddressOnly(self))


class _AddressOnly:
    def __init__(self, layout: ArrayLayout) -> None:
        self.__array_interface__ = {"data": (layout.ptr, True), "shape": layout.shape,
                                    "strides": layout.strides, "typestr": layout.typestr, "version": 3}


def layout_of(obj: Any) -> ArrayLayout | None:
    """The layout of an array argument, or None when ``obj`` is not an array (a scalar, a constant)."""
    if isinstance(obj, np.ndarray):
        return ArrayLayout(obj.__array_interface__["data"][0], obj.shape, obj.strides, obj.dtype.str, "host")
    # torch before __cuda_array_interface__: torch's array interfaces raise on bfloat16; DLPack does
    # not (detached: torch refuses to export a tensor that requires grad)
    if is_torch_tensor(obj):
        return _from_dlpack(obj.detach())
    iface = getattr(obj, "__cuda_array_interface__", None)
    if iface is not None:
        return _from_interface(iface, "cuda")
    iface = getattr(obj, "__array_interface__", None)
    if isinstance(iface, dict):
        return _from_interface(iface, "host")
    if hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__"):
        return _from_dlpack(obj)
    return None


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):  # the head of DLManagedTensor (DLPack's dlpack.h)
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


_DL_SPACES = {1: "host", 3: "host", 2: "cuda", 13: "cuda"}  # CPU, CUDA host, CUDA, CUDA managed
_DL_KINDS = {0: "i", 1: "u", 2: "f", 6: "b"}  # int, uint, float, bool; others (bfloat, fp8) as raw bytes
_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype, _get_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]


def _from_dlpack(obj: Any) -> ArrayLayout:
    """The layout from a DLPack capsule, read in place: the capsule is not consumed, so its own
    destructor releases it."""
    name = type(obj).__name__
    try:
        device_type, _ = obj.__dlpack_device__()
        space = _DL_SPACES.get(int(device_type))
        if space is None:
            raise TilecheckError(f"a {name} on DLPack device type {device_type} is neither host nor CUDA memory")
        try:  # stream -1: no synchronization (only the address is read)
            capsule = obj.__dlpack__(stream=-1) if space == "cuda" else obj.__dlpack__()
        except TypeError:
            capsule = obj.__dlpack__()
        tensor = ctypes.cast(_get_pointer(capsule, b"dltensor"), ctypes.POINTER(_DLTensor)).contents
    except (TypeError, ValueError, RuntimeError, BufferError, AttributeError) as exc:
        raise TilecheckError(f"cannot read the layout of a {name} through DLPack ({exc})") from None
    itemsize = max(tensor.dtype.bits // 8, 1) * tensor.dtype.lanes
    kind = _DL_KINDS.get(tensor.dtype.code) if tensor.dtype.lanes == 1 else None
    typestr = f"|b{itemsize}" if kind == "b" else f"<{kind}{itemsize}" if kind else f"|V{itemsize}"
    shape = tuple(int(tensor.shape[i]) for i in range(tensor.ndim))
    if tensor.strides:
        strides = tuple(int(tensor.strides[i]) * itemsize for i in range(tensor.ndim))
    else:
        strides = _contiguous_strides(shape, itemsize)
    return ArrayLayout((tensor.data or 0) + tensor.byte_offset, shape, strides, typestr, space)


def typestr_itemsize(typestr: str) -> int:
    """Bytes per element of an array-interface type string ("<f4" -> 4). Read from the string, not
    through numpy, which does not know every type string ml_dtypes arrays export ("<f1": fp8 e5m2)."""
    digits = typestr.lstrip("<>|=")[1:]
    if not digits.isdigit():
        raise ValueError(f"unknown element type {typestr!r}")
    return int(digits)


def _contiguous_strides(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    acc, out = itemsize, []
    for n in reversed(shape):
        out.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(out))


def _from_interface(iface: dict[str, Any], space: str) -> ArrayLayout:
    try:
        shape = tuple(int(n) for n in iface["shape"])
        typestr = str(iface["typestr"])
        ptr = int(iface["data"][0]) if iface.get("data") is not None else 0
        itemsize = typestr_itemsize(typestr)
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise TilecheckError(f"malformed array interface {iface!r}: {exc}") from None
    strides = iface.get("strides")
    if strides is None:  # C-contiguous
        strides = _contiguous_strides(shape, itemsize)
    return ArrayLayout(ptr, shape, tuple(int(s) for s in strides), typestr, space)


def is_torch_tensor(obj: Any) -> bool:
    return type(obj).__module__.startswith("torch") and hasattr(obj, "data_ptr") and hasattr(obj, "device")


def space_of(a: Any) -> str | None:
    """Where an argument's memory is, cheaply (no layout read): "host", "cuda", or None for a
    non-array."""
    if isinstance(a, (bool, int, float)):
        return None
    if isinstance(a, np.ndarray):
        return "host"
    if isinstance(a, list):  # a list of arrays (cuTile's list argument): where its arrays are
        spaces = {space_of(x) for x in a} - {None}
        return "cuda" if "cuda" in spaces else "host" if spaces else None
    if is_torch_tensor(a):
        return "cuda" if a.is_cuda else "host"
    if hasattr(a, "__cuda_array_interface__"):
        return "cuda"
    return "host" if hasattr(a, "__array_interface__") or hasattr(a, "__dlpack__") else None


def layouts_overlap(a: ArrayLayout, b: ArrayLayout) -> bool:
    """Whether two layouts share a byte. Exact (numpy's solver) where that is cheap; when the solver
    gives up the answer is True — an unproven disjointness is never reported as one."""
    if a.space != b.space or a.extent == 0 or b.extent == 0:
        return False
    lo_a, lo_b = a.lowest, b.lowest
    if lo_a + a.extent <= lo_b or lo_b + b.extent <= lo_a:
        return False
    try:
        return bool(np.shares_memory(a.address_view(), b.address_view(), max_work=10**6))
    except np.exceptions.TooHardError:
        return True



def flat_arguments(args: Any) -> tuple[Any, ...]:
    """Launch arguments with tuple arguments expanded in place, recursively: the order of the
    kernel's leaf parameters (``module.params``)."""
    out: list[Any] = []
    for a in args:
        if isinstance(a, tuple):
            out += flat_arguments(a)
        else:
            out.append(a)
    return tuple(out)


def rebuild_arguments(template: Any, flat: Any) -> tuple[Any, ...]:
    """``flat`` (as from ``flat_arguments(template)``) regrouped into ``template``'s tuples."""
    items = iter(flat)

    def build(args: Any) -> tuple[Any, ...]:
        return tuple(build(a) if isinstance(a, tuple) else next(items) for a in args)

    return build(template)
