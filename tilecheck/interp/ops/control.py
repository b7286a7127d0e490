"""Control flow under per-block masks: ``for``, ``loop``, ``if``; ``reduce`` and ``scan``."""
from __future__ import annotations

import numpy as np

from tilecheck.interp.wave import InterpreterError, LoopFrame, TripLimitError, where
from tilecheck.interp.ops.arith import out_type
from tilecheck.interp.registry import interpret
from tilecheck.interp.values import numpy_dtype


def _equal(a, b) -> bool:
    """Two carried values are the same value (tiles elementwise; NaN equals NaN)."""
    if a is b:
        return True
    try:
        return bool(np.array_equal(a, b, equal_nan=np.asarray(a).dtype.kind in "fc"))
    except (TypeError, ValueError):  # views, pointers, tokens: compared by identity only
        return False


def _merge(mask, new, old):
    return [o if n is None else where(mask, n, o) for n, o in zip(new, old)]


@interpret("for")
def for_(interp, ctx, op, lb, ub, step, *inits):
    body = op.regions[0].block
    entry = ctx.active
    lb, ub, step = (np.asarray(x, np.int64) for x in (lb, ub, step))
    if np.any((step <= 0) & entry):
        raise InterpreterError(f"for loop with a non-positive step at {op.loc.outermost()}", op.loc)
    carried = list(inits)
    iv_type = numpy_dtype(body.args[0].type)
    k = 0
    ctx.iterations.append((op, 0, lb))
    while True:
        iv = lb + k * step
        act = entry & (iv < ub) & ~ctx.done
        if not act.any():
            break
        ctx.iterations[-1] = (op, k, iv)
        interp.count_iteration(op, k)
        frame = LoopFrame(np.zeros_like(act), np.zeros_like(act), [None] * len(carried), [])
        ctx.loops.append(frame)
        ctx.active = act
        ctx.env[body.args[0]] = iv.astype(iv_type)
        for arg, value in zip(body.args[1:], carried):
            ctx.env[arg] = value
        yield from interp.region(ctx, body)
        ctx.loops.pop()
        carried = _merge(act, frame.carried, carried)
        k += 1
    ctx.iterations.pop()
    ctx.active = entry & ~ctx.done
    return tuple(carried)


# A ``loop`` whose trips change none of its carried values, while its wave runs alone (no other
# block can run before it ends: ``Schedule.alone``) and writes no memory, is stuck: each trip reads
# what the one before it read and does what it did, so it never ends (a block spinning on a flag
# that no block left to run will raise). It stops after this many such trips, as at the trip limit,
# instead of spinning 100,000 trips first (tilecheck.replay of a spin: 37 s -> 0.2 s). With other
# waves running, only the trip limit stops it: another block may be computing before it writes.
STUCK_TRIPS = 64


@interpret("loop")
def loop_(interp, ctx, op, *inits):
    body = op.regions[0].block
    entry = ctx.active
    carried = list(inits)
    results: list = [None] * len(op.results)
    broke = np.zeros_like(entry)
    stuck, writes, done = 0, interp.writes, int(ctx.done.sum())
    k = 0
    ctx.iterations.append((op, 0, None))
    while True:
        act = entry & ~broke & ~ctx.done
        if not act.any():
            break
        ctx.iterations[-1] = (op, k, None)
        interp.count_iteration(op, k)
        k += 1
        frame = LoopFrame(np.zeros_like(act), np.zeros_like(act), [None] * len(carried), [None] * len(results))
        ctx.loops.append(frame)
        ctx.active = act
        for arg, value in zip(body.args, carried):
            ctx.env[arg] = value
        yield from interp.region(ctx, body)
        ctx.loops.pop()
        before = carried
        carried = _merge(act & ~frame.broke, frame.carried, carried)
        results = _merge(frame.broke, frame.results, results) if frame.broke.any() else results
        broke = broke | frame.broke
        same = (interp.schedule.alone and interp.writes == writes and not frame.broke.any()
                and int(ctx.done.sum()) == done and all(_equal(a, b) for a, b in zip(before, carried)))
        stuck, writes, done = (stuck + 1 if same else 0), interp.writes, int(ctx.done.sum())
        if stuck >= STUCK_TRIPS:
            raise TripLimitError(f"this 'loop' ran {STUCK_TRIPS} trips in a row that changed nothing, with no "
                                 "other block left to run: it never ends (a spin on a flag no block left to "
                                 "run will raise)", op.loc)
    ctx.iterations.pop()
    ctx.active = entry & ~ctx.done
    return tuple(results)


@interpret("if")
def if_(interp, ctx, op, cond):
    entry = ctx.active
    cond = np.asarray(cond, bool).reshape(ctx.width)
    results: list = [None] * len(op.results)
    ctx.yields.append(results)
    for region, mask in ((op.regions[0], entry & cond), (op.regions[1], entry & ~cond)):
        if mask.any():
            ctx.active = mask
            yield from interp.region(ctx, region.block)
    ctx.yields.pop()
    active = entry & ~ctx.done
    if ctx.loops:
        active = active & ~ctx.loops[-1].exited
    ctx.active = active
    return tuple(results)


_COMBINERS = {"addf": np.add, "addi": np.add, "mulf": np.multiply, "muli": np.multiply, "maxi": np.maximum,
              "mini": np.minimum, "andi": np.bitwise_and, "ori": np.bitwise_or, "xori": np.bitwise_xor}


def _combiner(op):
    """The numpy ufunc of a single-op reduction body ``yield(f(lhs, rhs))``, else None."""
    ops = op.regions[0].block.ops
    args = op.regions[0].block.args
    if len(ops) != 2 or ops[1].name != "yield" or set(ops[0].operands) != set(args[:2]) or len(args) != 2:
        return None
    inner = ops[0]
    if inner.name in ("maxf", "minf"):
        nan = inner.attrs.get("propagate_nan", False)
        if inner.name == "maxf":
            return np.maximum if nan else np.fmax
        return np.minimum if nan else np.fmin
    return _COMBINERS.get(inner.name)


def _fold(interp, ctx, op, operands, axis, reverse, scan):
    """Generic reduction/scan: apply the body element by element along ``axis``, from the
    identities, or without them (a combine that has none) from the first element."""
    body = op.regions[0].block
    n = len(operands)
    identities = [np.asarray(i.value if not i.type.is_float else _bits_to_float(i), numpy_dtype(r.type))
                  for i, r in zip(op.attrs.get("identities", ()), op.results)]
    length = operands[0].shape[axis]
    outs = [np.empty(x.shape, numpy_dtype(r.type)) for x, r in zip(operands, op.results)] if scan else None
    order = list(range(length - 1, -1, -1) if reverse else range(length))
    if len(identities) == n:
        acc = [np.broadcast_to(ident, np.delete(np.array(x.shape), axis)).copy()
               for ident, x in zip(identities, operands)]
    else:
        first, order = order[0], order[1:]
        acc = [np.take(x, first, axis=axis).astype(numpy_dtype(r.type)) for x, r in zip(operands, op.results)]
        if scan:
            for out, a in zip(outs, acc):
                np.moveaxis(out, axis, 0)[first] = a
    for i in order:
        items = [np.take(x, i, axis=axis) for x in operands]
        env = dict(zip(body.args[:n], acc)) | dict(zip(body.args[n:], items))
        acc = _run_pure(interp, ctx, body, env)
        if scan:
            for out, a in zip(outs, acc):
                np.moveaxis(out, axis, 0)[i] = a
    return outs if scan else acc


def _bits_to_float(typed):
    from tilecheck.ir.attrs import float_from_bits

    return float_from_bits(typed.type.name, typed.value)


def _run_pure(interp, ctx, body, env):
    saved = ctx.env
    ctx.env = {**saved, **env}
    try:
        for inner in body.ops:
            if inner.name == "yield":
                return [ctx.env[v] for v in inner.operands]
            steps = interp.execute(ctx, inner)
            for _ in steps:
                raise InterpreterError("memory op inside a reduction body", inner.loc)
    finally:
        ctx.env = saved
    raise InterpreterError("reduction body without yield", op_loc(body))


def op_loc(body):
    return body.ops[-1].loc if body.ops else None


@interpret("reduce")
def reduce_(interp, ctx, op, *operands):
    axis = op.attrs["dim"] + 1
    fn = _combiner(op)
    if fn is not None and len(operands) == 1:
        x = operands[0]
        if fn in (np.add, np.multiply) and x.dtype.kind == "f":
            # numpy sums pairwise only along a contiguous last axis; along any other it adds one
            # element at a time, and the error grows with the length (a 32768-element row of
            # Liger's cross entropy: 7e-6 relative, where a GPU's tree reduction stays near 1e-7)
            x, axis = np.ascontiguousarray(np.moveaxis(x, axis, -1)), -1
        with np.errstate(all="ignore"):
            return (fn.reduce(x, axis=axis).astype(out_type(op)),)
    return tuple(_fold(interp, ctx, op, list(operands), axis, False, False))
    yield  # a generator rule (regions), though reductions never pause


@interpret("scan")
def scan_(interp, ctx, op, *operands):
    axis = op.attrs["dim"] + 1
    reverse = op.attrs.get("reverse", False)
    fn = _combiner(op)
    if fn is not None and len(operands) == 1:
        x = np.flip(operands[0], axis) if reverse else operands[0]
        with np.errstate(all="ignore"):
            out = fn.accumulate(x, axis=axis).astype(out_type(op))
        return (np.flip(out, axis) if reverse else out,)
    return tuple(_fold(interp, ctx, op, list(operands), axis, reverse, True))
    yield
