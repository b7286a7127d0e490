"""Find kernels and their declared cases in Python files, packages and ``.tileir`` files."""
from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tilecheck.cases import Case, cases_of
from tilecheck.errors import TilecheckError


@dataclass(frozen=True)
class KernelEntry:
    """A kernel found in a file: ``path::name``, the kernel object (or None for .tileir), its cases."""

    path: Path
    name: str
    kernel: Any
    cases: tuple[Case, ...]

    @property
    def id(self) -> str:
        return f"{self.path}::{self.name}"


def iter_files(paths: list[str]) -> Iterator[Path]:
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise TilecheckError(f"no such file or directory: {raw}")
        if path.is_dir():
            yield from sorted(p for p in path.rglob("*") if p.suffix in (".py", ".tileir")
                              and "__pycache__" not in p.parts and not p.name.startswith("_"))
        else:
            yield path


def load_module(path: Path) -> Any:
    """Import a Python file by path (its directory's package context is honoured via sys.path)."""
    path = path.resolve()
    name = "_tilecheck_user_." + "_".join(path.with_suffix("").parts[-3:])
    if name in sys.modules:
        return sys.modules[name]
    root = _package_root(path)
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise TilecheckError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001 - user code may raise anything; report it, no traceback
        del sys.modules[name]
        raise TilecheckError(f"importing {path} failed: {type(exc).__name__}: {exc}") from None
    return module


def _package_root(path: Path) -> Path:
    root = path.parent
    while (root / "__init__.py").exists():
        root = root.parent
    return root


def collect(paths: list[str]) -> list[KernelEntry]:
    """Every ``@ct.kernel`` defined in the given Python files (with its cases) and every .tileir file."""
    import cuda.tile as ct

    entries: list[KernelEntry] = []
    for path in iter_files(paths):
        if path.suffix == ".tileir":
            entries.append(KernelEntry(path, path.stem, None, ()))
            continue
        module = load_module(path)
        for name, obj in vars(module).items():
            if isinstance(obj, ct.kernel) and getattr(obj, "_pyfunc", None) is not None and \
                    getattr(obj._pyfunc, "__module__", None) == module.__name__:
                entries.append(KernelEntry(path, name, obj, cases_of(obj)))
    return entries
