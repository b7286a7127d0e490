"""Where an argument lives: the address layout of numpy, torch, CuPy and any ``__cuda_array_interface__``
or ``__array_interface__`` array, without touching its memory.

The ownership checks (no written array overlaps another argument; zipped launches are independent)
work on these layouts, so they hold for device arrays as they do for numpy ones.
"""
from __future__ import annotations

from dataclasses import dataclass
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
        return np.dtype(self.typestr).itemsize

    @property
    def extent(self) -> int:
        """Bytes from the lowest to one past the highest addressed byte (0 for an empty array)."""
        if any(n == 0 for n in self.shape):
            return 0
        return self.itemsize + sum((n - 1) * abs(s) for n, s in zip(self.shape, self.strides))

    @property
    def lowest(self) -> int:
        """The lowest address the array touches (negative strides reach below ``ptr``)."""
        return self.ptr + sum((n - 1) * s for n, s in zip(self.shape, self.strides) if s < 0 and n > 0)

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
        return ArrayLayout(obj.ctypes.data, tuple(obj.shape), tuple(obj.strides), obj.dtype.str, "host")
    iface = getattr(obj, "__cuda_array_interface__", None)
    if iface is not None:
        return _from_interface(iface, "cuda")
    if _is_torch_tensor(obj):
        if obj.device.type != "cpu":
            raise TilecheckError(f"a torch tensor on {obj.device} without __cuda_array_interface__ is not supported")
        return layout_of(obj.detach().numpy())
    iface = getattr(obj, "__array_interface__", None)
    if isinstance(iface, dict):
        return _from_interface(iface, "host")
    if hasattr(obj, "__dlpack__") and hasattr(obj, "shape"):
        try:
            return layout_of(np.from_dlpack(obj))
        except (TypeError, RuntimeError, BufferError) as exc:
            raise TilecheckError(f"cannot read the layout of a {type(obj).__name__} through DLPack ({exc}); "
                                 "pass an array with __cuda_array_interface__ or a host array") from None
    return None


def _from_interface(iface: dict[str, Any], space: str) -> ArrayLayout:
    try:
        shape = tuple(int(n) for n in iface["shape"])
        typestr = str(iface["typestr"])
        ptr = int(iface["data"][0]) if iface.get("data") is not None else 0
        itemsize = np.dtype(typestr).itemsize
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise TilecheckError(f"malformed array interface {iface!r}: {exc}") from None
    strides = iface.get("strides")
    if strides is None:  # C-contiguous
        acc, out = itemsize, []
        for n in reversed(shape):
            out.append(acc)
            acc *= max(n, 1)
        strides = tuple(reversed(out))
    return ArrayLayout(ptr, shape, tuple(int(s) for s in strides), typestr, space)


def _is_torch_tensor(obj: Any) -> bool:
    return type(obj).__module__.startswith("torch") and hasattr(obj, "data_ptr") and hasattr(obj, "device")


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

