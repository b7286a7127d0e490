"""Listing a gather or scatter whose coordinates each follow one lane axis, axis by axis.

A 2-D scatter to ``(rows[:, None], cols[None, :])`` touches, per instance (block and iteration),
the product of a set of rows and a set of columns. Listed lane by lane it costs that product
(TileGym's 16-expert grouped GEMM: 64 x 128 lanes in 5,920 instances, 48M elements, past what
enumeration lists); listed axis by axis, the sum (1.1M). Two instances touch one element exactly
when their sets meet on every axis. When, on every axis but one, any two instances' sets are equal
or disjoint (a partition: tiles of one size, the rows of one m-tile), instances can only meet
within a class of equal sets, and within a class they meet exactly where a value of the remaining
axis is shared: one sort.

Element identity is the coordinates', as the model's own question states it
(``footprints.same_element``). Like enumeration, it only proves: a condition that mixes lane axes
is taken as true (more lanes touched), and anything it cannot evaluate, or a shared value, leaves
the question to the listing and the solver (None).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from tilecheck.verifier.concrete.listing import (
    MAX_ELEMENTS,
    MAX_ROWS,
    at,
    block_rows,
    iterations,
    linear_block,
)
from tilecheck.verifier.concrete.rows import Evaluator, Unsupported, distinct_columns
from tilecheck.verifier.model.footprints import Access
from tilecheck.verifier.model.values import LANES
from tilecheck.verifier.solver import smt

# Lanes by axis of one instance: per axis, the instance of each listed lane and its coordinate
Axes = list[tuple[np.ndarray, np.ndarray]]


def disjoint(access_x: Access, access_y: Access, grid: tuple[int, int, int],
             concrete: list[tuple[smt.Expr, smt.Expr]], memory: dict[str, Any], dags: dict[Any, Any]) -> bool | None:
    """True: no element is touched by instances of ``access_x`` and ``access_y`` in two different
    blocks, for certain. None: not shown (not separable, not evaluated, or a value shared)."""
    from tilecheck.verifier.model.engine import data_shape

    shape = data_shape(access_x.op)
    if not _separable(access_x, shape) or (access_y is not access_x and (
            not _separable(access_y, data_shape(access_y.op)) or not _one_map(access_x, access_y))):
        return None
    try:
        sides = [_listed(access_x, grid, concrete, memory, dags)]
        if access_y is not access_x:
            sides.append(_listed(access_y, grid, concrete, memory, dags))
    except Unsupported:
        return None
    blocks = np.concatenate([b for b, _ in sides])
    side = np.concatenate([np.full(len(b), n, np.int8) for n, (b, _) in enumerate(sides)])
    offsets = np.cumsum([0, *(len(b) for b, _ in sides)])
    axes = [(np.concatenate([a[k][0] + offsets[n] for n, (_, a) in enumerate(sides)]),
             np.concatenate([a[k][1] for _, a in sides])) for k in range(len(sides[0][1]))]
    classes = [_partition(inst, values, len(blocks)) for inst, values in axes]
    for d in range(len(axes)):
        if all(c is not None for k, c in enumerate(classes) if k != d):
            keys = [c for k, c in enumerate(classes) if k != d]
            return None if _shared(axes[d], keys, blocks, side, two_sides=len(sides) == 2) else True
    return None


def _separable(access: Access, shape: tuple[int, ...]) -> bool:
    """Coordinates of two or more axes, each reading the lanes of its own axis at most."""
    coords = access.coords
    if coords is None or access.approximate or len(coords) < 2 or len(shape) != len(coords) \
            or access.rank != len(shape):
        return False
    for k, term in enumerate(coords):
        if _lane_axes(term) - {k}:
            return False
    return True


def _one_map(x: Access, y: Access) -> bool:
    """``x`` and ``y`` address one array through one map from coordinates to offsets (the same
    strides: not two views of it), so that equal coordinates are one element and only they are
    (distinct in-bounds coordinates are distinct addresses, the model's assumption)."""
    if x.array != y.array or len(x.coords) != len(y.coords):  # type: ignore[arg-type]
        return False
    places = [smt.Int(f"separable!{k}") for k in range(len(x.coords))]  # type: ignore[arg-type]
    mapped = [smt.substitute(a.linear, *zip(a.coords, places)) for a in (x, y)]  # type: ignore[arg-type]
    return smt.term_id(mapped[0]) == smt.term_id(mapped[1])


def _lane_axes(term: smt.Expr) -> set[int]:
    names = smt.free_constants(term)
    return {k for k, lane in enumerate(LANES) if lane.decl().name() in names}


def _listed(access: Access, grid: tuple[int, int, int], concrete: list[tuple[smt.Expr, smt.Expr]],
            memory: dict[str, Any], dags: dict[Any, Any]) -> tuple[np.ndarray, Axes]:
    """Every instance of ``access`` (block, iteration) whose lanes touch something: the linear block
    of each, and per axis the instance and coordinate of each active, in-bounds lane."""
    from tilecheck.verifier.model.engine import data_shape

    shape = data_shape(access.op)
    if math.prod(grid) > MAX_ROWS:
        raise Unsupported
    env, rows = block_rows(grid)
    evaluate = Evaluator(env, concrete, memory, dags)
    env, rows = iterations(access, env, rows, evaluate, MAX_ROWS)
    evaluate.rows_changed()
    if rows * sum(shape) > MAX_ELEMENTS:
        raise Unsupported
    by_axis: list[list[smt.BoolExpr]] = [[] for _ in shape]
    whole: list[smt.BoolExpr] = []
    for part in (*smt.conjuncts(access.active), *smt.conjuncts(access.in_bounds)):
        found = _lane_axes(part)
        if not found:
            whole.append(part)
        elif len(found) == 1:
            by_axis[found.pop()].append(part)
        # a condition over lanes of two axes is taken as true: more lanes, never fewer
    live = np.flatnonzero(evaluate.condition(smt.And(*whole), rows) if whole else np.ones(rows, bool))
    blocks = linear_block(env, grid, rows)[live]
    axes: Axes = []
    touching = np.ones(len(live), bool)
    for k, extent in enumerate(shape):
        which = np.repeat(np.arange(len(live)), extent)
        lanes = {name: at(values, live[which]) for name, values in env.items()}
        lanes[LANES[k].decl().name()] = np.tile(np.arange(extent, dtype=np.int64), len(live))
        ev = Evaluator(lanes, concrete, memory, dags)
        n = len(which)
        values = ev.ints(access.coords[k], n)  # type: ignore[index]
        keep = ev.condition(smt.And(*by_axis[k]), n)
        axes.append((which[keep], values[keep]))
        touching &= np.bincount(which[keep], minlength=len(live)) > 0
    # an instance with no lane on some axis touches nothing
    renumber = np.cumsum(touching) - 1
    return blocks[touching], [(renumber[inst][touching[inst]], values[touching[inst]]) for inst, values in axes]


def _partition(instances: np.ndarray, values: np.ndarray, count: int) -> np.ndarray | None:
    """Each instance's class of equal value sets on this axis, when any two instances' sets are
    equal or disjoint (None: two sets meet without being equal)."""
    order = np.lexsort((values, instances))
    inst, vals = instances[order], values[order]
    distinct = np.ones(len(inst), bool)
    distinct[1:] = (inst[1:] != inst[:-1]) | (vals[1:] != vals[:-1])
    inst, vals = inst[distinct], vals[distinct]
    starts = np.flatnonzero(np.concatenate([[True], inst[1:] != inst[:-1]])) if len(inst) else np.zeros(0, int)
    ends = np.append(starts[1:], len(inst))
    ids: dict[bytes, int] = {}
    klass = np.full(count, -1, np.int64)
    for s, e in zip(starts, ends):
        klass[inst[s]] = ids.setdefault(vals[s:e].tobytes(), len(ids))
    # a value in sets of two classes: those sets meet without being equal
    pairs, _ = distinct_columns(np.stack([vals, klass[inst]]))
    if len(pairs[0]) > 1 and (pairs[0][1:] == pairs[0][:-1]).any():
        return None
    return klass


def _shared(axis: tuple[np.ndarray, np.ndarray], keys: list[np.ndarray], blocks: np.ndarray, side: np.ndarray,
            two_sides: bool) -> bool:
    """Two instances of one class (equal sets on every other axis), in different blocks (one of
    each access when ``two_sides``), share a value on this axis: an element both touch."""
    instances, values = axis
    if not len(instances):
        return False
    _, klass = distinct_columns(np.stack([k[instances] for k in keys]))
    order = np.lexsort((values, klass))
    klass, values, instances = klass[order], values[order], instances[order]
    starts = np.flatnonzero(np.concatenate([[True], (klass[1:] != klass[:-1]) | (values[1:] != values[:-1])]))
    block = blocks[instances]
    if not two_sides:
        return bool((np.minimum.reduceat(block, starts) != np.maximum.reduceat(block, starts)).any())
    big = np.iinfo(np.int64).max
    sides = side[instances]
    low = [np.minimum.reduceat(np.where(sides == s, block, big), starts) for s in (0, 1)]
    high = [np.maximum.reduceat(np.where(sides == s, block, -1), starts) for s in (0, 1)]
    both = (low[0] != big) & (low[1] != big)
    one_block = (low[0] == high[0]) & (low[1] == high[1]) & (low[0] == low[1])
    return bool((both & ~one_block).any())
