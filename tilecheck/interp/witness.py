"""Witness building for the exact detector (``tilecheck.detect``): turning what ``pairs`` found
(record indices in a recorder's columns) and what the recorder noted itself (out-of-bounds
accesses, order-dependent atomics, mixed-size aliasing) into ``Finding``s, each with a ``Witness``
that names both blocks, their loop iterations, the lane and the element."""
from __future__ import annotations

from typing import Any

import numpy as np

from tilecheck.arrays import flat_arguments
from tilecheck.interp.memory import bind_arguments
from tilecheck.interp.pairs import UnorderedPair, cross_block_hits, in_block_hits, memory_ops
from tilecheck.interp.recorder import READ, Event, Recorder
from tilecheck.interp.runs import block_of
from tilecheck.ir import Module, Op
from tilecheck.ir.opdefs import Effect
from tilecheck.ir.summary import steered_message, steered_writes
from tilecheck.report import Finding, Side, Witness


class Namer:
    """Names, element coordinates and witness sides for one module and launch."""

    def __init__(self, module: Module, args: tuple[Any, ...], grid: tuple[int, int, int]) -> None:
        self.module, self.grid = module, grid
        _, self.arrays = bind_arguments(module, module.entry, args)
        self.scalars = {p.name: int(v) for p, v in _scalar_params(module, args)}

    def name(self, array: int) -> str:
        mem = self.arrays.get(array)
        return mem.name if mem is not None else f"arg{array}"

    def coords(self, array: int, offset: int) -> tuple[int, ...] | None:
        mem = self.arrays.get(array)
        if mem is None:
            return None
        return _coordinates(offset, mem.shape, mem.strides)

    def block(self, linear: int) -> tuple[int, int, int]:
        return block_of(linear, self.grid)

    def side(self, event: Event, lane: int, block: int) -> Side:
        per_block = int(np.prod(event.tile)) if event.tile else 1
        position = lane // per_block
        lanes = tuple(int(v) for v in np.unravel_index(lane % per_block, event.tile)) if event.tile else ()
        return Side(event.op.name, event.op.loc, self.block(block), _loops(event.iterations, position), lanes,
                    ("read", "write", "atomic")[event.effect])

    def witness(self, array: int, offset: int, first: Side, second: Side | None) -> Witness:
        shapes = {mem.name: mem.shape for mem in self.arrays.values() if mem.shape}
        coords = self.coords(array, offset)
        return Witness(self.name(array), coords, None if coords is not None else offset, first, second,
                       self.grid, shapes, dict(self.scalars))


def _scalar_params(module: Module, args: tuple[Any, ...]) -> list[tuple[Any, Any]]:
    if not module.params:
        return []
    return [(p, a) for p, a in zip(module.params, flat_arguments(args))
            if p.kind == "scalar" and isinstance(a, (int, np.integer)) and not isinstance(a, bool)]


def _loops(iterations: tuple[tuple[Op, int, Any], ...], position: int) -> dict[str, int]:
    out = {}
    for loop, k, iv in iterations:
        name = f"{'loop' if loop.name == 'loop' else 'for'}@line{loop.loc.outermost().line}"
        out[name] = int(np.asarray(iv).reshape(-1)[position]) if iv is not None and np.ndim(iv) else k
    return out


def _coordinates(offset: int, shape: tuple[int, ...], strides: tuple[int, ...]) -> tuple[int, ...] | None:
    """The index of the element at ``offset`` (elements), if the layout has one."""
    coords = [0] * len(shape)
    rest = offset
    for d in sorted(range(len(shape)), key=lambda d: -strides[d]):
        if strides[d] <= 0 or shape[d] <= 1:
            continue
        coords[d] = min(rest // strides[d], shape[d] - 1)
        rest -= coords[d] * strides[d]
    return tuple(coords) if rest == 0 else None


# ---- findings ---------------------------------------------------------------------------------------
def cross_block(module: Module, rec: Recorder, grid: tuple[int, int, int], case: Any) -> list[Finding]:
    """One witness per pair of ops that conflict across blocks: the least element, then blocks."""
    namer = Namer(module, case[1], grid)
    out = []
    for array, col, i, j in cross_block_hits(rec):
        ei, ej = rec.events[col["event"][i]], rec.events[col["event"][j]]
        kind = "write-write" if READ not in (ei.effect, ej.effect) else "read-write"
        writer, other = (i, j) if ei.effect != READ else (j, i)
        sw = namer.side(rec.events[col["event"][writer]], int(col["lane"][writer]), int(col["block"][writer]))
        so = namer.side(rec.events[col["event"][other]], int(col["lane"][other]), int(col["block"][other]))
        verb = "write" if kind == "write-write" else "write and read"
        message = (f"two blocks {verb} the same element of '{namer.name(array)}' with no ordering "
                   "between blocks" + _shared_memory(namer, rec, array))
        out.append(Finding(kind, message, sw.loc, (so.loc,),
                           namer.witness(array, int(col["offset"][i]), sw, so), 3, case))
    return out


def _shared_memory(namer: Namer, rec: Recorder, array: int) -> str:
    members = [namer.name(i) for i, (first, _) in rec.alias.items() if first == array]
    if not members:
        return ""
    return f" ('{namer.name(array)}' shares its memory with {', '.join(repr(m) for m in members)})"


def in_block(module: Module, rec: Recorder, pairs: list[UnorderedPair], grid: tuple[int, int, int],
             case: Any) -> list[Finding]:
    """One witness per pair of ops of one block that met with nothing ordering them."""
    namer = Namer(module, case[1], grid)
    out = []
    for pair, (i, cx), (j, cy) in in_block_hits(rec, pairs):
        ex, ey = rec.events[cx["event"][i]], rec.events[cy["event"][j]]
        sx = namer.side(ex, int(cx["lane"][i]), int(cx["block"][i]))
        sy = namer.side(ey, int(cy["lane"][j]), int(cy["block"][j]))
        name = namer.name(ex.array)
        if pair.x is pair.y and ex is ey:
            message = (f"one {pair.x.name} writes the same element of '{name}' from two lanes; "
                       "which value lands is unspecified")
        else:
            message = (f"{pair.x.name} and {pair.y.name} of one block touch the same element of '{name}' "
                       f"and no token orders them (the compiler may reorder)")
        out.append(Finding("unordered-in-block", message, sx.loc, (sy.loc,),
                           namer.witness(ex.array, int(cx["offset"][i]), sx, sy), 3, case))
    return out


def out_of_bounds(module: Module, rec: Recorder, grid: tuple[int, int, int], case: Any) -> list[Finding]:
    """One finding per op the run saw touch an element outside its array."""
    namer = Namer(module, case[1], grid)
    out = []
    for op, oob in rec.oob.items():
        side = Side(op.name, op.loc, oob.block, _loops(oob.iterations, 0), oob.lane,
                    "read" if op.opdef.effect is Effect.READ else "write" if op.opdef.effect is Effect.WRITE
                    else "atomic")
        witness = Witness(namer.name(oob.array), None, oob.offset, side, None, grid,
                          {m.name: m.shape for m in namer.arrays.values() if m.shape}, dict(namer.scalars))
        out.append(Finding("out-of-bounds", f"{op.name} touches an element outside '{namer.name(oob.array)}' "
                           f"({len(namer.arrays[oob.array].flat) if oob.array in namer.arrays else '?'} "
                           "elements) and no mask excludes it", op.loc, (), witness, 3, case))
    return out


def order_dependent(module: Module, rec: Recorder, grid: tuple[int, int, int], case: Any) -> list[Finding]:
    """Float adds, exchanges or CASes from two blocks on one element (a valid spin lock's own
    element aside, and the flags, locks and counters blocks wait on: their values are the
    synchronisation's protocol, not results): the value left depends on the order of the blocks."""
    namer = Namer(module, case[1], grid)
    locks = {key for key, lock in rec.lock_ids.items() if lock not in rec.broken}
    waited_on = rec.sync.arrays if rec.sync is not None else set()
    out = []
    for array, s in rec.summaries.items():
        if s.fmin is None or array in waited_on:
            continue
        hit = [int(o) for o in np.flatnonzero((s.fmin != s.fmax) & (s.fmax >= 0))
               if (array, int(o)) not in locks]
        if not hit:
            continue
        offset = hit[0]
        mixed = rec.mixed_ops.get(array) if array not in rec.float_ops else None
        op = mixed[0] if mixed is not None else rec.float_ops[array]
        side = Side(op.name, op.loc, namer.block(int(s.fmin[offset])), {}, (), "atomic")
        other = Side(op.name, op.loc, namer.block(int(s.fmax[offset])), {}, (), "atomic")
        if mixed is not None:
            what = f"integer atomics of different kinds ({mixed[1]} and {op.attrs.get('mode')})"
            why = "they do not commute, so the result depends on their order"
        else:
            what = "float atomic add" if op.attrs.get("mode") == "addf" else \
                f"{op.attrs.get('memory_ordering_semantics')} stores" if op.name.startswith("store") else \
                "atomic exchange or compare-and-swap"
            why = "the result depends on their order (rounding)" if op.attrs.get("mode") == "addf" else \
                "which value remains depends on their order"
        out.append(Finding("order-dependent-atomic", f"{what} from several blocks on one element of "
                           f"'{namer.name(array)}': {why}", op.loc, (op.loc,),
                           namer.witness(array, offset, side, other), 3, case))
    return out


def mixed_aliasing(module: Module, rec: Recorder, case: Any) -> list[Finding]:
    """Arguments that overlap with different element sizes or misaligned: not followed element by
    element, so reported as they are when the kernel writes one of them."""
    namer = Namer(module, case[1], case[2])
    written = {a for a, s in rec.summaries.items() if s.writes.any()}
    out = []
    for a, b in rec.aliasing:
        if a in written or b in written:
            side = Side("argument", module.entry.loc, (), {}, (), "write")
            out.append(Finding("aliasing", f"'{namer.name(a)}' and '{namer.name(b)}' overlap in memory with "
                               "different element sizes, and the kernel writes one of them",
                               module.entry.loc, (),
                               Witness(namer.name(a), None, None, side, None, case[2], {}), 3, case))
    return out


def steered_results(module: Module, rec: Recorder, grid: tuple[int, int, int], case: Any) -> list[Finding]:
    """Atomics whose returned value steers a write (``ir.summary.steered_writes``), where the run
    saw two blocks apply one to the same element: the output depends on the order they drew in."""
    function = module.entry
    uses = steered_writes(function)
    if not uses:
        return []
    namer = Namer(module, case[1], grid)
    arrays = {op: array for op, array, _, _ in memory_ops(function)}
    out = []
    for op, (how, use) in uses.items():
        s = rec.summaries.get(arrays.get(op))
        if s is None:
            continue
        shared = np.flatnonzero((s.bmin != s.bmax) & s.writes & (s.bmax >= 0))
        if not len(shared):
            continue
        offset = int(shared[0])
        side = Side(op.name, op.loc, namer.block(int(s.bmin[offset])), {}, (), "atomic")
        other = Side(op.name, op.loc, namer.block(int(s.bmax[offset])), {}, (), "atomic")
        out.append(Finding("order-dependent-atomic", steered_message(op, how, use, namer.name(arrays[op])),
                           op.loc, (use.loc,), namer.witness(arrays[op], offset, side, other), 3, case))
    return out
