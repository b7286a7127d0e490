"""What a cuTile kernel's compilation reads besides its arguments, as one digest: how the proof cache
finds a kernel's Tile IR in a new process without compiling it again (issue 20).

cuTile compiles a kernel from its Python function: its code, the functions it calls and the global
values it reads, for the parameters' specialisation (``cutile.specialization``). The digest covers
- the versions of Python, cuda-tile and tilecheck, and the kernel's compiler options;
- the text of every source file that defines the kernel or a function it calls (transitively), so a
  change anywhere in those files, line numbers included, gives another digest;
- the value of every global name those functions read that is a plain value (numbers, strings,
  tuples of them, enums), read from the functions' globals and from the modules they name
  (``cfg.BLOCK``), whatever file defines it.
A value the digest cannot pin down (an object without a stable text form, a function without a
source file) gives no digest: that kernel is compiled in every process, as without a cache.
What it cannot see is state a compilation reads some other way (an environment variable read at
trace time, a monkeypatched attribute of an imported package): ``--no-cache`` or ``tilecheck
cache clear`` after changing such state (docs/semantics.md, "The proof cache").
"""
from __future__ import annotations

import builtins
import enum
import hashlib
import inspect
import sys
import types
from pathlib import Path
from typing import Any

_SIMPLE = (type(None), bool, int, float, complex, str, bytes)
# packages whose code is pinned by their version, not their files: their objects enter by name
_PINNED = ("cuda", "numpy", "math", "builtins", "typing", "functools", "operator", "torch", "ml_dtypes")
_FILES: dict[tuple[str, int, int], str] = {}  # (path, mtime_ns, size) -> digest of its text


class _Unpinned(Exception):
    """A value the digest cannot pin down."""


def kernel_digest(pyfunc: Any, options: Any, versions: str) -> str | None:
    """The digest of what compiling ``pyfunc`` (a kernel's Python function) with ``options`` reads,
    or None when something it reads has no stable form."""
    h = hashlib.sha256(f"{sys.version}|{versions}|{options!r}".encode())
    try:
        _function(pyfunc, h, set())
    except (_Unpinned, OSError, TypeError):
        return None
    return h.hexdigest()


def _function(func: Any, h: Any, seen: set[int]) -> None:
    if id(func) in seen:
        return
    seen.add(id(func))
    source = inspect.getsourcefile(func)
    if source is None:
        raise _Unpinned(func)
    h.update(f"fn|{func.__module__}|{func.__qualname__}|{_file(source)}".encode())
    names = sorted(_names(func.__code__))
    scope = func.__globals__
    modules = []
    for name in names:
        if name in scope:
            value = scope[name]
            h.update(f"|{name}=".encode())
            _value(value, h, seen)
            if isinstance(value, types.ModuleType):
                modules.append(value)
        elif not hasattr(builtins, name):
            h.update(f"|{name}?".encode())  # an attribute name: resolved on the modules below
    for module in modules:  # attributes read from a named module (cfg.BLOCK)
        if module.__name__.split(".")[0] in _PINNED:
            continue
        for name in names:
            if name in vars(module):
                h.update(f"|{module.__name__}.{name}=".encode())
                _value(vars(module)[name], h, seen)
    for cell in func.__closure__ or ():
        _value(cell.cell_contents, h, seen)
    for default in func.__defaults__ or ():
        _value(default, h, seen)


def _names(code: types.CodeType) -> set[str]:
    out = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            out |= _names(const)
    return out


def _value(value: Any, h: Any, seen: set[int]) -> None:
    if isinstance(value, _SIMPLE):
        h.update(repr(value).encode())
    elif isinstance(value, enum.Enum):
        h.update(f"{type(value).__qualname__}.{value.name}".encode())
    elif isinstance(value, (tuple, list, frozenset)):
        h.update(f"{type(value).__name__}(".encode())
        for item in (sorted(value, key=repr) if isinstance(value, frozenset) else value):
            _value(item, h, seen)
        h.update(b")")
    elif isinstance(value, types.ModuleType):
        h.update(f"module {value.__name__}".encode())
        if value.__name__.split(".")[0] not in _PINNED and getattr(value, "__file__", None):
            h.update(_file(value.__file__).encode())
    elif isinstance(value, types.FunctionType):
        _function(value, h, seen)
    elif (inner := _wrapped_function(value)) is not None:  # a @ct.kernel or @ct.function
        _function(inner, h, seen)
    elif _pinned(value):
        h.update(f"{type(value).__module__}.{type(value).__qualname__}:{value!r}".encode())
    elif isinstance(value, type):
        source = inspect.getsourcefile(value)
        if source is None:
            raise _Unpinned(value)
        h.update(f"class {value.__module__}.{value.__qualname__}|{_file(source)}".encode())
    else:
        raise _Unpinned(value)


def _wrapped_function(value: Any) -> Any:
    annotated = getattr(value, "_annotated_function", None)
    inner = getattr(annotated, "pyfunc", None) or getattr(value, "_pyfunc", None)
    return inner if isinstance(inner, types.FunctionType) else None


def _pinned(value: Any) -> bool:
    """An object of a pinned package (``ct.float32``, ``ct.Constant[int]``) with a stable text form."""
    module = getattr(type(value), "__module__", "") or ""
    if module.split(".")[0] not in _PINNED and not (isinstance(value, type) and
                                                    (value.__module__ or "").split(".")[0] in _PINNED):
        return False
    return " at 0x" not in repr(value)


def _file(path: str) -> str:
    p = Path(path)
    stat = p.stat()
    key = (str(p), stat.st_mtime_ns, stat.st_size)
    found = _FILES.get(key)
    if found is None:
        found = _FILES[key] = hashlib.sha256(p.read_bytes()).hexdigest()
    return f"{p}:{found}"
