"""Access footprints: which elements of which array a memory op touches, as formulas.

A footprint is written over *template* variables (block ids, loop variables, lane variables);
``instantiate`` renames them for one concrete op instance in one block so that two instances
(same block or different blocks) can be compared in one query.
"""
from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass
from typing import Any

from tilecheck.ir import Op
from tilecheck.ir.opdefs import Effect
from tilecheck.ir.types import ScalarType
from tilecheck.verifier.model.values import GRID, LANES, LoopVar
from tilecheck.verifier.solver import smt, z3walk

BLOCK_IDS = smt.Vars(("bid0", "bid1", "bid2"))
_local = threading.local()  # per thread (verifications may run in several at once): ``instances``


def reset_instances() -> None:
    _local.instances = itertools.count()


def _next_instance() -> int:
    if not hasattr(_local, "instances"):
        reset_instances()
    return next(_local.instances)


@dataclass(frozen=True)
class Access:
    op: Op
    index: int  # program order
    effect: Effect
    array: int  # entry-argument index of the array's base pointer
    coords: tuple[smt.IntExpr, ...] | None
    linear: smt.IntExpr
    active: smt.BoolExpr  # the op touches the element for these variables (mask, path, loop domain)
    in_bounds: smt.BoolExpr  # the element lies inside the array
    checks_bounds: bool  # False for pointer ops: an active out-of-bounds element is a finding
    rank: int  # lanes used: LANES[:rank]
    loops: tuple[LoopVar, ...]
    element: ScalarType | None
    atomic_mode: str | None
    ordering: str
    approximate: bool = False  # over-approximated (e.g. loop with symbolic step)
    # per coordinate of a tile-view access: (tile index term, step, tile extent, origin term or
    # None, lane number k), the coordinate being index * step + LANES[k] + origin with
    # 0 <= LANES[k] < extent; None where the coordinate has another form (``same_element``
    # compares such coordinates tile-wise)
    tiles: tuple[Tiled | None, ...] | None = None

    @property
    def writes(self) -> bool:
        return self.effect in (Effect.WRITE, Effect.ATOMIC)

    @property
    def is_atomic(self) -> bool:
        return self.effect is Effect.ATOMIC


Tiled = tuple[smt.IntExpr, int, int, "smt.IntExpr | None", int]


def common_loops(x: Access, y: Access) -> int:
    """How many loops, from the outermost, enclose both accesses."""
    n = 0
    for lx, ly in zip(x.loops, y.loops):
        if lx.op is not ly.op:
            break
        n += 1
    return n


@dataclass(frozen=True)
class Instance:
    """One renamed copy of an access: its variables and formulas."""

    access: Access
    block_tag: str
    block: tuple[smt.IntExpr, ...]
    loop_vars: tuple[smt.IntExpr, ...]
    lanes: tuple[smt.IntExpr, ...]
    coords: tuple[smt.IntExpr, ...] | None
    linear: smt.IntExpr
    active: smt.BoolExpr
    in_bounds: smt.BoolExpr
    tiles: tuple[Tiled | None, ...] | None = None


def block_vars(tag: str) -> tuple[smt.IntExpr, ...]:
    return tuple(smt.Int(f"{b}_{tag}") for b in ("bid0", "bid1", "bid2"))


def instantiate(access: Access, block_tag: str, shared_loops: dict[int, smt.IntExpr] | None = None
                ) -> Instance:
    """Rename the access's variables: block ids after ``block_tag``, loop and lane variables fresh
    (or taken from ``shared_loops`` by loop position, to force the same iteration)."""
    n = _next_instance()
    block = block_vars(block_tag)
    pairs: list[tuple[smt.Expr, smt.Expr]] = list(zip(BLOCK_IDS, block))
    loop_vars = []
    for depth, loop in enumerate(access.loops):
        var = (shared_loops or {}).get(depth)
        if var is None:
            var = smt.Int(f"{loop.var}_{n}")
        loop_vars.append(var)
        pairs.append((loop.var, var))
    lanes = tuple(smt.Int(f"lane{d}_{n}") for d in range(access.rank))
    pairs.extend(zip(LANES[:access.rank], lanes))

    def sub(term: smt.Expr) -> smt.Expr:
        return smt.substitute(term, *pairs) if pairs else term

    coords = tuple(sub(c) for c in access.coords) if access.coords is not None else None
    tiles = None
    if access.tiles is not None:
        tiles = tuple(None if t is None else (sub(t[0]), t[1], t[2], None if t[3] is None else sub(t[3]), t[4])
                      for t in access.tiles)
    return Instance(access, block_tag, block, tuple(loop_vars), lanes, coords, sub(access.linear),
                    sub(access.active), sub(access.in_bounds), tiles)


def fixed_values(fp: Any, level: Any) -> list[tuple[smt.Expr, smt.Expr]]:
    """A level's fixed values as substitutions (shape, stride and scalar symbols of footprints
    ``fp``, the grid): what loop trip counts can be computed from."""
    out = []
    if level.grid is not None:
        out += [(g, smt.IntVal(v)) for g, v in zip(GRID, level.grid)]
    for info in fp.arrays.values():
        for symbols, values in ((info.shape, (level.shapes or {}).get(info.name)),
                                (info.strides, (level.strides or {}).get(info.name))):
            if values is not None:
                out += [(s, smt.IntVal(v)) for s, v in zip(symbols, values) if smt.is_const(s)]
    out += [(fp.scalars[i], smt.IntVal(v)) for i, v in (level.scalars or {}).items()
            if i in fp.scalars and smt.is_const(fp.scalars[i])]
    return out


def corners(level: Any) -> list[list[tuple[smt.Expr, smt.Expr]]]:
    """The block ids of the two blocks a query names, at the corners of a level's concrete grid (its
    axes of extent > 1): where block-dependent loop trip counts are largest, usually."""
    if level.grid is None:
        return []
    axes = [(tag, d) for tag in ("b1", "b2") for d in range(3) if level.grid[d] > 1]
    # every corner for up to 4 axes; past that, only all-low and all-high
    patterns = itertools.product((False, True), repeat=len(axes)) if len(axes) <= 4 else \
        [(False,) * len(axes), (True,) * len(axes)]
    return [[(block_vars(tag)[d], smt.IntVal(level.grid[d] - 1 if high else 0))
             for (tag, d), high in zip(axes, pattern)] for pattern in patterns]


def pinned(instance: Instance, values: dict[str, int]) -> list[smt.BoolExpr]:
    """``instance``'s variables equal to an enumerated instance's ``values`` (by the access's own
    variable names: block ids, loop variables, lanes)."""
    access = instance.access
    names = [*(b.decl().name() for b in BLOCK_IDS), *(loop.var.decl().name() for loop in access.loops),
             *(lane.decl().name() for lane in LANES[:access.rank])]
    own = [*instance.block, *instance.loop_vars, *instance.lanes]
    return [var == values[name] for name, var in zip(names, own) if name in values]


def rename_blocks(term: smt.Expr, block_tag: str) -> smt.Expr:
    return smt.substitute(term, *zip(BLOCK_IDS, block_vars(block_tag)))


def same_element(a: Instance, b: Instance) -> smt.BoolExpr | None:
    """Both instances touch the same element (None when the two cannot be compared).

    Two tile-view coordinates ``i * S + l + o`` and ``j * S + m + o`` with lanes within one step
    (``0 <= l, m < T <= S``, which every query states through the instances' ``active``) are equal
    exactly when ``i == j`` and ``l == m``: said that way, the solver need not rediscover it through
    the non-linear arithmetic of a persistent kernel's tile index (a GEMM's swizzle)."""
    if a.coords is not None and b.coords is not None and len(a.coords) == len(b.coords):
        if not a.coords:
            return smt.BoolVal(True)
        return smt.And(*[_same_coordinate(a, b, d) for d in range(len(a.coords))])
    return a.linear == b.linear


def _same_coordinate(a: Instance, b: Instance, d: int) -> smt.BoolExpr:
    x, y = a.coords[d], b.coords[d]  # type: ignore[index]
    s, t = (a.tiles[d] if a.tiles else None), (b.tiles[d] if b.tiles else None)
    if s is None or t is None or s[1] != t[1] or max(s[2], t[2]) > s[1] or s[1] < 1:
        return x == y
    if (s[3] is None) != (t[3] is None) or (s[3] is not None and smt.term_id(s[3]) != smt.term_id(t[3])):
        return x == y
    return smt.And(s[0] == t[0], a.lanes[s[4]] == b.lanes[t[4]])


def grid_stride_relaxed(a: Instance, b: Instance, constraints: list[smt.BoolExpr]) -> list[smt.BoolExpr] | None:
    """``constraints`` (``a`` in block b1, ``b`` in a block b2 != b1) made weaker for grid-stride
    loops. Where each instance runs in a loop ``for v in range(bid_d, n, num_blocks_d)`` (a
    persistent kernel's loop over its tiles), v mod num_blocks_d is the block id along d, so two
    blocks that differ along d have different v: "the blocks differ along d" becomes "the vs
    differ", and the constraints tying each v to its block are dropped. Every model of
    ``constraints`` is a model of these, not the other way round: only a proof (no model) carries
    over. Without the block ids' modular arithmetic the solver is left with the tile map's
    injectivity (a swizzled GEMM's across-blocks question: 0.46M units -> 0.04M at fixed shapes).
    None when no axis has such a loop in both instances."""
    axes: dict[int, tuple[smt.IntExpr, smt.IntExpr]] = {}
    links: list[smt.BoolExpr] = []
    for d in range(3):
        found = [_grid_stride(inst, d) for inst in (a, b)]
        if found[0] is None or found[1] is None:
            continue
        axes[d] = (found[0][0], found[1][0])
        links += found[0][1] + found[1][1]
    if not axes:
        return None
    dropped = [(link, smt.BoolVal(True)) for link in links]
    # only worth a query when the addresses no longer read those block ids (an address that reads
    # the block id itself, or a loop-carried value of the block: the weaker question is no easier)
    touched = [a.linear, b.linear, *(a.coords or ()), *(b.coords or ())]
    ids = {smt.term_id(v) for d in axes for v in (a.block[d], b.block[d])}
    if any(smt.term_id(t) in ids for t, arity in z3walk.uninterpreted(touched) if arity == 0):
        return None
    differ = smt.term_id(smt.Or(*[p != q for p, q in zip(a.block, b.block)]))
    weaker = smt.Or(*[axes[d][0] != axes[d][1] if d in axes else p != q
                      for d, (p, q) in enumerate(zip(a.block, b.block))])
    out = [weaker if smt.term_id(c) == differ else smt.substitute(c, *dropped) for c in constraints]
    same = [smt.term_id(x) == smt.term_id(y) for x, y in zip(out, constraints)]
    return None if all(same) or sum(not s for s in same) < 2 else out


def _grid_stride(inst: Instance, d: int) -> tuple[smt.IntExpr, list[smt.BoolExpr]] | None:
    """The instance's variable of its outermost grid-stride loop along axis ``d`` (starting at the
    block id, stepping by the grid's extent), and the two facts of its domain that tie it to the
    block (as ``symbolic.ops.control.for_`` states them, renamed as ``instantiate`` renames)."""
    for loop, var in zip(inst.access.loops, inst.loop_vars):
        if loop.bounds is None or not loop.exact:
            continue
        lb, _, step = loop.bounds
        if smt.term_id(lb) == smt.term_id(BLOCK_IDS[d]) and smt.term_id(step) == smt.term_id(GRID[d]):
            pairs = [(loop.var, var), (BLOCK_IDS[d], inst.block[d])]
            return var, [smt.substitute(loop.var >= lb, *pairs), smt.substitute((loop.var - lb) % step == 0, *pairs)]
    return None
