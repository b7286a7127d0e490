"""Happens-before across blocks, as executed (the Tile IR memory model's synchronises-with).

A release write (a store or atomic with ``release`` or ``acq_rel`` ordering, at device or system
scope) heads a *release sequence* on its element; the read-modify-writes that follow on that
element, by any block, continue it (a plain store ends it). An acquire read (a load or atomic
with ``acquire`` or ``acq_rel`` ordering, at a scope spanning blocks) that reads a value of the
sequence synchronises with every release heading it. Happens-before is program order inside a
block, plus these edges, closed transitively.

Only acquires whose value decides a branch (a spin loop's exit, a "last ticket" test:
``ir.summary.steering_acquires``) take part: one that does not wait for the value it reads may
read an older one in another schedule, so the order it gave this run is not an order of the
launch.

``Sync`` follows the run: every access gets a tick (one per op instance, increasing), release
sequences are kept per element of the arrays some release or acquire op touches, and each acquire
remembers the prefix of the sequence it read. ``ordered`` then answers, for two accesses of
different blocks, whether one happens before the other, by walking the edges backwards from the
later one. Program order is the order the interpreter ran the block's ops in, which keeps every
atomic in program order (``Schedule.order``).
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass, field

import numpy as np

from tilecheck.ir import Op
from tilecheck.ir.summary import ACQUIRE_ORDERS, CROSS_BLOCK_SCOPES, RELEASE_ORDERS
_WALK_LIMIT = 2_000_000  # release records one question may visit before it is left undecided


def _ordering(op: Op) -> str:
    return op.attrs.get("memory_ordering_semantics", "weak")


class Undecided(Exception):
    """A happens-before question past the walk limit."""


@dataclass
class _Acquire:
    tick: int
    sequence: list[tuple[int, int]]  # the release sequence read (shared, append-only)
    length: int  # how much of it had been written when the value was read


@dataclass
class Sync:
    arrays: set[int | None]  # the arrays a steering acquire reads (flags, counters, locks)
    steering: frozenset[Op]  # the acquires whose value decides a branch (``steering_acquires``)
    tick: int = 0
    # (array, offset) -> the release sequence of the element's current value: (block, tick) of each
    # release in it; a plain store starts a new (empty) list, so an acquire's (list, length) stays valid
    sequences: dict[tuple[int, int], list[tuple[int, int]]] = field(default_factory=dict)
    acquires: dict[int, list[_Acquire]] = field(default_factory=dict)  # block -> its acquires, by tick
    undecided: bool = False  # some question went past the walk limit (counted as not ordered)
    _memo: dict[tuple[int, int, int, int], bool] = field(default_factory=dict)

    def step(self) -> int:
        """The tick of the op instance being recorded."""
        self.tick += 1
        return self.tick

    def follows(self, array: int | None) -> bool:
        return array in self.arrays or None in self.arrays

    def access(self, op: Op, array: int, offsets: np.ndarray, blocks: np.ndarray, effect: str,
               old: np.ndarray | None, arg: np.ndarray | None, expected: np.ndarray | None) -> None:
        """One op instance on an element of a followed array, lane by lane in the order the
        interpreter applied them (several lanes on one counter read each other's writes)."""
        ordering = _ordering(op)
        cross = op.attrs.get("memory_scope") in CROSS_BLOCK_SCOPES
        acquires = cross and ordering in ACQUIRE_ORDERS
        releases = cross and ordering in RELEASE_ORDERS
        rmw = op.name in ("atomic_rmw_tko", "atomic_cas_tko")
        for i, (offset, block) in enumerate(zip(offsets.tolist(), blocks.tolist())):
            key = (array, offset)
            sequence = self.sequences.get(key)
            if effect != "write" and acquires and sequence and op in self.steering:
                self.acquires.setdefault(block, []).append(_Acquire(self.tick, sequence, len(sequence)))
            if effect == "read":
                continue
            if rmw:
                if op.name == "atomic_cas_tko" and expected is not None and old[i] != expected[i]:
                    continue  # a failed compare-and-swap writes nothing
                if releases:  # a read-modify-write continues the sequence it read, and may head one
                    if sequence is None:
                        sequence = self.sequences[key] = []
                    sequence.append((block, self.tick))
                continue
            self.sequences[key] = [(block, self.tick)] if releases else []

    def ordered(self, first: tuple[int, int], later: tuple[int, int]) -> bool:
        """Does the access of block ``first[0]`` at tick ``first[1]`` happen before the one of block
        ``later[0]`` at tick ``later[1]`` (different blocks)? Raises ``Undecided`` past the limit."""
        key = (*first, *later)
        if key not in self._memo:
            self._memo[key] = self._reaches(first, later)
        return self._memo[key]

    def _reaches(self, first: tuple[int, int], later: tuple[int, int]) -> bool:
        source, after = first
        explored: dict[int, int] = {}  # block -> the tick up to which its acquires were followed
        frontier = [later]
        visited = 0
        while frontier:
            block, tick = frontier.pop()
            done = explored.get(block, 0)
            if tick <= done:
                continue
            explored[block] = tick
            mine = self.acquires.get(block, [])
            lo = bisect.bisect_right(mine, done, key=lambda a: a.tick)
            hi = bisect.bisect_right(mine, tick, key=lambda a: a.tick)
            for acquire in mine[lo:hi]:
                visited += acquire.length
                if visited > _WALK_LIMIT:
                    raise Undecided
                for releaser, released in acquire.sequence[:acquire.length]:
                    if releaser == source and released >= after:  # (the release itself included: an RMW)
                        return True
                    if releaser != block:
                        frontier.append((releaser, released))
        return False
