"""Deciding a cross-block query of a concrete case by enumerating its tiles.

At the given case (concrete grid, shapes, strides and scalars) the blocks and the iterations of
their ``for`` loops are finite: a persistent GEMM's store runs once per output tile it takes,
whatever non-linear swizzle maps a tile number to the tile. The solver finds that arithmetic hard
(tens of seconds, or no answer); evaluating it for every block and iteration with numpy takes
milliseconds. So before asking Z3 whether two blocks' instances of two tile-view accesses touch
one element, ``disjoint`` evaluates the tile each instance touches, and when no tile is touched by
two different blocks, the answer is "no" for certain.

It only ever proves: anything it cannot evaluate exactly (a loop that is neither a ``for`` with
bounds nor a ``loop`` whose exit iteration is computed, a tile index that reads memory not given or
a carried value it cannot compute, an unaligned tile, a division by zero, too many instances)
returns None and the solver decides, as before. ``memory`` (by function name) holds what it may
evaluate applications of: arrays' given contents, and loop-carried values (``carried.Carried``,
computed by ``rows.Evaluator``). Conditions it cannot
evaluate (a mask, a branch on loaded data) are taken as true: more instances than run, which can
only make it answer None. Two instances of different blocks on one element (one tile) are a
``Clash``: not a verdict, but the blocks, iterations and lanes to pin the solver's query to. With
them fixed, a witness that a whole grid of xor-indexed partners hides (a bitonic sort's 16384
blocks: minutes of bit-blasting, or no answer) is a query about two known blocks; a mask the
enumeration took as true makes that query unsatisfiable, and the unpinned one is asked as before.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tilecheck.verifier.concrete import separable
from tilecheck.verifier.concrete.listing import (
    MAX_ELEMENTS,
    MAX_ROWS,
    Row,
)
from tilecheck.verifier.concrete.listing import (
    at as _at,
)
from tilecheck.verifier.concrete.listing import (
    block_rows as _blocks,
)
from tilecheck.verifier.concrete.listing import (
    iterations as _iterations,
)
from tilecheck.verifier.concrete.listing import (
    lane_rows as _lane_rows,
)
from tilecheck.verifier.concrete.listing import (
    linear_block as _linear_block,
)
from tilecheck.verifier.concrete.listing import (
    rows_of as _rows,
)
from tilecheck.verifier.concrete.listing import (
    with_lanes as _with_lanes,
)
from tilecheck.verifier.concrete.rows import LIMIT, Evaluator, Unsupported
from tilecheck.verifier.model.footprints import Access
from tilecheck.verifier.model.values import LANES
from tilecheck.verifier.solver import smt

# element offsets spanning up to this many values, or twice as many as there are rows, are
# summarised per offset (``_span``: two int32 tables, no more memory than the rows' own offsets)
DIRECT_SPAN = 1 << 22






@dataclass(frozen=True)
class Clash:
    """Two instances in different blocks that touch one element (one tile), found by enumeration:
    each one's block ids, loop variables and (element by element) lanes, by the access's own
    variable names (``footprints.BLOCK_IDS``, the loops' variables, ``LANES``)."""

    x: dict[str, int]
    y: dict[str, int]


def disjoint(access_x: Access, access_y: Access, grid: tuple[int, int, int],
             concrete: list[tuple[smt.Expr, smt.Expr]], memory: dict[str, np.ndarray] | None = None) -> bool:
    """No element is touched by an instance of ``access_x`` and an instance of ``access_y`` in two
    different blocks, for certain (False: not shown; the solver decides)."""
    return compare(access_x, access_y, grid, concrete, memory) is True


def compare(access_x: Access, access_y: Access, grid: tuple[int, int, int],
            concrete: list[tuple[smt.Expr, smt.Expr]], memory: dict[str, np.ndarray] | None = None,
            cache: dict[Any, Any] | None = None) -> bool | Clash | None:
    """True: no element is touched by instances of ``access_x`` and ``access_y`` in two different
    blocks, for certain. A ``Clash``: two such instances that touch one (the first element or tile
    in address order), to pin the solver's query to. None: not evaluated (the solver decides).
    ``memory``: the contents of arrays (by content-function name) that reads take their given
    values from, a question about this launch's data; without it a tile index that reads memory is
    not evaluated. ``cache``: a dict kept for one level, so that each access is enumerated once."""
    try:
        if not (_tiled(access_x) and _tiled(access_y)):
            return _elements_compared(access_x, access_y, grid, concrete, memory or {}, cache)
        dags = cache.setdefault("dags", {}) if cache is not None else {}
        tiles_x = _tiles(access_x, grid, concrete, memory or {}, dags)
        if access_y is access_x:
            tiles_y = tiles_x
        else:
            if _extents(access_x) != _extents(access_y):
                return None
            tiles_y = _tiles(access_y, grid, concrete, memory or {}, dags)
    except Unsupported:
        return None
    (keys_x, blocks_x, row_x), (keys_y, blocks_y, row_y) = _starts(tiles_x, grid), _starts(tiles_y, grid)
    if keys_x.shape[1] != keys_y.shape[1]:
        return None
    if not len(keys_x) or not len(keys_y):
        return True
    # aligned tiles of one size either coincide or are disjoint: compare the starts
    extents = np.array(_extents(access_x), np.int64)
    both = np.concatenate([keys_x, keys_y])
    if ((both - both[0]) % extents).any():
        # the tiles' boxes, each clipped to the lanes its mask may leave (a sliced view's rows)
        boxes_x = _boxes(access_x, tiles_x, grid, concrete, memory or {}, dags)
        boxes_y = boxes_x if access_y is access_x else _boxes(access_y, tiles_y, grid, concrete, memory or {}, dags)
        return _overlapping(*boxes_x, *boxes_y)
    return _clash(keys_x, blocks_x, row_x, keys_y, blocks_y, row_y)


Boxes = tuple[np.ndarray, np.ndarray, np.ndarray, Row]  # first and last elements (rows), blocks, rows


def _overlapping(lo_x: np.ndarray, hi_x: np.ndarray, blocks_x: np.ndarray, row_x: Row, lo_y: np.ndarray,
                 hi_y: np.ndarray, blocks_y: np.ndarray, row_y: Row) -> bool | Clash | None:
    """``_clash`` for tiles off a common grid (a view sliced at an offset read from memory: a ragged
    batch's rows), as boxes from their first to their last element (``_boxes``): two instances in
    different blocks share an element where their boxes overlap along every axis. The pairs whose
    boxes overlap along the first axis are found in its sorted order (a box is at most ``extent``
    long there); None past ``MAX_ROWS`` of them. The clash is the pair with the least first elements."""
    if not len(lo_x) or not len(lo_y):
        return True
    longest = int((hi_y[:, 0] - lo_y[:, 0]).max()) + 1
    order = np.argsort(lo_y[:, 0], kind="stable")
    first = lo_y[order, 0]
    start = np.searchsorted(first, lo_x[:, 0] - longest + 1, "left")
    counts = np.searchsorted(first, hi_x[:, 0], "right") - start
    total = int(counts.sum())
    if total > MAX_ROWS:
        return None
    xs = np.repeat(np.arange(len(lo_x)), counts)
    ys = order[np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts) + np.repeat(start, counts)]
    near = (blocks_x[xs] != blocks_y[ys]) & (np.maximum(lo_x[xs], lo_y[ys]) <= np.minimum(hi_x[xs], hi_y[ys])).all(axis=1)
    if not near.any():
        return True
    xs, ys = xs[near], ys[near]
    pick = np.lexsort(np.concatenate([lo_x[xs], lo_y[ys]], axis=1).T[::-1])[0]  # x first, axis by axis
    return Clash(row_x(int(xs[pick])), row_y(int(ys[pick])))


def _extents(access: Access) -> tuple[int, ...]:
    return tuple(t[2] for t in access.tiles) if access.tiles and all(access.tiles) else ()


def _clash(keys_x: np.ndarray, blocks_x: np.ndarray, row_x: Row, keys_y: np.ndarray, blocks_y: np.ndarray,
           row_y: Row, spans: tuple[Span | None, Span | None] = (None, None)) -> bool | Clash:
    """True when no key is in ``keys_x`` for one block and in ``keys_y`` for another; else the
    ``Clash`` of the first such key (in sorted order): a row of each side, in different blocks.
    ``spans``: each side's ``_span``, when already made (an access in several pairs)."""
    sx = spans[0] if spans[0] is not None else _span(keys_x, blocks_x)
    sy = spans[1] if spans[1] is not None else _span(keys_y, blocks_y)
    if sx is not None and sy is not None:
        key = _first_shared(sx, sy)
        if key is None:
            return True
        return _pair(np.flatnonzero(keys_x[:, 0] == key), np.flatnonzero(keys_y[:, 0] == key),
                     blocks_x, blocks_y, row_x, row_y)
    keys = np.concatenate([keys_x, keys_y])
    group, n = _groups(keys)
    nx = len(keys_x)
    side = np.concatenate([np.zeros(nx, bool), np.ones(len(keys_y), bool)])
    blocks = np.concatenate([blocks_x, blocks_y])
    big = np.iinfo(np.int64).max
    lo = [np.full(n, big), np.full(n, big)]
    hi = [np.full(n, -1), np.full(n, -1)]
    for s in (0, 1):
        mine = side == bool(s)
        np.minimum.at(lo[s], group[mine], blocks[mine])
        np.maximum.at(hi[s], group[mine], blocks[mine])
    present = (hi[0] >= 0) & (hi[1] >= 0)
    # both sides touch the key, and not all from one and the same block
    single = (lo[0] == hi[0]) & (lo[1] == hi[1]) & (lo[0] == lo[1])
    clashing = np.flatnonzero(present & ~single)
    if not len(clashing):
        return True
    g = clashing[0]
    return _pair(np.flatnonzero(group[:nx] == g), np.flatnonzero(group[nx:] == g), blocks_x, blocks_y,
                 row_x, row_y)


# one side's element offsets summarised: the least offset, and per offset from it the least and the
# greatest block touching it (-1: none), for sides whose offsets span few values (``_span``)
Span = tuple[int, np.ndarray, np.ndarray]


def _span(keys: np.ndarray, blocks: np.ndarray) -> Span | None:
    """``Span`` of one column of element offsets spanning at most ``DIRECT_SPAN`` values (or twice as
    many as there are rows); None otherwise (``_clash`` groups both sides' keys together instead, a
    sort of both: TileBench's bitonic sort spans 2^24 + 1 offsets, its one-past-the-end included,
    for 2^24 lanes, where the sorts took 15 of its 23 s)."""
    if keys.shape[1] != 1 or not len(keys):
        return None
    column = keys[:, 0]
    low, high = int(column.min()), int(column.max())
    if high - low >= max(DIRECT_SPAN, 2 * len(column)) or len(blocks) and int(blocks.max()) >= 1 << 31:
        return None
    at, which = column - low, blocks.astype(np.int32)
    lo = np.full(high - low + 1, np.iinfo(np.int32).max, np.int32)
    hi = np.full(high - low + 1, -1, np.int32)
    np.minimum.at(lo, at, which)
    np.maximum.at(hi, at, which)
    return low, lo, hi


def _first_shared(x: Span, y: Span) -> int | None:
    """The least offset both sides touch, not all from one and the same block (None: none)."""
    start = max(x[0], y[0])
    stop = min(x[0] + len(x[1]), y[0] + len(y[1]))
    if start >= stop:
        return None
    lx, hx = x[1][start - x[0]:stop - x[0]], x[2][start - x[0]:stop - x[0]]
    ly, hy = y[1][start - y[0]:stop - y[0]], y[2][start - y[0]:stop - y[0]]
    clashing = np.flatnonzero((hx >= 0) & (hy >= 0) & ~((lx == hx) & (ly == hy) & (lx == ly)))
    return start + int(clashing[0]) if len(clashing) else None


def _pair(xs: np.ndarray, ys: np.ndarray, blocks_x: np.ndarray, blocks_y: np.ndarray, row_x: Row,
          row_y: Row) -> Clash:
    """The ``Clash`` of one shared key: its first x row, and a y row in another block (else the
    first y row and an x row in another block)."""
    i = xs[0]
    others = ys[blocks_y[ys] != blocks_x[i]]
    if len(others):
        j = others[0]
    else:  # every y row of the key is in x's first block: another x row is in another block
        j = ys[0]
        i = xs[blocks_x[xs] != blocks_y[j]][0]
    return Clash(row_x(int(i)), row_y(int(j)))


def _groups(keys: np.ndarray) -> tuple[np.ndarray, int]:
    """Each key row's group, numbered in the keys' sorted order, and how many there are: numpy's
    one-dimensional unique where the keys are one column (its row-wise one is far slower)."""
    _, group = np.unique(keys[:, 0] if keys.shape[1] == 1 else keys, axis=None if keys.shape[1] == 1 else 0,
                         return_inverse=True)
    group = group.reshape(-1)
    return group, int(group.max()) + 1


def large_listing(access_x: Access, access_y: Access, grid: tuple[int, int, int], lanes: int) -> bool:
    """Deciding the pair would list at least ``lanes`` lanes element by element (``compare`` and
    ``in_block`` on accesses that are not aligned tiles, outside loops)."""
    from tilecheck.verifier.model.engine import data_shape

    if _tiled(access_x) and _tiled(access_y):
        return False
    return max(math.prod(grid) * math.prod(data_shape(a.op)) for a in (access_x, access_y)) >= lanes


def _tiled(access: Access) -> bool:
    """A tile-view access whose every coordinate is a tile index times a step plus a lane."""
    return access.coords is not None and bool(access.tiles) and all(access.tiles)


def _elements_compared(access_x: Access, access_y: Access, grid: tuple[int, int, int],
                       concrete: list[tuple[smt.Expr, smt.Expr]], memory: dict[str, np.ndarray],
                       cache: dict[Any, Any] | None) -> bool | Clash:
    """``compare`` element by element, for accesses that are not aligned tiles (a gather or a
    scatter at computed offsets, e.g. a sorting network's partners ``i ^ j``): every lane of every
    instance evaluated, its element's offset compared. A pair whose coordinates each follow one lane
    axis is first listed axis by axis (``separable``: the sum of the axes' lanes, not their product)."""
    dags = cache.setdefault("dags", {}) if cache is not None else {}
    if separable.disjoint(access_x, access_y, grid, concrete, memory, dags):
        return True
    keys_x, blocks_x, row_x = _elements_of(access_x, grid, concrete, memory, cache)
    keys_y, blocks_y, row_y = (keys_x, blocks_x, row_x) if access_y is access_x else \
        _elements_of(access_y, grid, concrete, memory, cache)
    if not len(keys_x) or not len(keys_y):
        return True
    spans = _span_of(access_x, keys_x, blocks_x, cache), _span_of(access_y, keys_y, blocks_y, cache)
    return _clash(keys_x, blocks_x, row_x, keys_y, blocks_y, row_y, spans)


def _span_of(access: Access, keys: np.ndarray, blocks: np.ndarray, cache: dict[Any, Any] | None) -> Span | None:
    """``_span`` of an access's elements, made once per ``cache`` (one level)."""
    if cache is None:
        return _span(keys, blocks)
    key = ("span", access.index)
    if key not in cache:
        cache[key] = _span(keys, blocks)
    return cache[key]


def apart_in_block(access_x: Access, access_y: Access, grid: tuple[int, int, int],
                   concrete: list[tuple[smt.Expr, smt.Expr]], memory: dict[str, np.ndarray] | None = None) -> bool:
    """No block has an element that ``access_x`` and ``access_y`` both touch (for one access: that
    two of its lanes touch), for certain; accesses outside loops only (an instance per block).
    False: not shown, the solver decides."""
    return in_block(access_x, access_y, grid, concrete, memory) is True


def in_block(access_x: Access, access_y: Access, grid: tuple[int, int, int],
             concrete: list[tuple[smt.Expr, smt.Expr]], memory: dict[str, np.ndarray] | None = None,
             cache: dict[Any, Any] | None = None) -> bool | Clash | None:
    """``apart_in_block`` as ``compare`` answers: True (apart), a ``Clash`` (two lanes of one
    block on one element, the first such pair in address order), or None (not evaluated)."""
    if access_x.loops or access_y.loops:
        return None
    try:
        keys_x, blocks_x, row_x = _elements_of(access_x, grid, concrete, memory or {}, cache)
        keys_y, blocks_y, row_y = (keys_x, blocks_x, row_x) if access_y is access_x else \
            _elements_of(access_y, grid, concrete, memory or {}, cache)
    except Unsupported:
        return None
    # (block, element) as one integer: in-bounds offsets are below the largest one seen, plus one
    span = int(max(keys_x.max(initial=0), keys_y.max(initial=0))) + 1
    if span * math.prod(grid) >= LIMIT:
        return None
    x = blocks_x * span + keys_x[:, 0]
    if access_y is access_x:
        order = np.argsort(x, kind="stable")
        repeats = np.flatnonzero(x[order][1:] == x[order][:-1])
        if not len(repeats):
            return True
        return Clash(row_x(int(order[repeats[0]])), row_x(int(order[repeats[0] + 1])))
    _, i, j = np.intersect1d(x, blocks_y * span + keys_y[:, 0], return_indices=True)
    return True if not len(i) else Clash(row_x(int(i[0])), row_y(int(j[0])))


def _elements_of(access: Access, grid: tuple[int, int, int], concrete: list[tuple[smt.Expr, smt.Expr]],
                 memory: dict[str, np.ndarray], cache: dict[Any, Any] | None) -> tuple[np.ndarray, np.ndarray, Row]:
    """``_elements``, each access's offsets and blocks computed once per ``cache`` (one level: the
    same grid, case and contents), for the several pairs it is in. The instances' variable values
    are not kept (every column of every lane): a clash's are computed again, once per race.

    An access outside loops is listed with its peers (``cache["accesses"]``, the level's accesses:
    those of its array, outside loops, with its tile shape; the array written by one of them, so
    that they are compared), block range by block range (``CHUNK_ROWS`` lanes at a time): the terms
    they share (a sorting network's index ``i`` and partner ``i ^ j``) are computed once, and each
    step's arrays stay in the processor's cache (TileBench's largest bitonic step: four accesses of
    2^24 lanes each)."""
    if cache is None:
        return _elements(access, grid, concrete, memory)
    key = ("elements", access.index)
    if key not in cache:
        peers = _peers(access, cache.get("accesses", ()))
        if len(peers) > 1 and math.prod(grid) > 1:
            cache.update({("elements", a.index): found for a, found in
                          zip(peers, _elements_together(peers, grid, concrete, memory))})
        else:
            try:
                cache[key] = _elements(access, grid, concrete, memory)[:2]
            except Unsupported:
                cache[key] = None
    if cache[key] is None:
        raise Unsupported
    keys, blocks = cache[key]

    def row(k: int) -> dict[str, int]:  # rows are block-major: the k-th is one of its block's
        block = int(blocks[k])
        first = int(np.searchsorted(blocks, block, side="left"))
        return _elements(access, grid, concrete, memory, only=block)[2](k - first)
    return keys, blocks, row


# lanes evaluated at once when accesses are listed together (``_elements_together``): each term's
# value is an int64 array of this many, 2 MB
CHUNK_ROWS = 1 << 18


def _peers(access: Access, accesses: Sequence[Access]) -> list[Access]:
    """The accesses listed together with ``access`` (``_elements_of``), in the level's order."""
    from tilecheck.verifier.model.engine import data_shape

    def listed(a: Access) -> bool:
        return a.array == access.array and not a.loops and data_shape(a.op) == data_shape(access.op)

    if access.loops or not any(a.writes for a in accesses if a.array == access.array):
        return [access]
    return [a for a in accesses if listed(a)] or [access]


def _elements_together(accesses: list[Access], grid: tuple[int, int, int], concrete: list[tuple[smt.Expr, smt.Expr]],
                       memory: dict[str, np.ndarray], limit: int = MAX_ELEMENTS
                       ) -> list[tuple[np.ndarray, np.ndarray] | None]:
    """``_elements``' offsets and blocks of accesses outside loops with one tile shape, over every
    block of ``grid``, ``CHUNK_ROWS`` lanes at a time with one evaluator for all of them (None for
    one it cannot evaluate). Rows stay block-major, as ``_elements`` lists them."""
    from tilecheck.verifier.model.engine import data_shape

    shape = data_shape(accesses[0].op)
    lanes = max(1, math.prod(shape))
    live: list[int] = []
    for n, access in enumerate(accesses):
        try:
            if access.approximate or len(shape) != access.rank or math.prod(grid) * lanes > limit:
                raise Unsupported
            _elements(access, (1, 1, 1), concrete, memory, limit)  # block 0 alone first: see _FIRST_BLOCK
            live.append(n)
        except Unsupported:
            pass
    total, step = math.prod(grid), max(1, CHUNK_ROWS // lanes)
    # each access's offsets and blocks written in place, chunk after chunk (no list to join)
    keys = {n: np.empty(total * lanes, np.int64) for n in live}
    blocks = {n: np.empty(total * lanes, np.int64) for n in live}
    filled = dict.fromkeys(live, 0)
    dags: dict[int, Any] = {}  # the terms' DAGs, read once for every chunk
    for start in range(0, total if live else 0, step):
        env, rows = _lane_rows(grid, shape, blocks=(start, min(start + step, total)))
        evaluate = Evaluator(env, concrete, memory, dags)
        block = _linear_block(env, grid, rows)
        for n in list(live):
            access = accesses[n]
            try:
                linear, active = _offsets(access, evaluate, rows)
            except Unsupported:
                live.remove(n)
                continue
            at, count = filled[n], int(active.sum())
            np.compress(active, linear, out=keys[n][at:at + count])
            np.compress(active, block, out=blocks[n][at:at + count])
            filled[n] = at + count
    return [(keys[n][:filled[n], None], blocks[n][:filled[n]]) if n in live else None for n in range(len(accesses))]


# _FIRST_BLOCK: an access is evaluated at block 0 alone before every block is listed. What block
# 0 cannot evaluate (a read of an array not given, a loop-carried value) no listing evaluates: a
# term is evaluated over every row where any row takes it (an ite's branch), and block 0's rows are
# among them. Listing first cost 0.4 s on a grouped GEMM's scatter at offsets read from memory.


def _elements(access: Access, grid: tuple[int, int, int], concrete: list[tuple[smt.Expr, smt.Expr]],
              memory: dict[str, np.ndarray], limit: int = MAX_ELEMENTS,
              only: int | None = None) -> tuple[np.ndarray, np.ndarray, Row]:
    """The element offsets (one column) every active, in-bounds lane of every instance of ``access``
    touches, the linear block id of each, and each one's variable values (the race queries ask
    about in-bounds elements: a pointer op's active out-of-bounds lane is an obligation of its own).
    ``only``: the instances of that linear block alone (a clash's rows, without every block's)."""
    from tilecheck.verifier.model.engine import data_shape

    shape = data_shape(access.op)
    if access.approximate or len(shape) != access.rank:
        raise Unsupported
    lanes = math.prod(shape)
    if math.prod(grid) * lanes > limit:
        raise Unsupported
    if math.prod(grid) > 1 and only is None:
        _elements(access, (1, 1, 1), concrete, memory, limit)  # block 0 alone first: see _FIRST_BLOCK
    env, rows = _blocks(grid, only)
    evaluate = Evaluator(env, concrete, memory)
    env, rows = _iterations(access, env, rows, evaluate, limit // max(1, lanes))
    # each instance's lanes one after the other (what a loop-carried value is computed once for)
    env, rows = _with_lanes(env, rows, shape)
    evaluate.rows_changed()
    linear, active = _offsets(access, evaluate, rows)
    return linear[active][:, None], _linear_block(env, grid, rows)[active], _rows(env, active)


def _offsets(access: Access, evaluate: Evaluator, rows: int) -> tuple[np.ndarray, np.ndarray]:
    """Each row's element offset, and whether its lane is active and in bounds."""
    active = evaluate.condition(access.active, rows) & evaluate.condition(access.in_bounds, rows)
    return evaluate.ints(access.linear, rows), active


def overflow(term: smt.IntExpr, lo: int, hi: int, live: smt.BoolExpr, loops: Sequence[Any], shape: tuple[int, ...],
             grid: tuple[int, int, int], concrete: list[tuple[smt.Expr, smt.Expr]],
             memory: dict[str, Any] | None = None, dags: dict[Any, Any] | None = None
             ) -> bool | dict[str, int] | None:
    """An integer result's overflow obligation at the given case (``term`` must stay in ``[lo, hi]``
    wherever ``live`` holds), every block, iteration of its loops and lane evaluated: True when it
    never leaves the range; the variable values of the first instance that does (to pin the
    solver's query to, for its witness); None when not evaluated (a value read from an array not in
    ``memory``, a loop-carried value it cannot compute, too many instances, a division by zero
    where ``live`` could not be evaluated). Block 0 is evaluated alone first (``_FIRST_BLOCK``).
    ``dags``: the evaluators' (``rows.Evaluator``), shared by the level's obligations."""
    dags = {} if dags is None else dags
    if math.prod(grid) > 1 and overflow(term, lo, hi, live, loops, shape, (1, 1, 1), concrete, memory, dags) is None:
        return None
    try:
        if math.prod(grid) * math.prod(shape) > MAX_ELEMENTS:
            raise Unsupported
        env, rows = _blocks(grid)
        evaluate = Evaluator(env, concrete, memory, dags)
        env, rows = _iterations(loops, env, rows, evaluate, MAX_ELEMENTS // max(1, math.prod(shape)))
        env, rows = _with_lanes(env, rows, shape)
        evaluate.rows_changed()
        live_rows = evaluate.condition(live, rows)
        env = {name: _at(values, live_rows) for name, values in env.items()}
        rows = int(live_rows.sum())
        values = Evaluator(env, concrete, memory, dags).ints(term, rows)
    except Unsupported:
        return None
    outside = np.flatnonzero((values < lo) | (values > hi))
    if not len(outside):
        return True
    return {name: int(v[outside[0]]) if np.ndim(v) else int(v) for name, v in env.items()}


# every instance of a tiled access (``_tiles``): the rows' variable values, their number, their
# evaluator, which instances are active, and each one's tile start (a row of element coordinates)
TileRows = tuple[dict[str, np.ndarray], int, Evaluator, np.ndarray, np.ndarray]


def _starts(tiles: TileRows, grid: tuple[int, int, int]) -> tuple[np.ndarray, np.ndarray, Row]:
    """The active instances' tile starts, the linear block id of each, and each one's variable values."""
    env, rows, _, active, keys = tiles
    return keys[active], _linear_block(env, grid, rows)[active], _rows(env, active)


def _tiles(access: Access, grid: tuple[int, int, int], concrete: list[tuple[smt.Expr, smt.Expr]],
           memory: dict[str, Any], dags: dict[Any, Any]) -> TileRows:
    """Every instance of ``access``, over every block of ``grid`` and every iteration of its loops,
    and the tile each one touches. ``dags``: the evaluators' (``rows.Evaluator``), for the level."""
    if not _tiled(access) or access.approximate or math.prod(grid) > MAX_ROWS:
        raise Unsupported
    for _, step, extent, _, _ in access.tiles:
        if step < 1 or extent > step:
            raise Unsupported  # overlapping tiles: not one start per element
    if math.prod(grid) > 1:
        _tiles(access, (1, 1, 1), concrete, memory, dags)  # block 0 alone first: see _FIRST_BLOCK
    env, rows = _blocks(grid)
    evaluate = Evaluator(env, concrete, memory, dags)
    env, rows = _iterations(access, env, rows, evaluate)
    active = evaluate.condition(access.active, rows)
    starts = []
    for index, step, _, origin, _ in access.tiles:  # type: ignore[misc]
        start = evaluate.ints(index, rows) * step
        if origin is not None:
            start = start + evaluate.ints(origin, rows)
        starts.append(start)
    keys = np.stack(starts, axis=1) if starts else np.zeros((rows, 0), np.int64)
    return env, rows, evaluate, active, keys


def _boxes(access: Access, tiles: TileRows, grid: tuple[int, int, int], concrete: list[tuple[smt.Expr, smt.Expr]],
           memory: dict[str, Any], dags: dict[Any, Any]) -> Boxes:
    """Every active instance of a tiled ``access`` as a box, its first and last element along each
    axis: the tile, less the lanes that the conditions of its mask naming that axis's lane alone
    exclude (a view sliced to a batch's rows stores its tile's rows below the slice's end: ``start
    + lane < end``), over-approximated from the first lane they leave to the last. An instance
    they leave no lane is not listed (``tiles``: the access's instances, from ``_tiles``)."""
    env, rows, evaluate, active, keys = tiles
    parts, nodes = evaluate.conjuncts(access.active)
    lanes = {lane.decl().name(): k for k, lane in enumerate(LANES)}
    alone: dict[int, list[int]] = {}  # lane number -> the mask's conditions that name it alone
    for part in parts:
        named = {lanes[n] for n in _symbols(part, nodes) if n in lanes}
        if len(named) == 1:
            alone.setdefault(named.pop(), []).append(part)
    lo, hi = keys.copy(), keys.copy()
    for d, (_, _, extent, _, k) in enumerate(access.tiles):  # type: ignore[misc]
        first, last = np.zeros(rows, np.int64), np.full(rows, extent - 1, np.int64)
        if alone.get(k) and rows * extent <= MAX_ROWS:
            which = np.repeat(np.arange(rows), extent)
            lane_env = {name: _at(values, which) for name, values in env.items()}
            lane_env[LANES[k].decl().name()] = np.tile(np.arange(extent, dtype=np.int64), rows)
            lanes_of = Evaluator(lane_env, concrete, memory, dags)
            ok = np.ones(rows * extent, bool)
            for part in alone[k]:
                try:
                    ok &= lanes_of.holds(part, nodes, rows * extent)
                except Unsupported:
                    continue
            ok = ok.reshape(rows, extent)
            active = active & ok.any(axis=1)
            first, last = ok.argmax(axis=1), extent - 1 - ok[:, ::-1].argmax(axis=1)
        lo[:, d] += first
        hi[:, d] += last
    return lo[active], hi[active], _linear_block(env, grid, rows)[active], _rows(env, active)


def _symbols(key: int, nodes: dict[int, smt.Node]) -> set[str]:
    """The names of the constants and functions the node ``key`` reads."""
    out, todo, seen = set(), [key], set()
    while todo:
        k = todo.pop()
        if k in seen:
            continue
        seen.add(k)
        node = nodes[k]
        if node.kind == "symbol":
            out.add(node.value)
        todo.extend(node.args)
    return out
