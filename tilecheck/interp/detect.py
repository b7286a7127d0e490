"""``tilecheck.detect``: the exact race detector for one launch (DESIGN §5).

It runs the launch on the interpreter and records, per array element, which blocks touched it and
how (``recorder``). Two accesses to one element conflict when at least one writes and not both are
atomic, and

- they come from different blocks that no spin lock (as executed) keeps apart: ``write-write`` or
  ``read-write``;
- they come from one block and neither a token path nor a data dependence orders the two ops
  (the order graph the verifier uses): ``unordered-in-block``.

If no conflict is found, no block read what another block wrote, so every block computed the same
addresses and took the same branches as in any other schedule: the answer holds for every schedule
of this launch, its data included. Where an address may depend on the value an atomic returned
(tickets, work queues) or on data read under a lock, that argument does not hold, so the launch is
also run under several seeded adversarial schedules, and the report says so.
"""
from __future__ import annotations

import functools
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tilecheck.grid import normalize_grid
from tilecheck.interp.engine import Interpreter, InterpreterError
from tilecheck.interp.memory import as_host_array, bind_arguments
from tilecheck.interp.recorder import ATOMIC, READ, Event, Recorder
from tilecheck.interp.runs import block_of, copies
from tilecheck.interp.schedule import Schedule
from tilecheck.ir import Function, Module, Op
from tilecheck.ir.cutile import module_for
from tilecheck.ir.opdefs import Effect
from tilecheck.ir.order import OrderGraph, order_graph
from tilecheck.ir.summary import base_argument, written_arguments
from tilecheck.report import Finding, Report, Side, Witness
from tilecheck.requirements import check_named, with_requirements

LEVEL = "this launch"
SEEDED_ORDERS = 4  # extra schedules when a footprint may depend on the order of blocks


@dataclass(frozen=True)
class _Pair:
    """Two memory ops of one block that nothing orders in some iteration relation."""

    x: Op
    y: Op
    loops: tuple[Op, ...]  # loops enclosing both, outermost first
    same: bool  # unordered in the same iteration of every common loop
    before: tuple[bool, ...]  # per depth: x in an earlier iteration than y is unordered
    after: tuple[bool, ...]  # per depth: x in a later iteration than y is unordered


def detect(kernel: Any, args: Sequence[Any], grid: Any, *, assume: Sequence[Any] = (),
           seeds: int = SEEDED_ORDERS, max_elements: int | None = None) -> Report:
    """Find every data race of this launch: ``kernel`` run on ``args`` over ``grid``, under every
    schedule of its blocks. The arguments are not modified (the run works on copies).

    Returns a ``Report`` like ``verify``'s, with ``level == "this launch"``: ``race`` with a witness
    per racing pair of ops, ``verified`` when none exists, ``unknown`` when the launch could not be
    run (the reason says why). ``max_elements`` bounds each run's work (array elements moved): past
    it the answer is ``unknown``."""
    assume = with_requirements(kernel, assume)  # and the kernel's own @tilecheck.requires
    start = time.perf_counter()
    grid3 = normalize_grid(grid)
    args = tuple(args)
    module, _ = module_for(kernel, args)
    report = Report(module.name, "unknown", level=LEVEL)
    report.assumptions.append("the given arguments, their contents and this grid; "
                              "every schedule of the blocks")
    for pre in assume:
        violation = _violated(pre, module, args)
        report.assumptions.append(pre.describe())
        if violation:
            report.notes.append(violation)
    function = module.entry
    pairs, locks, written, order_dependent = _static_facts(function)
    detail = {p.x for p in pairs} | {p.y for p in pairs}
    orders = [None]
    if order_dependent:
        orders += list(range(seeds))
        report.assumptions.append(
            f"addresses or branches may depend on values returned by atomics or read under a lock: checked "
            f"in the lockstep order and {seeds} seeded adversarial orders, not in every order")
    findings: dict[tuple[Any, ...], Finding] = {}
    case = (kernel, args, grid3)
    runs = 0
    try:
        for seed in orders:
            first = _run(module, args, grid3, seed, Recorder(grid3, locks, None, detail, written), max_elements)
            runs += 1
            watch = _conflicts(first)
            recorder = first
            if any(m.any() for m in watch.values()):
                recorder = _run(module, args, grid3, seed, Recorder(grid3, locks, watch, (), written), max_elements)
                runs += 1
                for f in _cross_block(module, recorder, first, grid3, case):
                    findings.setdefault(_key(f), f)
            for f in _in_block(module, first, pairs, grid3, case):
                findings.setdefault(_key(f), f)
            for f in _out_of_bounds(module, first, grid3, case):
                findings.setdefault(_key(f), f)
            for f in _order_dependent(module, first, grid3, case):
                findings.setdefault(_key(f), f)
            for f in _mixed_aliasing(module, first, case):
                findings.setdefault(_key(f), f)
    except InterpreterError as exc:
        report.reasons.append(f"the interpreter could not run this launch: {exc}")
        report.stats = {"runs": runs, "total_s": round(time.perf_counter() - start, 4)}
        return report
    report.findings = sorted(findings.values(), key=_order)
    report.status = "race" if report.races else \
        "out-of-bounds" if any(f.kind == "out-of-bounds" for f in report.findings) else "verified"
    report.stats = {"runs": runs, "total_s": round(time.perf_counter() - start, 4)}
    return report


# ---- running ---------------------------------------------------------------------------------------
def _run(module: Module, args: tuple[Any, ...], grid: tuple[int, int, int], seed: int | None,
         recorder: Recorder, max_elements: int | None = None) -> Recorder:
    schedule = Schedule(seed=seed, max_elements=max_elements)
    interp = Interpreter(module, copies(module, args), grid, schedule, recorder=recorder)
    recorder.bind(interp.arrays)
    interp.run()
    return recorder


def _conflicts(rec: Recorder) -> dict[int, np.ndarray]:
    """Per array, the elements two blocks conflict on (no lock keeps all their accesses apart)."""
    out = {}
    for array, s in rec.summaries.items():
        if not s.writes.any():
            continue
        hit = (s.bmin != s.bmax) & s.plain & s.writes & (s.bmax >= 0)
        if s.lmin is not None and hit.any():
            # every access under one and the same set of locks, one of them never broken; other
            # elements are looked at pair by pair in the second run (two sets may share a lock)
            valid = np.array([bool(locks - rec.broken) for locks in rec.lock_sets] or [False], bool)
            lock = np.clip(s.lmin, 0, len(valid) - 1)
            protected = (s.lmin == s.lmax) & (s.lmin >= 0) & valid[lock]
            hit &= ~protected
        out[array] = hit
    return out


# ---- static facts -----------------------------------------------------------------------------------
_ADDRESS = {"load_view_tko": "view", "store_view_tko": "view", "atomic_red_view_tko": "view",
            "load_ptr_tko": "source", "store_ptr_tko": "destination", "atomic_rmw_tko": "pointers",
            "atomic_cas_tko": "pointers"}


def _memory_ops(function: Function) -> list[tuple[Op, int | None, Effect, tuple[Op, ...]]]:
    """Memory ops with their array (entry argument; None if untraceable), effect and loops."""
    out = []

    def walk(ops: list[Op], loops: tuple[Op, ...]) -> None:
        for op in ops:
            opdef = op.opdef
            if opdef is not None and opdef.effect is not Effect.NONE:
                address = op.operand(_ADDRESS.get(op.name, ""))
                array = base_argument(address, function) if address is not None else None
                out.append((op, array, opdef.effect, loops))
            inner = (*loops, op) if op.name in ("for", "loop") else loops
            for region in op.regions:
                walk(region.block.ops, inner)
    walk(function.body.ops, ())
    return out


@functools.lru_cache(maxsize=64)
def _static_facts(function: Function) -> tuple[list[_Pair], set[int], set[int | None], bool]:
    """What the detector needs to know of a kernel before running it (once per kernel): the pairs of
    ops nothing orders inside a block, the arrays spin locks may live in, the arrays some op writes,
    and whether a block's accesses may depend on the order blocks ran in."""
    locks = _lock_arrays(function)
    return (_unordered_pairs(function, order_graph(function)), locks, written_arguments(function),
            _order_dependent_footprint(function, locks))


def _unordered_pairs(function: Function, graph: OrderGraph) -> list[_Pair]:
    ops = _memory_ops(function)
    pairs = []
    for i, (x, ax, ex, lx) in enumerate(ops):
        for y, ay, ey, ly in ops[i:]:
            if ax is not None and ay is not None and ax != ay:
                continue
            if Effect.WRITE not in (ex, ey) and Effect.ATOMIC not in (ex, ey):
                continue
            if ex is Effect.ATOMIC and ey is Effect.ATOMIC:
                continue
            common: list[Op] = []
            for a, b in zip(lx, ly):
                if a is not b:
                    break
                common.append(a)
            same = (x is y and x.name == "store_ptr_tko"
                    or x is not y and not graph.ordered_same_iteration(x, y))
            before = tuple(not graph.ordered_across(loop, x, y) for loop in common)
            after = tuple(not graph.ordered_across(loop, y, x) for loop in common)
            if same or any(before) or any(after):
                pairs.append(_Pair(x, y, tuple(common), same, before, after))
    return pairs


def _lock_arrays(function: Function) -> set[int]:
    """Arrays some acquire-CAS at device or system scope targets: where spin locks may live."""
    return {array for op, array, _, _ in _memory_ops(function)
            if op.name == "atomic_cas_tko" and array is not None
            and op.attrs.get("memory_ordering_semantics") in ("acquire", "acq_rel")}


def _order_dependent_footprint(function: Function, locks: set[int]) -> bool:
    """Some atomic's returned value is used, or a lock may guard data: the accesses of a block may
    then depend on the order blocks ran in."""
    used = {v for op in function.walk() for v in op.operands}
    return bool(locks) or any(op.opdef is not None and op.opdef.effect is Effect.ATOMIC and op.results
                              and op.results[0] in used for op in function.walk())


def _violated(pre: Any, module: Module, args: tuple[Any, ...]) -> str | None:
    names = [p.name for p in module.params if p.kind == "array"]
    from tilecheck.arrays import flat_arguments

    values = dict(zip([p.name for p in module.params], flat_arguments(args))) if module.params else {}
    check_named((pre,), [n for n in names if n in values], module.name)
    problem = pre.violation(as_host_array(pre.array, values[pre.array]))
    return f"the given '{pre.array}' violates its precondition: {problem}" if problem else None


# ---- findings -----------------------------------------------------------------------------------------
class _Namer:
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
        return self.block_of(linear, self.grid)

    @staticmethod
    def block_of(linear: int, grid: tuple[int, int, int]) -> tuple[int, int, int]:
        return block_of(linear, grid)

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
    from tilecheck.arrays import flat_arguments

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


def _cross_block(module: Module, rec: Recorder, first: Recorder, grid: tuple[int, int, int],
                 case: Any) -> list[Finding]:
    """One witness per pair of ops that conflict across blocks: the least element, then blocks."""
    namer = _Namer(module, case[1], grid)
    out = []
    for array, records in rec.records.items():
        col = records.columns()
        ops = list(dict.fromkeys(e.op for e in rec.events))
        event_op = np.array([ops.index(e.op) for e in rec.events], np.int64)
        op_of = event_op[col["event"]]
        present = np.unique(op_of).tolist()
        effect = {k: rec.events[int(col["event"][np.flatnonzero(op_of == k)[0]])].effect for k in present}
        per_op = {k: _element_blocks(col, op_of == k) for k in present}
        for ia, ka in enumerate(present):
            for kb in present[ia:]:
                if effect[ka] == READ and effect[kb] == READ or effect[ka] == ATOMIC and effect[kb] == ATOMIC:
                    continue
                hit = _pair_witness(col, op_of, ka, kb, per_op, rec)
                if hit is None:
                    continue
                i, j = hit
                ei, ej = rec.events[col["event"][i]], rec.events[col["event"][j]]
                kind = "write-write" if READ not in (ei.effect, ej.effect) else "read-write"
                writer, other = (i, j) if ei.effect != READ else (j, i)
                sw = namer.side(rec.events[col["event"][writer]], int(col["lane"][writer]),
                                int(col["block"][writer]))
                so = namer.side(rec.events[col["event"][other]], int(col["lane"][other]),
                                int(col["block"][other]))
                verb = "write" if kind == "write-write" else "write and read"
                message = (f"two blocks {verb} the same element of '{namer.name(array)}' with no ordering "
                           "between blocks" + _shared_memory(namer, rec, array))
                out.append(Finding(kind, message, sw.loc, (so.loc,),
                                   namer.witness(array, int(col["offset"][i]), sw, so), 3, case))
    return out


def _shared_memory(namer: _Namer, rec: Recorder, array: int) -> str:
    members = [namer.name(i) for i, (first, _) in rec.alias.items() if first == array]
    if not members:
        return ""
    return f" ('{namer.name(array)}' shares its memory with {', '.join(repr(m) for m in members)})"


def _element_blocks(col: dict[str, np.ndarray],
                    mine: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The elements one op touched (sorted) with the least and greatest block touching each."""
    offsets, blocks = col["offset"][mine], col["block"][mine]
    order = np.lexsort((blocks, offsets))
    offsets, blocks = offsets[order], blocks[order]
    if not len(offsets):
        return offsets, blocks, blocks
    starts = np.flatnonzero(np.r_[True, offsets[1:] != offsets[:-1]])
    return offsets[starts], np.minimum.reduceat(blocks, starts), np.maximum.reduceat(blocks, starts)


def _pair_witness(col: dict[str, np.ndarray], op_of: np.ndarray, ka: int, kb: int, per_op: dict[int, Any],
                  rec: Recorder) -> tuple[int, int] | None:
    """The least element where op ``ka`` and op ``kb`` are used by two blocks that no valid lock
    keeps apart, as two record indices (least blocks first)."""
    ea, amin, amax = per_op[ka]
    eb, bmin, bmax = per_op[kb]
    common, ia, ib = np.intersect1d(ea, eb, assume_unique=True, return_indices=True)
    two = (amin[ia] != bmax[ib]) | (amax[ia] != bmin[ib])
    for element in common[two].tolist():
        rows = np.flatnonzero((col["offset"] == element) & ((op_of == ka) | (op_of == kb)))
        rows = rows[np.lexsort((col["lane"][rows], col["block"][rows]))]
        for i in rows[op_of[rows] == ka].tolist():
            for j in rows[op_of[rows] == kb].tolist():
                if col["block"][i] == col["block"][j]:
                    continue
                if rec.protected_by_common_lock(int(col["lock"][i]), int(col["lock"][j])):
                    continue
                return (i, j) if col["block"][i] <= col["block"][j] else (j, i)
    return None


def _in_block(module: Module, rec: Recorder, pairs: list[_Pair], grid: tuple[int, int, int],
              case: Any) -> list[Finding]:
    namer = _Namer(module, case[1], grid)
    out = []
    for pair in pairs:
        rx, ry = rec.detail.get(pair.x), rec.detail.get(pair.y)
        if rx is None or ry is None:
            continue
        hit = _first_unordered(rec, pair, rx.columns(), ry.columns())
        if hit is None:
            continue
        (i, cx), (j, cy) = hit
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


def _first_unordered(rec: Recorder, pair: _Pair, cx: dict[str, np.ndarray], cy: dict[str, np.ndarray]) -> Any:
    """The least (block, element) where the pair's two ops meet in an unordered iteration relation,
    as two record indices; every meeting is classified at once (vectorised), in chunks."""
    keys_x, keys_y = _block_element_keys(rec, cx), _block_element_keys(rec, cy)
    order_x, order_y = np.argsort(keys_x, kind="stable"), np.argsort(keys_y, kind="stable")
    sorted_y = keys_y[order_y]
    lo = np.searchsorted(sorted_y, keys_x[order_x], "left")
    hi = np.searchsorted(sorted_y, keys_x[order_x], "right")
    counts = hi - lo
    depth = len(pair.loops)
    it_x, it_y = _iterations(rec, cx["event"], pair.loops), _iterations(rec, cy["event"], pair.loops)
    before = np.array(pair.before + (False,), bool)
    after = np.array(pair.after + (False,), bool)
    chunk = 1 << 20
    ends = np.cumsum(counts)
    start_row = 0
    while start_row < len(order_x):
        stop_row = int(np.searchsorted(ends, ends[start_row] - counts[start_row] + chunk, "right"))
        stop_row = max(stop_row, start_row + 1)
        rows = np.arange(start_row, min(stop_row, len(order_x)))
        start_row = rows[-1] + 1
        n = counts[rows]
        if not n.sum():
            continue
        i = np.repeat(order_x[rows], n)
        offsets = np.arange(n.sum()) - np.repeat(np.cumsum(n) - n, n)
        j = order_y[np.repeat(lo[rows], n) + offsets]
        if pair.x is pair.y:
            keep = (cx["event"][i] < cy["event"][j]) | ((cx["event"][i] == cy["event"][j])
                                                        & (cx["lane"][i] < cy["lane"][j]))
            i, j = i[keep], j[keep]
        ix, iy = it_x[i], it_y[j]
        differ = ix != iy
        d = (np.where(differ.any(axis=1), differ.argmax(axis=1), depth) if depth
             else np.zeros(len(i), np.int64))
        rows_ = np.arange(len(i))
        earlier = ix[rows_, np.minimum(d, max(depth - 1, 0))] < iy[rows_, np.minimum(d, max(depth - 1, 0))] \
            if depth else np.zeros(len(i), bool)
        same = d == depth
        if pair.x is pair.y:
            same_ok = same & (cx["event"][i] == cy["event"][j]) & pair.same
        else:
            same_ok = same & pair.same
        unordered = same_ok | (~same & np.where(earlier, before[d], after[d]))
        hit = np.flatnonzero(unordered)
        if len(hit):
            return (int(i[hit[0]]), cx), (int(j[hit[0]]), cy)
    return None


def _iterations(rec: Recorder, events: np.ndarray, loops: tuple[Op, ...]) -> np.ndarray:
    """Per record, its iteration number in each of ``loops`` (rows of a matrix)."""
    table = np.array([_iteration(e, loops) for e in rec.events],
                     np.int64).reshape(len(rec.events), len(loops))
    return table[events] if len(events) else np.zeros((0, len(loops)), np.int64)


def _block_element_keys(rec: Recorder, col: dict[str, np.ndarray]) -> np.ndarray:
    """(block, array, element) as one sortable key: block-major, so the least key is the least block."""
    # array ids may be negative (the arrays of list arguments): shifted to start at 0
    low = min(rec.sizes, default=0)
    arrays = np.array([e.array for e in rec.events], np.int64)[col["event"]] - low
    span = max(rec.sizes.values(), default=1) + 1
    return (col["block"] * (max(rec.sizes, default=0) - low + 1) + arrays) * span + col["offset"]


def _iteration(event: Event, loops: tuple[Op, ...]) -> tuple[int, ...]:
    numbers = {loop: k for loop, k, _ in event.iterations}
    return tuple(numbers.get(loop, 0) for loop in loops)


def _out_of_bounds(module: Module, rec: Recorder, grid: tuple[int, int, int], case: Any) -> list[Finding]:
    namer = _Namer(module, case[1], grid)
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


def _order_dependent(module: Module, rec: Recorder, grid: tuple[int, int, int], case: Any) -> list[Finding]:
    """Float adds, exchanges or CASes from two blocks on one element (a valid spin lock's own
    element aside): the value left depends on the order of the blocks."""
    namer = _Namer(module, case[1], grid)
    locks = {key for key, lock in rec.lock_ids.items() if lock not in rec.broken}
    out = []
    for array, s in rec.summaries.items():
        if s.fmin is None:
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


def _mixed_aliasing(module: Module, rec: Recorder, case: Any) -> list[Finding]:
    """Arguments that overlap with different element sizes or misaligned: not followed element by
    element, so reported as they are when the kernel writes one of them."""
    namer = _Namer(module, case[1], case[2])
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


def _key(f: Finding) -> tuple[Any, ...]:
    return (f.kind, f.loc, f.related_locs)


def _order(f: Finding) -> tuple[Any, ...]:
    w = f.witness
    return (f.kind, str(f.loc), w.element or () if w else (), w.offset or 0 if w else 0)
