"""What the differential runner keeps of one output array across runs, shared by the host runner
(``tilecheck.runtime.differential``) and the device runner (``tilecheck.runtime.cuda.differential``):
the sentinel pure outputs are filled with, ``Outcomes`` (accumulated run by run against run 0's
bits) and its summary, ``ArrayDiff``."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tilecheck.interp.memory import is_float


@dataclass
class ArrayDiff:
    """How one output array varied across runs (compared bitwise with run 0)."""

    name: str
    shape: tuple[int, ...]
    runs: int
    distinct_outcomes: int
    fraction_differing_max: float
    fraction_differing_mean: float
    first_differing: list[tuple[int, ...]]
    unwritten: int | None  # elements still holding the sentinel in every run (None: no sentinel)
    max_abs_difference: float | None
    distinct_exact: bool = True  # False: differing runs were counted but not all kept (cuda backend)
    differing_mask: np.ndarray = field(repr=False, compare=False, default=None)  # type: ignore[assignment]


# Quiet NaNs whose payload no arithmetic produces: arithmetic yields the default NaN (payload 0,
# either sign), so a kernel that computes and stores NaN (0 * inf) does not read as "never written".
# fp8 e4m3fn has only two NaNs (0x7f, 0xff), both of which arithmetic produces: the cpu backend
# checks candidates with a second run of the same schedule (differential._mark_unwritten).
_FLOAT_SENTINELS = {"float16": 0x7E5A, "float32": 0x7FE5A5A5, "float64": 0x7FFCA5A5A5A5A5A5,
                    "bfloat16": 0x7FE5, "float8_e5m2": 0x7D, "float8_e4m3fn": 0x7F}


def sentinel_bits(dtype: np.dtype, second: bool = False) -> int | None:
    """The bit pattern pure outputs are filled with (``second``: a different one, for the run that
    tells sentinel-valued results from unwritten elements); None for types without one."""
    bits = _FLOAT_SENTINELS.get(dtype.name) if is_float(dtype) else None
    if bits is None and dtype.kind in "iu":
        bits = int(np.array(np.iinfo(dtype).min + 0x5A, dtype).view(f"u{dtype.itemsize}"))  # a marked pattern
    if bits is None:
        return None
    return bits ^ 1 if second else bits


def sentinel_value(dtype: np.dtype) -> Any:
    """The sentinel as a scalar of ``dtype`` (its bits are ``sentinel_bits(dtype)``), or None."""
    bits = sentinel_bits(dtype)
    return None if bits is None else np.array(bits, f"u{dtype.itemsize}").view(dtype)[()]


def as_words(a: np.ndarray) -> np.ndarray:
    """The array's elements as unsigned words, for bitwise comparison ("V" too: bfloat16 and fp8
    device outputs arrive as raw bytes)."""
    a = np.ascontiguousarray(a)
    return a.view(f"u{a.itemsize}") if a.dtype.kind in "fiubV" and a.itemsize in (1, 2, 4, 8) else a


class Outcomes:
    """How one output array varies across runs, accumulated run by run against run 0's bits; runs
    are never all kept in memory."""

    def __init__(self, name: str, reference: np.ndarray, sentinel: bool) -> None:
        self.name = name
        self.ref = np.array(reference, copy=True)
        self.ref_bits = as_words(self.ref)
        self.sentinel = sentinel
        self.differ = np.zeros(self.ref.shape, bool)
        self.counts: list[int] = []
        self.digests = {hashlib.blake2b(self.ref_bits.tobytes(), digest_size=16).digest()}
        self.exact = True
        self.max_abs: float | None = 0.0 if is_float(self.ref.dtype) else None
        # elements run 0 left unwritten, when known without comparing values (set by the cpu runner)
        self.unwritten_first: np.ndarray | None = None

    def add(self, values: np.ndarray) -> None:
        """A later run's output, compared here."""
        differs = as_words(values) != self.ref_bits
        self.differ |= differs
        self.add_count(int(differs.sum()), values)

    def add_count(self, count: int, values: np.ndarray | None = None) -> None:
        """A later run compared elsewhere (on the device): its differing count, and its values when
        they were brought back."""
        self.counts.append(count)
        if not count:
            return
        if values is None:
            self.exact = False
            return
        self.digests.add(hashlib.blake2b(as_words(values).tobytes(), digest_size=16).digest())
        if self.max_abs is not None:
            with np.errstate(all="ignore"):
                diffs = np.abs(values.astype(np.float64) - self.ref.astype(np.float64))
            finite = diffs[np.isfinite(diffs)]
            if finite.size:
                self.max_abs = max(self.max_abs, float(finite.max()))

    def result(self) -> ArrayDiff:
        size = max(self.ref.size, 1)
        per_run = np.array(self.counts, np.float64) / size
        mask = self.differ.astype(np.uint8)
        unwritten = None
        if self.sentinel:
            held = self.unwritten_first
            if held is None:
                held = self.ref_bits == sentinel_bits(self.ref.dtype)
            never = held & ~self.differ
            unwritten = int(never.sum())
            mask[never] = 2
        first = [tuple(int(i) for i in idx) for idx in np.argwhere(self.differ)[:10]]
        return ArrayDiff(self.name, tuple(self.ref.shape), len(self.counts) + 1, len(self.digests),
                         float(per_run.max()) if per_run.size else 0.0, float(per_run.mean()) if per_run.size else 0.0,
                         first, unwritten, self.max_abs if len(self.counts) else None, self.exact, mask)
