"""Preconditions on kernel inputs, and the ones that live with the kernel: ``tilecheck.distinct("idx")``,
``tilecheck.bounded(...)``, ``tilecheck.nondecreasing("offsets")``; ``@tilecheck.requires(...)`` and
``[tool.tilecheck.assume]``.

    @tilecheck.requires(tilecheck.nondecreasing("offsets"))
    @ct.kernel
    def segment_sum(offsets, x, y, ...): ...

A precondition is a plain value: the array it is about, how a report lists it (``describe``), why
concrete contents break it (``violation``), its text form (``parse``). Its Z3 encoding is the
verifier's (``tilecheck.verifier.contracts.preconditions.constraints``): this module sits below the
interpreter and the verifier and imports neither (DESIGN §2).

The decorator may sit above or below ``@ct.kernel``. ``tilecheck.verify`` and ``tilecheck.detect``
add a kernel's own preconditions to the ones passed with ``assume=``; ``tilecheck.launch`` and the
pytest plugin's checked launches also add the ones ``[tool.tilecheck.assume]`` names for the kernel.
"""
from __future__ import annotations

import dataclasses
import sys
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import FunctionType
from typing import Any

import numpy as np

from tilecheck import checks
from tilecheck.errors import TilecheckError

@dataclass(frozen=True)
class Precondition(ABC):
    """A fact about the contents of an integer array argument the kernel does not write."""

    array: str
    # where it was stated (the decorator's line, the pyproject table), for the error a stale one gets
    source: str | None = field(default=None, compare=False, repr=False, kw_only=True)

    @abstractmethod
    def describe(self) -> str:
        """How the report's assumptions list it."""

    @abstractmethod
    def violation(self, values: np.ndarray) -> str | None:
        """Why concrete contents break the precondition (None when they keep it)."""


@dataclass(frozen=True)
class Distinct(Precondition):
    """No two elements of the array are equal (e.g. a permutation or unique destination rows).
    With ``below``, only values below it must be distinct: values >= ``below`` are padding or
    marker entries that may repeat (a MoE ``sorted_token_ids`` padded with the token count)."""

    below: int | None = None

    def describe(self) -> str:
        scope = "" if self.below is None else f" below {self.below}"
        return f"'{self.array}' holds no duplicate values{scope} (precondition)"

    def violation(self, values: np.ndarray) -> str | None:
        flat = np.asarray(values).reshape(-1)
        checked = flat if self.below is None else flat[flat < self.below]
        unique, counts = np.unique(checked, return_counts=True)
        if (counts > 1).any():
            value = unique[counts > 1][0]
            where = np.flatnonzero(flat == value)[:2].tolist()
            return f"value {value} appears at flat positions {where[0]} and {where[1]}"
        return None


@dataclass(frozen=True)
class Nondecreasing(Precondition):
    """The array's elements never decrease in row-major (flat) order: CSR row offsets,
    ``m_indptr``, prefix sums of segment sizes."""

    def describe(self) -> str:
        return f"values of '{self.array}' are non-decreasing in row-major order (precondition)"

    def violation(self, values: np.ndarray) -> str | None:
        flat = np.asarray(values).reshape(-1)
        drops = np.flatnonzero(flat[1:] < flat[:-1])
        if drops.size:
            i = int(drops[0])
            return (f"values {flat[i]} at flat position {i} and {flat[i + 1]} at flat position {i + 1} "
                    "decrease")
        return None


@dataclass(frozen=True)
class Bounded(Precondition):
    """Every element lies in [lo, hi] (None: unbounded on that side), or is one of ``also`` (the
    marker values a kernel tests for first, such as a cross-entropy's ignore_index)."""

    lo: int | None = None
    hi: int | None = None
    also: tuple[int, ...] = ()

    def describe(self) -> str:
        lo = "-inf" if self.lo is None else self.lo
        hi = "+inf" if self.hi is None else self.hi
        extra = "".join(f" or equal {v}" for v in self.also)
        return f"values of '{self.array}' lie in [{lo}, {hi}]{extra} (precondition)"

    def violation(self, values: np.ndarray) -> str | None:
        flat = np.asarray(values).reshape(-1)
        ok = np.ones(flat.shape, bool)
        if self.lo is not None:
            ok &= flat >= self.lo
        if self.hi is not None:
            ok &= flat <= self.hi
        for v in self.also:
            ok |= flat == v
        if not ok.all():
            i = int(np.flatnonzero(~ok)[0])
            return f"value {flat[i]} at flat position {i} is outside the bound"
        return None


def parse(spec: str) -> Precondition:
    """A precondition from its text form, as written in corpus manifests and
    ``[tool.tilecheck.assume]``: ``distinct:NAME``, ``distinct:NAME:BELOW`` (values below BELOW
    are distinct), ``nondecreasing:NAME`` or ``bounded:NAME:LO:HI[:V,...]`` (LO/HI may be empty
    for no bound; the optional V,... are values allowed besides the range)."""
    parts = spec.split(":")
    try:
        if parts[0] == "distinct" and len(parts) in (2, 3) and parts[1]:
            return distinct(parts[1], below=int(parts[2]) if len(parts) == 3 else None)
        if parts[0] == "nondecreasing" and len(parts) == 2 and parts[1]:
            return nondecreasing(parts[1])
        if parts[0] == "bounded" and len(parts) in (4, 5) and parts[1]:
            also = tuple(int(v) for v in parts[4].split(",")) if len(parts) == 5 else ()
            return bounded(parts[1], None if parts[2] == "" else int(parts[2]),
                           None if parts[3] == "" else int(parts[3]), also=also)
    except ValueError:
        pass
    raise TilecheckError(f"unknown precondition '{spec}' (use distinct:NAME, distinct:NAME:BELOW, "
                         "nondecreasing:NAME or bounded:NAME:LO:HI[:V,...])")


def distinct(array: str, *, below: int | None = None) -> Distinct:
    """Precondition: the integer array argument ``array`` holds no duplicate values; with
    ``below``, no duplicate values below it (values >= ``below``, such as MoE padding entries,
    may repeat): ``distinct("sorted_token_ids", below=num_tokens)``."""
    return Distinct(checks.name("distinct(array=...)", array),
                    checks.integer("distinct(below=...)", below, none=True))


def nondecreasing(array: str) -> Nondecreasing:
    """Precondition: the integer array argument ``array`` never decreases in row-major order
    (``nondecreasing("offsets")`` for CSR row offsets or prefix sums of segment sizes)."""
    return Nondecreasing(checks.name("nondecreasing(array=...)", array))


def bounded(array: str, lo: int | None = None, hi: int | None = None, *, also: tuple[int, ...] = ()) -> Bounded:
    """Precondition: every value of the integer array argument ``array`` lies in [lo, hi], or is one
    of ``also`` (e.g. ``bounded("target", 0, V - 1, also=(-100,))`` for an ignore_index)."""
    array = checks.name("bounded(array=...)", array)
    lo = checks.integer("bounded(lo=...)", lo, none=True)
    hi = checks.integer("bounded(hi=...)", hi, none=True)
    if lo is not None and hi is not None and lo > hi:
        raise checks.ArgumentValueError(f"bounded(lo=..., hi=...): lo {lo} is above hi {hi}: no value lies in "
                                        "the range, so every launch would break it")
    if isinstance(also, (str, bytes)) or not isinstance(also, (tuple, list, set, frozenset)):
        raise checks.ArgumentTypeError(f"bounded(also=...) takes a tuple of ints, got {checks.show(also)}")
    return Bounded(array, lo, hi, tuple(checks.integer("bounded(also=...)", v) for v in also))


def preconditions(where: str, value: Any) -> tuple[Precondition, ...]:
    """``assume=`` as given: one precondition, its text form (``"distinct:idx"``, as ``parse`` reads
    it), or a list or tuple of those; anything else is an error naming ``where``."""
    if isinstance(value, (Precondition, str)):
        value = (value,)
    if not isinstance(value, (tuple, list)):
        raise checks.ArgumentTypeError(
            f"{where} takes a list of preconditions (tilecheck.distinct(...), tilecheck.bounded(...), "
            f"tilecheck.nondecreasing(...), or their text forms such as 'distinct:idx'), got {checks.show(value)}")
    out = []
    for item in value:
        if isinstance(item, str):
            try:
                item = parse(item)
            except TilecheckError as exc:
                raise checks.ArgumentValueError(f"{where}: {exc}") from None
        if not isinstance(item, Precondition):
            raise checks.ArgumentTypeError(
                f"{where} takes tilecheck.distinct(...), tilecheck.bounded(...) or tilecheck.nondecreasing(...) "
                f"(or their text forms), got {checks.show(item)} in the list")
        out.append(item)
    return tuple(out)


# ---- preconditions that live with the kernel -------------------------------------------------------
_REQUIRES_ATTR = "__tilecheck_requires__"


def requires(*preconditions: Precondition) -> Callable[[Any], Any]:
    """Attach ``preconditions`` (``tilecheck.distinct``, ``nondecreasing``, ``bounded``) to a kernel
    and return it unchanged: every check of the kernel assumes them, and checks them on the
    arrays of a given case or launch. Stacked decorators keep source order (top first)."""
    if len(preconditions) == 1 and _is_kernel_or_function(preconditions[0]):
        raise TilecheckError("@tilecheck.requires takes preconditions: write "
                             "@tilecheck.requires(tilecheck.distinct(\"idx\"), ...), with parentheses")
    for pre in preconditions:
        if not isinstance(pre, Precondition):
            raise TilecheckError("@tilecheck.requires takes preconditions such as "
                                 "tilecheck.distinct(\"idx\"), tilecheck.nondecreasing(\"offsets\") or "
                                 f"tilecheck.bounded(...), got {pre!r}")
    caller = sys._getframe(1)  # the decorator's line: what an error about a stale precondition names
    where = f"@tilecheck.requires at {caller.f_code.co_filename}:{caller.f_lineno}"
    new = tuple(pre if pre.source else dataclasses.replace(pre, source=where) for pre in preconditions)

    def attach(target: Any) -> Any:
        if not _is_kernel_or_function(target):
            raise TilecheckError(f"@tilecheck.requires is on {_describe(target)}, not a cuTile kernel: "
                                 "put it above or below @ct.kernel")
        setattr(target, _REQUIRES_ATTR, (*new, *getattr(target, _REQUIRES_ATTR, ())))
        return target

    return attach


def requirements(kernel: Any) -> tuple[Precondition, ...]:
    """The preconditions ``@tilecheck.requires`` attached to ``kernel`` (empty when none), whether
    the decorator was written above ``@ct.kernel`` (on the kernel) or below it (on its function)."""
    found: list[Any] = []
    seen: set[int] = set()
    obj = kernel
    while obj is not None and id(obj) not in seen:  # the kernel, then the functions it wraps
        seen.add(id(obj))
        found += getattr(obj, _REQUIRES_ATTR, ())
        obj = getattr(obj, "_pyfunc", None) or getattr(obj, "__wrapped__", None)
    return tuple(_unique(found))


def with_requirements(kernel: Any, assume: Iterable[Any]) -> tuple[Any, ...]:
    """The kernel's own preconditions, then ``assume``; each once, in that order."""
    return tuple(_unique([*requirements(kernel), *assume]))


def configured(kernel: Any, table: Mapping[str, Sequence[str]], where: Any = None) -> tuple[Precondition, ...]:
    """What a launch of ``kernel`` is checked under: its own preconditions, then those
    ``[tool.tilecheck.assume]`` (``table``: kernel name -> text forms, read from the file ``where``)
    names for it."""
    name = kernel_name(kernel)
    source = f"[tool.tilecheck.assume] {name}" + (f" in {where}" if where else "")
    return with_requirements(kernel, [dataclasses.replace(parse(spec), source=source)
                                      for spec in table.get(name, ())])


def check_named(preconditions: Iterable[Precondition], arrays: Iterable[str], kernel: str) -> None:
    """The one rule for stale preconditions, applied by ``verify``, ``detect``, the launcher, the
    plugin and every command: each must name an array argument of the kernel (``arrays``); else a
    ``TilecheckError`` naming where it was stated."""
    arrays = sorted(set(arrays))
    for pre in preconditions:
        if pre.array not in arrays:
            origin = f"{pre.source}: " if getattr(pre, "source", None) else ""
            raise TilecheckError(f"{origin}precondition '{pre.describe()}' names '{pre.array}', which is not an array "
                                 f"argument of {kernel} ({', '.join(arrays) or 'it has none'})")


def array_arguments(kernel: Any, args: Sequence[Any] | None) -> list[str] | None:
    """The names of the kernel's array arguments in this launch (None when they cannot be told
    without compiling: a kernel whose Python signature is not readable)."""
    import inspect

    from tilecheck.arrays import layout_of

    params = getattr(kernel, "params", None)
    if params is not None and not callable(params):  # a Tile IR module
        return [p.name for p in params if p.kind == "array"]
    function = getattr(kernel, "_pyfunc", None) or kernel
    try:
        names = list(inspect.signature(function).parameters)
    except (TypeError, ValueError):
        return None
    if args is None or any(isinstance(a, (tuple, list)) for a in args):
        return None  # a tuple's or list's arrays get their names when the kernel is compiled
    return [n for n, a in zip(names, args) if _is_array(a, layout_of)]


def _is_array(value: Any, layout_of: Any) -> bool:
    try:
        return layout_of(value) is not None
    except Exception:  # noqa: BLE001 - an argument we cannot read is not an array to name
        return False


def check_preconditions(kernel: Any, args: Sequence[Any] | None, preconditions: Iterable[Precondition]) -> None:
    """``check_named`` on this launch's array arguments, before anything is compiled or run
    (nothing to read when there are no preconditions: the launcher calls this per launch)."""
    preconditions = tuple(preconditions)
    if not preconditions:
        return
    arrays = array_arguments(kernel, args)
    if arrays is not None:
        check_named(preconditions, arrays, kernel_name(kernel))


def kernel_name(kernel: Any) -> str:
    """The name ``[tool.tilecheck.assume]`` knows a kernel by: its Python function's name."""
    return getattr(getattr(kernel, "_pyfunc", None), "__name__", None) or getattr(kernel, "__name__", None) \
        or getattr(kernel, "name", "?")


def _unique(items: Iterable[Any]) -> list[Any]:
    out: list[Any] = []
    for item in items:
        if item not in out:  # by equality: preconditions are frozen values
            out.append(item)
    return out


def _is_kernel_or_function(obj: Any) -> bool:
    import cuda.tile as ct

    return isinstance(obj, (ct.kernel, FunctionType))


def _describe(obj: Any) -> str:
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None) or repr(obj)[:60]
    return f"'{name}', a {type(obj).__name__}"
