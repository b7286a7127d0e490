"""Find kernels and their declared cases in Python files, packages and Tile IR files.

Tile IR files: ``.tileir`` is the MLIR text form (``tileirdisasm`` output, ``CUDA_TILE_DUMP_TILEIR``);
``.tileirbc`` is the bytecode, the name cuTile gives it (``CUDA_TILE_DUMP_BYTECODE``, and the file
it hands ``tileiras``); ``.tilebc`` is accepted as another name for the bytecode.
"""
from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import os
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tilecheck.cases import Case, cases_of, kept_cwd
from tilecheck.errors import TilecheckError, where_raised

TEXT_SUFFIXES = (".tileir",)
BYTECODE_SUFFIXES = (".tileirbc", ".tilebc")
IR_SUFFIXES = TEXT_SUFFIXES + BYTECODE_SUFFIXES


class CollectError(TilecheckError):
    """A path that yields no kernel: missing, unreadable, failing to import, or holding none."""


# optional frontends: the module a kernel file imports, and the extra that installs it
OPTIONAL_FRONTENDS = {"triton": "tilecheck[triton]"}


class MissingFrontend(CollectError):
    """A kernel file that imports an optional frontend which is not installed (``.extra`` names the
    ``pip install`` extra that brings it)."""

    def __init__(self, message: str, extra: str) -> None:
        super().__init__(message)
        self.extra = extra


@dataclass(frozen=True)
class KernelEntry:
    """A kernel found in a file: ``path::name``, the kernel object (or None for a Tile IR file), its
    cases; or, with ``error`` set, a path that could not be collected (``name`` is then empty;
    ``detail`` holds the traceback of the failure, for ``--debug``)."""

    path: Path
    name: str
    kernel: Any
    cases: tuple[Case, ...]
    error: str | None = None
    detail: str | None = None

    @property
    def id(self) -> str:
        return f"{self.path}::{self.name}" if self.name else str(self.path)


def _files_under(path: Path) -> list[Path]:
    return sorted(p for p in path.rglob("*") if p.suffix in (".py", *IR_SUFFIXES) and p.is_file()
                  and "__pycache__" not in p.parts and not p.name.startswith("_"))


def module_name(path: Path) -> str:
    """The name a file is imported under: its stem and a digest of its full resolved path, so two
    files never share a module, however alike their paths end (``v1/ops/copy.py``, ``v2/ops/copy.py``)."""
    path = path.resolve()
    digest = hashlib.sha1(os.fsencode(path)).hexdigest()[:16]
    stem = "".join(c if c.isalnum() or c == "_" else "_" for c in path.stem)
    return f"_tilecheck_user_.{stem}_{digest}"


def is_kernel(obj: Any) -> bool:
    """A ``@ct.kernel``, or a ``@triton.jit`` kernel (heuristics-wrapped ones included)."""
    return python_function(obj) is not None


def python_function(obj: Any) -> Any:
    """The Python function a kernel object was made from (None for anything else)."""
    import cuda.tile as ct

    if isinstance(obj, ct.kernel):
        return getattr(obj, "_pyfunc", None)
    from tilecheck.ir.triton import is_triton_kernel, jit_function

    return jit_function(obj).fn if is_triton_kernel(obj) else None


def load_module(path: Path) -> Any:
    """Import a Python file by path (its directory's package context is honoured via sys.path).
    The working directory is restored afterwards: a module that changes it at import must not
    move every later relative path."""
    path = path.resolve()
    name = module_name(path)
    if name in sys.modules:
        return sys.modules[name]
    root = _package_root(path)
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise CollectError(f"cannot import {path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        with kept_cwd():
            spec.loader.exec_module(module)
    except TilecheckError as exc:  # e.g. @tilecheck.case on a plain function: already says what to do
        del sys.modules[name]
        raise CollectError(f"importing {path} failed: {exc}") from exc
    except ModuleNotFoundError as exc:
        del sys.modules[name]
        root_name = (exc.name or "").split(".")[0]
        if root_name in OPTIONAL_FRONTENDS:
            extra = OPTIONAL_FRONTENDS[root_name]
            raise MissingFrontend(f"importing {path} failed: it needs {root_name}, which is not installed "
                                  f"(pip install \"{extra}\")", extra) from exc
        raise CollectError(f"importing {path} failed: {type(exc).__name__}: {_one_line(exc)}"
                           f"{where_raised(exc)}") from exc
    except Exception as exc:  # user code may raise anything: report it, no traceback
        del sys.modules[name]
        raise CollectError(f"importing {path} failed: {type(exc).__name__}: {_one_line(exc)}"
                           f"{where_raised(exc)}") from exc
    except SystemExit as exc:  # a script that exits when imported must not end tilecheck
        del sys.modules[name]
        raise CollectError(f"importing {path} failed: it called sys.exit({exc.code!r}) (guard the script part "
                           "with `if __name__ == \"__main__\":`)") from None
    except BaseException:  # Ctrl-C or SIGTERM mid-import: no half-run module for the next load to find
        sys.modules.pop(name, None)
        raise
    return module


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else ""


def _package_root(path: Path) -> Path:
    root = path.parent
    while (root / "__init__.py").exists():
        root = root.parent
    return root


def read_ir(path: Path) -> Any:
    """The Tile IR ``Module`` in a ``.tileir`` (text) or ``.tileirbc``/``.tilebc`` (bytecode) file;
    a ``TilecheckError`` naming the file when it cannot be read or decoded."""
    from tilecheck.ir import TileIRError, parse, read_bytecode

    try:
        data = path.read_bytes()
    except OSError as exc:
        raise CollectError(f"cannot read {path}: {exc.strerror or exc}") from None
    if path.suffix in BYTECODE_SUFFIXES:
        try:
            module = read_bytecode(data)
        except TileIRError as exc:
            raise CollectError(f"{path}: {exc}") from None
    else:
        module = parse(_text(path, data), str(path))
    return dataclasses.replace(module, name=path.stem)  # reports name the file's kernel, as jobs do


def _text(path: Path, data: bytes) -> str:
    from tilecheck.ir.bytecode.sections import MAGIC

    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        hint = (f"; it is Tile IR bytecode: name it {path.with_suffix('.tileirbc').name}"
                if data.startswith(MAGIC) else
                "; a .tileir file holds Tile IR text (bytecode goes in a .tileirbc file)")
        raise CollectError(f"{path} is not UTF-8 text (byte {exc.start}: {data[exc.start:exc.start + 1]!r}){hint}") \
            from None


def collect(paths: list[str]) -> list[KernelEntry]:
    """Every ``@ct.kernel`` defined in the given Python files (with its cases) and every Tile IR file.

    Nothing here raises for a bad path: a path that is missing, a file that fails to import, and a
    given path in which no kernel is found each become an entry with ``error`` set, so the other
    paths are still checked."""
    entries: list[KernelEntry] = []
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            entries.append(KernelEntry(path, "", None, (), f"no such file or directory: {raw}"))
            continue
        files = _files_under(path) if path.is_dir() else [path]
        found: list[KernelEntry] = []
        for file in files:
            if file.suffix in IR_SUFFIXES:
                found.append(KernelEntry(file, file.stem, None, ()))
                continue
            if file.suffix != ".py":
                found.append(KernelEntry(file, "", None, (), f"not a Python or Tile IR file (expected .py, "
                                         f"{', '.join(IR_SUFFIXES)})"))
                continue
            try:
                module = load_module(file)
            except TilecheckError as exc:
                detail = "".join(traceback.format_exception(exc.__cause__ or exc))
                found.append(KernelEntry(file, "", None, (), str(exc), detail))
                continue
            for name, obj in vars(module).items():
                if is_kernel(obj) and getattr(python_function(obj), "__module__", None) == module.__name__:
                    found.append(KernelEntry(file, name, obj, cases_of(obj)))
        if not found:
            what = "directory" if path.is_dir() else "file"
            found.append(KernelEntry(path, "", None, (), f"no kernels found in this {what} (tilecheck looks for "
                                     f"@ct.kernel and @triton.jit functions in .py files, and {', '.join(IR_SUFFIXES)} files)"))
        entries += found
    return entries
