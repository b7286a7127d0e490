"""The proof cache (issue 20): contracts over the shapes proved for a kernel's Tile IR, kept on disk
beside the project (``.tilecheck_cache/``, like pytest's and mypy's caches), so that a launch which
satisfies one is decided by evaluating it: integer arithmetic, no solver call.

An entry is named by what a proof depends on (``key``): the kernel's Tile IR (its code), the
preconditions it was proved under, and the versions of tilecheck and z3 (and this format's); the
entry records that description (``about``) and is read only when the description hashes to its name,
so an entry copied or renamed under another key is ignored. An entry holds every contract proved for
its key (launches of other shapes may prove other ones). Which stored verdict may decide which
question is ``cached.py``'s rule (docs/semantics/reuse.md, "The proof cache").

What the cache does to a user's files (issue 49): it writes only inside its own directory, marked
with a ``CACHEDIR.TAG`` that names tilecheck; a directory that exists, holds files and carries no such
tag is never written to (the cache is off there, with a warning). Writes are atomic (a temporary file
renamed over the entry) and a failed write leaves nothing behind; concurrent writers (pytest-xdist
workers) never leave a torn entry; one of two simultaneous writers' contracts may be lost, which costs
a proof, not a verdict. ``clear`` removes only the files the cache wrote. An entry that cannot be
read, or reads as an unexpected layout, is ignored and rewritten by the next proof.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tilecheck.errors import TilecheckError
from tilecheck.verifier.contracts import shapes as shape_contract

FORMAT = 3
DIRECTORY = ".tilecheck_cache"
# TILECHECK_CACHE_DIR=path: where the cache lives; TILECHECK_NO_CACHE=1: no cache (as --no-cache)
ENV_DIR, ENV_OFF = "TILECHECK_CACHE_DIR", "TILECHECK_NO_CACHE"
KINDS = ("proofs", "kernels", "launches")
# the CACHEDIR.TAG standard's signature (https://bford.info/cachedir/), then the line that says the
# directory is tilecheck's: what ``clear`` and every write check before touching the directory
_TAG = ("Signature: 8a477f597d28d172789f06886806bc55\n"
        "# This file is a cache directory tag created by tilecheck (its proof cache).\n"
        "# For information about cache directory tags, see https://bford.info/cachedir/\n")
_TAG_MARK = "created by tilecheck"
_SUPPORT = {"CACHEDIR.TAG": _TAG, ".gitignore": "# Created by tilecheck: its proof cache\n*\n",
            "README.md": ("# tilecheck's proof cache\n\nProofs of kernels' contracts over the shapes "
                          "(docs/semantics/reuse.md). Safe to delete: `tilecheck cache clear`.\n")}
_ENTRY = re.compile(r"[0-9a-f]{64}\.json")
_TEMP = re.compile(r"tilecheck-.*\.tmp")


class CacheWarning(UserWarning):
    """The proof cache is off for a directory it may not write to."""


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
        directory = _GIVEN.get(cache)  # ``Path(cache)``, made once per value given (a str or a Path)
        if directory is None:
            directory = Path(cache)
            if len(_GIVEN) < 256:
                _GIVEN[cache] = directory
    found = _OPEN.get(directory)
    if found is None:
        found = _OPEN[directory] = ProofCache(directory)
    return found


_OPEN: dict[Path, ProofCache] = {}
_GIVEN: dict[str | Path, Path] = {}
_DEFAULTS: dict[tuple[str | None, str], Path] = {}  # the default directory, per setting and working directory


def versions() -> dict[str, str]:
    from tilecheck.verifier.solver.smt import z3_version
    from tilecheck.version import __version__

    return {"format": str(FORMAT), "tilecheck": __version__, "z3": z3_version()}


def about(*parts: Any) -> Any:
    """What an entry is about, as the JSON values it is stored as (tuples read back as lists)."""
    return json.loads(json.dumps(list(parts), sort_keys=True, default=repr))


def key(*parts: Any) -> str:
    """The name of the entry about ``parts`` (a Tile IR's ``program_digest``, its kernel's name and
    preconditions, and for a launch's verdict the launch's identity): the digest of that description
    and of the versions, so an entry names what it is about and a reader can check it."""
    try:
        frozen = _frozen(parts)
    except TypeError:  # a part that is no plain value: named afresh
        return _name(about(*parts))
    found = _KEYS.get(frozen)
    if found is None:
        if len(_KEYS) >= 4096:
            _KEYS.clear()
        found = _KEYS[frozen] = _name(about(*parts))
    return found


_KEYS: dict[Any, str] = {}  # the names of the keys asked before (a launch's check asks the same ones)


def _frozen(value: Any) -> Any:
    """``value`` as a hashable key that tells apart what JSON tells apart (tuples and lists alike)."""
    if isinstance(value, (list, tuple)):
        return ("[", *(_frozen(v) for v in value))
    if value is None or isinstance(value, (bool, int, float, str)):
        return (type(value).__name__, value)
    raise TypeError(type(value).__name__)


def _name(described: Any) -> str:
    text = json.dumps([described, versions()], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


class ProofCache:
    """One cache directory, three kinds of entries, each a JSON file written atomically and read
    once per process:
    - ``proofs/``: the contracts over the shapes proved for a Tile IR (``contracts``, ``add``);
    - ``kernels/``: which Tile IR a kernel's sources and specialisation compile to, so that a new
      process need not compile it to find its proofs (``kernel``, ``add_kernel``);
    - ``launches/``: the whole report of one launch, its arrays' contents included in the key
      (``verdict``, ``add_verdict``): a rerun of the same launch, whatever its verdict.
    Each entry is ``{"versions", "about", "value"}``; ``about`` must hash to the file's name."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self._entries: dict[tuple[str, str], Any] = {}
        self._decoded: dict[str, tuple[Any, list[Any]]] = {}  # per proofs entry: (the value read, decoded)
        self._writable: bool | None = None  # decided at the first write

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
        if not isinstance(data, dict) or data.get("versions") != versions() or "about" not in data:
            return None
        try:
            if _name(data["about"]) != name:  # an entry copied under another entry's name
                return None
        except (TypeError, ValueError):
            return None
        return data.get("value")

    def _put(self, kind: str, name: str, described: Any, value: Any) -> None:
        """Write one entry atomically; a failure to write is not an error (the next run proves
        again) and leaves no file behind."""
        self._entries[kind, name] = value
        if not self._may_write():
            return
        path = self._path(kind, name)
        temp = None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile("w", dir=path.parent, prefix="tilecheck-", suffix=".tmp",
                                             delete=False) as f:
                temp = f.name
                json.dump({"versions": versions(), "about": described, "value": value}, f)
            os.replace(temp, path)
        except (OSError, ValueError, TypeError):
            if temp is not None:
                try:
                    os.unlink(temp)
                except OSError:
                    pass

    def contracts(self, name: str) -> list[dict[str, Any]]:
        """The contracts stored under ``name`` (empty when none, or when the entry is unreadable)."""
        found = self._get("proofs", name)
        return [c for c in found if _well_formed(c)] if isinstance(found, list) else []

    def decoded(self, name: str) -> list[tuple[shape_contract.ShapeContract, dict[str, Any]]]:
        """``contracts(name)`` decoded, each with its stored form: decoded once per entry read."""
        found = self._get("proofs", name)
        memo = self._decoded.get(name)
        if memo is not None and memo[0] is found:
            return memo[1]
        out = [(decode(c), c) for c in self.contracts(name)]
        if found is not None:
            self._decoded[name] = (found, out)
        return out

    def add(self, name: str, contract: dict[str, Any], described: Any) -> None:
        """Store one more contract under ``name`` (``key(*parts)``, ``described`` = ``about(*parts)``)."""
        self._entries.pop(("proofs", name), None)  # another process may have added one meanwhile
        self._put("proofs", name, described, [c for c in self.contracts(name) if c != contract] + [contract])

    def kernel(self, name: str, kernel: str) -> dict[str, Any] | None:
        """Which Tile IR the kernel named ``kernel`` compiles to, by its sources' digest ``name``."""
        found = self._get("kernels", name)
        ok = (isinstance(found, dict) and isinstance(found.get("code"), str) and isinstance(found.get("access"), str)
              and found.get("kernel") == kernel
              and isinstance(found.get("written"), list) and all(isinstance(w, str) for w in found["written"])
              and isinstance(found.get("literals"), list)
              and all(isinstance(x, list) and len(x) == 2 and isinstance(x[0], str) and type(x[1]) is int
                      for x in found["literals"]))
        return found if ok else None

    def add_kernel(self, name: str, described: Any, code: str, access: str, kernel: str, written: list[str],
                   literals: Any = ()) -> None:
        self._put("kernels", name, described, {"code": code, "access": access, "kernel": kernel,
                                               "written": sorted(written),
                                               "literals": [[n, int(v)] for n, v in literals]})

    def verdict(self, name: str) -> Any:
        return self._get("launches", name)

    def add_verdict(self, name: str, described: Any, report: Any) -> None:
        self._put("launches", name, described, report)

    # ---- the directory --------------------------------------------------------------------------
    def owned(self) -> bool:
        """Is the directory a tilecheck cache (its CACHEDIR.TAG written by tilecheck)?"""
        try:
            return _TAG_MARK in (self.directory / "CACHEDIR.TAG").read_text(errors="replace")
        except OSError:
            return False

    def _may_write(self) -> bool:
        """Whether this cache may write into its directory: one tilecheck made (marked by its tag),
        or one it makes now (absent or empty). A directory of someone else's files is left alone."""
        if self._writable is None:
            self._writable = self._claim()
        return self._writable

    def _claim(self) -> bool:
        if self.owned():
            return True
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            # another process may be marking it now: its temporary files and finished marks are not
            # someone else's files
            foreign = [p.name for p in self.directory.iterdir() if not (
                _TEMP.fullmatch(p.name) or p.name in _SUPPORT and _reads(p) == _SUPPORT[p.name])]
            if foreign:
                warnings.warn(CacheWarning(
                    f"tilecheck's proof cache is off: {self.directory} holds files ({', '.join(sorted(foreign)[:3])}) "
                    f"and is not a tilecheck cache (no CACHEDIR.TAG of tilecheck's); point {ENV_DIR} at a new "
                    "or empty directory"), stacklevel=5)
                return False
            for file, text in _SUPPORT.items():  # the tag first; each whole or absent, never over a file
                _write_new(self.directory / file, text)
        except OSError:
            pass
        return self.owned()

    def clear(self) -> bool:
        """Remove the entries this cache wrote, its marks, and the directory once empty; False when
        there was no directory. A directory that is not a tilecheck cache is refused, untouched."""
        self._entries.clear()
        self._writable = None
        if not self.directory.exists():
            return False
        if not self.directory.is_dir() or not self.owned():
            raise TilecheckError(f"{self.directory} is not a tilecheck cache (it has no CACHEDIR.TAG written by "
                                 "tilecheck): nothing removed; remove it yourself if you are sure")
        try:
            for kind in KINDS:
                _remove_entries(self.directory / kind)
            for file, text in _SUPPORT.items():
                path = self.directory / file
                if file == "CACHEDIR.TAG" or _reads(path) == text:
                    path.unlink(missing_ok=True)
            if not self.directory.is_symlink() and not any(self.directory.iterdir()):
                self.directory.rmdir()
        except OSError as exc:
            raise TilecheckError(f"could not clear the cache at {self.directory}: "
                                 f"{exc.filename or ''}: {exc.strerror or exc}") from None
        return True


def _write_new(path: Path, text: str) -> None:
    """Create ``path`` holding ``text`` in one step (a hard link of a finished temporary file), or
    leave it as it is when it exists."""
    with tempfile.NamedTemporaryFile("w", dir=path.parent, prefix="tilecheck-", suffix=".tmp", delete=False) as f:
        f.write(text)
    try:
        os.link(f.name, path)
    except FileExistsError:
        pass
    finally:
        os.unlink(f.name)


def _remove_entries(folder: Path) -> None:
    """Remove the entries (and temporary files) the cache wrote under ``folder``, then the folders
    they leave empty; anything else stays, with the folders that hold it."""
    if not folder.is_dir() or folder.is_symlink():
        return
    for shard in folder.iterdir():
        if not (shard.is_dir() and not shard.is_symlink() and re.fullmatch(r"[0-9a-f]{2}", shard.name)):
            continue
        for file in shard.iterdir():
            if file.is_file() and (_ENTRY.fullmatch(file.name) or _TEMP.fullmatch(file.name)):
                file.unlink()
        if not any(shard.iterdir()):
            shard.rmdir()
    if not any(folder.iterdir()):
        folder.rmdir()


def _reads(path: Path) -> str | None:
    try:
        return path.read_text()
    except (OSError, ValueError):
        return None


# ---- contracts in JSON ----------------------------------------------------------------------------
def encode(contract: shape_contract.ShapeContract, assumptions: list[str], notes: list[str]) -> dict[str, Any]:
    """A proved contract, with what its report says besides (assumptions, notes), as JSON."""
    return {"rules": [_rule(r) for r in contract.rules], "index32": list(contract.index32),
            "facts": list(contract.facts), "contents": [_spec(p) for p in contract.contents],
            "protocol": [_spec(p) for p in contract.protocol],
            "assumptions": list(assumptions), "notes": list(notes)}


def decode(entry: Mapping[str, Any]) -> shape_contract.ShapeContract:
    from tilecheck.requirements import parse

    rules = tuple(shape_contract.Rule(_term(r["left"]), r["relation"], _term(r["right"]), r["kind"])
                  for r in entry["rules"])
    return shape_contract.ShapeContract(rules, tuple(entry["index32"]), proved=True, facts=tuple(entry["facts"]),
                                        contents=tuple(parse(spec) for spec in entry["contents"]),
                                        protocol=tuple(parse(spec) for spec in entry["protocol"]))


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

    from tilecheck.report import Finding, Report

    memo = _REPORTS.get(id(data))
    if memo is None or memo[0] is not data:
        decoded = _decode(data)
        if not isinstance(decoded, Report) or not isinstance(decoded.findings, list):
            raise ValueError("not a stored report")
        if len(_REPORTS) >= 1024:
            _REPORTS.clear()
        memo = _REPORTS[id(data)] = (data, decoded)  # decoded once per entry read
    decoded = memo[1]
    # a report of its own for each caller (it may add notes or stats), sharing only immutable values
    report = dataclasses.replace(decoded, findings=list(decoded.findings), assumptions=list(decoded.assumptions),
                                 reasons=list(decoded.reasons), notes=list(decoded.notes), stats=dict(decoded.stats))

    def with_case(value: Any) -> Any:
        if isinstance(value, Finding):
            return dataclasses.replace(value, case=case)
        return value
    report.findings = [with_case(f) for f in report.findings]
    if report.contract is not None and report.contract.breaking is not None:
        report.contract = dataclasses.replace(report.contract, breaking=with_case(report.contract.breaking))
    return report


_REPORTS: dict[int, tuple[Any, Any]] = {}  # id(a stored report's JSON) -> (that JSON, its decoded Report)


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
        # (a field not given at construction is derived; a finding's case and the launch a report is
        # about are the caller's: an exact detector's report held its launch, and was never stored)
        fields = {f.name: _encode(getattr(value, f.name)) for f in dataclasses.fields(value)
                  if f.name not in ("case", "launch") and f.init}
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
    kind = _types().get(value.get("$"))
    if kind is None:
        raise ValueError(f"not a stored value: {str(value)[:80]}")
    return kind(**{k: _decode(v) for k, v in value.items() if k != "$"})
