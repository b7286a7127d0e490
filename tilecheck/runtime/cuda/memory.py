"""Device arrays the cuda backend allocates itself (differential runs, the device check), with the
layout of the array they copy, exposed through ``__cuda_array_interface__`` so ``ct.launch`` and the
frontend accept them like CuPy or torch arrays."""
from __future__ import annotations

import ctypes
import weakref
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tilecheck.arrays import ArrayLayout
from tilecheck.runtime.cuda.driver import Driver


@dataclass(eq=False)
class DeviceArray:
    ptr: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]  # bytes
    dtype: np.dtype
    owner: Any = field(default=None, repr=False)  # the Allocation that keeps the memory alive, if ours

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (self.ptr, False),
                "strides": self.strides, "version": 3}

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))

    def __repr__(self) -> str:
        return f"DeviceArray(0x{self.ptr:x}, shape={self.shape}, dtype={self.dtype})"


class Allocation:
    """``nbytes`` of device memory, freed when the object goes away (or at ``free()``)."""

    def __init__(self, driver: Driver, nbytes: int) -> None:
        self.ptr = driver.alloc(nbytes)
        self.nbytes = nbytes
        self._finalizer = weakref.finalize(self, driver.free, self.ptr)
        self._finalizer.atexit = False  # the process's exit frees device memory; the driver may be gone

    def free(self) -> None:
        self._finalizer()


def array_in(allocation: Allocation, layout: ArrayLayout) -> DeviceArray:
    """An array with ``layout``'s shape and strides at the start of ``allocation``."""
    return DeviceArray(allocation.ptr + layout.ptr - layout.lowest, layout.shape, layout.strides,
                       np.dtype(layout.typestr), allocation)


def flat_words(ptr: int, nbytes: int, itemsize: int) -> DeviceArray:
    """``nbytes`` at ``ptr`` as a 1-D array of integers of ``itemsize`` bytes, for bitwise work
    (signed: cuTile has no uint16 or uint64)."""
    dtype = np.dtype(f"i{itemsize}")
    return DeviceArray(ptr, (nbytes // itemsize,), (itemsize,), dtype)


def host_view(buffer: np.ndarray, layout: ArrayLayout) -> np.ndarray:
    """``layout`` over a host copy of its extent (``buffer``: the bytes from its lowest address)."""
    return np.ndarray(layout.shape, np.dtype(layout.typestr), buffer, layout.ptr - layout.lowest,
                      layout.strides)


def to_device(driver: Driver, host: np.ndarray, stream: int = 0) -> DeviceArray:
    """A device copy of ``host`` with the same strides (freed when the returned array goes away)."""
    from tilecheck.arrays import layout_of

    layout = layout_of(host)
    assert layout is not None
    alloc = Allocation(driver, layout.extent)
    if layout.extent:
        driver.copy_htod(alloc.ptr, host_bytes(layout), stream)
    return array_in(alloc, layout)


def host_bytes(layout: ArrayLayout) -> np.ndarray:
    """The bytes of a host array's extent, from its lowest address (a view: no copy)."""
    assert layout.space == "host"
    return np.frombuffer((ctypes.c_ubyte * layout.extent).from_address(layout.lowest), np.uint8)


def to_host(driver: Driver, array: Any, stream: int = 0) -> np.ndarray:
    """A host copy of a device array (anything with ``__cuda_array_interface__``), same layout."""
    from tilecheck.arrays import layout_of

    layout = layout_of(array)
    assert layout is not None
    buffer = np.empty(layout.extent, np.uint8)
    if layout.extent:
        driver.copy_dtoh(buffer, layout.lowest, stream)
    return host_view(buffer, layout)
