"""Pair finding for the exact detector (``tilecheck.detect``): which pairs of recorded accesses
conflict.

Before a kernel runs: its memory ops, the pairs of them nothing orders inside a block (the order
graph the verifier uses), the arrays spin locks may live in, and whether a block's accesses may
depend on the order blocks ran in (``static_facts``). After a run, in the recorder's columns: the
elements two blocks conflict on (``conflicts``), and per pair of ops the least element where they
conflict across blocks (``cross_block_hits``) or meet unordered inside one block
(``in_block_hits``), as record indices. Turning a hit into a finding is ``witness``'s job.
"""
from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from tilecheck.interp.recorder import ATOMIC, READ, Event, Recorder, Records
from tilecheck.interp.sync import Sync, Undecided
from tilecheck.ir import Function, Op
from tilecheck.ir.opdefs import Effect
from tilecheck.ir.order import OrderGraph, order_graph
from tilecheck.ir.summary import address_root, base_argument, may_share, steering_acquires, written_arguments

Columns = dict[str, np.ndarray]  # a recorder's records as columns: event, lane, block, offset, lock


@dataclass(frozen=True)
class UnorderedPair:
    """Two memory ops of one block that nothing orders in some iteration relation."""

    x: Op
    y: Op
    loops: tuple[Op, ...]  # loops enclosing both, outermost first
    same: bool  # unordered in the same iteration of every common loop
    before: tuple[bool, ...]  # per depth: x in an earlier iteration than y is unordered
    after: tuple[bool, ...]  # per depth: x in a later iteration than y is unordered


# ---- static facts -----------------------------------------------------------------------------------
_ADDRESS = {"load_view_tko": "view", "store_view_tko": "view", "atomic_red_view_tko": "view",
            "load_ptr_tko": "source", "store_ptr_tko": "destination", "atomic_rmw_tko": "pointers",
            "atomic_cas_tko": "pointers"}


def memory_ops(function: Function) -> list[tuple[Op, int | None, Effect, tuple[Op, ...]]]:
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
def static_facts(function: Function) -> tuple[list[UnorderedPair], set[int], set[int | None], bool]:
    """What the detector needs to know of a kernel before running it (once per kernel): the pairs of
    ops nothing orders inside a block, the arrays spin locks may live in, the arrays some op writes,
    and whether a block's accesses may depend on the order blocks ran in."""
    locks = _lock_arrays(function)
    return (_unordered_pairs(function, order_graph(function)), locks, written_arguments(function),
            _order_dependent_footprint(function, locks))


@functools.lru_cache(maxsize=64)
def synchronising(function: Function) -> tuple[frozenset[int | None], frozenset[Op]]:
    """The acquires whose value decides a branch, and the arrays they read: the elements that
    may carry release/acquire synchronisation between blocks."""
    steering = frozenset(steering_acquires(function))
    arrays = set()
    for op in steering:
        address = op.operand(_ADDRESS.get(op.name, ""))
        arrays.add(base_argument(address, function) if address is not None else None)
    return frozenset(arrays), steering


def new_sync(function: Function) -> Sync | None:
    """A fresh happens-before tracker for one run, when the kernel synchronises blocks."""
    arrays, steering = synchronising(function)
    return Sync(set(arrays), steering) if steering else None


def _unordered_pairs(function: Function, graph: OrderGraph) -> list[UnorderedPair]:
    ops = memory_ops(function)
    roots = {x: address_root(x, function) for x, *_ in ops}  # a list's arrays: which list
    pairs = []
    for i, (x, _, ex, lx) in enumerate(ops):
        for y, _, ey, ly in ops[i:]:
            if not may_share(roots[x], roots[y]):
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
                pairs.append(UnorderedPair(x, y, tuple(common), same, before, after))
    return pairs


def _lock_arrays(function: Function) -> set[int]:
    """Arrays some acquire-CAS at device or system scope targets: where spin locks may live."""
    return {array for op, array, _, _ in memory_ops(function)
            if op.name == "atomic_cas_tko" and array is not None
            and op.attrs.get("memory_ordering_semantics") in ("acquire", "acq_rel")}


def _order_dependent_footprint(function: Function, locks: set[int]) -> bool:
    """Some atomic's returned value is used, or a lock may guard data: the accesses of a block may
    then depend on the order blocks ran in."""
    used = {v for op in function.walk() for v in op.operands}
    return bool(locks) or any(op.opdef is not None and op.opdef.effect is Effect.ATOMIC and op.results
                              and op.results[0] in used for op in function.walk())


# ---- across blocks ------------------------------------------------------------------------------------
def conflicts(rec: Recorder) -> dict[int, np.ndarray]:
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


def cross_block_hits(rec: Recorder) -> Iterator[tuple[int, Columns, int, int]]:
    """Per array and pair of ops that conflict across blocks (at least one writes, not both
    atomic): ``(array, columns, i, j)``, the records of the least element where they do, least
    blocks first."""
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
                hit = _first_across_blocks(col, op_of, ka, kb, per_op, rec)
                if hit is not None:
                    yield array, col, hit[0], hit[1]


def _element_blocks(col: Columns, mine: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The elements one op touched (sorted) with the least and greatest block touching each."""
    offsets, blocks = col["offset"][mine], col["block"][mine]
    order = np.lexsort((blocks, offsets))
    offsets, blocks = offsets[order], blocks[order]
    if not len(offsets):
        return offsets, blocks, blocks
    starts = np.flatnonzero(np.r_[True, offsets[1:] != offsets[:-1]])
    return offsets[starts], np.minimum.reduceat(blocks, starts), np.maximum.reduceat(blocks, starts)


def _first_across_blocks(col: Columns, op_of: np.ndarray, ka: int, kb: int, per_op: dict[int, Any],
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
                if unordered_across_blocks(rec, col, i, j):
                    return (i, j) if col["block"][i] <= col["block"][j] else (j, i)
    return None


def unordered_across_blocks(rec: Recorder, col: Columns, i: int, j: int) -> bool:
    """Records ``i`` and ``j`` come from two blocks that neither a lock both held (never broken) nor
    release/acquire synchronisation orders: where one writes, and not both are atomic, they race."""
    if col["block"][i] == col["block"][j]:
        return False
    if rec.protected_by_common_lock(int(col["lock"][i]), int(col["lock"][j])):
        return False
    return not _synchronised(rec, col, i, j)


def _synchronised(rec: Recorder, col: Columns, i: int, j: int) -> bool:
    """One of the two records (of different blocks) happens before the other through
    release/acquire synchronisation, as executed (``Sync``). A question past the walk limit counts
    as not ordered and marks the run undecided."""
    sync = rec.sync
    if sync is None or not sync.acquires:
        return False
    a = (int(col["block"][i]), rec.events[int(col["event"][i])].tick)
    b = (int(col["block"][j]), rec.events[int(col["event"][j])].tick)
    first, later = (a, b) if a[1] < b[1] else (b, a)
    try:
        return sync.ordered(first, later)
    except Undecided:
        sync.undecided = True
        return False


# ---- inside one block -----------------------------------------------------------------------------------
Hit = tuple[int, Columns]  # a record: its row in columns


class InBlockSearch:
    """The in-block hits of one run, searched for as its blocks finish (``Recorder.finished``): an
    in-block pair is two records of one block, so a finished block's records are searched and
    dropped, and only the least hit per pair is kept. Memory is then bounded by the records of the
    blocks not yet searched, not by the launch's accesses."""

    def __init__(self, pairs: list[UnorderedPair]) -> None:
        self.pairs = pairs
        self.best: dict[int, tuple[int, Hit, Hit]] = {}  # per pair: (x's block-element key, x, y)

    def absorb(self, rec: Recorder, finished: np.ndarray | None) -> None:
        """Search the detail records of the blocks ``finished`` (linear ids; None: every block) and
        drop them from ``rec``."""
        columns = {op: r.columns() for op, r in rec.detail.items()}
        mine = {op: (np.isin(c["block"], finished) if finished is not None else np.ones(len(c["block"]), bool))
                for op, c in columns.items()}
        for n, pair in enumerate(self.pairs):
            if pair.x not in columns or pair.y not in columns:
                continue
            cx, cy = _rows(columns[pair.x], mine[pair.x]), _rows(columns[pair.y], mine[pair.y])
            hit = _first_unordered(rec, pair, cx, cy)
            if hit is None:
                continue
            (i, hx), (j, hy) = hit
            x, y = _rows(hx, [i]), _rows(hy, [j])
            key = int(_block_element_keys(rec, x)[0])
            if n not in self.best or key < self.best[n][0]:  # the least (block, element) over all blocks
                self.best[n] = (key, (0, x), (0, y))
        for op, c in columns.items():
            rec.detail[op] = Records.of(_rows(c, ~mine[op]))

    def hits(self, rec: Recorder) -> Iterator[tuple[UnorderedPair, Hit, Hit]]:
        self.absorb(rec, None)
        for n, pair in enumerate(self.pairs):
            if n in self.best:
                yield pair, self.best[n][1], self.best[n][2]


def _rows(col: Columns, which: Any) -> Columns:
    return {name: column[which] for name, column in col.items()}


def in_block_hits(rec: Recorder, pairs: list[UnorderedPair]) -> Iterator[tuple[UnorderedPair, Hit, Hit]]:
    """Per pair of ops nothing orders inside a block that the run saw meet unordered:
    ``(pair, (i, x's columns), (j, y's columns))`` at the least (block, element)."""
    if rec.in_block is None:
        rec.in_block = InBlockSearch(pairs)
    return rec.in_block.hits(rec)


def _first_unordered(rec: Recorder, pair: UnorderedPair, cx: Columns, cy: Columns) -> Any:
    """The least (block, element) where the pair's two ops meet in an unordered iteration relation,
    as two record indices; every meeting is classified at once (vectorised), in chunks."""
    itself = pair.x is pair.y  # one op's records met with themselves: keyed, sorted and numbered once
    keys_x = _block_element_keys(rec, cx)
    keys_y = keys_x if itself else _block_element_keys(rec, cy)
    order_x = np.argsort(keys_x, kind="stable")
    order_y = order_x if itself else np.argsort(keys_y, kind="stable")
    sorted_y = keys_y[order_y]
    lo = np.searchsorted(sorted_y, keys_x[order_x], "left")
    hi = np.searchsorted(sorted_y, keys_x[order_x], "right")
    counts = hi - lo
    depth = len(pair.loops)
    it_x = _iterations(rec, cx["event"], pair.loops)
    it_y = it_x if itself else _iterations(rec, cy["event"], pair.loops)
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
        if itself:
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
        if itself:
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
    if not len(events):
        return np.zeros((0, len(loops)), np.int64)
    seen = np.flatnonzero(np.bincount(events))  # the events these records come from only (no sort)
    table = np.zeros((int(seen[-1]) + 1, len(loops)), np.int64)
    table[seen] = np.array([_iteration(rec.events[e], loops) for e in seen.tolist()],
                           np.int64).reshape(len(seen), len(loops))
    return table[events]


def _block_element_keys(rec: Recorder, col: Columns) -> np.ndarray:
    """(block, array, element) as one sortable key: block-major, so the least key is the least block."""
    # array ids may be negative (the arrays of list arguments): shifted to start at 0
    low = min(rec.sizes, default=0)
    arrays = np.array([e.array for e in rec.events], np.int64)[col["event"]] - low
    span = max(rec.sizes.values(), default=1) + 1
    return (col["block"] * (max(rec.sizes, default=0) - low + 1) + arrays) * span + col["offset"]


def _iteration(event: Event, loops: tuple[Op, ...]) -> tuple[int, ...]:
    numbers = {loop: k for loop, k, _ in event.iterations}
    return tuple(numbers.get(loop, 0) for loop in loops)
