"""Preconditions that live with the kernel: ``@tilecheck.requires(...)`` and ``[tool.tilecheck.assume]``.

    @tilecheck.requires(tilecheck.nondecreasing("offsets"))
    @ct.kernel
    def segment_sum(offsets, x, y, ...): ...

The decorator may sit above or below ``@ct.kernel``. ``tilecheck.verify`` and ``tilecheck.detect``
add a kernel's own preconditions to the ones passed with ``assume=``; ``tilecheck.launch`` and the
pytest plugin's checked launches also add the ones ``[tool.tilecheck.assume]`` names for the kernel.
This module imports nothing heavy: the verifier is imported where a precondition is checked.
"""
from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import FunctionType
from typing import TYPE_CHECKING, Any

from tilecheck.errors import TilecheckError

if TYPE_CHECKING:
    from tilecheck.verifier.preconditions import Precondition

_REQUIRES_ATTR = "__tilecheck_requires__"


def requires(*preconditions: Precondition) -> Callable[[Any], Any]:
    """Attach ``preconditions`` (``tilecheck.distinct``, ``nondecreasing``, ``bounded``) to a kernel
    and return it unchanged: every check of the kernel assumes them, and checks them on the
    arrays of a given case or launch. Stacked decorators keep source order (top first)."""
    from tilecheck.verifier.preconditions import Precondition

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
    from tilecheck.verifier.preconditions import parse

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
