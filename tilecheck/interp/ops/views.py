"""Tensor, partition and strided views; index-space shapes; pointer offsets."""
from __future__ import annotations

import numpy as np

from tilecheck.ir import types as T
from tilecheck.interp.wave import InterpreterError
from tilecheck.interp.registry import interpret
from tilecheck.interp.values import Pointer, Pointers, TensorView, TileView, broadcast, pointer_parts


def _uniform(ctx, op, x) -> int:
    values = np.asarray(x)[ctx.active] if np.ndim(x) else np.asarray([x])
    if values.size and not np.all(values == values.flat[0]):
        raise InterpreterError(f"{op.name} with block-dependent sizes at {op.loc.outermost()}", op.loc)
    return int(values.flat[0]) if values.size else 0


@interpret("make_tensor_view")
def make_tensor_view(interp, ctx, op, base, *dynamic):
    t = op.result.type
    if not isinstance(base, Pointer):
        raise InterpreterError(f"make_tensor_view of a non-pointer at {op.loc.outermost()}", op.loc)
    values = iter(dynamic)
    shape = tuple(_uniform(ctx, op, next(values)) if s is None else s for s in t.shape)
    strides = tuple(_uniform(ctx, op, next(values)) if s is None else s for s in t.strides)
    return (TensorView(base.array, shape, strides, _uniform(ctx, op, base.offsets)),)


@interpret("make_partition_view", "make_strided_view")
def make_tile_view(interp, ctx, op, tensor):
    t = op.result.type
    if isinstance(t, T.PartitionViewType):
        return (TileView(tensor, t.tile_shape, t.tile_shape, t.dim_map, t.padding, False),)
    if isinstance(t, T.StridedViewType):
        return (TileView(tensor, t.tile_shape, t.traversal_strides, t.dim_map, t.padding, True),)
    raise InterpreterError(f"unsupported view type {t} at {op.loc.outermost()}", op.loc)


@interpret("get_index_space_shape")
def index_space_shape(interp, ctx, op, view):
    # tiles whose origin lies inside the tensor: cdiv(extent, step) along each tile dimension
    out = []
    for k in range(len(op.results)):
        extent = view.tensor.shape[view.dim_map[k]]
        out.append(np.full(ctx.width, -(-extent // view.steps[k]), np.int32))
    return tuple(out)


@interpret("get_tensor_shape")
def tensor_shape(interp, ctx, op, view):
    return tuple(np.full(ctx.width, n, np.int32) for n in view.shape)


@interpret("offset")
def offset(interp, ctx, op, ptr, off):
    if not isinstance(ptr, (Pointer, Pointers)):
        raise InterpreterError(f"offset of a non-pointer at {op.loc.outermost()}", op.loc)
    shape = (ctx.width, *op.result.type.shape)
    offsets = broadcast(ptr.offsets, shape) + broadcast(off, shape).astype(np.int64)
    if isinstance(ptr, Pointers):
        return (Pointers(np.broadcast_to(ptr.arrays, shape), offsets),)
    return (Pointer(ptr.array, offsets),)


@interpret("ptr_to_int")
def ptr_to_int(interp, ctx, op, ptr):
    """A pointer's address: its array's (the host copy the interpreter runs on) plus its offset in
    bytes. Never 0 for an argument's pointer, as on the GPU (Triton's ``if ptr:``); alignment tests
    see the host copy's alignment."""
    if not isinstance(ptr, (Pointer, Pointers)):
        raise InterpreterError(f"ptr_to_int at {op.loc.outermost()}: not a pointer the interpreter follows", op.loc)
    out = np.zeros(ptr.offsets.shape, np.int64)
    for part, lanes in pointer_parts(ptr, None):
        mem = interp.memory(part.array, op).flat
        address = mem.__array_interface__["data"][0] + ptr.offsets * mem.itemsize
        out = address if lanes is None else np.where(lanes, address, out)
    return (out.astype(np.int64),)


@interpret("int_to_ptr")
def int_to_ptr(interp, ctx, op, words):
    # the words cuTile reads from a list argument's table (``memory.LIST_HANDLE``); waves of lists are
    # single blocks (``needs_single_block_waves``), so one array per wave
    from tilecheck.interp.memory import LIST_HANDLE

    words = np.asarray(words, np.int64)
    live = (words // LIST_HANDLE)[ctx.active]
    if live.size == 0:
        return (Pointer(-1, np.zeros_like(words)),)
    if not np.all(live == live.flat[0]) or -int(live.flat[0]) not in interp.arrays:
        raise InterpreterError(f"int_to_ptr at {op.loc.outermost()}: the CPU interpreter follows only the data "
                               "pointers of a list argument's arrays (one array per block), and this address "
                               "is not one", op.loc)
    mem = interp.arrays[-int(live.flat[0])]
    return (Pointer(-int(live.flat[0]), (words % LIST_HANDLE) // mem.flat.itemsize),)


@interpret("ptr_to_ptr")
def ptr_to_ptr(interp, ctx, op, ptr):
    src, dst = op.operands[0].type.element.pointee, op.result.type.element.pointee
    if getattr(src, "bitwidth", -1) != getattr(dst, "bitwidth", -2):
        raise InterpreterError(f"pointer cast between element widths at {op.loc.outermost()} is not supported",
                               op.loc)
    return (ptr,)
