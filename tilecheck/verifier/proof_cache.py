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
    if cache in (None, True):
        where = (os.environ.get(ENV_DIR), os.getcwd())
        directory = _DEFAULTS.get(where)
        if directory is None:
            directory = _DEFAULTS[where] = default_directory()
    else:
        directory = Path(cache)
    found = _OPEN.get(directory)
    if found is None:
        found = _OPEN[directory] = ProofCache(directory)
    return found


_OPEN: dict[Path, ProofCache] = {}
_DEFAULTS: dict[tuple[str | None, str], Path] = {}  # the default directory, per setting and working directory


def versions() -> dict[str, str]:
    from tilecheck.verifier.smt import z3_version
    from tilecheck.version import __version__

    return {"format": str(FORMAT), "tilecheck": __version__, "z3": z3_version()}


def key(code: str, preconditions: Sequence[str], *more: Any) -> str:
    """The entry of a Tile IR (``ir.identity.program_digest``) under these preconditions (and ``more``: a launch's
    identity, for a launch's verdict)."""
    text = json.dumps([code, sorted(preconditions), versions(), *more], sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()


class ProofCache:
    """One cache directory, three kinds of entries, each a JSON file written atomically and read
    once per process:
    - ``proofs/``: the contracts over the shapes proved for a Tile IR (``contracts``, ``add``);
    - ``kernels/``: which Tile IR a kernel's sources and specialisation compile to, so that a new
      process need not compile it to find its proofs (``kernel``, ``add_kernel``);
    - ``launches/``: the whole report of one launch, its arrays' contents included in the key
      (``verdict``, ``add_verdict``): a rerun of the same launch, whatever its verdict."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self._entries: dict[tuple[str, str], Any] = {}

    def _path(self, kind: str, name: str) -> Path:
        return self.directory / kind / name[:2] / f"{name}.json"

    def _get(self, kind: str, name: str) -> Any:
        # a miss is read again next time: another process (a pytest-xdist worker, a parallel CI
        # job) or another ProofCache on this directory may have written the entry since
        found = self._entries.get((kind, name))
        if found is None:
            found = self._read(kind, name)
            if found is not None:
                self._entries[kind, name] = found
        return found

    def _read(self, kind: str, name: str) -> Any:
        try:
            data = json.loads(self._path(kind, name).read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or data.get("versions") != versions():
            return None
        return data.get("value")

    def _put(self, kind: str, name: str, value: Any) -> None:
        """Write one entry atomically (a failure to write is not an error: the next run proves again)."""
        self._entries[kind, name] = value
        path = self._path(kind, name)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._mark()
            with tempfile.NamedTemporaryFile("w", dir=path.parent, suffix=".tmp", delete=False) as f:
                json.dump({"versions": versions(), "value": value}, f)
            os.replace(f.name, path)
        except OSError:
            return

    def contracts(self, name: str) -> list[dict[str, Any]]:
        """The contracts stored under ``name`` (empty when none, or when the entry is unreadable)."""
        found = self._get("proofs", name)
        return [c for c in found if _well_formed(c)] if isinstance(found, list) else []

    def add(self, name: str, contract: dict[str, Any]) -> None:
        """Store one more contract under ``name``."""
        self._entries.pop(("proofs", name), None)  # another process may have added one meanwhile
        self._put("proofs", name, [c for c in self.contracts(name) if c != contract] + [contract])

    def kernel(self, name: str) -> dict[str, Any] | None:
        found = self._get("kernels", name)
        ok = isinstance(found, dict) and isinstance(found.get("code"), str) and isinstance(found.get("written"), list)
        return found if ok else None

    def add_kernel(self, name: str, code: str, kernel: str, written: list[str]) -> None:
        self._put("kernels", name, {"code": code, "kernel": kernel, "written": sorted(written)})

    def verdict(self, name: str) -> Any:
        return self._get("launches", name)

    def add_verdict(self, name: str, report: Any) -> None:
        self._put("launches", name, report)

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


# ---- whole reports in JSON (the verdicts of launches) --------------------------------------------
def report_json(report: Any) -> Any:
    """A report as JSON values, every type tagged (``report_from_json`` reads it back); a finding's
    replay case (the kernel and arrays) is left out."""
    return _encode(report)


def report_from_json(data: Any, case: Any) -> Any:
    """The report ``report_json`` wrote, its findings replayable on ``case`` (kernel, args, grid)."""
    import dataclasses

    from tilecheck.report import Finding

    report = _decode(data)

    def with_case(value: Any) -> Any:
        if isinstance(value, Finding):
            return dataclasses.replace(value, case=case)
        return value
    report.findings = [with_case(f) for f in report.findings]
    if report.contract is not None and report.contract.breaking is not None:
        report.contract = dataclasses.replace(report.contract, breaking=with_case(report.contract.breaking))
    return report


def _types() -> dict[str, Any]:
    from tilecheck.ir.loc import Loc
    from tilecheck.report import Contract, Finding, Report, Side, Witness

    return {t.__name__: t for t in (Loc, Contract, Finding, Report, Side, Witness, shape_contract.ShapeContract,
                                    shape_contract.Rule, shape_contract.Term)}


def _encode(value: Any) -> Any:
    import dataclasses

    from tilecheck.requirements import Precondition

    if isinstance(value, Precondition):
        return {"$p": _spec(value)}
    if dataclasses.is_dataclass(value) and type(value).__name__ in _types():
        fields = {f.name: _encode(getattr(value, f.name)) for f in dataclasses.fields(value) if f.name != "case"}
        return {"$": type(value).__name__, **fields}
    if isinstance(value, tuple):
        return {"$t": [_encode(v) for v in value]}
    if isinstance(value, list):
        return [_encode(v) for v in value]
    if isinstance(value, dict):
        if all(isinstance(k, str) for k in value):
            return {"$m": {k: _encode(v) for k, v in value.items()}}
        return {"$d": [[_encode(k), _encode(v)] for k, v in value.items()]}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"not stored: {type(value).__name__}")


def _decode(value: Any) -> Any:
    from tilecheck.requirements import parse

    if isinstance(value, list):
        return [_decode(v) for v in value]
    if not isinstance(value, dict):
        return value
    if "$p" in value:
        return parse(value["$p"])
    if "$t" in value:
        return tuple(_decode(v) for v in value["$t"])
    if "$m" in value:
        return {k: _decode(v) for k, v in value["$m"].items()}
    if "$d" in value:
        return {_decode(k): _decode(v) for k, v in value["$d"]}
    kind = _types()[value["$"]]
    return kind(**{k: _decode(v) for k, v in value.items() if k != "$"})
