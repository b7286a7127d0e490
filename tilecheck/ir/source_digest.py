"""What a cuTile kernel's compilation reads besides its arguments, as one digest: how the proof cache
finds a kernel's Tile IR in a new process without compiling it again (issue 20).

cuTile compiles a kernel from its Python function: its code, the functions it calls and the global
values it reads, for the parameters' specialisation (``cutile.specialization``). The digest covers
- the versions of Python, cuda-tile and tilecheck, and the kernel's compiler options;
- the code objects of the kernel and every function it calls (transitively, ``@ct.function`` helpers
  followed through cuTile's wrapper to the user's function) as this process loaded them, and the
  text of the files that define them, so a change anywhere in those files, line numbers included,
  gives another digest, and so does a file edited after this process imported it;
- the value of every global name those functions read that is a plain value (numbers, strings,
  tuples of them, enums), read from the functions' globals and, at any depth, from the modules and
  classes they name (``cfg.BLOCK``, ``cfg.sub.SHIFT``), whatever file defines it; closures,
  defaults, keyword-only defaults and annotations.
A value the digest cannot pin down (an object without a stable text form, a function without a
source file) gives no digest: that kernel is compiled in every process, as without a cache.
What it cannot see is state a compilation reads some other way (an environment variable read at
trace time, a monkeypatched attribute of an imported package): ``--no-cache`` or ``tilecheck
cache clear`` after changing such state (docs/semantics/reuse.md, "The proof cache").
"""
from __future__ import annotations

import builtins
import enum
import hashlib
import inspect
import os
import sys
import types
from pathlib import Path
from typing import Any

from tilecheck.memo import Memo

_SIMPLE = (type(None), bool, int, float, complex, str, bytes)
# packages whose code is pinned by their version, not their files: their objects enter by name
_PINNED = ("cuda", "numpy", "math", "builtins", "typing", "functools", "operator", "torch", "ml_dtypes")
_FILES: dict[tuple[str, int, int], str] = Memo(4096)  # (path, mtime_ns, size) -> digest of its text


class _Unpinned(Exception):
    """A value the digest cannot pin down."""


def kernel_digest(pyfunc: Any, options: Any, versions: str) -> str | None:
    """The digest of what compiling ``pyfunc`` (a kernel's Python function) with ``options`` reads,
    or None when something it reads has no stable form."""
    h = hashlib.sha256()
    _put(h, f"{sys.version}|{versions}|{options!r}")
    try:
        _function(pyfunc, h, set())
    except (_Unpinned, OSError, TypeError, ValueError):  # ValueError: e.g. a source file that cannot be read as text
        return None
    return h.hexdigest()


def _put(h: Any, text: str) -> None:
    """Hash ``text`` as UTF-8; a file name that is not UTF-8 (a surrogate escape) hashes as its bytes."""
    h.update(text.encode("utf-8", "surrogateescape"))


def _function(func: Any, h: Any, seen: set[int]) -> None:
    """A function as compiling it reads it: its code object as loaded in this process (not only its
    file's text, which may have been edited since the module was imported), its file, the values of
    the global names and attribute chains it reads, its closure, defaults and annotations. A wrapper
    (``@ct.function``, ``functools.wraps``) is followed to the function it wraps."""
    if id(func) in seen:
        return
    seen.add(id(func))
    wrapped = getattr(func, "__wrapped__", None)
    if isinstance(wrapped, types.FunctionType) or _wrapped_function(wrapped) is not None:
        if _pinned_code(func):  # cuTile's own wrapper: pinned by its version
            _put(h, f"wrapper {func.__code__.co_filename}|{func.__code__.co_name}")
        else:  # a user's decorator: its own code counts too
            _own_function(func, h, seen)
        _value(wrapped, h, seen)
        return
    _own_function(func, h, seen)


def _own_function(func: Any, h: Any, seen: set[int]) -> None:
    source = inspect.getsourcefile(func)
    if source is None:
        raise _Unpinned(func)
    _put(h, f"fn|{func.__module__}|{func.__qualname__}|{_file(source)}|")
    _code(func.__code__, h)
    names = sorted(_names(func.__code__))
    scope = func.__globals__
    namespaces = []
    for name in names:
        if name in scope:
            value = scope[name]
            _put(h, f"|{name}=")
            _value(value, h, seen)
            namespaces.append((name, value))
        elif not hasattr(builtins, name):
            _put(h, f"|{name}?")  # an attribute name: resolved on the namespaces below
    # attributes read from a named module or class, at any depth (cfg.BLOCK, cfg.sub.SHIFT): every
    # name the code reads, looked up in each namespace reached from its globals
    done: set[int] = set()
    while namespaces:
        path, space = namespaces.pop()
        if id(space) in done or not _walkable(space):
            continue
        done.add(id(space))
        attributes = vars(space)
        for name in names:
            if name in attributes:
                value = attributes[name]
                _put(h, f"|{path}.{name}=")
                _value(value, h, seen)
                namespaces.append((f"{path}.{name}", value))
    for cell in func.__closure__ or ():
        _value(cell.cell_contents, h, seen)
    for default in func.__defaults__ or ():
        _value(default, h, seen)
    for name, default in sorted((func.__kwdefaults__ or {}).items()):
        _put(h, f"|kw {name}=")
        _value(default, h, seen)
    for name, note in sorted(getattr(func, "__annotations__", {}).items()):
        _put(h, f"|note {name}=")
        _value(note, h, seen)


def _walkable(space: Any) -> bool:
    """A module or class whose attributes the digest follows (pinned packages' are pinned by version)."""
    if isinstance(space, types.ModuleType):
        return space.__name__.split(".")[0] not in _PINNED
    return isinstance(space, type) and not _in_pinned_package(space)


def _pinned_code(func: Any) -> bool:
    """Is the function's code in a pinned package's files (``functools.wraps`` copies the wrapped
    function's ``__module__`` onto a wrapper, so the file says whose code it is)?"""
    where = str(Path(func.__code__.co_filename).resolve())
    for name in _PINNED:
        package = sys.modules.get(name)
        for root in list(getattr(package, "__path__", None) or []):
            if where.startswith(str(Path(root).resolve()) + os.sep):
                return True
    return False


def _in_pinned_package(obj: Any) -> bool:
    return (getattr(obj, "__module__", None) or "").split(".")[0] in _PINNED


def _names(code: types.CodeType) -> set[str]:
    out = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            out |= _names(const)
    return out


def _code(code: types.CodeType, h: Any) -> None:
    """A code object's instructions, names, constants and line table (nested code included): what
    the process runs, which a file edited after the import no longer shows."""
    h.update(code.co_code)
    _put(h, repr((code.co_names, code.co_varnames, code.co_freevars, code.co_cellvars, code.co_argcount,
                code.co_kwonlyargcount, code.co_firstlineno)))
    h.update(getattr(code, "co_linetable", b"") or b"")
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            _code(const, h)
        else:
            _put(h, f"|{type(const).__name__}:{const!r}")


def _value(value: Any, h: Any, seen: set[int]) -> None:
    if isinstance(value, _SIMPLE):
        _put(h, repr(value))
    elif isinstance(value, enum.Enum):
        _put(h, f"{type(value).__qualname__}.{value.name}")
    elif isinstance(value, (tuple, list, frozenset)):
        _put(h, f"{type(value).__name__}(")
        for item in (sorted(value, key=repr) if isinstance(value, frozenset) else value):
            _value(item, h, seen)
        h.update(b")")
    elif isinstance(value, types.ModuleType):
        _put(h, f"module {value.__name__}")
        if value.__name__.split(".")[0] not in _PINNED and getattr(value, "__file__", None):
            _put(h, _file(value.__file__))
    elif isinstance(value, types.FunctionType):
        _function(value, h, seen)
    elif (inner := _wrapped_function(value)) is not None:  # a @ct.kernel or @ct.function
        _function(inner, h, seen)
    elif _pinned(value):
        _put(h, f"{type(value).__module__}.{type(value).__qualname__}:{value!r}")
    elif isinstance(value, type):
        source = inspect.getsourcefile(value)
        if source is None:
            raise _Unpinned(value)
        _put(h, f"class {value.__module__}.{value.__qualname__}|{_file(source)}")
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
