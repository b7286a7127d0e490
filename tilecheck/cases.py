"""Declared verification cases: ``@tilecheck.case(...)`` stacked on a ``@ct.kernel``."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

_CASES_ATTR = "__tilecheck_cases__"


@dataclass(frozen=True)
class Case:
    """One launch configuration of a kernel: its grid and a factory for its arguments."""

    grid: tuple[int, ...] | None
    args: Callable[[], tuple[Any, ...]]
    assume: tuple[Any, ...] = ()
    name: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def make_args(self) -> tuple[Any, ...]:
        return tuple(self.args())


def case(*, grid: Sequence[int] | None = None, args: Callable[[], Sequence[Any]],
         assume: Sequence[Any] = (), name: str | None = None) -> Callable[[Any], Any]:
    """Attach a case to a kernel and return the kernel unchanged.

    Several decorators may be stacked; cases keep source order (top first).
    """
    if not callable(args):
        raise TypeError("tilecheck.case(args=...) takes a callable returning the launch arguments, "
                        "e.g. args=lambda: (x, y, 16)")
    grid_t = None if grid is None else tuple(int(g) for g in grid)
    new = Case(grid_t, args, tuple(assume), name)

    def attach(kernel: Any) -> Any:
        existing = list(getattr(kernel, _CASES_ATTR, ()))
        setattr(kernel, _CASES_ATTR, (new, *existing))
        return kernel

    return attach


def cases_of(kernel: Any) -> tuple[Case, ...]:
    """The cases declared on ``kernel`` (empty when none)."""
    return tuple(getattr(kernel, _CASES_ATTR, ()))
