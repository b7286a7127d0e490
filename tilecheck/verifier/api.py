"""``tilecheck.verify``: from a kernel (or a Module) and a case to a ``Report``."""
from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from tilecheck import checks
from tilecheck.grid import normalize_grid
from tilecheck.ir import Module
from tilecheck.ir import triton as triton_frontend
from tilecheck.report import Report, WeakLaunch
from tilecheck.requirements import kernel_name, with_requirements
from tilecheck.verifier import pipeline
from tilecheck.verifier.contracts.preconditions import Precondition
from tilecheck.verifier.reuse import proof_cache
from tilecheck.verifier.reuse.lookup import lookup, remember
from tilecheck.verifier.solver import smt

# Budgets, not wall-clock time, decide verdicts (smt.smt.GENERAL_LEVEL_RLIMIT and the others), so the
# same input gives the same verdict on any machine under any load; ``timeout_s`` stays as a
# backstop only, for a whole verification.
BACKSTOP_S = 600.0
# the solver work a whole verify may spend (Z3 rlimit units, summed over its queries, witness
# minimisation and data-contract search included): about 20 of the hardest queries a level allows
WORK_BUDGET = 400_000_000


def verify(kernel: Any, args: Sequence[Any] | None = None, grid: Any = None, *,
           assume: Sequence[Precondition] = (), timeout_s: float = BACKSTOP_S, data: bool = True,
           contract: bool | None = None, work: int | None = WORK_BUDGET,
           cache: bool | str | Path | None = None, every_shape: bool = True,
           observed: Sequence[tuple[Sequence[Any], Any]] = (), data_follows: bool = False) -> Report:
    """Prove that ``kernel`` is race-free, or find a witness.

    ``kernel`` is a ``@ct.kernel`` (then ``args`` is the tuple passed to ``ct.launch``) or a
    ``tilecheck.ir.Module`` (shapes and grid may stay symbolic). ``grid=None`` means any grid.
    Each solver query has a deterministic work budget (Z3's rlimit), and the whole verification
    spends at most ``work`` units (None: no total), so the verdict does not depend on the machine or
    its load; ``timeout_s`` is a wall-clock backstop for the whole verification: past it the queries
    not yet decided answer ``unknown``, with a reason that says it was time. Running out of any of
    them makes the verdict ``unknown``, never verified.

    With arguments and a grid, defects that need index contents other than the given ones are
    decided on the given data (``data=False`` keeps them): verified at level "this launch's data"
    with the precondition to state suggested, or the exact detector's verdict (``launch_data``).
    With arguments, when the given shapes race for some grid, ``report.contract`` says for which
    grids they do not. The search costs a few more checker runs: it is done by default without a
    grid (where it is the answer) and by the CLI; ``contract=True`` / ``False`` forces it.

    With arguments and a grid, the launch's contract over the shapes is searched for first
    (``every_shape=False`` skips it): verified, the verdict holds for every launch it admits.
    ``observed``: other launches of the kernel, ``(args, grid)`` each (several cases, the launches a
    test suite made; ``args`` may also be the kernel's Module bound to that launch, as the launcher
    keeps it): a candidate rule is kept only when they satisfy it too, so the contract is what the
    launches have in common (those compiled to other Tile IR are left out).
    ``data_follows`` (with ``data=False``): the caller decides a verdict that rests on the launch's
    contents on that data itself (the launcher does): queries about array contents at the given case
    get the data step's smaller budget, as when verify's own data step follows.
    A launch verified for every shape under its contract is remembered in
    the proof cache (``cache``: None uses ``.tilecheck_cache`` beside the project unless
    ``$TILECHECK_NO_CACHE`` is set; False none; a path that directory): a later launch of the same
    Tile IR that satisfies a stored contract is decided by evaluating it, with no solver call.
    """
    checks.kernel("verify(kernel=...)", kernel, module=True)
    assume, work, timeout_s = _checked_options(args, assume, timeout_s, data, contract, work, cache, every_shape,
                                               observed, data_follows)
    assume = with_requirements(kernel, assume)  # read on the kernel the user wrote (Triton's included)
    kernel, args = triton_frontend.resolve(kernel, args) if args is not None else (kernel, args)
    store = proof_cache.resolve(cache) if args is not None and grid is not None else None
    options = {"data": data, "contract": contract, "work": work, "every_shape": every_shape,
               **({"data_follows": True} if data_follows and not data else {}),
               # the launches observed, named in the key of a launch's whole report only (made when needed)
               "observed": lambda: [_launch_identity(kernel, a, g) for a, g in observed]}
    case = None
    if store is not None:
        case, hit = lookup(store, kernel, args, grid, assume, options)
        if hit is not None:
            return _about(hit, kernel, args, grid)
    # its own Z3 context: the same kernel gives the same formulas and answers, whatever was
    # verified before (and a verify run inside another leaves the outer one's terms valid)
    try:
        with _older_objects_frozen(), smt.backstop(timeout_s), smt.work_budget(work), smt.own_context():
            report = pipeline.prove(kernel, args, grid, assume=assume, data=data, contract=contract,
                                    every_shape=every_shape, observed=observed,
                                    data_follows=data or data_follows,
                                    span_literals=case is not None and case.literal_miss)
            report.stats["work"] = smt.work_spent()  # deterministic: the same on any machine
    except smt.FAILURES as exc:  # Z3 out of its memory, or failing: this launch is unknown, and the
        # context that held the memory is gone with the block (solver/memory.py; ``own_context``
        # made room for its deletion on the way out). Asked again, a query that ran out runs out
        # again, at the same cost (FlagGems' bitonic sort: 2 minutes each): the next verification
        # has its budget (``memory.headroom``), and garbage contexts in cycles go now rather than at
        # some later collection.
        if smt.out_of_memory(exc):
            gc.collect()
        return _about(Report(kernel_name(kernel), "unknown", reasons=[smt.failure_reason(exc)]), kernel,
                      args, grid)
    if store is not None and case is not None:
        remember(store, case, report, args, grid)
    return _about(report, kernel, args, grid)


def _about(report: Report, kernel: Any, args: Any, grid: Any) -> Report:
    """``report`` with the launch it is about (held weakly), for ``Report.save_picture``."""
    if args is not None and grid is not None:
        report.launch = WeakLaunch(kernel, args, grid)
    return report


def _checked_options(args: Any, assume: Any, timeout_s: Any, data: Any, contract: Any, work: Any, cache: Any,
                     every_shape: Any, observed: Any, data_follows: Any
                     ) -> tuple[tuple[Precondition, ...], int | None, float]:
    """verify's arguments checked at the door (issue 50): the preconditions as a tuple, the work
    budget and the backstop as Python numbers."""
    from tilecheck.requirements import preconditions

    if args is not None:
        checks.arguments("verify(args=...)", args, by_name=True)
    work = checks.integer("verify(work=...) (solver work units)", work, minimum=1, none=True)
    timeout_s = checks.number("verify(timeout_s=...)", timeout_s)
    for where, value in (("data", data), ("every_shape", every_shape), ("data_follows", data_follows)):
        checks.flag(f"verify({where}=...)", value)
    checks.flag("verify(contract=...)", contract, none=True)
    if not (cache is None or isinstance(cache, (bool, str, Path))):
        raise checks.ArgumentTypeError(f"verify(cache=...) takes True, False, None or a directory (a str or a "
                                       f"Path), got {checks.show(cache)}")
    if not isinstance(observed, (tuple, list)) or not all(isinstance(o, (tuple, list)) and len(o) == 2
                                                          for o in observed):
        raise checks.ArgumentTypeError("verify(observed=...) takes a list of (args, grid) pairs, got "
                                       f"{checks.show(observed)}")
    return preconditions("verify(assume=...)", assume), work, timeout_s


def _launch_identity(kernel: Any, args: Sequence[Any], grid: Any) -> list[Any]:
    """An observed launch as the cache keys it: its parameters' shapes and values, and its grid."""
    from tilecheck.ir.cutile import argument_signature

    if isinstance(args, Module):
        return [repr(args.params), list(normalize_grid(grid))]
    return [repr(argument_signature(tuple(args))), list(normalize_grid(grid))]


@contextlib.contextmanager
def _older_objects_frozen() -> Iterator[None]:
    """The objects alive before this verification are left out of the cyclic collector's passes
    while it runs (``gc.freeze``) and handed back after (``gc.unfreeze``): a long process (a test
    session, a sweep over many kernels) holds hundreds of thousands of them (compiled kernels,
    cuTile's caches), and a full collection walking them all took up to 0.38 s of a 0.5 s verify.
    Garbage among them waits for the next collection after this one. Left alone when something
    else froze objects (a server that freezes before it forks, or a verify in another thread)."""
    if gc.get_freeze_count():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
