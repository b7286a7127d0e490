"""Lanes whose value a GPU leaves unspecified, and where such a value may go.

An integer division (or remainder) by zero does not trap on a GPU: the lane gets some value. Kernels
rely on that where the lane is masked off (FlagGems' cat on an empty input divides by a zero size in
lanes whose every access is masked). The interpreter computes such a lane with a stand-in divisor
and marks it unspecified; the mark follows the value through pure ops and must die there: a
memory op that would use the lane (as an address, a mask, a compared or stored value) or any other
op that would act on it (a branch, a loop bound, a carried value) stops the run with an
``InterpreterError``, as before. A run that ends is then exactly what a GPU would run, whatever the
unspecified lanes hold.

Marks are kept in ``WaveContext.unspecified``: per value, a bool array of the value's shape
``(W, *tile)`` (lane by lane) or ``(W,)`` (the whole tile of a block), with the op that made it.
Empty in nearly every run; the engine looks only when it is not.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tilecheck.interp.values import Pointer, Pointers
from tilecheck.interp.wave import InterpreterError, WaveContext
from tilecheck.ir import Op
from tilecheck.ir.opdefs import Effect
from tilecheck.ir.summary import LANEWISE

# pointer memory ops: the operand that says which lanes are accessed
_POINTER_OPS = frozenset({"load_ptr_tko", "store_ptr_tko", "atomic_rmw_tko", "atomic_cas_tko"})


def mark(ctx: WaveContext, op: Op, lanes: np.ndarray) -> None:
    """``op``'s result is unspecified where ``lanes`` (active blocks only) is set."""
    if lanes.any():
        ctx.unspecified[op.results[0]] = (lanes, op)


def before(ctx: WaveContext, op: Op) -> None:
    """Stop the run when ``op`` would act on an unspecified lane; forget its results' marks of an
    earlier iteration."""
    for result in op.results:
        ctx.unspecified.pop(result, None)
    marked = [(v, *ctx.unspecified[v]) for v in op.operands if v in ctx.unspecified]
    if not marked:
        return
    opdef = op.opdef
    if op.name in _POINTER_OPS:
        accessed = _accessed(ctx, op)
        for value, lanes, origin in marked:
            if (_lanewise(lanes, accessed.shape) & accessed).any():
                _stop(op, value, origin)
        return
    if opdef is not None and not op.regions and opdef.effect is Effect.NONE and not opdef.terminator:
        return  # a pure op: ``after`` passes the mark on
    for value, lanes, origin in marked:
        if (_per_block(lanes) & ctx.active).any():
            _stop(op, value, origin)


def after(ctx: WaveContext, op: Op) -> None:
    """Pass the marks of a pure op's operands on to its results."""
    marked = [ctx.unspecified[v] for v in op.operands if v in ctx.unspecified]
    if not marked or op.regions:
        return
    origin = marked[0][1]
    for result in op.results:
        shape = _shape(ctx.env.get(result))
        own = ctx.unspecified.get(result)  # the op's own division by zero (``mark``)
        sources = [m for m, _ in marked] + ([own[0]] if own else [])
        if op.name in LANEWISE and shape is not None:
            lanes = np.logical_or.reduce([_lanewise(m, shape) for m in sources])
        else:  # a whole block's tile from any lane of it (a reduction, a reshape, a view)
            lanes = np.logical_or.reduce([_per_block(m) for m in sources])
        ctx.unspecified[result] = (lanes, origin)


def _accessed(ctx: WaveContext, op: Op) -> np.ndarray:
    """The lanes a pointer op touches: active blocks, its mask on (or itself unspecified)."""
    shape = _shape(ctx.env.get(op.operands[0]))
    shape = shape if shape is not None else (ctx.width,)
    accessed = np.broadcast_to(ctx.active.reshape((-1,) + (1,) * (len(shape) - 1)), shape)
    mask_value = op.operand("mask")
    if mask_value is not None:
        mask = np.broadcast_to(np.asarray(ctx.env[mask_value], bool), shape)
        if mask_value in ctx.unspecified:
            mask = mask | _lanewise(ctx.unspecified[mask_value][0], shape)
        accessed = accessed & mask
    return accessed


def _shape(value: Any) -> tuple[int, ...] | None:
    if isinstance(value, (Pointer, Pointers)):
        return value.offsets.shape
    if isinstance(value, np.ndarray):
        return value.shape
    return None


def _per_block(lanes: np.ndarray) -> np.ndarray:
    return lanes.reshape(len(lanes), -1).any(axis=1) if lanes.ndim > 1 else lanes


def _lanewise(lanes: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    if lanes.shape == tuple(shape):
        return lanes
    block = _per_block(lanes)
    return np.broadcast_to(block.reshape((-1,) + (1,) * (len(shape) - 1)), shape)


def _stop(op: Op, value: Any, origin: Op) -> None:
    raise InterpreterError(
        f"{op.name} at {op.loc.outermost()} uses a value a GPU leaves unspecified in a lane it acts on: "
        f"an integer division by zero ({origin.name} at {origin.loc.outermost()})", op.loc)
