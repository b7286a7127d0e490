"""Memory ops: each records an ``Access`` footprint; loaded values are unknowns."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tilecheck.ir import Op
from tilecheck.ir import types as T
from tilecheck.ir.opdefs import Effect
from tilecheck.verifier.model.registry import symbolic
from tilecheck.verifier.model.values import (
    LANES,
    BoolTile,
    IntTile,
    Opaque,
    Pointer,
    Pointers,
    SymValue,
    TileView,
    in_range,
)
from tilecheck.verifier.solver import smt


def _view_coords(view: TileView, index: tuple[SymValue, ...]) -> tuple[smt.IntExpr, ...] | None:
    """Element coordinates (tensor-dimension order) of lane (LANES[k]) of the tile at ``index``.

    ``index`` and lanes are in tile-dimension order; tile dimension k runs along tensor dimension
    ``dim_map[k]``: coordinate = index[k] * step[k] + lane[k].
    """
    rank = len(view.tile)
    if len(index) != rank or not all(isinstance(i, IntTile) for i in index):
        return None
    coords: list[smt.IntExpr | None] = [None] * rank
    for k in range(rank):
        coords[view.dim_map[k]] = index[k].term * view.steps[k] + LANES[k]  # type: ignore[union-attr]
    return tuple(coords)  # type: ignore[arg-type]


def _bounds(coords: Sequence[smt.IntExpr], dims: Sequence[smt.IntExpr]) -> smt.BoolExpr:
    return smt.And(*[smt.And(c >= 0, c < d) for c, d in zip(coords, dims)])


def _linear(coords: tuple[smt.IntExpr, ...], strides: tuple[smt.IntExpr, ...]) -> smt.IntExpr:
    return sum((c * s for c, s in zip(coords, strides)), smt.IntVal(0))


def _loaded(state, op: Op, array: int, coords: tuple[smt.IntExpr, ...] | None, valid: smt.BoolExpr,
            padding: SymValue | None) -> SymValue:
    """The loaded tile: where ``valid``, the array's contents at ``coords`` if no op writes the
    array (else unknown); elsewhere the padding value (unknown unless given)."""
    t = op.results[0].type
    if (array in state.read_only and coords is not None and isinstance(t, T.TileType)
            and isinstance(t.element, T.ScalarType) and t.element.is_integer and t.element != T.I1):
        pad = padding if isinstance(padding, IntTile) else state.havoc(t, "pad")
        if not isinstance(pad, IntTile):
            return state.havoc(t, "load")
        contents = in_range(state.memory_of(array, len(coords))(*coords), t.element)
        return IntTile(smt.If(valid, contents, pad.term), t.shape)
    return state.havoc(t, "load")


def _view_access(state, op: Op, effect: Effect, view: SymValue, index: tuple[SymValue, ...],
                 element: T.Type | None) -> tuple[smt.IntExpr, ...] | None:
    if not isinstance(view, TileView):
        state.unsupported_op(op, f"{op.name} through a view of unknown origin")
        return None
    coords = _view_coords(view, index)
    if coords is None:
        state.unsupported_op(op, f"{op.name}: index does not match the view's rank")
        return None
    tensor = view.tensor
    element_coords = tuple(c + o for c, o in zip(coords, tensor.origin)) if tensor.origin else coords
    # A view op pads (loads) or drops (stores) elements outside the tensor, except along a dimension
    # its ``inbounds`` flag marks (``check_bounds=False``): there it promises the tile stays inside,
    # and an element outside is undefined behaviour: an access the bounds obligation checks.
    promised = _promised_dims(op, view, len(coords))
    dropped = _bounds([c for d, c in enumerate(coords) if d not in promised],
                      [n for d, n in enumerate(tensor.dims) if d not in promised])
    kept = _bounds([c for d, c in enumerate(coords) if d in promised],
                   [n for d, n in enumerate(tensor.dims) if d in promised])
    checks = not promised
    info = state.arrays.get(tensor.array)
    if tensor.origin and info is not None and len(info.shape) == len(element_coords):
        # a slice's bounds are its own: an element inside it but outside the array it was cut from
        # is not dropped, it is undefined behaviour (a slice past the array's end)
        kept = smt.And(kept, _bounds(element_coords, info.shape))
        checks = False
    state.record(op, effect, tensor.array, element_coords, _linear(element_coords, tensor.strides), dropped,
                 kept, checks, len(view.tile), element, _tiles(view, index))
    return coords


def _tiles(view: TileView, index: tuple[SymValue, ...]) -> tuple[Any, ...]:
    """Per tensor coordinate, how the view makes it: (tile index, step, extent, origin, lane)."""
    out: list[Any] = [None] * len(view.tile)
    origin = view.tensor.origin
    for k in range(len(view.tile)):
        d = view.dim_map[k]
        out[d] = (index[k].term, view.steps[k], view.tile[k], origin[d] if origin else None, k)  # type: ignore[union-attr]
    return tuple(out)


def _promised_dims(op: Op, view: TileView, rank: int) -> set[int]:
    """Tensor dimensions along which the op's ``inbounds`` flags promise its tile stays inside (the
    flags follow the tile's dimensions; ``dim_map`` takes them to the tensor's)."""
    flags = op.attrs.get("inbounds") or ()
    dim_map = getattr(view, "dim_map", None) or tuple(range(rank))
    return {dim_map[k] for k, flag in enumerate(flags) if flag and k < len(dim_map)}


def _element(t: T.Type) -> T.Type | None:
    if isinstance(t, T.TileType):
        return t.element.pointee if isinstance(t.element, T.PointerType) else t.element
    return None


@symbolic("load_view_tko")
def load_view(state, op: Op, view: SymValue, *rest: SymValue):
    index = rest[:len(op.operand_group("index"))]
    coords = _view_access(state, op, Effect.READ, view, index, _element(op.results[0].type))
    if not isinstance(view, TileView) or coords is None:
        return (state.havoc(op.results[0].type, "load"), Opaque())
    padding = IntTile(smt.IntVal(0)) if op.operand("view").type.padding in ("zero", "neg_zero") else None
    origin = view.tensor.origin
    element_coords = tuple(c + o for c, o in zip(coords, origin)) if origin else coords
    return (_loaded(state, op, view.tensor.array, element_coords, _bounds(coords, view.tensor.dims), padding),
            Opaque())


@symbolic("store_view_tko")
def store_view(state, op: Op, tile: SymValue, view: SymValue, *rest: SymValue):
    index = rest[:len(op.operand_group("index"))]
    _view_access(state, op, Effect.WRITE, view, index, _element(op.operand("tile").type))
    return (Opaque(),)


@symbolic("atomic_red_view_tko")
def atomic_red_view(state, op: Op, view: SymValue, *rest: SymValue):
    index = rest[:len(op.operand_group("index"))]
    _view_access(state, op, Effect.ATOMIC, view, index, _element(op.operand("value").type))
    return (Opaque(),)


def _pointer_access(state, op: Op, effect: Effect, ptr: SymValue, mask: SymValue | None,
                    choice: smt.BoolExpr | None = None) -> int:
    if isinstance(ptr, Pointers):  # one access per array, each where its lanes point there
        for cond, part in ptr.choices:
            _pointer_access(state, op, effect, part, mask, cond)
        return -1
    if not isinstance(ptr, Pointer):
        state.unsupported_op(op, f"{op.name} through pointers of unknown origin")
        return -1
    info = state.arrays.get(ptr.array)
    active = smt.BoolVal(True)
    if mask is not None:
        active = mask.term if isinstance(mask, BoolTile) else smt.fresh_bool("mask")
    if choice is not None:
        active = smt.And(active, choice)
    rank = len(op.operand(_POINTER_OPERAND[op.name]).type.shape)
    if ptr.coords is not None and info is not None and len(ptr.coords) == info.rank:
        inside = _bounds(ptr.coords, info.shape)
        linear = _linear(ptr.coords, info.strides)
    else:
        inside = None
        linear = ptr.linear
    element = info.element if info is not None else None
    state.record(op, effect, ptr.array, ptr.coords if inside is not None else None, linear, active,
                 inside, False, rank, element)
    return ptr.array


_POINTER_OPERAND = {"load_ptr_tko": "source", "store_ptr_tko": "destination", "atomic_rmw_tko": "pointers",
                    "atomic_cas_tko": "pointers"}


@symbolic("load_ptr_tko")
def load_ptr(state, op: Op, ptr: SymValue, *rest: SymValue):
    has_mask = op.operand("mask") is not None
    mask = rest[0] if has_mask else None
    padding = rest[1 if has_mask else 0] if op.operand("paddingValue") is not None else None
    array = _pointer_access(state, op, Effect.READ, ptr, mask)
    info = state.arrays.get(array)
    if not isinstance(ptr, Pointer) or ptr.coords is None or info is None or len(ptr.coords) != info.rank:
        return (state.havoc(op.results[0].type, "load"), Opaque())
    valid = _bounds(ptr.coords, info.shape)
    if isinstance(mask, BoolTile):
        valid = smt.And(mask.term, valid)
    elif mask is not None:
        return (state.havoc(op.results[0].type, "load"), Opaque())
    return (_loaded(state, op, array, ptr.coords, valid, padding), Opaque())


@symbolic("store_ptr_tko")
def store_ptr(state, op: Op, ptr: SymValue, value: SymValue, *rest: SymValue):
    mask = rest[0] if op.operand("mask") is not None else None
    _pointer_access(state, op, Effect.WRITE, ptr, mask)
    return (Opaque(),)


@symbolic("atomic_rmw_tko")
def atomic_rmw(state, op: Op, ptr: SymValue, arg: SymValue, *rest: SymValue):
    mask = rest[0] if op.operand("mask") is not None else None
    _pointer_access(state, op, Effect.ATOMIC, ptr, mask)
    return (state.havoc(op.results[0].type, "old"), Opaque())


@symbolic("atomic_cas_tko")
def atomic_cas(state, op: Op, ptr: SymValue, cmp: SymValue, val: SymValue, *rest: SymValue):
    mask = rest[0] if op.operand("mask") is not None else None
    _pointer_access(state, op, Effect.ATOMIC, ptr, mask)
    return (state.havoc(op.results[0].type, "old"), Opaque())
