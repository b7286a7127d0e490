"""Z3's memory: a cap for the process, contexts made safely, and failures named.

Z3 counts every byte it allocates, in all contexts of the process, against its global
``memory_max_size``; past it, every Z3 call in every context raises "out of memory" until the terms
that hold the memory are freed. Uncapped, a long test session's hardest query can take the
machine's memory and the OOM killer ends the whole run. Capped, that query's verification answers
``unknown`` (``failure_reason``), its context is dropped with the verification (``smt.own_context``),
and the next verification has the memory again.

Once out of memory, Z3 answers ``Z3_mk_context_rc`` with NULL, and z3-solver's ``Context``
passes it straight to ``Z3_set_error_handler``, which dereferences it (a segfault that ends the
process): ``new_context`` checks for NULL first.
"""
from __future__ import annotations

import os
import threading
from typing import Any

import z3

# Z3's share of the process, in MB: TileGym's hardest verifications stay under a few hundred MB
# (docs/performance.md); ``$TILECHECK_Z3_MEMORY_MB`` overrides it, 0 lifts the cap
DEFAULT_MEMORY_MB = 3072
MEMORY_VARIABLE = "TILECHECK_Z3_MEMORY_MB"


def cap_memory() -> int:
    """Set Z3's process-wide ``memory_max_size`` (MB) from ``$TILECHECK_Z3_MEMORY_MB`` or the
    default, unless the process set one already (a user of Z3 keeps their own); the cap in force."""
    try:
        current = int(z3.get_param("memory_max_size"))
    except (z3.Z3Exception, ValueError):
        current = 0
    if current:
        return current
    wanted = os.environ.get(MEMORY_VARIABLE, "").strip()
    try:
        megabytes = int(wanted) if wanted else DEFAULT_MEMORY_MB
    except ValueError:
        megabytes = DEFAULT_MEMORY_MB
    if megabytes > 0:
        z3.set_param("memory_max_size", megabytes)
        global _BUDGET_MB, _SET_MB
        _BUDGET_MB = _SET_MB = megabytes
    return max(megabytes, 0)


# the cap tilecheck set, in MB (None: the process set its own, or none): each fresh context gets it
# as headroom above what Z3 counts already (``headroom``); ``_SET_MB``: the value last set, so a
# cap the process sets later is its own, and kept
_BUDGET_MB: int | None = None
_SET_MB: int | None = None


def headroom() -> None:
    """Move tilecheck's cap to what Z3 counts now plus the budget. Z3 never takes back what a
    failed allocation counted: once a verification runs out of memory, the process's count stays
    near the cap though nothing holds the memory (FlagGems' bitonic sort: 3,136 MB counted after it,
    no context alive, 1 GB resident), and every later verification ran out at once: 127 launches
    of the suite ended unknown. Called for every fresh context (before each verification), and
    before one is let go: deleting a context allocates, and at the cap Z3 throws inside the
    destructor and aborts the process (FlagGems' top-k, after a query that ran out)."""
    global _BUDGET_MB, _SET_MB
    if _BUDGET_MB is None:
        return
    with _CAP_LOCK:  # verifications in several threads: one reads and moves the cap at a time
        counted = z3.z3core.Z3_get_estimated_alloc_size() >> 20
        try:
            current = int(z3.get_param("memory_max_size"))
            if current != _SET_MB:  # the process set a cap of its own since: it keeps it
                _BUDGET_MB = None
            elif current != counted + _BUDGET_MB:
                z3.set_param("memory_max_size", counted + _BUDGET_MB)
                _SET_MB = counted + _BUDGET_MB
        except (z3.Z3Exception, ValueError):
            pass  # the cap stays as it was: a verification out of memory is unknown, as before


_CAP_LOCK = threading.Lock()


class _Context(z3.Context):
    """``z3.Context`` with its NULL check: the same context, its error handler and print mode set
    as z3-solver sets them, or ``MemoryError`` where Z3 could not make one."""

    def __init__(self) -> None:
        self.owner, self.ctx, self.eh = False, None, None  # what ``__del__`` reads if this fails
        config = z3.z3core.Z3_mk_config()
        try:
            ctx = z3.z3core.Z3_mk_context_rc(config)
        finally:
            z3.z3core.Z3_del_config(config)
        if ctx is None or not getattr(ctx, "value", ctx):
            raise MemoryError("Z3 could not make a context (out of memory)")
        self.ctx, self.owner = ctx, True
        self.eh = z3.z3core.Z3_set_error_handler(ctx, z3.z3.z3_error_handler)
        z3.z3core.Z3_set_ast_print_mode(ctx, z3.Z3_PRINT_SMTLIB2_COMPLIANT)


def new_context() -> z3.Context:
    headroom()
    return _Context()


# what a verification may raise from inside Z3 (or from the memory its terms take): each becomes an
# ``unknown`` verdict for that verification (``failure_reason``), never a crash of the caller
FAILURES: tuple[type[BaseException], ...] = (z3.Z3Exception, MemoryError)


def out_of_memory(exc: BaseException) -> bool:
    """Did ``exc`` come from running out of memory (Z3's cap, or the process's)?"""
    return isinstance(exc, MemoryError) or "out of memory" in message(exc)


def failure_reason(exc: BaseException) -> str:
    """Why a verification that raised ``exc`` (one of ``FAILURES`` or ``smt.SolverError``) is unknown."""
    text = message(exc)
    if "out of memory" in text:  # Z3's words (and ``_Context``'s)
        return (f"the solver ran out of memory{_cap_text()} ({text}): the verdict is unknown; a smaller case "
                f"needs less, or raise ${MEMORY_VARIABLE}")
    if isinstance(exc, MemoryError):
        return (f"out of memory while verifying ({text or 'MemoryError'}): the verdict is unknown; a smaller case "
                "(shapes, grid) needs less")
    return f"the solver failed ({text}): the verdict is unknown"


def message(exc: BaseException) -> str:
    """What ``exc`` says, with Z3's bytes decoded."""
    value: Any = exc.args[0] if exc.args else ""
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    return str(value)


def _cap_text() -> str:
    if _BUDGET_MB is not None:
        return f" (its cap: {_BUDGET_MB} MB)"
    try:
        cap = int(z3.get_param("memory_max_size"))
    except (z3.Z3Exception, ValueError):
        return ""
    return f" (its cap: {cap} MB)" if cap else ""
