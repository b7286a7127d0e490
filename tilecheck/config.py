"""``[tool.tilecheck]`` in pyproject.toml: project defaults for the command line.

    [tool.tilecheck]
    paths = ["kernels/"]                 # what `tilecheck verify` checks when given no path
    timeout = 600.0                      # wall-clock backstop per verified case, seconds
    work = 400000000                     # solver work per verified case (deterministic; Z3 rlimit units)
    allow-unknown = ["kernels/odd.py::k"] # kernels whose unknown verdict does not fail CI (or true)
    jobs = 4

    [tool.tilecheck.assume]               # preconditions per kernel name
    moe_scatter = ["distinct:dest_rows"]
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tilecheck.errors import TilecheckError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


@dataclass
class Config:
    paths: list[str] = field(default_factory=list)
    timeout: float = 600.0
    work: int | None = None  # None: verify's default (WORK_BUDGET)
    allow_unknown: bool | list[str] = False
    jobs: int | None = None
    assume: dict[str, list[str]] = field(default_factory=dict)
    source: Path | None = None

    def unknown_allowed(self, kernel_id: str, name: str) -> bool:
        if isinstance(self.allow_unknown, bool):
            return self.allow_unknown
        return kernel_id in self.allow_unknown or name in self.allow_unknown


def find_pyproject(start: Path) -> Path | None:
    for directory in (start, *start.parents):
        candidate = directory / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def load_config(start: Path | None = None) -> Config:
    path = find_pyproject((start or Path.cwd()).resolve())
    if path is None:
        return Config()
    try:
        data = tomllib.loads(path.read_bytes().decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise TilecheckError(f"{path}: {exc}") from None
    except OSError as exc:
        raise TilecheckError(f"cannot read {path}: {exc.strerror or exc}") from None
    tool = data.get("tool", {})
    table = tool.get("tilecheck", {}) if isinstance(tool, dict) else {}
    if not isinstance(table, dict):
        raise TilecheckError(f"{path}: [tool.tilecheck] must be a table, got {table!r}")
    known = {"paths", "timeout", "work", "allow-unknown", "jobs", "assume"}
    unknown = set(table) - known
    if unknown:
        raise TilecheckError(f"{path}: unknown [tool.tilecheck] keys: {', '.join(sorted(unknown))} "
                             f"(known: {', '.join(sorted(known))})")
    _check_types(path, table)
    base = path.parent
    return Config(paths=[str(base / p) for p in table.get("paths", [])], timeout=float(table.get("timeout", 600.0)),
                  work=table.get("work"), allow_unknown=table.get("allow-unknown", False), jobs=table.get("jobs"),
                  assume={k: list(v) for k, v in table.get("assume", {}).items()}, source=path)


def _check_types(path: Path, table: dict[str, Any]) -> None:
    """Each key's value has the type the table above shows; else a ``TilecheckError`` naming it."""
    def is_strings(v: Any) -> bool:
        return isinstance(v, list) and all(isinstance(x, str) for x in v)

    def positive(v: Any, kind: type | tuple[type, ...]) -> bool:
        return isinstance(v, kind) and not isinstance(v, bool) and 0 < v < float("inf")

    checks = {"paths": (is_strings, "a list of paths, e.g. [\"kernels/\"]"),
              "timeout": (lambda v: positive(v, (int, float)), "a positive number of seconds"),
              "work": (lambda v: positive(v, int), "a positive integer (Z3 rlimit units)"),
              "jobs": (lambda v: positive(v, int), "a positive integer"),
              "allow-unknown": (lambda v: isinstance(v, bool) or is_strings(v), "true, false or a list of kernels"),
              "assume": (lambda v: isinstance(v, dict) and all(is_strings(x) for x in v.values()),
                         "a table of kernel = [\"distinct:NAME\", ...]")}
    for key, (ok, what) in checks.items():
        if key in table and not ok(table[key]):
            raise TilecheckError(f"{path}: [tool.tilecheck] {key} must be {what}, got {table[key]!r}")
