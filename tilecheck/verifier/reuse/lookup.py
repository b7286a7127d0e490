"""The proof cache at a launch (issue 20): what ``verify`` asks the cache before it proves, and
what it stores after (``proof_cache`` holds the entries): a contract over the shapes decides every
launch it admits, a launch's whole report decides the same launch again."""
from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from typing import Any

from tilecheck.errors import TilecheckError
from tilecheck.grid import normalize_grid
from tilecheck.ir import Module
from tilecheck.ir.lifting import lifted
from tilecheck.report import Report
from tilecheck.requirements import with_requirements
from tilecheck.verifier.contracts import shapes as shape_contract
from tilecheck.verifier.contracts.levels import EVERY_SHAPE_LEVEL
from tilecheck.verifier.contracts.preconditions import Precondition
from tilecheck.verifier.data import launch_data
from tilecheck.verifier.obligations.arguments import (
    aliasing_in,
    broken_preconditions,
    given_integer_arrays,
    written_arrays,
)
from tilecheck.verifier.reuse import proof_cache
from tilecheck.verifier.solver import smt


@dataclasses.dataclass
class CacheCase:
    """What the proof cache knows a launch by: its Tile IR's digest, its preconditions' text, its
    arguments' parameters (bound to this launch) and its identity as a launch (options included)."""

    code: str  # ``program_digest``: a launch's whole report is keyed by it
    access: str  # ``access_digest`` of the lifted program (``ir.lifting``): contracts are keyed by it
    preconditions: list[str]
    kernel: str
    params: tuple[Any, ...]
    grid: tuple[int, int, int]
    options: dict[str, Any]
    # a contract proved for this program held its literals at other values, and only they kept it
    # from deciding this launch: the proof to pay is one over the literals (``pipeline.spanning``)
    literal_miss: bool = False

    @property
    def launch(self) -> Any:
        """The launch's identity: its parameters' values and grid, and verify's options (the launches
        observed named by theirs)."""
        options = {k: v() if callable(v) else v for k, v in self.options.items()}
        return (_identity(self.params, self.grid), options)

    def proof_parts(self) -> tuple[Any, ...]:
        """What the contracts proved for this Tile IR are keyed by."""
        return ("proofs", self.access, self.kernel, self.preconditions)

    def launch_parts(self, contents: str) -> tuple[Any, ...]:
        """What this launch's whole report is keyed by: its identity, options and contents."""
        return ("launch", self.code, self.kernel, self.preconditions, self.launch, contents)


def admissible(contract: shape_contract.ShapeContract, options: dict[str, Any]) -> bool:
    """The reuse rule (docs/semantics/reuse.md, "The proof cache"): a stored contract may decide a question
    only where a fresh proof of exactly that question would have assumed no more. Its Tile IR, its
    kernel and its preconditions are in its key; what is left is the mode: a contract that rests on
    index contents (``contents``: facts the proving launch's data satisfied) answers a question about
    this launch's data (``data=True``), never one about any contents (``data=False``), and then only
    with those facts evaluated on this launch's contents (``ShapeContract.admits``)."""
    return options["every_shape"] and (not contract.contents or bool(options["data"]))


def lookup(store: proof_cache.ProofCache, kernel: Any, args: Sequence[Any], grid: Any,
            assume: Sequence[Precondition], options: dict[str, Any]) -> tuple[CacheCase | None, Report | None]:
    """The verdict of a launch the proof cache decides, without a solver call: one that satisfies
    a contract proved before for its Tile IR and admissible for this question (``admissible``; the
    launch's own arguments still checked where a proof cannot speak for them: no written array
    aliases another, no precondition is broken), or the same launch verified before (same
    arguments, contents and options). A kernel compiled before, in any process, is found by its
    sources' digest without compiling it."""
    from tilecheck.ir.cutile import compilation_key, module_for
    from tilecheck.ir.identity import access_digest, program_digest

    start = time.perf_counter()
    grid3 = normalize_grid(grid)
    assume = with_requirements(kernel, assume)
    preconditions = sorted(p.describe() for p in assume)
    front = None if isinstance(kernel, Module) else compilation_key(kernel, args)
    source = ("kernel", front[0], front[1]) if front is not None and front[0] is not None else None
    entry = store.kernel(proof_cache.key(*source), front[1]) if source is not None else None
    if entry is not None:
        digest, access, name = entry["code"], entry["access"], entry["kernel"]
        written, params, literals = set(entry["written"]), front[2], entry["literals"]
    else:
        module, _ = module_for(kernel, tuple(args))
        lift = lifted(module)  # contracts are about the lifted program (pipeline.spanning)
        digest, access, name = program_digest(module), access_digest(lift.module if lift else module), module.name
        written, params, literals = written_arrays(module), module.params, list(lift.literals) if lift else []
        if source is not None and name == front[1]:
            store.add_kernel(proof_cache.key(*source), proof_cache.about(*source), digest, access, name, list(written),
                             literals)
    case = CacheCase(digest, access, preconditions, name, params, grid3, options)
    replay = (kernel, tuple(args), grid3)
    if options["every_shape"] and not aliasing_in(None, written, params, args) and \
            not broken_preconditions(None, params, args, assume):
        entries = store.decoded(proof_cache.key(*case.proof_parts()))
        env, widths = shape_contract.launch_of(params, grid3) if entries else ({}, {})
        env.update(literals)  # the lifted literals' values, by name
        arrays = None
        pinned = []
        for found, stored in entries:
            if not admissible(found, options):
                continue
            if (found.contents or found.protocol) and arrays is None:
                arrays = given_integer_arrays(params, args)
            if found.admits(env, widths, arrays):
                return case, Report(name, "verified", level=EVERY_SHAPE_LEVEL, assumptions=list(stored["assumptions"]),
                                    notes=list(stored["notes"]), launch_contract=found,
                                    stats={"cache": "hit", "total_s": round(time.perf_counter() - start, 6)})
            if literals and shape_contract.held_literals(found):
                pinned.append(found)
        # a miss: was it only the literals' values? (then the proof to pay spans them)
        case.literal_miss = any(shape_contract.unpinned(found).admits(env, widths, arrays) for found in pinned)
    contents = contents_digest(params, args, floats=False)
    if contents is not None:
        stored = store.verdict(proof_cache.key(*case.launch_parts(contents)))
        if isinstance(stored, dict) and (stored.get("floats") is None or
                                         stored["floats"] == contents_digest(params, args, floats=True)):
            try:
                report = proof_cache.report_from_json(stored.get("report"), replay)
            except (KeyError, TypeError, ValueError, AttributeError, TilecheckError):
                return case, None  # an entry of another shape: ignored, and rewritten
            report.stats = {**report.stats, "cache": "hit", "total_s": round(time.perf_counter() - start, 6)}
            return case, report
    return case, None


def remember(store: proof_cache.ProofCache, case: CacheCase, report: Report, args: Sequence[Any],
              grid: Any) -> None:
    """Store what a verification proved: its contract over the shapes (for every launch it
    admits), and its whole report (for this launch again), unless the wall-clock backstop ran out
    (a verdict of the machine's load, not of the kernel)."""
    if any(smt.BACKSTOP_REASON in r for r in report.reasons):
        return
    # a contract decides other launches only for a report with nothing but the verdict in it: a
    # warning (an order-dependent atomic) has a witness of this launch, so it is kept per launch
    if report.status == "verified" and report.level == EVERY_SHAPE_LEVEL and report.launch_contract is not None \
            and not report.findings:
        parts = case.proof_parts()
        store.add(proof_cache.key(*parts),
                  proof_cache.encode(report.launch_contract, report.assumptions, report.notes),
                  proof_cache.about(*parts))
        return
    contents = contents_digest(case.params, args, floats=False)
    # a verdict the exact detector gave on this launch's data may follow its float values too; a
    # static proof on the data reads integer contents alone (a 64 MB weight array kept a grouped
    # GEMM's pinned proof out of the cache, paid again at the same launch)
    by_detector = report.level == launch_data.LEVEL and launch_data.DATA_PROOF not in report.stats
    floats = contents_digest(case.params, args, floats=True) if by_detector else None
    if contents is not None and (floats is not None or not by_detector):
        try:
            data = proof_cache.report_json(report)
        except TypeError:  # a value the store does not know how to write: not stored
            return
        parts = case.launch_parts(contents)
        store.add_verdict(proof_cache.key(*parts), proof_cache.about(*parts), {"report": data, "floats": floats})


def _identity(params: tuple[Any, ...], grid: tuple[int, int, int]) -> list[Any]:
    """A launch's parameters as values: names, kinds, dtypes, shapes, strides, scalar values."""
    return [[p.name, p.kind, p.dtype, list(p.shape), list(p.strides), repr(p.value),
             [[list(a), list(b)] for a, b in p.items]] for p in params] + [list(grid)]


# arrays hashed for a launch's verdict entry, in all (a larger launch is not stored)
CONTENTS_BYTES = 64 << 20


def contents_digest(params: tuple[Any, ...], args: Sequence[Any], floats: bool) -> str | None:
    """The digest of the array arguments' contents: the integer and boolean ones (what the static
    check reads: index arrays, preconditions), with ``floats`` every one. Host arrays only: None
    when one lives on a device, or when together they pass ``CONTENTS_BYTES``."""
    import hashlib

    from tilecheck.arrays import flat_arguments
    from tilecheck.interp.memory import as_host_array

    h = hashlib.sha256()
    total = 0
    for p, a in zip(params, flat_arguments(tuple(args))):
        items = a if p.kind == "list" and isinstance(a, (list, tuple)) else [a] if p.kind == "array" else []
        for item in items:
            try:
                values = as_host_array(p.name, item)
            except TilecheckError:
                return None
            if not floats and values.dtype.kind not in "iub":
                continue
            total += values.nbytes
            if total > CONTENTS_BYTES:
                return None
            h.update(str((values.dtype.str, values.shape)).encode())
            h.update(values.tobytes())
    return h.hexdigest()
