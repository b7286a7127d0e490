"""The rows a listing evaluates terms over (``enumeration``, ``rows.Evaluator``): every block of a
concrete grid, every iteration of an access's loops (``for`` loops with exact bounds, ``loop``s up to
the exit iteration computed), every lane of a tile; one row each, as numpy columns by variable name
(a variable every row shares is a scalar)."""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from tilecheck.verifier.concrete.rows import Evaluator, Unsupported
from tilecheck.verifier.model.footprints import BLOCK_IDS, Access
from tilecheck.verifier.model.values import LANES
from tilecheck.verifier.solver import smt

# instances (block, iteration) one access may have for enumeration to be tried: a few MB of numpy
MAX_ROWS = 1 << 20
# lanes of every instance, for accesses compared element by element: a 16384-block grid of
# 1024-lane tiles (TileBench's largest bitonic sort), a few hundred MB of numpy per access
MAX_ELEMENTS = 1 << 24

Row = Callable[[int], dict[str, int]]  # an instance's variable values (by name) from its row number


def rows_of(env: dict[str, np.ndarray], active: np.ndarray) -> Row:
    """The variable values of the ``k``-th active row of ``env``."""
    where = np.flatnonzero(active)
    return lambda k: {name: int(np.broadcast_to(values, active.shape)[where[k]]) for name, values in env.items()}


def lane_rows(grid: tuple[int, int, int], shape: tuple[int, ...], only: int | None = None,
               blocks: tuple[int, int] | None = None) -> tuple[dict[str, np.ndarray], int]:
    """Every lane of a ``shape`` tile in every block of ``grid`` (``only``: in that linear block;
    ``blocks``: in the linear blocks from the first up to the second), one row each (block-major):
    the block ids' and lanes' values."""
    env, rows = block_rows(grid, only, blocks)
    return with_lanes(env, rows, shape)


def with_lanes(env: dict[str, np.ndarray], rows: int, shape: tuple[int, ...]) -> tuple[dict[str, np.ndarray], int]:
    """Each row repeated for every lane of a ``shape`` tile, the lanes' values added (in place: an
    evaluator of ``env`` reads the new rows once told that they changed)."""
    if not shape:
        return env, rows
    lanes = math.prod(shape)
    which = np.repeat(np.arange(rows), lanes)
    for name in list(env):
        env[name] = at(env[name], which)
    for lane, values in zip(LANES, np.indices(shape).reshape(len(shape), -1)):
        env[lane.decl().name()] = np.tile(values.astype(np.int64), rows)
    return env, rows * lanes


def block_rows(grid: tuple[int, int, int], only: int | None = None,
            blocks: tuple[int, int] | None = None) -> tuple[dict[str, np.ndarray], int]:
    """Every block of ``grid`` (``only``: that linear block; ``blocks``: the linear blocks from the
    first up to the second), one row each: the block id variables' values."""
    if only is not None:
        blocks = (only, only + 1)
    if blocks is not None:
        ids = np.array(np.unravel_index(np.arange(*blocks), grid), np.int64).reshape(3, -1)
        return {b.decl().name(): row for b, row in zip(BLOCK_IDS, ids)}, ids.shape[1]
    if math.prod(grid) > MAX_ELEMENTS:
        raise Unsupported  # too many blocks to list (a 2**31-block grid would not fit in memory)
    ids = np.indices(grid).reshape(3, -1).astype(np.int64)
    # an axis of one block: its id is 0 in every row, a scalar (not an array as long as the rows)
    return {b.decl().name(): row if n > 1 else np.int64(0) for b, row, n in zip(BLOCK_IDS, ids, grid)}, ids.shape[1]


def at(values: Any, index: np.ndarray) -> Any:
    """``values`` (a column of rows, or a scalar that every row shares) at the rows ``index``."""
    return values[index] if np.ndim(values) else values


def linear_block(env: dict[str, np.ndarray], grid: tuple[int, int, int], rows: int) -> np.ndarray:
    return np.broadcast_to((env["bid0"] * grid[1] + env["bid1"]) * grid[2] + env["bid2"], (rows,))


def iterations(access: Access | Sequence[Any], env: dict[str, np.ndarray], rows: int, evaluate: Evaluator,
                limit: int = MAX_ROWS) -> tuple[dict[str, np.ndarray], int]:
    """Each row repeated for every iteration of the access's loops (``for`` loops with exact bounds,
    and ``loop``s up to the exit iteration the evaluator computes), the loop variables' values
    added; the evaluator reads the new rows. (``access``: an access, or the loops themselves.)"""
    for loop in getattr(access, "loops", access):
        if loop.bounds is None:
            # a ``loop`` runs iterations 0, 1, ... up to its exit (``limit``: var <= exit(outer))
            exit_at = exit_of(loop)
            if exit_at is None or exit_at.decl().name() not in evaluate.memory:
                raise Unsupported
            lb, step = np.zeros(rows, np.int64), np.ones(rows, np.int64)
            trips = evaluate.ints(exit_at, rows) + 1
        else:
            if not loop.exact or loop.limit is not None:
                raise Unsupported
            lb, ub, step = (evaluate.ints(t, rows) for t in loop.bounds)
            if (step <= 0).any():
                raise Unsupported
            trips = np.maximum((ub - lb + step - 1) // step, 0)
        total = int(trips.sum())
        if total > limit:
            raise Unsupported
        which = np.repeat(np.arange(rows), trips)
        offset = np.arange(total) - np.repeat(np.cumsum(trips) - trips, trips)
        for name in list(env):
            env[name] = at(env[name], which)
        env[loop.var.decl().name()] = lb[which] + offset * step[which]
        rows = total
        evaluate.rows_changed()
    return env, rows


def exit_of(loop: Any) -> smt.Expr | None:
    """The exit-iteration application ``exit(outer)`` of a ``loop``'s ``limit`` (None: not one)."""
    limit = loop.limit
    if limit is None or limit.decl().name() != "<=" or not loop.var.eq(limit.arg(0)):
        return None
    return limit.arg(1) if smt.is_app(limit.arg(1)) and limit.arg(1).num_args() else None
