"""What the race detector sees of one run: every memory access, per array element.

The interpreter calls ``Recorder.access`` for each memory op of each wave with the elements its
active lanes touch. The recorder keeps, per element of each array, a dense summary (the least and
greatest block that touched it, whether a plain access and whether a write happened, the locks the
accesses held) — enough to know *which* elements two blocks conflict on without keeping the
accesses themselves. Full records (block, op, iteration, lane, lock) are kept only for the elements
in ``watch`` and the ops in ``detail_ops``: the detector's second look, where witnesses come from.

Spin locks are followed as executed: a block holds lock element ``e`` from its successful
acquire-CAS on ``e`` to its release (an xchg or release store of the free value) on ``e``. Any
other write to ``e`` — a second release, a release by a block that does not hold it, a store of
another value — breaks the lock: accesses made under it count as unprotected.
"""
from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tilecheck.interp.engine import linear_block_ids
from tilecheck.interp.sync import Sync
from tilecheck.interp.values import broadcast
from tilecheck.ir.summary import ACQUIRE_ORDERS, CROSS_BLOCK_SCOPES, RELEASE_ORDERS
from tilecheck.ir import Op

READ, WRITE, ATOMIC = 0, 1, 2
ATOMIC_READ = 3  # summaries only: an exchange or compare-and-swap that left the value as it was
_EFFECTS = {"read": READ, "write": WRITE, "atomic": ATOMIC}
_NO_BLOCK = np.iinfo(np.int32).max
# atomics whose result depends on the order of blocks: float add (rounding), exchange (and CAS)
_ORDER_DEPENDENT = ("addf", "xchg")
_MODES: dict[str, int] = {}  # integer atomic modes seen, numbered (per process; only equality matters)
_MODES_LOCK = threading.Lock()  # detectors in several threads must not give two modes one number


def _mode_code(mode: str) -> int:
    with _MODES_LOCK:
        return _MODES.setdefault(mode, len(_MODES))


# bmin, bmax (int32), plain, writes (bool), lmin, lmax (int64), fmin, fmax (int32), amode (int16),
# and a temporary or two while an access is summarised
SUMMARY_BYTES_PER_ELEMENT = 40
# full records of the ops in in-block pairs (``detail_ops``) held at once: past this many, the finished
# blocks' records are searched for in-block hits and dropped (``Recorder.finished``), and a wave holds
# no more blocks than add about this many (``Recorder.wave_width``). Memory is then bounded by these
# rows (offset, block, lock, event, lane: 40 bytes each), not by the launch's accesses: GRPO's in-place
# backward over 1 x 1024 x 151936 logits kept 311M rows (the process was killed at 24 GB)
DETAIL_ROWS = 4_000_000
DETAIL_ROW_BYTES = 40


@dataclass
class Summary:
    """Per element of one array: blocks, kinds and locks of every access so far."""

    bmin: np.ndarray
    bmax: np.ndarray
    plain: np.ndarray  # some non-atomic access
    writes: np.ndarray  # some write or atomic
    # ids of the sets of locks held (-1: none); None until the first lock is taken
    lmin: np.ndarray | None = None
    lmax: np.ndarray | None = None
    fmin: np.ndarray | None = None  # blocks of order-dependent float atomics
    fmax: np.ndarray | None = None
    # the read-modify-write mode of the atomics on each element (an index into _MODES; -1: none yet):
    # two different modes (an add and a max) do not commute
    amode: np.ndarray | None = None

    @classmethod
    def empty(cls, n: int) -> Summary:
        # int32 block ids halve the memory; grids beyond 2**31 blocks cannot be interpreted anyway
        return cls(np.full(n, _NO_BLOCK, np.int32), np.full(n, -1, np.int32), np.zeros(n, bool),
                   np.zeros(n, bool))


@dataclass(frozen=True)
class Event:
    """One op instance in one wave: the loops around it and where each recorded lane came from."""

    op: Op
    array: int
    effect: int
    iterations: tuple[tuple[Op, int, Any], ...]
    blocks: np.ndarray  # (W, 3) the wave's block ids
    tile: tuple[int, ...]  # lane shape
    tick: int = 0  # when it ran (``Sync``: program order and happens-before)


@dataclass
class Records:
    """Full records of the watched accesses to one array, as parallel lists of numpy chunks."""

    offset: list[np.ndarray] = field(default_factory=list)
    block: list[np.ndarray] = field(default_factory=list)
    lock: list[np.ndarray] = field(default_factory=list)
    event: list[np.ndarray] = field(default_factory=list)
    lane: list[np.ndarray] = field(default_factory=list)  # flat position in the (W, *tile) op shape

    def columns(self) -> dict[str, np.ndarray]:
        names = ("offset", "block", "lock", "event", "lane")
        if not self.offset:
            return {n: np.zeros(0, np.int64) for n in names}
        return {n: np.concatenate(getattr(self, n)) for n in names}

    @classmethod
    def of(cls, columns: dict[str, np.ndarray]) -> Records:
        """The records of ``columns`` (as ``columns()`` gives them)."""
        return cls(*([columns[n]] for n in ("offset", "block", "lock", "event", "lane")))


@dataclass
class OutOfBounds:
    op: Op
    array: int
    block: tuple[int, ...]
    offset: int
    lane: tuple[int, ...]
    iterations: tuple[tuple[Op, int, Any], ...]


class Recorder:
    def __init__(self, grid: tuple[int, int, int], lock_arrays: set[int],
                 watch: dict[int, np.ndarray] | None = None, detail_ops: Iterable[Op] = (),
                 written: set[int | None] | None = None, sync: Sync | None = None,
                 in_block: Any = None, guesses: frozenset[Op] = frozenset()) -> None:
        self.grid = grid
        # plain loads a compare-and-swap retry validates (``ir.summary.validated_loads``): strong reads
        self.guesses = guesses
        # release/acquire synchronisation as executed (None: the kernel has none)
        self.sync = sync
        # arrays some op may write (None in it: a write the IR cannot trace): only they can conflict
        self.written = written
        self.sizes: dict[int, int] = {}
        # arguments that share memory are one array here: argument -> (the group's first, element shift)
        self.alias: dict[int, tuple[int, int]] = {}
        self.aliasing: list[tuple[int, int]] = []  # overlapping arguments with no common element grid
        self.summaries: dict[int, Summary] = {}
        # False: only watched elements and detail ops are recorded (a run of a few blocks that asks
        # who touched one element does not need per-element summaries of every array)
        self.summarise = True
        self.watch = watch or {}
        # called with (event, linear block ids, lanes) each time watched elements are touched: a
        # run that asks one question may stop once it is answered (``runs.reproduced``)
        self.on_watch: Any = None
        self.detail_ops = set(detail_ops)
        self.events: list[Event] = []
        self.records: dict[int, Records] = {}  # watched elements (cross-block witnesses)
        self.detail: dict[Op, Records] = {}  # every access of ``detail_ops`` (in-block witnesses)
        # what searches the detail records for in-block hits as blocks finish (``pairs.InBlockSearch``);
        # None: they are all kept until the run ends
        self.in_block = in_block
        self.detail_rows = 0  # detail records held now
        self._detail_total = 0  # and ever made, for the rows a block makes
        self._blocks_done = 0
        self._finished: list[np.ndarray] = []  # blocks ended whose detail records are still held
        self.oob: dict[Op, OutOfBounds] = {}  # the first out-of-bounds access of each op
        # the first order-dependent atomic (float add, xchg, CAS) per array
        self.float_ops: dict[int, Op] = {}
        self.mixed_ops: dict[int, tuple[Op, str]] = {}  # an atomic whose mode differs from an earlier one's
        # spin locks as executed
        self.lock_arrays = lock_arrays
        self.lock_ids: dict[tuple[int, int], int] = {}
        self.free_value: dict[int, Any] = {}
        self.broken: set[int] = set()
        self.held: dict[int, list[int]] = {}  # block -> lock ids, outermost first
        # the sets of locks accesses were made under, interned: set id -> lock ids
        self.lock_sets: list[frozenset[int]] = []
        self._set_ids: dict[frozenset[int], int] = {}
        self.locked_accesses = False
        self.atomic_results_used = False

    def summary_bytes(self, arrays: dict[int, Any]) -> int:
        """About the most memory the per-element summaries of ``arrays`` take (every optional field
        made: locks, float atomics, modes), for the interpreter's memory budget. An array no op
        writes, and that shares memory with none that is written, gets no summary (it cannot
        conflict): a grouped GEMM's 671M-element weight was counted at 25 GiB and the launch refused."""
        detail = 2 * DETAIL_ROWS * DETAIL_ROW_BYTES if self._searches_as_blocks_finish else 0
        if not self.summarise:
            return detail
        return detail + SUMMARY_BYTES_PER_ELEMENT * sum(len(mem.flat) for i, mem in arrays.items()
                                                        if i in self.alias or not self._untracked(i))

    @property
    def _searches_as_blocks_finish(self) -> bool:
        """Some op is kept in full, and its records are searched (``in_block``) as blocks finish."""
        return bool(self.detail_ops) and self.in_block is not None

    def wave_width(self, n: int) -> int:
        """How many of the next ``n`` blocks may run as one wave: all, unless detail records are
        searched as blocks finish; then as many as add about ``DETAIL_ROWS`` records at the rate the
        finished blocks made them (one block until one has finished)."""
        if not self._searches_as_blocks_finish:
            return n
        if not self._blocks_done:
            return 1
        per_block = max(1, -(-self._detail_total // self._blocks_done))
        return max(1, min(n, DETAIL_ROWS // per_block))

    def finished(self, blocks: np.ndarray) -> None:
        """The blocks of a wave (their ids, one row each) have ended. Past ``DETAIL_ROWS`` detail
        records, the finished blocks' ones are searched for in-block hits and dropped (an in-block
        pair is two records of one block, so a finished block's records pair with no later one)."""
        if not self._searches_as_blocks_finish:
            return
        self._blocks_done += len(blocks)
        self._finished.append(linear_block_ids(blocks, self.grid))
        if self.detail_rows > DETAIL_ROWS:
            self.in_block.absorb(self, np.concatenate(self._finished))
            self._finished = []
            self.detail_rows = sum(sum(len(c) for c in r.offset) for r in self.detail.values())

    def bind(self, arrays: dict[int, Any]) -> None:
        """Learn the launch's arrays (``ArrayMemory`` by argument): their sizes, and which share memory."""
        spans = sorted((mem.flat.__array_interface__["data"][0], i, mem) for i, mem in arrays.items()
                       if len(mem.flat))
        self.sizes = {i: len(mem.flat) for i, mem in arrays.items()}
        group: list[tuple[int, int, Any]] = []
        end = -1
        for start, i, mem in [*spans, (None, None, None)]:
            if start is not None and start < end:
                group.append((start, i, mem))
                end = max(end, start + len(mem.flat) * mem.flat.itemsize)
                continue
            if len(group) > 1:
                self._alias_group(group)
            if start is not None:
                group, end = [(start, i, mem)], start + len(mem.flat) * mem.flat.itemsize

    def _alias_group(self, group: list[tuple[int, int, Any]]) -> None:
        base, first, mem0 = group[0]
        size = mem0.flat.itemsize
        for start, i, mem in group[1:]:
            if mem.flat.itemsize != size or (start - base) % size:
                self.aliasing.append((first, i))
                continue
            shift = (start - base) // size
            self.alias[i] = (first, shift)
            self.sizes[first] = max(self.sizes[first], shift + len(mem.flat))
        if self.written is not None and any(i in self.written for _, i, _ in group):
            self.written = self.written | {first}

    def _untracked(self, array: int) -> bool:
        """No op writes this array (nor anything sharing its memory): no access to it can conflict."""
        return self.written is not None and None not in self.written and array not in self.written
    # ---- from the interpreter -------------------------------------------------------------------
    def access(self, ctx: Any, op: Op, array: int, offsets: np.ndarray | None, active: np.ndarray | None,
               effect: str, *, run: tuple[int, int] | None = None, old: np.ndarray | None = None,
               arg: np.ndarray | None = None, expected: np.ndarray | None = None) -> None:
        code = _EFFECTS[effect]
        tick = self.sync.step() if self.sync is not None else 0
        cross = op.attrs.get("memory_scope") in CROSS_BLOCK_SCOPES
        if code == ATOMIC and not cross:
            code = WRITE  # a tile-block-scoped atomic is atomic within its block only
        elif code != ATOMIC and cross and op.attrs.get("memory_ordering_semantics", "weak") != "weak":
            code = ATOMIC  # a relaxed/acquire/release access at device scope is strong: no race with another
        elif code == READ and op in self.guesses:
            code = ATOMIC  # a CAS retry's guess (ir.summary.validated_loads): as strong as a relaxed read
        if array not in self.alias and self._untracked(array) and op not in self.detail_ops:
            return
        ids = linear_block_ids(ctx.blocks, self.grid)
        if run is not None and self._summary_only(op, array, code):
            self._summarise_run(op, array, run, ids, code)
            return
        if run is not None:  # a contiguous run of whole tiles, one per block in wave order
            first, tile = run
            o = np.arange(first, first + len(ids) * tile, dtype=np.int64)
            b = np.repeat(ids, tile)
            lanes = np.arange(len(o), dtype=np.int64)
            tile_shape: tuple[int, ...] = (tile,)
        else:
            full = broadcast(active, offsets.shape)
            lanes = np.flatnonzero(full)
            o = broadcast(offsets, full.shape).reshape(-1)[lanes]
            tile_shape = tuple(full.shape[1:])
            per_block = int(np.prod(tile_shape)) if tile_shape else 1
            b = ids[lanes // per_block]
        if not len(o):
            return
        if array in self.alias:
            array, shift = self.alias[array]
            o = o + shift
        if self._untracked(array) and op not in self.detail_ops:
            return
        if array in self.lock_arrays and code != READ:
            self._lock_protocol(op, array, o, b, code, old, arg, expected)
        if self.sync is not None and self.sync.follows(array):
            self.sync.access(op, array, o, b, effect, old, arg, expected)
        locks = self._locks_of(b) if self.held else None
        kept = _unchanged(op, old, arg, expected) if code == ATOMIC else None
        if kept is not None and kept.any():  # an exchange or CAS that wrote nothing new only read
            for lanes_, code_ in ((kept, ATOMIC_READ), (~kept, code)):
                if lanes_.any():
                    self._summarise(op, array, o[lanes_], b[lanes_], code_,
                                    None if locks is None else locks[lanes_])
        else:
            self._summarise(op, array, o, b, code, locks)
        watched = self.watch.get(array)
        keep_all = op in self.detail_ops
        if watched is None and not keep_all:
            return
        event = len(self.events)
        self.events.append(Event(op, array, code, tuple(ctx.iterations), ctx.blocks, tile_shape, tick))
        if watched is not None:
            sel = watched[o]
            if sel.any():
                self._keep(self.records.setdefault(array, Records()), o[sel], b[sel], locks, sel, event,
                           lanes[sel])
                if self.on_watch is not None:
                    self.on_watch(event, b[sel], lanes[sel])
        if keep_all:
            self._keep(self.detail.setdefault(op, Records()), o, b, locks, None, event, lanes)
            self.detail_rows += len(o)
            self._detail_total += len(o)

    def out_of_bounds(self, ctx: Any, op: Op, array: int, offsets: np.ndarray, bad: np.ndarray) -> None:
        if op in self.oob:
            return
        full = broadcast(bad, np.shape(offsets))
        pos = np.argwhere(full)[0]  # first in wave order: the least block of this wave
        block = tuple(int(v) for v in ctx.blocks[pos[0]])
        self.oob[op] = OutOfBounds(op, array, block, int(broadcast(offsets, full.shape)[tuple(pos)]),
                                             tuple(int(v) for v in pos[1:]), tuple(ctx.iterations))

    # ---- summaries ------------------------------------------------------------------------------
    def _summary_only(self, op: Op, array: int, code: int) -> bool:
        """Nothing but the summary to update: no lock, no alias, nothing watched or kept in full."""
        return not (self.held or array in self.alias or array in self.watch or op in self.detail_ops
                    or array in self.lock_arrays or code == ATOMIC
                    or self.sync is not None and self.sync.follows(array))

    def _order_dependent(self, op: Op, array: int, s: Summary, o: np.ndarray, b: np.ndarray, ro: np.ndarray,
                         rb: np.ndarray, note: bool = True) -> None:
        """Blocks ``b`` (and ``rb``, reversed) leave order-dependent values at offsets ``o``."""
        if note:
            self.float_ops.setdefault(array, op)
        if s.fmin is None:
            s.fmin, s.fmax = np.full(len(s.bmin), _NO_BLOCK, np.int32), np.full(len(s.bmin), -1, np.int32)
        np.maximum.at(s.fmax, o, b.astype(np.int32))
        np.minimum.at(s.fmin, ro, rb.astype(np.int32))

    def _summary(self, array: int) -> Summary | None:
        s = self.summaries.get(array)
        if s is None and self.summarise:
            s = self.summaries[array] = Summary.empty(self.sizes[array])
        return s

    def _summarise_run(self, op: Op, array: int, run: tuple[int, int], ids: np.ndarray, code: int) -> None:
        """The fast path for whole tiles laid end to end, one per block of the wave, in order."""
        first, tile = run
        s = self._summary(array)
        if s is None:
            return
        if s.lmin is not None:  # a lock was taken earlier: take the general path
            o = np.arange(first, first + len(ids) * tile, dtype=np.int64)
            self._summarise(op, array, o, np.repeat(ids, tile), code, None)
            return
        window = slice(first, first + len(ids) * tile)
        column = ids.astype(s.bmax.dtype)[:, None]
        high = s.bmax[window].reshape(len(ids), tile)
        np.maximum(high, column, out=high)
        low = s.bmin[window].reshape(len(ids), tile)
        np.minimum(low, column, out=low)
        if code != ATOMIC:
            s.plain[window] = True
        if code != READ:
            s.writes[window] = True

    def _summarise(self, op: Op, array: int, o: np.ndarray, b: np.ndarray, code: int,
                   locks: np.ndarray | None) -> None:
        s = self._summary(array)
        if s is None:
            return
        b = b.astype(s.bmax.dtype, copy=False)
        if len(b) > 1 and (b[1:] < b[:-1]).any():  # duplicate offsets keep the last lane: sort by block
            order = np.argsort(b, kind="stable")
            o, b = o[order], b[order]
            locks = locks[order] if locks is not None else None
        s.bmax[o] = np.maximum(s.bmax[o], b)
        ro, rb = o[::-1], b[::-1]
        s.bmin[ro] = np.minimum(s.bmin[ro], rb)
        if code == READ:
            s.plain[o] = True
        elif code == WRITE:
            s.plain[o] = True
            s.writes[o] = True
        elif code == ATOMIC_READ:
            pass
        else:
            s.writes[o] = True
            mode = op.attrs.get("mode")
            if mode in _ORDER_DEPENDENT or op.name in ("atomic_cas_tko", "store_view_tko", "store_ptr_tko"):
                self._order_dependent(op, array, s, o, b, ro, rb)
            elif isinstance(mode, str):  # an integer read-modify-write: commutes only with its own mode
                code_of = _mode_code(mode)
                if s.amode is None:
                    s.amode = np.full(len(s.bmin), -1, np.int16)
                before = s.amode[o]
                mixed = (before >= 0) & (before != code_of)
                s.amode[o] = code_of
                if mixed.any():  # every block that touched such an element takes part
                    self.mixed_ops.setdefault(array, (op, _mode_name(int(before[mixed][0]))))
                    om = o[mixed]
                    self._order_dependent(op, array, s, om, s.bmax[om], om, s.bmin[om], note=False)
        if locks is None and s.lmin is None:
            return
        if s.lmin is None:  # the first lock: every earlier access held none
            touched = s.bmax >= 0
            s.lmin = np.where(touched, -1, _NO_BLOCK)
            s.lmax = np.where(touched, -1, -2)
            if locks is None:
                return
        held = locks if locks is not None else np.full(len(o), -1, np.int64)
        # one block, or blocks holding the same: no duplicates issue
        if held[0] == held[-1] and (held == held[0]).all():
            s.lmax[o] = np.maximum(s.lmax[o], held[0])
            s.lmin[o] = np.minimum(s.lmin[o], held[0])
            return
        s.lmax[o] = _per_element(o, np.maximum(s.lmax[o], held), np.maximum)
        s.lmin[o] = _per_element(o, np.minimum(s.lmin[o], held), np.minimum)

    # ---- locks ----------------------------------------------------------------------------------
    def _locks_of(self, b: np.ndarray) -> np.ndarray | None:
        """Per lane, the id of the set of locks its block holds (-1: none)."""
        outer = {blk: self._set_id(frozenset(ids)) for blk, ids in self.held.items() if ids}
        if not outer:
            return None
        self.locked_accesses = True
        table = np.full(int(b.max()) + 1, -1, np.int64)
        for blk, lock in outer.items():
            if blk < len(table):
                table[blk] = lock
        return table[b]

    def _set_id(self, locks: frozenset[int]) -> int:
        if locks not in self._set_ids:
            self._set_ids[locks] = len(self.lock_sets)
            self.lock_sets.append(locks)
        return self._set_ids[locks]

    def protected_by_common_lock(self, a: int, b: int) -> bool:
        """Accesses made under lock sets ``a`` and ``b`` (ids) share a lock that was never broken."""
        if a < 0 or b < 0:
            return False
        return bool((self.lock_sets[a] & self.lock_sets[b]) - self.broken)

    def _lock_protocol(self, op: Op, array: int, o: np.ndarray, b: np.ndarray, code: int, old: Any, arg: Any,
                       expected: Any) -> None:
        """Follow acquire and release of lock elements, lane by lane (locks touch few elements)."""
        ordering = op.attrs.get("memory_ordering_semantics")
        cross = op.attrs.get("memory_scope") in CROSS_BLOCK_SCOPES
        for i, (offset, block) in enumerate(zip(o.tolist(), b.tolist())):
            key = (array, offset)
            lock = self.lock_ids.get(key)
            held = self.held.setdefault(block, [])
            if op.name == "atomic_cas_tko" and expected is not None:
                if old[i] != expected[i]:
                    continue  # a failed CAS writes nothing
                if lock is not None and lock in held and ordering in RELEASE_ORDERS and cross \
                        and arg[i] == self.free_value.get(lock):
                    held.remove(lock)  # released by a CAS of the taken value back to the free one
                    continue
                if ordering in ACQUIRE_ORDERS and cross and arg[i] != expected[i]:
                    if lock is None:
                        lock = self.lock_ids[key] = len(self.lock_ids)
                    if lock in held or self.free_value.setdefault(lock, expected[i].item()) != expected[i]:
                        self.broken.add(lock)
                    held.append(lock)
                    continue
            elif (op.name == "atomic_rmw_tko" and op.attrs.get("mode") == "xchg"
                  or op.name == "store_ptr_tko") \
                    and lock is not None and lock in held and ordering in RELEASE_ORDERS and cross \
                    and arg is not None and arg[i] == self.free_value.get(lock):
                held.remove(lock)
                continue
            # any other write to a lock element breaks the lock (now, or once it becomes one)
            if lock is None:
                lock = self.lock_ids[key] = len(self.lock_ids)
            self.broken.add(lock)

    def _keep(self, rec: Records, o: np.ndarray, b: np.ndarray, locks: np.ndarray | None,
              sel: np.ndarray | None, event: int, lanes: np.ndarray) -> None:
        rec.offset.append(o)
        rec.block.append(b)
        held = np.full(len(o), -1, np.int64) if locks is None else (locks[sel] if sel is not None else locks)
        rec.lock.append(held)
        rec.event.append(np.full(len(o), event, np.int64))
        rec.lane.append(lanes)


def _unchanged(op: Op, old: np.ndarray | None, arg: np.ndarray | None,
               expected: np.ndarray | None) -> np.ndarray | None:
    """Per lane of an exchange or compare-and-swap, whether it left the element as it was (a failed
    CAS, or one that writes the value it found): such a lane only read, and its order with the
    other atomics on the element changes nothing. None for other ops."""
    if old is None or arg is None:
        return None
    if op.name == "atomic_cas_tko" and expected is not None:
        return (old != expected) | (arg == old)
    if op.name == "atomic_rmw_tko" and op.attrs.get("mode") == "xchg":
        return arg == old
    return None


def _per_element(index: np.ndarray, values: np.ndarray, fn: Any) -> np.ndarray:
    """``values`` with each entry replaced by the reduction over the entries of the same index, so
    that ``target[index] = result`` is right whichever duplicate lands last."""
    order = np.argsort(index, kind="stable")
    sorted_index = index[order]
    new_group = np.r_[True, sorted_index[1:] != sorted_index[:-1]]
    reduced = fn.reduceat(values[order], np.flatnonzero(new_group))
    out = np.empty_like(values)
    out[order] = reduced[np.cumsum(new_group) - 1]
    return out



def _mode_name(code: int) -> str:
    return next((m for m, c in _MODES.items() if c == code), "?")
