"""Grid contracts (issue 13, DESIGN §4): the grids under which a kernel is race-free at the given
shapes, as a box of per-axis extents, and the smallest launch outside it that is not.

The box is widened one axis at a time, the axes already decided staying inside their extents and
the others at most their given extent (1 without a grid). For one axis the question "is there a
defect at some extent <= M" is monotone in M, so the largest safe extent is found by a search over
M: the first query leaves the axis unbounded (no defect: any extent), and each defect found gives
an extent that breaks (witness grids are minimised, so the first probe just below it usually
settles the axis). Every query is a full checker run at a level whose grid is symbolic and bounded,
so each claim ("no defect in this box") is a proof, and each breaking launch is a confirmed witness.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from tilecheck.ir import Function
from tilecheck.report import Contract, Finding
from tilecheck.verifier.contracts.levels import LevelResult

# probes per axis after the first defect; each halves the interval at worst
MAX_PROBES = 24
# overflow checks of a box; each one leaves out the least block at which some op wraps
MAX_OVERFLOW_ROUNDS = 4

Bounds = tuple[int | None, int | None, int | None]


def axes_read(function: Function) -> tuple[bool, bool, bool]:
    """Per grid axis: does the kernel use its block id or its grid extent?"""
    sources = {}
    for op in function.walk():
        if op.name in ("get_tile_block_id", "get_num_tile_blocks"):
            sources.update({id(r): k for k, r in enumerate(op.results)})
    read = [False, False, False]
    for op in function.walk():
        for v in op.operands:
            k = sources.get(id(v))
            if k is not None:
                read[k] = True
    return read[0], read[1], read[2]


def infer_contract(run: Callable[[Bounds], LevelResult], reads: tuple[bool, bool, bool],
                   given: tuple[int, int, int] | None) -> Contract:
    """The contract box. ``run(bounds)`` checks every grid with extents up to ``bounds`` (None: any)
    at the given shapes. Each axis's search ends on a query without a defect covering the box so far;
    a query the solver cannot decide stops the search, and the box is the last one proved (none when
    not even the first axis's was)."""
    extents: list[int | None] = list(given) if given is not None else [1, 1, 1]
    found: list[tuple[int, Finding]] = []
    undecided = None
    proved = True
    # an axis the kernel does not read keeps its starting extent (every probe covers it there): its
    # blocks repeat one footprint, so a larger extent only adds conflicts; searched only when the
    # kernel reads no axis at all
    searched = [k for k in range(3) if reads[k]] or [0]
    for k in searched:
        extent, defect, undecided = _largest_extent(run, k, tuple(extents))
        if defect is not None:
            found.append((k, defect))
        if extent is _UNDECIDED:
            proved = k > 0  # the previous axis's last query covered the box with this axis's start
            break
        extents[k] = extent
        if undecided is not None or extent == 0:
            break  # the remaining axes keep their starting extents: the last query covered them
    if not found and proved and undecided is None:  # show why an unread axis stays at its extent
        for k in range(3):
            if k in searched or extents[k] is None:
                continue
            bounds = list(extents)
            bounds[k] = extents[k] + 1
            result = run((bounds[0], bounds[1], bounds[2]))
            if any(f.witness is not None and f.witness.grid for f in result.races):
                found.append((k, _smallest(result, k)[1]))
                break
    # the launch to show: just beyond an axis the kernel reads (the bound a user acts on), else any
    found.sort(key=lambda kf: (not reads[kf[0]], kf[0]))
    breaking = found[0][1] if found else None
    return Contract((extents[0], extents[1], extents[2]), reads, breaking, undecided, proved)


_UNDECIDED = -1  # an axis whose first query was not decided


def _largest_extent(run: Callable[[Bounds], LevelResult], k: int, bounds: tuple[int | None, ...]
                    ) -> tuple[int | None, Finding | None, str | None]:
    """(largest extent of axis k proved safe, None for any, or _UNDECIDED; a defect just beyond it;
    why the search stopped short)."""
    def probe(limit: int | None) -> LevelResult:
        b = list(bounds)
        b[k] = limit
        return run((b[0], b[1], b[2]))

    result = probe(None)
    if not result.races:
        return (_UNDECIDED, None, result.unknowns[0]) if result.unknowns else (None, None, None)
    if not any(f.witness is not None and f.witness.grid for f in result.races):
        return _UNDECIDED, None, "a defect without a launch witness"
    hi, found = _smallest(result, k)
    lo = 0  # every extent <= lo is proved safe (by the query that set it)
    for n in range(MAX_PROBES):
        if hi - lo <= 1:
            return lo, found, None
        mid = hi - 1 if n == 0 else (lo + hi) // 2
        result = probe(mid)
        if result.races:
            hi, found = _smallest(result, k)
        elif result.unknowns:
            return (lo if lo else _UNDECIDED), found, result.unknowns[0]
        else:
            lo = mid
    return lo, found, f"extents between {lo + 1} and {hi - 1} of axis {k} were not decided"


def _smallest(result: LevelResult, k: int) -> tuple[int, Finding]:
    """The defect whose launch has the smallest extent on axis k."""
    found = min((f for f in result.races if f.witness is not None and f.witness.grid),
                key=lambda f: (f.witness.grid[k], f.witness.grid))
    return found.witness.grid[k], found


def exclude_overflow(contract: Contract, overflows: Callable[[Bounds], list[tuple[int, ...]]]
                     ) -> Contract:
    """The box without the blocks whose index arithmetic wraps around (the probes assume it does
    not). ``overflows(bounds)`` gives the blocks of such findings in the box; each one found shrinks
    the first axis on which it lies beyond block 0, to leave it out, until none is left."""
    if not contract.proved or contract.empty:
        return contract
    extents = list(contract.extents)
    reason = None
    for _ in range(MAX_OVERFLOW_ROUNDS):
        blocks = overflows((extents[0], extents[1], extents[2]))
        if not blocks:
            if reason is None:
                return contract
            return dataclasses.replace(contract, extents=(extents[0], extents[1], extents[2]),
                                       undecided=reason, breaking=None)
        block = min(blocks)  # each is the least block at which its op wraps
        k = next((d for d in range(3) if block[d] > 0), 0)
        extents[k] = block[k]
        reason = f"index arithmetic wraps around in block {block} (an overflow finding there)"
        if extents[k] == 0:
            break
    return dataclasses.replace(contract, extents=(extents[0], extents[1], extents[2]), proved=False,
                               undecided="index arithmetic wraps around inside every box tried")


# candidate symbolic bounds tried per contract (each a checker run at the all-shapes level)
MAX_SYMBOLIC = 8


@dataclasses.dataclass(frozen=True)
class Bound:
    """``grid[axis] <= cdiv(size, tile)`` (or ``size // tile`` when not ``ceil``) for a shape or
    scalar symbol ``size``, named ``name``."""

    axis: int
    name: str
    size: Any  # the symbol (an array dimension or an integer scalar argument)
    tile: int
    ceil: bool = True

    def rule(self, grid: Any) -> Any:
        return grid[self.axis] <= ((self.size + (self.tile - 1)) / self.tile if self.ceil else self.size / self.tile)

    def __str__(self) -> str:
        if self.tile == 1:
            return f"grid[{self.axis}] <= {self.name}"
        return f"grid[{self.axis}] <= " + (f"cdiv({self.name}, {self.tile})" if self.ceil else
                                           f"{self.name} // {self.tile}")


def symbolic_bounds(contract: Contract, sizes: list[tuple[str, Any, int]], tiles: set[int]) -> list[list[Bound]]:
    """The usual symbolic forms of a contract's finite extents: for each axis the kernel reads, the
    sizes (``(name, symbol, given value)``: array dimensions, integer scalars) and tile lengths whose
    ``cdiv(size, tile)`` (or ``size // tile``) at the given values is that extent. Per axis, the
    options are each such bound alone, then all of those rounding up (or down) at once (the grid
    must fit every array it walks); combined over the axes, the first ``MAX_SYMBOLIC``
    combinations."""
    per_axis: list[list[list[Bound]]] = []
    for k, extent in enumerate(contract.extents):
        if not contract.reads[k] or extent is None:
            continue
        groups: list[list[Bound]] = []
        for ceil in (True, False):
            matches = [Bound(k, name, symbol, t, ceil) for name, symbol, value in sizes for t in sorted(tiles)
                       if value > 0 and (-(-value // t) if ceil else value // t) == extent
                       and (ceil or t > 1)]
            if matches:
                groups.append(matches)
        # one bound alone reads best; all of them at once, when the grid walks several arrays
        options = [[b] for group in groups for b in group] + [g for g in groups if len(g) > 1]
        if not options:
            return []
        per_axis.append(options)
    if not per_axis:
        return []
    combos: list[list[Bound]] = [[]]
    for options in per_axis:
        combos = [c + b for c in combos for b in options][:MAX_SYMBOLIC]
    return combos
