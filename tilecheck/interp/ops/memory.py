"""Loads, stores and atomics on the caller's arrays (in place)."""
from __future__ import annotations

import numpy as np

from tilecheck.ir import Op
from tilecheck.interp.wave import InterpreterError
from tilecheck.interp.ops.arith import out_type, unsigned
from tilecheck.interp.registry import interpret
from tilecheck.interp.values import Pointer, TileView, broadcast, pointer_parts

_PADDING = {None: 0.0, "zero": 0.0, "neg_zero": -0.0, "nan": np.nan, "pos_inf": np.inf, "neg_inf": -np.inf}


def _lanes(active: np.ndarray, ndim: int) -> np.ndarray:
    return active.reshape(active.shape + (1,) * ndim)


def view_elements(view: TileView, index: tuple[np.ndarray, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Element offsets (W, *tile) and in-bounds mask of the tile at ``index`` (tile-dimension order).

    Tile dimension k runs along tensor dimension dim_map[k]: coordinate = index[k]*step[k] + lane.
    """
    rank = len(view.tile)
    offsets = np.full((len(index[0]),) + (1,) * rank, view.tensor.base, np.int64)
    valid = np.ones_like(offsets, dtype=bool)
    for k in range(rank):
        shape = [1] * (rank + 1)
        shape[0] = -1
        block_part = np.asarray(index[k], np.int64).reshape(shape) * view.steps[k]
        lane_shape = [1] * (rank + 1)
        lane_shape[k + 1] = view.tile[k]
        coord = block_part + np.arange(view.tile[k], dtype=np.int64).reshape(lane_shape)
        d = view.dim_map[k]
        offsets = offsets + coord * view.tensor.strides[d]
        valid = valid & (coord >= 0) & (coord < view.tensor.shape[d])
    return offsets, valid


def _contiguous_run(view: TileView, index: tuple[np.ndarray, ...], width: int) -> int | None:
    """The first element when the wave's tiles form one contiguous, fully in-bounds run of memory
    (consecutive 1-D tiles of a unit-stride array): then a reshaped slice replaces a gather."""
    if len(view.tile) != 1 or view.tensor.strides[0] != 1 or view.steps[0] != view.tile[0]:
        return None
    idx = np.asarray(index[0], np.int64)
    start = int(idx[0])
    if width > 1 and not np.array_equal(idx, start + np.arange(width)):
        return None
    if start < 0 or (start + width) * view.tile[0] > view.tensor.shape[0]:
        return None
    return view.tensor.base + start * view.tile[0]


def _record_view(interp, ctx, op, view, index, first, effect, elements=None) -> None:
    """Tell the recorder (the race detector) which elements a view op touches, and which lanes leave
    the tensor along a dimension whose ``inbounds`` flag promised they would not (``elements``: the
    op's ``view_elements``, when it computed them already)."""
    if first is not None and ctx.active.all():
        interp.recorder.access(ctx, op, view.tensor.array, None, None, effect, run=(first, view.tile[0]))
        return
    offsets, valid = elements if elements is not None else view_elements(view, index)
    shape = (ctx.width, *view.tile)
    active = broadcast(_lanes(ctx.active, len(view.tile)), shape)
    inside = broadcast(valid, shape)
    flags = op.attrs.get("inbounds")
    if flags and any(flags) and not inside[active].all():
        # compiled with check_bounds=False: the op may assume its tile lies inside the tensor
        bad = active & ~inside & broadcast(_promised_dims(view, index, flags), shape)
        if bad.any():
            interp.recorder.out_of_bounds(ctx, op, view.tensor.array, broadcast(offsets, shape), bad)
    interp.recorder.access(ctx, op, view.tensor.array, broadcast(offsets, shape), active & inside, effect)


def _promised_dims(view: TileView, index: tuple[np.ndarray, ...], flags) -> np.ndarray:
    """Lanes outside the tensor along a dimension whose ``inbounds`` flag promises otherwise."""
    rank = len(view.tile)
    out = np.zeros((len(index[0]),) + (1,) * rank, bool)
    for k in range(rank):
        if k >= len(flags) or not flags[k]:
            continue
        shape = [1] * (rank + 1)
        shape[0] = -1
        lane_shape = [1] * (rank + 1)
        lane_shape[k + 1] = view.tile[k]
        coord = np.asarray(index[k], np.int64).reshape(shape) * view.steps[k] + \
            np.arange(view.tile[k], dtype=np.int64).reshape(lane_shape)
        extent = view.tensor.shape[view.dim_map[k]]
        out = out | (coord < 0) | (coord >= extent)
    return out


@interpret("load_view_tko")
def load_view(interp, ctx, op, view, *rest):
    index = rest[:len(op.operand_group("index"))]
    mem = interp.memory(view.tensor.array, op)
    dtype = out_type(op)
    first = _contiguous_run(view, index, ctx.width)
    elements = view_elements(view, index) if first is None else None
    if interp.recorder is not None:
        _record_view(interp, ctx, op, view, index, first, "read", elements)
    if first is not None:
        mem.touch(first, first + ctx.width * view.tile[0])
        tile = mem.flat[first:first + ctx.width * view.tile[0]].reshape(ctx.width, view.tile[0])
        # a view of memory no op writes needs no copy; anything else is copied (later stores must
        # not change a tile already loaded)
        return (tile.astype(dtype, copy=view.tensor.array not in interp.read_only), None)
    offsets, valid = elements
    shape = (ctx.width, *view.tile)
    take = broadcast(valid & _lanes(ctx.active, len(view.tile)), shape)
    result = np.full(shape, _PADDING.get(view.padding, 0.0) if dtype.kind == "f" else 0, dtype)
    taken = broadcast(offsets, shape)[take]
    mem.touch(taken)
    result[take] = mem.flat[taken]
    return (result, None)


@interpret("store_view_tko")
def store_view(interp, ctx, op, tile, view, *rest):
    index = rest[:len(op.operand_group("index"))]
    mem = interp.memory(view.tensor.array, op)
    first = _contiguous_run(view, index, ctx.width)
    whole = first is not None and ctx.active.all()
    elements = None if whole else view_elements(view, index)
    if interp.recorder is not None:
        _record_view(interp, ctx, op, view, index, first, "write", elements)
    interp.writes += 1
    if whole:
        mem.touch(first, first + ctx.width * view.tile[0])
        mem.flat[first:first + ctx.width * view.tile[0]] = np.reshape(tile, -1)
        return (None,)
    offsets, valid = elements
    shape = (ctx.width, *view.tile)
    put = broadcast(valid & _lanes(ctx.active, len(view.tile)), shape)
    # duplicate offsets (a race between the wave's blocks): numpy keeps the last, in wave order
    lanes = broadcast(offsets, shape)[put]
    mem.touch(lanes)
    mem.flat[lanes] = broadcast(tile, shape)[put]
    return (None,)


def _pointer_lanes(interp, ctx, op: Op, ptr: Pointer, mask) -> tuple[np.ndarray, np.ndarray]:
    """Active lanes of a pointer op; an active lane outside its array is an error (UB on a GPU)."""
    shape = ptr.offsets.shape
    active = broadcast(_lanes(ctx.active, len(shape) - 1), shape)
    if mask is not None:
        active = active & broadcast(mask, shape)
    mem = interp.memory(ptr.array, op)
    offsets = ptr.offsets
    bad = active & ((offsets < 0) | (offsets >= len(mem.flat)))
    if bad.any() and interp.recorder is not None:  # the detector reports it and goes on without them
        interp.recorder.out_of_bounds(ctx, op, ptr.array, offsets, bad)
        active = active & ~bad
    elif bad.any():
        where = np.argwhere(bad)[0]
        block = tuple(int(b) for b in ctx.blocks[where[0]])
        raise InterpreterError(f"out-of-bounds {op.name} at {op.loc.outermost()}: block {block} touches element "
                               f"offset {int(offsets[tuple(where)])} of '{mem.name}' ({len(mem.flat)} elements)",
                               op.loc)
    return active, offsets


@interpret("load_ptr_tko")
def load_ptr(interp, ctx, op, ptr, *rest):
    mask = rest[0] if op.operand("mask") is not None else None
    pad = rest[1 if mask is not None else 0] if op.operand("paddingValue") is not None else None
    dtype = out_type(op)
    shape = ptr.offsets.shape
    result = np.zeros(shape, dtype) if pad is None else np.array(broadcast(pad, shape), dtype=dtype)
    for part, lanes in pointer_parts(ptr, mask):  # (one part but through a tile into several arrays)
        active, offsets = _pointer_lanes(interp, ctx, op, part, lanes)
        mem = interp.memory(part.array, op)
        mem.touch(offsets[active])
        result[active] = mem.flat[offsets[active]]
        if interp.recorder is not None:
            interp.recorder.access(ctx, op, part.array, offsets, active, "read")
    return (result, None)


@interpret("store_ptr_tko")
def store_ptr(interp, ctx, op, ptr, value, *rest):
    mask = rest[0] if op.operand("mask") is not None else None
    for part, lanes in pointer_parts(ptr, mask):
        _store(interp, ctx, op, part, value, lanes)
    return (None,)


def _store(interp, ctx, op, ptr, value, mask):
    active, offsets = _pointer_lanes(interp, ctx, op, ptr, mask)
    if interp.recorder is not None:
        interp.recorder.access(ctx, op, ptr.array, offsets, active, "write")
    lanes, values = offsets[active], broadcast(value, offsets.shape)[active]
    if interp.schedule.adversarial and len(lanes) > 1:
        # lanes of one tile writing one element: which lands is unspecified, so vary it per schedule
        order = interp.schedule.rng.permutation(len(lanes))
        lanes, values = lanes[order], values[order]
    interp.writes += 1
    mem = interp.memory(ptr.array, op)
    mem.touch(lanes)
    mem.flat[lanes] = values


_RMW = {"add": np.add, "addf": np.add, "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor,
        "max": np.maximum, "min": np.minimum}


def _apply(mode: str, old: np.ndarray, arg: np.ndarray) -> np.ndarray:
    if mode == "xchg":
        return arg
    if mode in ("umax", "umin"):
        fn = np.maximum if mode == "umax" else np.minimum
        return fn(unsigned(old), unsigned(arg)).view(old.dtype)
    with np.errstate(all="ignore"):
        return _RMW[mode](old, arg).astype(old.dtype)


@interpret("atomic_rmw_tko")
def atomic_rmw(interp, ctx, op, ptr, arg, *rest):
    mask = rest[0] if op.operand("mask") is not None else None
    parts = pointer_parts(ptr, mask)
    results = [(lanes, _atomic_rmw(interp, ctx, op, part, arg, lanes)) for part, lanes in parts]
    return (_joined(results), None)


def _joined(results: list) -> np.ndarray:
    """The old values of a read-modify-write through several arrays' lanes, lane by lane."""
    out = results[0][1]
    for lanes, old in results[1:]:
        out = np.where(lanes, old, out)
    return out


def _atomic_rmw(interp, ctx, op, ptr, arg, mask):
    active, offsets = _pointer_lanes(interp, ctx, op, ptr, mask)
    mem = interp.memory(ptr.array, op)
    mem.touch(offsets[active])
    flat = mem.flat
    mode = op.attrs["mode"]
    old = np.zeros(offsets.shape, flat.dtype)
    lanes = offsets[active]
    args = broadcast(arg, offsets.shape)[active].astype(flat.dtype)
    if len(np.unique(lanes)) == len(lanes):
        before = flat[lanes].copy()
        flat[lanes] = _apply(mode, before, args)
    else:  # several lanes on one element: one at a time, in wave order
        before = np.empty(len(lanes), flat.dtype)
        for i, (o, a) in enumerate(zip(lanes, args)):
            before[i] = flat[o]
            flat[o] = _apply(mode, flat[o:o + 1], a.reshape(1))[0]
    interp.writes += 1  # even one that stores what was there: a later read may see another block's
    old[active] = before
    if interp.recorder is not None:
        interp.recorder.access(ctx, op, ptr.array, offsets, active, "atomic", old=before, arg=args)
    return old


@interpret("atomic_cas_tko")
def atomic_cas(interp, ctx, op, ptr, cmp, val, *rest):
    mask = rest[0] if op.operand("mask") is not None else None
    results = [(lanes, _atomic_cas(interp, ctx, op, part, cmp, val, lanes)) for part, lanes in pointer_parts(ptr, mask)]
    return (_joined(results), None)


def _atomic_cas(interp, ctx, op, ptr, cmp, val, mask):
    active, offsets = _pointer_lanes(interp, ctx, op, ptr, mask)
    mem = interp.memory(ptr.array, op)
    mem.touch(offsets[active])
    flat = mem.flat
    old = np.zeros(offsets.shape, flat.dtype)
    cmps = broadcast(cmp, offsets.shape)[active]
    vals = broadcast(val, offsets.shape)[active]
    seen = np.empty(len(cmps), flat.dtype)
    for i, o in enumerate(offsets[active]):
        seen[i] = flat[o]
        if flat[o] == cmps[i]:
            flat[o] = vals[i]
            interp.writes += 1  # a failed compare changes nothing (what a spin on a flag does)
    old[active] = seen
    if interp.recorder is not None:
        interp.recorder.access(ctx, op, ptr.array, offsets, active, "atomic", old=seen, arg=vals,
                               expected=cmps)
    return old


@interpret("atomic_red_view_tko")
def atomic_red_view(interp, ctx, op, view, *rest):
    n = len(op.operand_group("index"))
    index, value = rest[:n], rest[n]
    mem = interp.memory(view.tensor.array, op)
    offsets, valid = view_elements(view, index)
    shape = (ctx.width, *view.tile)
    put = broadcast(valid & _lanes(ctx.active, len(view.tile)), shape)
    lanes = broadcast(offsets, shape)[put]
    values = broadcast(value, shape)[put].astype(mem.flat.dtype)
    if interp.recorder is not None:
        interp.recorder.access(ctx, op, view.tensor.array, broadcast(offsets, shape), put, "atomic")
    interp.writes += 1
    mem.touch(lanes)
    for o, a in zip(lanes, values):
        mem.flat[o] = _apply(op.attrs["mode"], mem.flat[o:o + 1], a.reshape(1))[0]
    return (None,)

