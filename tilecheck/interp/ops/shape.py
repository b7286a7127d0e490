"""Tile construction and shape ops, grid queries, tokens, mma."""
from __future__ import annotations

import numpy as np

from tilecheck.ir import types as T
from tilecheck.ir.attrs import DenseElements
from tilecheck.interp.wave import InterpreterError
from tilecheck.interp.ops.arith import out_type
from tilecheck.interp.registry import interpret
from tilecheck.interp.values import Pointer, Pointers


def _shape(v) -> tuple[int, ...]:
    return v.type.shape if isinstance(v.type, T.TileType) else ()


def _map(x, fn):
    """Apply a layout change to a value or to a pointer tile's offsets."""
    if isinstance(x, Pointer):
        return Pointer(x.array, fn(x.offsets))
    if isinstance(x, Pointers):
        return Pointers(fn(x.arrays), fn(x.offsets))
    return fn(x)


@interpret("broadcast")
def broadcast(interp, ctx, op, x):
    shape = (ctx.width, *_shape(op.results[0]))
    return (_map(x, lambda a: np.broadcast_to(a, shape)),)


@interpret("reshape")
def reshape(interp, ctx, op, x):
    shape = (ctx.width, *_shape(op.results[0]))
    return (_map(x, lambda a: np.reshape(a, shape)),)


@interpret("permute")
def permute(interp, ctx, op, x):
    axes = (0, *(p + 1 for p in op.attrs["permutation"]))
    return (_map(x, lambda a: np.transpose(a, axes)),)


@interpret("cat")
def cat(interp, ctx, op, lhs, rhs):
    return (np.concatenate([lhs, rhs], axis=op.attrs["dim"] + 1),)


@interpret("extract")
def extract(interp, ctx, op, source, *indices):
    out = _shape(op.results[0])
    if not all(np.all(i == i.flat[0]) for i in indices):
        raise InterpreterError(f"extract with block-dependent indices at {op.loc.outermost()}", op.loc)
    slices = tuple(slice(int(i.flat[0]) * n, int(i.flat[0]) * n + n) for i, n in zip(indices, out))
    return (np.ascontiguousarray(source[(slice(None), *slices)]),)


@interpret("insert")
def insert(interp, ctx, op, source, dest, *indices):
    shape = _shape(op.operands[0])
    result = np.array(dest, copy=True)
    slices = tuple(slice(int(i.flat[0]) * n, int(i.flat[0]) * n + n) for i, n in zip(indices, shape))
    result[(slice(None), *slices)] = source
    return (result,)


@interpret("iota")
def iota(interp, ctx, op):
    (n,) = _shape(op.results[0])
    return (np.broadcast_to(np.arange(n, dtype=out_type(op)), (ctx.width, n)),)


@interpret("constant")
def constant(interp, ctx, op):
    # a read-only broadcast, the same in every wave of one width: made once per run
    key = (op, ctx.width)
    made = interp.constants.get(key)
    if made is None:
        made = interp.constants[key] = _constant(ctx, op)
    return made


def _constant(ctx, op):
    value = op.attrs["value"]
    if not isinstance(value, DenseElements):
        raise InterpreterError(f"constant without a value at {op.loc.outermost()}", op.loc)
    dtype = out_type(op)
    shape = _shape(op.results[0])
    data = np.asarray(value.python_values(), dtype=np.float64 if value.is_float else np.int64)
    if value.is_float and None in value.python_values():
        raise InterpreterError(f"constants of {value.element} are not supported", op.loc)
    tile = np.broadcast_to(data[0], shape) if value.is_splat else data.reshape(shape)
    return (np.broadcast_to(tile.astype(dtype), (ctx.width, *shape)),)


@interpret("get_tile_block_id")
def block_id(interp, ctx, op):
    return tuple(ctx.blocks[:, d].astype(np.int32) for d in range(3))


@interpret("get_num_tile_blocks")
def num_blocks(interp, ctx, op):
    return tuple(np.full(ctx.width, g, np.int32) for g in interp.grid)


@interpret("make_token", "join_tokens", "memory_fence_alias_tko", "gdc_launch_dependents_tko", "gdc_wait_tko")
def token(interp, ctx, op, *operands):
    return (None,)


@interpret("assume")
def assume(interp, ctx, op, x):
    return (x,)


@interpret("assert")
def assert_(interp, ctx, op, condition):
    ok = np.asarray(condition).reshape(ctx.width, -1).all(axis=1)
    failed = ctx.active & ~ok
    if failed.any():
        block = tuple(int(b) for b in ctx.blocks[np.argmax(failed)])
        raise InterpreterError(f"assertion failed in block {block} at {op.loc.outermost()}: "
                               f"{op.attrs.get('message', '')}", op.loc)
    return ()


@interpret("print_tko")
def print_tko(interp, ctx, op, *operands):
    n = len(op.operand_group("args"))
    for w in np.nonzero(ctx.active)[0]:
        values = tuple(np.asarray(a)[w].tolist() for a in operands[:n])
        text = op.attrs.get("str", "")
        try:
            print(text % values if values else text, end="")
        except (TypeError, ValueError):
            print(text, *values)
    return tuple(None for _ in op.results)


@interpret("mmaf", "mmai")
def mma(interp, ctx, op, lhs, rhs, acc):
    dtype = acc.dtype
    # accumulate in the accumulator's type (f32 for f16/bf16/tf32 inputs, i32 for i8)
    return ((np.matmul(lhs.astype(dtype), rhs.astype(dtype)) + acc).astype(dtype),)

