"""A verification's limits on its solver queries: a deterministic work budget (Z3's rlimit units,
summed over the queries of a verification) and a wall-clock backstop. Both are per thread: a
verification in one thread never draws on another's. ``smt`` builds every solver within them."""
from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

_local = threading.local()


WORK_REASON = ("the work budget of this verification ran out ({} units of solver work; deterministic: "
               "the same on any machine, raise it with work= / --work)")


@dataclass
class _Account:
    """A verification's solver work (Z3's rlimit units): what it may still spend."""

    total: int
    left: int


@contextlib.contextmanager
def work_budget(total: int | None) -> Iterator[None]:
    """Within the block (in this thread), the queries together spend at most ``total`` units of Z3's
    rlimit (None: no limit): each query's own limit is cut to what is left, and once nothing is
    left ``check`` answers ``Unknown`` with ``WORK_REASON`` and ``minimize`` keeps its model.
    Deterministic, unlike a clock. A nested block draws from the enclosing one's account."""
    outer = getattr(_local, "account", None)
    if total is None and outer is None:
        yield
        return
    limit = total if total is not None else outer.left
    if outer is not None:
        limit = min(limit, outer.left)
    account = _local.account = _Account(limit, limit)
    try:
        yield
    finally:
        _local.account = outer
        if outer is not None:
            outer.left -= account.total - account.left


def within_budget(rlimit: int) -> int:
    account = getattr(_local, "account", None)
    return rlimit if account is None else max(1, min(rlimit, account.left))


def overspent() -> bool:
    account = getattr(_local, "account", None)
    return account is not None and account.left <= 0


def charged() -> bool:
    """This thread has an account to charge solver work to."""
    return getattr(_local, "account", None) is not None


def charge(context: int, spent: int) -> None:
    """Charge the account with a context's work since it was last charged (``spent``: the work the
    Z3 context with id ``context`` has counted in all, as Z3 counts per context, cumulatively)."""
    account = getattr(_local, "account", None)
    if account is None:
        return
    by_context = counted()
    account.left -= max(spent - by_context.get(context, 0), 0)
    by_context[context] = spent


def counted() -> dict[int, int]:
    """Per Z3 context (by id), its work count when last charged to an account."""
    by_context = getattr(_local, "counted", None)
    if by_context is None:
        by_context = _local.counted = {}
    return by_context


def work_spent() -> int | None:
    """The solver work spent so far under this thread's innermost work budget (None: no budget)."""
    account = getattr(_local, "account", None)
    return None if account is None else account.total - account.left


def work_reason() -> str | None:
    """``WORK_REASON`` when this thread's work budget has run out, else None."""
    account = getattr(_local, "account", None)
    return WORK_REASON.format(account.total) if account is not None and account.left <= 0 else None


BACKSTOP_REASON = ("the wall-clock backstop of this verification ran out (a slow or loaded machine, not a "
                   "property of the kernel; raise it with --timeout / timeout_s)")


@contextlib.contextmanager
def backstop(seconds: float) -> Iterator[None]:
    """Within the block (in this thread), queries stop being made ``seconds`` from now: past that,
    ``check`` answers ``Unknown(BACKSTOP_REASON)`` and ``minimize`` keeps the model it has. Nested
    blocks keep the earlier deadline."""
    outer = getattr(_local, "deadline", None)
    deadline = time.monotonic() + seconds
    _local.deadline = deadline if outer is None else min(outer, deadline)
    try:
        yield
    finally:
        _local.deadline = outer


def remaining() -> float | None:
    deadline = getattr(_local, "deadline", None)
    return None if deadline is None else deadline - time.monotonic()


def expired() -> bool:
    left = remaining()
    return left is not None and left <= 0
