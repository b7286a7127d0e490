"""The proof cache (issue 20): contracts over the shapes proved for a kernel's Tile IR, kept on disk
beside the project (``.tilecheck_cache/``, like pytest's and mypy's caches), so that a launch which
satisfies one is decided by evaluating it: integer arithmetic, no solver call.

An entry is keyed by what a proof depends on: the kernel's Tile IR (its code), the preconditions it
was proved under, and the versions of tilecheck and z3 (and this format's). It holds every contract
proved for that key (launches of other shapes may prove other ones). Writes are atomic (a temporary
file renamed over the entry), so concurrent writers (pytest-xdist workers) never leave a torn
entry; one of two simultaneous writers' contracts may be lost, which costs a proof, not a verdict.
An entry that cannot be read is ignored, and rewritten by the next proof.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tilecheck.errors import TilecheckError
from tilecheck.verifier import shape_contract

FORMAT = 1
DIRECTORY = ".tilecheck_cache"
# TILECHECK_CACHE_DIR=path: where the cache lives; TILECHECK_NO_CACHE=1: no cache (as --no-cache)
ENV_DIR, ENV_OFF = "TILECHECK_CACHE_DIR", "TILECHECK_NO_CACHE"
_README = ("# Created by tilecheck: proofs of kernels' contracts over the shapes (docs/semantics.md, "
           "\"The proof cache\"). Safe to delete (tilecheck cache clear).\n")


def default_directory(start: Path | None = None) -> Path:
    """``$TILECHECK_CACHE_DIR``, else ``.tilecheck_cache`` beside the nearest pyproject.toml at or
    above ``start`` (the working directory), else in it."""
    if os.environ.get(ENV_DIR):
        return Path(os.environ[ENV_DIR])
    from tilecheck.config import find_pyproject

    here = (start or Path.cwd()).resolve()
    project = find_pyproject(here)
    return (project.parent if project is not None else here) / DIRECTORY


def resolve(cache: bool | str | Path | None) -> ProofCache | None:
    """The cache ``verify(..., cache=)`` asks for: None / True the default (off when
    ``$TILECHECK_NO_CACHE`` is set), False none, a path that directory."""
    if cache is False or cache is None and os.environ.get(ENV_OFF, "") not in ("", "0"):
        return None
    directory = default_directory() if cache in (None, True) else Path(cache)
    found = _OPEN.get(directory)
    if found is None:
        found = _OPEN[directory] = ProofCache(directory)
    return found


_OPEN: dict[Path, ProofCache] = {}


def versions() -> dict[str, str]:
    from tilecheck.verifier.smt import z3_version
    from tilecheck.version import __version__

    return {"format": str(FORMAT), "tilecheck": __version__, "z3": z3_version()}


def key(code: bytes, preconditions: Sequence[str]) -> str:
    """The entry a proof of this Tile IR under these preconditions belongs to."""
    h = hashlib.sha256(code)
    h.update(json.dumps([sorted(preconditions), versions()], sort_keys=True).encode())
    return h.hexdigest()


class ProofCache:
    """One cache directory: ``contracts(key)`` reads an entry (once per process), ``add`` writes one."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self._entries: dict[str, list[dict[str, Any]]] = {}

    def _path(self, name: str) -> Path:
        return self.directory / "proofs" / name[:2] / f"{name}.json"

    def contracts(self, name: str) -> list[dict[str, Any]]:
        """The contracts stored under ``name`` (empty when none, or when the entry is unreadable)."""
        found = self._entries.get(name)
        if found is None:
            found = self._entries[name] = self._read(name)
        return found

    def _read(self, name: str) -> list[dict[str, Any]]:
        try:
            data = json.loads(self._path(name).read_text())
        except (OSError, ValueError):
            return []
        if not isinstance(data, dict) or data.get("versions") != versions() or \
                not isinstance(data.get("contracts"), list):
            return []
        return [c for c in data["contracts"] if _well_formed(c)]

    def add(self, name: str, contract: dict[str, Any]) -> None:
        """Store one more contract under ``name`` (atomically; a failure to write is not an error:
        the next launch proves again)."""
        kept = [c for c in self._read(name) if c != contract] + [contract]
        self._entries[name] = kept
        path = self._path(name)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._mark()
            with tempfile.NamedTemporaryFile("w", dir=path.parent, suffix=".tmp", delete=False) as f:
                json.dump({"versions": versions(), "contracts": kept}, f)
            os.replace(f.name, path)
        except OSError:
            return

    def _mark(self) -> None:
        """A new cache directory says what it is, and keeps out of version control."""
        ignore = self.directory / ".gitignore"
        if not ignore.exists():
            ignore.write_text("*\n")
            (self.directory / "README.md").write_text(_README)
            (self.directory / "CACHEDIR.TAG").write_text("Signature: 8a477f597d28d172789f06886806bc55\n")

    def clear(self) -> bool:
        """Remove the cache directory; False when there was none."""
        self._entries.clear()
        if not self.directory.exists():
            return False
        shutil.rmtree(self.directory)
        return True


# ---- contracts in JSON ----------------------------------------------------------------------------
def encode(contract: shape_contract.ShapeContract, assumptions: list[str], notes: list[str]) -> dict[str, Any]:
    """A proved contract, with what its report says besides (assumptions, notes), as JSON."""
    return {"rules": [_rule(r) for r in contract.rules], "index32": list(contract.index32),
            "facts": list(contract.facts), "contents": [_spec(p) for p in contract.contents],
            "assumptions": list(assumptions), "notes": list(notes)}


def decode(entry: Mapping[str, Any]) -> shape_contract.ShapeContract:
    from tilecheck.requirements import parse

    rules = tuple(shape_contract.Rule(_term(r["left"]), r["relation"], _term(r["right"]), r["kind"])
                  for r in entry["rules"])
    return shape_contract.ShapeContract(rules, tuple(entry["index32"]), proved=True, facts=tuple(entry["facts"]),
                                        contents=tuple(parse(spec) for spec in entry["contents"]))


def _spec(pre: Any) -> str:
    """A precondition's text form (``requirements.parse`` reads it back)."""
    kind = type(pre).__name__.lower()
    if kind == "bounded":
        text = f"bounded:{pre.array}:{'' if pre.lo is None else pre.lo}:{'' if pre.hi is None else pre.hi}"
        return text + (":" + ",".join(map(str, pre.also)) if pre.also else "")
    if kind == "distinct":
        return f"distinct:{pre.array}" + ("" if pre.below is None else f":{pre.below}")
    return f"{kind}:{pre.array}"


def _rule(rule: shape_contract.Rule) -> dict[str, Any]:
    return {"left": _term_dict(rule.left), "relation": rule.relation, "right": _term_dict(rule.right),
            "kind": rule.kind}


def _term_dict(t: shape_contract.Term) -> dict[str, Any]:
    return {"name": t.name, "value": t.value, "tile": t.tile, "ceil": t.ceil,
            "times": _term_dict(t.times) if t.times is not None else None}


def _term(d: Mapping[str, Any]) -> shape_contract.Term:
    return shape_contract.Term(d["name"], int(d["value"]), int(d["tile"]), bool(d["ceil"]),
                               _term(d["times"]) if d.get("times") is not None else None)


def _well_formed(entry: Any) -> bool:
    try:
        decode(entry)
        return all(isinstance(entry[k], list) for k in ("facts", "assumptions", "notes"))
    except (KeyError, TypeError, ValueError, TilecheckError):
        return False
