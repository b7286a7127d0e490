"""Launch grids: an int or a tuple of up to three positive ints, normalised to three."""
from __future__ import annotations

from typing import Any

from tilecheck.errors import TilecheckError


def normalize_grid(grid: Any) -> tuple[int, int, int]:
    if isinstance(grid, int):
        grid = (grid,)
    try:
        dims = tuple(int(g) for g in grid)
    except (TypeError, ValueError):
        raise TilecheckError(f"grid must be an int or a tuple of up to 3 ints, got {grid!r}") from None
    if not 1 <= len(dims) <= 3 or any(d < 1 for d in dims):
        raise TilecheckError(f"grid must have 1 to 3 positive dimensions, got {grid!r}")
    return (*dims, *(1,) * (3 - len(dims)))  # type: ignore[return-value]
