"""The confirmation channel (DESIGN §4, trust rules): a race witness at the given case is run on
the interpreter before it is reported. The two witnessing blocks run alone on copies of the case's
arguments, with the read-only arrays holding the values the solver's model gave the elements it
read (so a race that needs other index contents is confirmed with those contents); both blocks
must touch the witness's element, each the way the witness says."""
from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tilecheck.arrays import flat_arguments, space_of
from tilecheck.errors import TilecheckError
from tilecheck.interp import InterpreterError
from tilecheck.interp.memory import NARROW_FLOATS, as_host_array, as_strided
from tilecheck.interp.runs import (
    CONFIRM_ITERATIONS,
    OTHER_CONTENTS_ITERATIONS,
    leaves_array,
    reproduced,
    with_contents,
)
from tilecheck.ir import Module
from tilecheck.report import Witness

Contents = dict[str, dict[tuple[int, ...], int]]


@dataclass(frozen=True)
class Confirmer:
    run: Callable[[Witness, Contents], bool]  # do the witness's blocks touch its element?
    differing: Callable[[Contents], Contents]  # the model's contents that the given arguments lack
    value: Callable[[str, tuple[int, ...]], int | None]  # a given integer array's element (None: unknown)
    value_range: Callable[[str], tuple[int, int] | None]  # a given integer array's least and greatest
    contents: Callable[[str], np.ndarray | None]  # a given integer array's host contents


def confirmer(module: Module, args: Sequence[Any] | None,
              grid: tuple[int, int, int] | None) -> Confirmer | None:
    """The confirmation channel of a case with arguments (None without: nothing to run)."""
    if args is None or not module.params:
        return None
    names = [p.name for p in module.params]
    args_flat = flat_arguments(tuple(args))
    flat = tuple(a if p.kind != "array" or space_of(a) != "cuda" else _stand_in(p)
                 for p, a in zip(module.params, args_flat))

    scratch: dict[int, tuple[Any, np.ndarray]] = {}  # the write-only arrays' copies, kept across runs

    def confirm(witness: Witness, contents: dict[str, dict[tuple[int, ...], int]]) -> bool:
        # contents the solver chose: a shorter run (the launch's verdict rests on its own data)
        iterations = OTHER_CONTENTS_ITERATIONS if differing(contents) else CONFIRM_ITERATIONS
        try:
            run_args = with_contents(flat, names, contents)
            if witness.second is None:  # out of bounds: the op leaves its array in that block
                return leaves_array(module, tuple(run_args), grid or witness.grid, witness.first.block,
                                    witness.first.op, witness.first.loc, scratch, iterations)
            return reproduced(module, tuple(run_args), grid or witness.grid, witness, scratch=scratch,
                              iterations=iterations)
        except (InterpreterError, TilecheckError, OverflowError, ValueError):
            return False

    def differing(contents: Contents) -> Contents:
        out: Contents = {}
        for name, values in contents.items():
            if name not in names:
                continue
            given = as_host_array(name, flat[names.index(name)])
            for coords, value in values.items():
                inside = len(coords) == given.ndim and all(0 <= c < n for c, n in zip(coords, given.shape))
                if inside and given[coords] != value:
                    out.setdefault(name, {})[coords] = value
        return out

    def host(name: str) -> np.ndarray | None:
        """The given contents of an integer array argument (None: not given, a device array, not
        integers)."""
        if name not in names:
            return None
        i = names.index(name)
        if flat[i] is not args_flat[i]:  # a stand-in for a device array: contents unknown
            return None
        try:
            array = as_host_array(name, flat[i])
        except TilecheckError:
            return None
        return array if array.dtype.kind in "iub" else None

    def value(name: str, coords: tuple[int, ...]) -> int | None:
        array = host(name)
        if array is None or len(coords) != array.ndim or not all(0 <= c < n for c, n in zip(coords, array.shape)):
            return None
        return int(array[coords])

    @functools.cache
    def value_range(name: str) -> tuple[int, int] | None:
        array = host(name)
        if array is None:
            return None
        return (int(array.min()), int(array.max())) if array.size else (0, 0)

    return Confirmer(confirm, differing, value, value_range, host)


def _stand_in(param: Any) -> np.ndarray:
    """A zero host array with a device argument's layout: addresses depend on shapes, strides and
    the index contents the model supplies, which is what confirmation needs."""
    dtype = NARROW_FLOATS.get(param.dtype, param.dtype)
    extent = 1 + sum((n - 1) * s for n, s in zip(param.shape, param.strides)) if all(param.shape) else 0
    base = np.zeros(max(extent, 1), dtype)
    return as_strided(base, param.shape, tuple(s * base.itemsize for s in param.strides))
