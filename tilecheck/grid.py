"""Launch grids: the one validator every way of naming a grid goes through.

``verify``, ``launch``, ``run_repeated``, ``detect``, ``device_op``, ``@tilecheck.case`` and the
command line's ``--grid`` all call ``normalize_grid`` (the CLI through ``parse_grid``), so a grid is
accepted or refused the same way everywhere: an int, or a tuple/list of 1 to 3 ints (not bools,
not floats), each at least 1 and within CUDA's limits (x < 2**31, y and z <= 65535).
"""
from __future__ import annotations

import numbers
from typing import Any

from tilecheck.errors import TilecheckError

MAX_GRID = (2**31 - 1, 65535, 65535)  # CUDA's gridDim limits (x, y, z)
_AXES = "xyz"


class GridError(TilecheckError):
    """A grid that is not 1 to 3 positive integers within CUDA's limits."""


def _is_int(value: Any) -> bool:
    # numbers.Integral admits numpy integers; bool is an int subclass, numpy bools are not Integral
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def normalize_grid(grid: Any) -> tuple[int, int, int]:
    """``grid`` as three ints (missing trailing dimensions are 1); ``GridError`` when it is not a
    valid CUDA grid."""
    dims: tuple[Any, ...]
    if _is_int(grid):
        dims = (grid,)
    elif isinstance(grid, (tuple, list)):
        dims = tuple(grid)
    else:
        raise GridError(f"grid must be an int or a tuple of 1 to 3 ints, got {_show(grid)}")
    if not 1 <= len(dims) <= 3:
        raise GridError(f"grid must have 1 to 3 dimensions, got {len(dims)}: {_show(grid)}")
    for axis, d in zip(_AXES, dims):
        if not _is_int(d):
            raise GridError(f"grid must be made of ints; grid {axis} is {_show(d)} ({type(d).__name__}) "
                            f"in {_show(grid)}")
    out = tuple(int(d) for d in dims) + (1,) * (3 - len(dims))
    for axis, d, limit in zip(_AXES, out, MAX_GRID):
        if d < 1:
            raise GridError(f"grid must be positive; grid {axis} is {d} in {_show(grid)}")
        if d > limit:
            raise GridError(f"grid {axis} is {d}, above CUDA's limit of {limit} in {_show(grid)} "
                            f"(x < 2**31, y and z <= 65535)")
    return out  # type: ignore[return-value]


def parse_grid(text: str) -> tuple[int, int, int]:
    """A grid written on the command line, e.g. ``8,1,1`` or ``8``."""
    parts = [p.strip() for p in text.split(",")]
    try:
        dims = tuple(int(p, 10) for p in parts)
    except ValueError:
        raise GridError(f"--grid takes 1 to 3 comma-separated positive integers, e.g. 8,1,1; got {text!r}") from None
    return normalize_grid(dims)


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
