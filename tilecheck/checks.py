"""Arguments checked at the door (issue 50): every public function and constructor checks what it is
given before it does anything, and a wrong type or value is an error that names the parameter, shows
the value and says what is accepted, never a Python error from deep inside.

The errors derive from ``TilecheckError`` and from ``TypeError`` / ``ValueError`` (numpy's
convention), so ``except TilecheckError`` and ``except TypeError`` both catch them."""
from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

from tilecheck.errors import TilecheckError


class ArgumentTypeError(TilecheckError, TypeError):
    """A public function was given a value of the wrong type."""


class ArgumentValueError(TilecheckError, ValueError):
    """A public function was given a value of the right type outside what it accepts."""


def show(value: Any) -> str:
    """A value as a message shows it: its repr, cut short, and its type."""
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{text} ({type(value).__name__})"


def integer(where: str, value: Any, *, minimum: int | None = None, maximum: int | None = None,
            none: bool = False) -> int | None:
    """``value`` as an int (numpy integers included; bool, float and str refused), at least
    ``minimum`` and at most ``maximum``; None passes when ``none``."""
    if value is None and none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        what = "an int" + (" or None" if none else "")
        raise ArgumentTypeError(f"{where} takes {what}, got {show(value)}")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ArgumentValueError(f"{where} must be at least {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ArgumentValueError(f"{where} must be at most {maximum}, got {value}")
    return value


def number(where: str, value: Any, *, positive: bool = True) -> float:
    """``value`` as a float (an int or a float; bool refused), above 0 when ``positive``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ArgumentTypeError(f"{where} takes a number of seconds, got {show(value)}")
    value = float(value)
    if value != value or (positive and value <= 0):
        raise ArgumentValueError(f"{where} must be a positive number, got {value}")
    return value


def flag(where: str, value: Any, *, none: bool = False) -> bool | None:
    """``value`` as a bool (True / False; None passes when ``none``)."""
    if value is None and none:
        return None
    if not isinstance(value, bool):
        raise ArgumentTypeError(f"{where} takes True or False{' or None' if none else ''}, got {show(value)}")
    return value


def choice(where: str, value: Any, choices: Sequence[Any], *, none: bool = False) -> Any:
    """``value`` when it is one of ``choices`` (or None when ``none``)."""
    if value is None and none:
        return None
    if not isinstance(value, str) or value not in choices:
        accepted = ", ".join(repr(c) for c in choices) + (" or None" if none else "")
        raise ArgumentValueError(f"{where} takes one of {accepted}, got {show(value)}")
    return value


def name(where: str, value: Any) -> str:
    """``value`` as a non-empty identifier-like string (an argument's name)."""
    if not isinstance(value, str):
        raise ArgumentTypeError(f"{where} takes the name of an array argument (a str), got {show(value)}")
    if not value.strip():
        raise ArgumentValueError(f"{where} takes the name of an array argument, got an empty string")
    return value


def arguments(where: str, value: Any, *, by_name: bool = False) -> Any:
    """The launch's arguments: a tuple or list (a dict too when ``by_name``: a Triton launch's keyword
    arguments)."""
    if isinstance(value, (tuple, list)) or by_name and isinstance(value, dict):
        return value
    kinds = "a tuple or list" + (" (or a dict of a Triton kernel's arguments by name)" if by_name else "")
    raise ArgumentTypeError(f"{where} takes the launch's arguments as {kinds}, the way ct.launch takes them, "
                            f"got {show(value)}")


def kernel(where: str, value: Any, *, module: bool = False) -> Any:
    """``value`` when it is a kernel tilecheck reads: a ``@ct.kernel``, a ``@triton.jit`` function, or
    (when ``module``) a ``tilecheck.ir.Module``."""
    import cuda.tile as ct

    from tilecheck.ir import Module
    from tilecheck.ir.triton import is_triton_kernel

    if isinstance(value, ct.kernel) or is_triton_kernel(value) or module and isinstance(value, Module):
        return value
    kinds = "a @ct.kernel or a @triton.jit function" + (" (or a tilecheck.ir.Module)" if module else "")
    hint = ""
    if callable(value) and getattr(value, "__code__", None) is not None:
        hint = ": decorate it with @ct.kernel"
    raise ArgumentTypeError(f"{where} takes {kinds}, got {show(value)}{hint}")
