"""Declared verification cases: ``@tilecheck.case(...)`` stacked on a ``@ct.kernel``."""
from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from tilecheck.errors import TilecheckError, where_raised

_CASES_ATTR = "__tilecheck_cases__"


@dataclass(frozen=True)
class Case:
    """One launch configuration of a kernel: its grid and a factory for its arguments."""

    grid: Any  # as declared; validated (``tilecheck.grid.normalize_grid``) where the case is used
    args: Callable[[], tuple[Any, ...]]
    assume: tuple[Any, ...] = ()
    name: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    by_name: bool = False  # a Triton kernel's case: its factory may return the arguments by name (a dict)

    def make_args(self) -> tuple[Any, ...]:
        """The launch arguments from the ``args`` factory; ``CaseError`` when the factory raises
        (anything, ``SystemExit`` included) or returns something that is not a sequence."""
        try:
            with kept_cwd():
                made = self.args()
        except Exception as exc:  # user code may raise anything: report it, no traceback
            raise CaseError(f"the case's args factory raised {type(exc).__name__}: {_first_line(exc)}"
                            f"{where_raised(exc)}") from exc
        except SystemExit as exc:
            raise CaseError(f"the case's args factory called sys.exit({exc.code!r})") from None
        if isinstance(made, dict):
            if self.by_name:  # a Triton launch's arguments by name
                return made  # type: ignore[return-value]
            raise CaseError("the case's args factory returned a dict, but a cuTile kernel takes its launch "
                            "arguments as a tuple, the way ct.launch does (e.g. args=lambda: (x, y, 16)); "
                            "arguments by name are for Triton kernels")
        if not isinstance(made, (tuple, list)):
            raise CaseError(f"the case's args factory returned a {type(made).__name__}, not a tuple of launch "
                            "arguments (e.g. args=lambda: (x, y, 16); for a Triton kernel, a dict by name)")
        return tuple(made)


@contextlib.contextmanager
def kept_cwd() -> Iterator[None]:
    """The working directory as it was before user code (a module's import, an args factory) ran:
    tilecheck's relative paths (reports, later files) must not move when that code calls os.chdir."""
    try:
        before = os.getcwd()
    except OSError:  # the directory was removed under us: nothing to restore
        yield
        return
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            if os.getcwd() != before:
                os.chdir(before)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else ""


class CaseError(TilecheckError):
    """A case that cannot be used: on something that is not a kernel, or its ``args`` factory failed."""


def case(*, grid: Sequence[int] | None = None, args: Callable[[], Sequence[Any]],
         assume: Sequence[Any] = (), name: str | None = None) -> Callable[[Any], Any]:
    """Attach a case to a kernel and return the kernel unchanged.

    Several decorators may be stacked; cases keep source order (top first).
    """
    from tilecheck.checks import ArgumentTypeError, show
    from tilecheck.requirements import preconditions

    if not callable(args):
        raise ArgumentTypeError("tilecheck.case(args=...) takes a callable returning the launch arguments, "
                                f"e.g. args=lambda: (x, y, 16), got {show(args)}")
    if name is not None and not isinstance(name, str):
        raise ArgumentTypeError(f"tilecheck.case(name=...) takes a str or None, got {show(name)}")
    assume = preconditions("tilecheck.case(assume=...)", assume)
    # the grid is checked where the case is used (verify), so one bad case does not hide the
    # other kernels of its file
    grid_t = tuple(grid) if isinstance(grid, list) else grid
    new = Case(grid_t, args, tuple(assume), name)

    def attach(kernel: Any) -> Any:
        from tilecheck.ir.triton import is_triton_kernel

        _check_kernel(kernel)
        existing = list(getattr(kernel, _CASES_ATTR, ()))
        setattr(kernel, _CASES_ATTR, (dataclasses.replace(new, by_name=is_triton_kernel(kernel)), *existing))
        return kernel

    return attach


def _check_kernel(obj: Any) -> None:
    """``@tilecheck.case`` goes on a ``@ct.kernel`` (above it); anything else is a ``CaseError``."""
    import cuda.tile as ct

    from tilecheck.ir.triton import is_triton_kernel

    if isinstance(obj, ct.kernel) or is_triton_kernel(obj):
        return
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None) or repr(obj)[:60]
    code = getattr(obj, "__code__", None)
    where = f" ({code.co_filename}:{code.co_firstlineno})" if code is not None else ""
    hint = ("stack @tilecheck.case above @ct.kernel, not below it" if callable(obj)
            else "decorate a @ct.kernel")
    raise CaseError(f"@tilecheck.case is on '{name}'{where}, a {type(obj).__name__}, not a cuTile kernel: {hint}")


def cases_of(kernel: Any) -> tuple[Case, ...]:
    """The cases declared on ``kernel`` (empty when none)."""
    return tuple(getattr(kernel, _CASES_ATTR, ()))
