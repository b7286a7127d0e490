"""Symbolic values of Tile IR SSA values during symbolic execution.

A tile is a function of its lanes: its term mentions the lane variables ``LANES[d]`` for each
dimension ``d`` (a 0-d tile mentions none). Terms also mention the block ids, loop variables and
array shape/stride symbols of the template context; ``footprints`` instantiates them per block.
"""
from __future__ import annotations

from dataclasses import dataclass

from tilecheck.ir import types as T
from tilecheck.verifier.model.bounds import UNKNOWN, Bound
from tilecheck.verifier.solver import smt

MAX_RANK = 8
LANES = smt.Vars(f"lane{d}" for d in range(MAX_RANK))
GRID = smt.Vars(("grid0", "grid1", "grid2"))


class SymValue:
    """Base of symbolic values."""

    shape: tuple[int, ...] = ()


@dataclass(frozen=True)
class IntTile(SymValue):
    """An integer tile. ``form`` tracks ``term == sum(coef * stride(array, dim)) + rest`` so that a
    pointer offset can be read back as array coordinates (how cuTile lowers gather/scatter).
    ``bounds``: what every execution's value lies in (``symbolic.bounds``)."""

    term: smt.IntExpr
    shape: tuple[int, ...] = ()
    form: StrideForm | None = None
    bounds: Bound = UNKNOWN


@dataclass(frozen=True)
class BoolTile(SymValue):
    term: smt.BoolExpr
    shape: tuple[int, ...] = ()


@dataclass(frozen=True)
class Opaque(SymValue):
    """A value whose content does not matter for addresses (floats, tokens, views of nothing)."""

    shape: tuple[int, ...] = ()


@dataclass(frozen=True)
class StrideForm:
    """``sum(coefs[(array, dim)] * stride(array, dim)) + rest``."""

    coefs: tuple[tuple[tuple[int, int], smt.IntExpr], ...]
    rest: smt.IntExpr

    def as_dict(self) -> dict[tuple[int, int], smt.IntExpr]:
        return dict(self.coefs)


@dataclass(frozen=True)
class Pointer(SymValue):
    """A tile of pointers into array ``array`` (an entry-argument index).

    ``coords`` are the element coordinates when the offset decomposed into per-dimension
    multiples of the strides, else None; ``linear`` is the offset in elements.
    """

    array: int
    coords: tuple[smt.IntExpr, ...] | None
    linear: smt.IntExpr
    shape: tuple[int, ...] = ()


@dataclass(frozen=True)
class Pointers(SymValue):
    """A tile of pointers into one of several arrays, lane by lane: each choice a pointer tile into
    one array and the condition (over the lanes) under which a lane points there; the conditions
    exclude one another and cover every lane. What a select or a branch between pointers into
    different arrays makes (Triton's ``tl.where(c, a_ptr + i, b_ptr + j)``, FlagGems' cat choosing
    its input in a branch). A memory op through it is one access per array, each active under its
    condition."""

    choices: tuple[tuple[smt.BoolExpr, Pointer], ...]
    shape: tuple[int, ...] = ()

    def map(self, fn) -> Pointers:
        """Each choice's pointer through ``fn`` (an offset, a relayout); the conditions kept."""
        return Pointers(tuple((c, fn(p)) for c, p in self.choices), self.shape)


def choose(cond: smt.BoolExpr, yes: Pointer | Pointers, no: Pointer | Pointers,
           shape: tuple[int, ...]) -> Pointers:
    """``yes`` where ``cond`` holds, else ``no``, for pointers into different arrays."""
    def choices(p: Pointer | Pointers, guard: smt.BoolExpr) -> list[tuple[smt.BoolExpr, Pointer]]:
        return [(smt.And(guard, c), q) for c, q in p.choices] if isinstance(p, Pointers) else [(guard, p)]
    return Pointers(tuple(choices(yes, cond) + choices(no, smt.Not(cond))), shape)


@dataclass(frozen=True)
class TensorView(SymValue):
    """A view of array ``array``: coordinate v of the view is element ``v + origin`` of the array
    (a slice, ``arr.slice(...)``, is a view at a non-zero origin)."""

    array: int
    dims: tuple[smt.IntExpr, ...]
    strides: tuple[smt.IntExpr, ...]
    origin: tuple[smt.IntExpr, ...] = ()


@dataclass(frozen=True)
class TileView(SymValue):
    """A partition view (``steps == tile``) or a strided view over a tensor view."""

    tensor: TensorView
    tile: tuple[int, ...]
    steps: tuple[int, ...]
    dim_map: tuple[int, ...]
    strided: bool = False


@dataclass
class Context:
    """Where an op executes: the path condition and the enclosing loops' variables."""

    path: smt.BoolExpr
    loops: tuple[LoopVar, ...] = ()


@dataclass(frozen=True)
class LoopVar:
    """The iteration variable of one loop op: its value names the iteration (a for's induction
    value, or a count for a ``loop``)."""

    op: object
    var: smt.IntExpr
    domain: smt.BoolExpr
    exact: bool  # False when the domain over-approximates the iterations (symbolic step)
    # iterations past a ``loop``'s exit do not run: a constraint on the accesses and overflows
    # inside, kept out of the path (the exit itself is defined by the path's conditions)
    limit: smt.BoolExpr | None = None
    # a ``for`` with scalar bounds: (lb, ub, step), its values being lb, lb + step, ... below ub
    # (what a concrete case enumerates)
    bounds: tuple[smt.IntExpr, smt.IntExpr, smt.IntExpr] | None = None


def in_range(term: smt.IntExpr, element: T.ScalarType) -> smt.IntExpr:
    """An unknown integer of ``element``'s width: clamped into its range by construction (so that
    witnesses hold real values) while staying a function of the same arguments."""
    bits = element.bitwidth
    if bits <= 1 or bits >= 64:
        return term
    lo, hi = type_range(element)
    return smt.If(smt.And(term >= lo, term <= hi), term, smt.IntVal(0))


def decided(cond: smt.BoolExpr, yes: SymValue, no: SymValue) -> SymValue | None:
    """The branch a select or ``if`` takes when its condition is a constant (a comparison the
    bounds decided) and both are integer or both boolean tiles; else None."""
    if (smt.is_true(cond) or smt.is_false(cond)) and type(yes) is type(no) and isinstance(yes, (IntTile, BoolTile)):
        return yes if smt.is_true(cond) else no
    return None


def type_range(element: T.ScalarType) -> Bound:
    """What ``in_range`` keeps a value of ``element`` in (unbounded from 64 bits)."""
    bits = element.bitwidth
    if bits <= 1 or bits >= 64:
        return UNKNOWN
    return (-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
