"""Who writes which element of one launch, and where two blocks race on one: the truth a picture of
the partition is drawn from (``runtime/picture.py``), taken from the exact detector's own runs.

The launch runs once as ``detect`` runs it (lockstep order, copies of the arguments), with the
recorder also keeping, per element of memory, the least block that wrote it. The elements two blocks
conflict on are the detector's (``pairs.conflicts``); where spin locks or release/acquire edges may
order some of them, a second run keeps every access to those elements and each is kept only when
some pair of its accesses is ordered by neither, as ``detect`` decides its witnesses. Elements are
positions in each array's memory (``ArrayMemory.flat``): what a block touches, not what the view
shows.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tilecheck.grid import normalize_grid
from tilecheck.interp.detect import SEEDED_ORDERS, run_once
from tilecheck.interp.engine import InterpreterError
from tilecheck.interp.pairs import conflicts, new_sync, static_facts, unordered_across_blocks
from tilecheck.interp.recorder import ATOMIC, READ, WRITE, Recorder
from tilecheck.interp.wave import TripLimitError
from tilecheck.ir import triton as triton_frontend
from tilecheck.ir.cutile import module_for
from tilecheck.ir.summary import validated_loads

NO_BLOCK = -1


@dataclass
class ArrayOwners:
    """One written array: per element of its memory, the block that writes it and whether two
    blocks race on it (with the two blocks)."""

    name: str
    shape: tuple[int, ...]  # the argument's shape (its view)
    writer: np.ndarray  # int32 per element: the least block (linear id) that writes it, NO_BLOCK: none
    racing: np.ndarray  # bool per element
    # (n, 2) int32: two blocks that race on each racing element, the lesser first: its writer and
    # another block that touches it (the least or the greatest); for other elements, the least and
    # greatest block that touch it
    blocks: np.ndarray

    @property
    def racing_elements(self) -> list[int]:
        return np.flatnonzero(self.racing).tolist()


@dataclass
class Owners:
    kernel: str
    grid: tuple[int, int, int]
    arrays: list[ArrayOwners]  # the arrays some block writes, in parameter order
    orders: int = 1  # block orders run (more than one where addresses may depend on the order)



class _OwnerRecorder(Recorder):
    """The detector's recorder, also keeping the least block that writes each element."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.writers: dict[int, np.ndarray] = {}
        self.memories: dict[int, Any] = {}

    def bind(self, arrays: dict[int, Any]) -> None:
        super().bind(arrays)
        self.memories = arrays

    def _own(self, array: int, o: np.ndarray, b: np.ndarray) -> None:
        w = self.writers.get(array)
        if w is None:
            w = self.writers[array] = np.full(self.sizes[array], np.iinfo(np.int32).max, np.int32)
        np.minimum.at(w, o, b.astype(np.int32))

    def _summarise(self, op: Any, array: int, o: np.ndarray, b: np.ndarray, code: int, locks: Any) -> None:
        super()._summarise(op, array, o, b, code, locks)
        if code in (WRITE, ATOMIC):
            self._own(array, o, b)

    def _summarise_run(self, op: Any, array: int, run: tuple[int, int], ids: np.ndarray, code: int) -> None:
        super()._summarise_run(op, array, run, ids, code)
        if code in (WRITE, ATOMIC):
            first, tile = run
            self._own(array, np.arange(first, first + len(ids) * tile, dtype=np.int64), np.repeat(ids, tile))


def owners(kernel: Any, args: Sequence[Any], grid: Any, *, max_elements: int | None = None) -> Owners:
    """Run the launch as the exact detector does and say who writes what, and where blocks race.
    ``InterpreterError`` when the launch cannot run."""
    kernel, args = triton_frontend.resolve(kernel, args)
    grid3 = normalize_grid(grid)
    args = tuple(args)
    module, _ = module_for(kernel, args)
    function = module.entry
    _, locks, written, order_dependent = static_facts(function)
    guesses = validated_loads(function)
    first = _OwnerRecorder(grid3, locks, None, (), written, new_sync(function), None, guesses)
    run_once(module, args, grid3, None, first, max_elements)
    racing = _racing(first, module, args, grid3, locks, written, guesses, max_elements)
    # where an address may depend on the order of blocks (tickets, values read under a lock), the
    # detector also runs seeded adversarial orders: a race in any of them is a race of this launch
    for seed in range(SEEDED_ORDERS) if order_dependent else ():
        again = _OwnerRecorder(grid3, locks, None, (), written, new_sync(function), None, guesses)
        try:
            run_once(module, args, grid3, seed, again, max_elements)
            found = _racing(again, module, args, grid3, locks, written, guesses, max_elements, seed)
        except TripLimitError:  # an order in which a spin never ends: the detector notes it, and so do we
            continue
        for array, mask in found.items():
            racing[array] = racing[array] | mask if array in racing else mask
    out = []
    for index, memory in sorted(first.memories.items()):
        group, shift = first.alias.get(index, (index, 0))
        summary = first.summaries.get(group)
        if summary is None or not summary.writes[shift:shift + len(memory.flat)].any():
            continue
        span = slice(shift, shift + len(memory.flat))
        writers = first.writers.get(group)
        writer = np.full(len(memory.flat), NO_BLOCK, np.int32) if writers is None else writers[span].copy()
        writer[writer == np.iinfo(np.int32).max] = NO_BLOCK
        racing_group = racing.get(group, np.zeros(first.sizes[group], bool))
        low, high = summary.bmin[span], summary.bmax[span]
        other = np.where(high != writer, high, low)
        racing_here = racing_group[span]
        named = racing_here & (writer != NO_BLOCK)
        lesser = np.where(named, np.minimum(writer, other), low)
        greater = np.where(named, np.maximum(writer, other), high)
        blocks = np.stack([lesser, greater], axis=1).astype(np.int32)
        out.append(ArrayOwners(memory.name, tuple(memory.shape), writer, racing_here.copy(), blocks))
    return Owners(module.name, grid3, out, SEEDED_ORDERS + 1 if order_dependent else 1)


def _racing(rec: _OwnerRecorder, module: Any, args: tuple[Any, ...], grid: tuple[int, int, int], locks: Any,
            written: Any, guesses: Any, max_elements: int | None, seed: int | None = None) -> dict[int, np.ndarray]:
    """Per array, the elements two blocks race on in the run ``rec`` recorded: the detector's
    candidates, each decided on a second run's full records where locks or release/acquire edges
    may order its accesses."""
    candidates = conflicts(rec)
    ordered = bool(rec.lock_sets) or (rec.sync is not None and bool(rec.sync.acquires))
    if not ordered or not any(m.any() for m in candidates.values()):
        return candidates
    function = module.entry
    second = run_once(module, args, grid, seed, Recorder(grid, locks, candidates, (), written, new_sync(function),
                                                         None, guesses), max_elements)
    return {array: _exactly(second, array, mask) if mask.any() else mask for array, mask in candidates.items()}


def _exactly(rec: Recorder, array: int, candidates: np.ndarray) -> np.ndarray:
    """Of the candidate elements, those where two accesses of different blocks conflict (one
    writes, not both atomic) and neither a common lock nor release/acquire orders them."""
    out = np.zeros_like(candidates)
    records = rec.records.get(array)
    if records is None:
        return out
    col = records.columns()
    effect = np.array([rec.events[int(e)].effect for e in col["event"]], np.int64)
    order = np.argsort(col["offset"], kind="stable")
    offsets = col["offset"][order]
    starts = np.flatnonzero(np.r_[True, offsets[1:] != offsets[:-1]]) if len(offsets) else np.zeros(0, np.int64)
    for start, end in zip(starts.tolist(), [*starts[1:].tolist(), len(offsets)]):
        rows = order[start:end]
        if _conflicting(rec, col, effect, rows):
            out[int(offsets[start])] = True
    return out


def _conflicting(rec: Recorder, col: dict[str, np.ndarray], effect: np.ndarray, rows: np.ndarray) -> bool:
    rows = rows.tolist()
    for n, i in enumerate(rows):
        for j in rows[n + 1:]:
            if effect[i] == effect[j] == READ or effect[i] == effect[j] == ATOMIC:
                continue
            if unordered_across_blocks(rec, col, i, j):
                return True
    return False


__all__ = ["ArrayOwners", "InterpreterError", "NO_BLOCK", "Owners", "owners"]
