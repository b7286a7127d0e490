"""Schedules: which blocks run together, how waves interleave, and the order of a block's ops.

``Schedule()`` (the default) runs blocks in order, in lockstep waves as large as memory allows
(``tilecheck.interp.budget``), ops in program order: fast and deterministic. ``Schedule(seed)`` is adversarial: a seeded shuffle of the blocks into
waves of random sizes, waves interleaved at random at memory-op granularity, and inside a block
a random order of the ops that is consistent with data dependence and token order — memory ops
that nothing orders may swap. ``Schedule(seed, sequential="forward" | "reverse" | "shuffled")`` runs
the blocks one at a time, each to its end, in that order: a race whose two accesses lie far apart
in the blocks' programs (one block done before the other begins) shows there, where a random
interleaving reaches it rarely. A race-free kernel gives the same bits under every schedule.
"""
from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tilecheck.ir import Block, Op
from tilecheck.ir.opdefs import Effect


# Every CPU run is bounded: a loop that runs this many trips in one block without ending is taken
# for one that never ends (about 10 s of interpreter time for a small loop body). Raise it with
# ``Schedule(max_trips=...)`` or ``tilecheck run --max-trips``.
LOOP_TRIPS = 100_000
# a sequential schedule whose blocks may wait for one another cannot run them one after the other (a
# spin could wait forever): it steps the first started block this often, any block otherwise, so one
# block still gets far ahead of the others, and a spinning one lets the others on
SEQUENTIAL_LEAD = 0.97


@dataclass
class Schedule:
    seed: int | None = None
    max_wave: int | None = None  # largest wave; None = no limit
    interleave: bool = True
    reorder: bool = True
    max_memory_ops: int = 50_000_000
    max_iterations: int | None = None  # loop iterations in all (None: no limit)
    # trips of one loop in one run of it (a while loop that never ends stops here, naming the loop)
    max_trips: int | None = None
    max_elements: int | None = None  # array elements the memory ops move, in all (None: no limit)
    # the run's work in steps (``Interpreter.steps``: one per op a wave runs, and one per
    # ``VALUES_PER_STEP`` values it computes), in all (None: no limit)
    max_steps: int | None = None
    # adversarial only: the shuffled blocks one at a time, each to its end (blocks that may wait for
    # one another interleave, the first started one far ahead: ``SEQUENTIAL_LEAD``)
    sequential: str | None = None  # "forward", "reverse" or "shuffled" (a seeded order of the blocks)
    _orders: dict[int, list[Op]] = field(default_factory=dict, repr=False)
    # the wave being stepped is the only one running, and no other can start before it ends: no
    # other block can change what it reads (``drive`` keeps it; a stuck ``loop`` is then stopped)
    alone: bool = field(default=True, repr=False)

    def __post_init__(self) -> None:
        if self.max_trips is None:
            self.max_trips = LOOP_TRIPS
        self.rng = np.random.default_rng(self.seed) if self.seed is not None else None

    @property
    def adversarial(self) -> bool:
        return self.rng is not None

    # ---- blocks -> waves -----------------------------------------------------------------------
    def waves(self, blocks: np.ndarray, single: bool, alive: int | None = None) -> list[np.ndarray]:
        """The blocks, in waves of at most ``max_wave`` and ``alive`` blocks (None: no limit)."""
        n = len(blocks)
        cap = min(self.max_wave or n, alive or n)
        if not self.adversarial:
            size = 1 if single else cap
            return [blocks[i:i + size] for i in range(0, n, size)]
        # a sequential schedule's order is named, not drawn: seeds drawn close together can give
        # the same first permutation (every multiple of 4 below 40 puts block 1 first of 2)
        order = (np.arange(n) if self.sequential == "forward" else np.arange(n)[::-1]
                 if self.sequential == "reverse" else self.rng.permutation(n))
        blocks = blocks[order]
        if single or self.sequential:
            return [blocks[i:i + 1] for i in range(n)]
        waves, start = [], 0
        while start < n:
            size = int(self.rng.integers(1, min(cap, n - start) + 1))
            if self.rng.random() < 0.5:  # favour some small waves: more interleavings
                size = max(1, size // 4)
            waves.append(blocks[start:start + size])
            start += size
        return waves

    # ---- waves -> one execution ----------------------------------------------------------------
    def drive(self, waves: list[np.ndarray], start: Callable[[np.ndarray], Generator[None, None, Any]],
              alive: int | None = None, waiting: bool = False,
              width: Callable[[int], int] | None = None) -> None:
        """Run the waves (``start(wave)`` gives its steps). An interleaving schedule starts waves, in
        order, while the blocks of the started, unfinished ones stay within ``alive`` (one wave at
        least), and steps a random started one: memory stays bounded by ``alive`` blocks. Blocks
        that may wait for one another (``waiting``: a spin on a flag) are never run one after the
        other to completion, which could wait forever: the default schedule then steps the started
        waves in turn (round robin), deterministically. ``width(n)``: how many of a wave's next ``n``
        blocks may start together (the rest start as a wave of their own, later)."""
        if not (self.adversarial and self.interleave and not self.sequential) and not waiting:
            self.alone = True
            for wave in waves:
                while len(wave):
                    n = len(wave) if width is None else width(len(wave))
                    for _ in start(wave[:n]):
                        pass
                    wave = wave[n:]
            return
        limit = alive or sum(len(w) for w in waves)
        pending = list(reversed(waves))
        live: list[tuple[int, Generator[None, None, Any]]] = []
        held = 0
        turn = 0
        while live or pending:
            while pending and (not live or held + len(pending[-1]) <= limit):
                wave = pending.pop()
                n = len(wave) if width is None else width(len(wave))
                if n < len(wave):
                    pending.append(wave[n:])
                    wave = wave[:n]
                live.append((len(wave), start(wave)))
                held += len(wave)
            if self.adversarial and self.sequential and len(live) > 1 and self.rng.random() < SEQUENTIAL_LEAD:
                i = 0  # blocks that wait for one another: the first started runs ahead, the rest trail it
            else:
                i = int(self.rng.integers(len(live))) if self.adversarial else turn % len(live)
            self.alone = len(live) == 1  # the pending ones start only once a live one ends
            try:
                next(live[i][1])
                turn = i + 1
            except StopIteration:
                held -= live.pop(i)[0]
                turn = i

    # ---- the ops of a block ------------------------------------------------------------------
    def order(self, block: Block, interp: Any) -> list[Op]:
        if not self.adversarial or not self.reorder:
            return block.ops
        key = id(block)
        if key not in self._orders:
            self._orders[key] = _random_topological_order(block, interp, self.rng)
        return self._orders[key]


def _effectful(op: Op) -> bool:
    """Ops whose order matters beyond data dependence: memory ops, terminators, and region ops
    (they may hold memory ops, or a ``break``/``continue`` that ends the iteration)."""
    if op.opdef is None or op.regions:
        return True
    return op.opdef.effect is not Effect.NONE or op.opdef.terminator


def _random_topological_order(block: Block, interp: Any, rng: np.random.Generator) -> list[Op]:
    """A random order of the block's ops that keeps every data dependence, every token-ordered pair
    of memory ops, atomics and region ops in program order, and the terminator last."""
    graph = interp.order_graph()
    ops = block.ops
    position = {op: i for i, op in enumerate(ops)}
    preds: list[set[int]] = [set() for _ in ops]
    defined_here = {v: position[op] for op in ops for v in op.results}
    effectful = [i for i, op in enumerate(ops) if _effectful(op)]
    for i, op in enumerate(ops):
        for inner in op.walk():  # values used anywhere inside a region op
            for v in inner.operands:
                if v in defined_here and defined_here[v] != i:
                    preds[i].add(defined_here[v])
    for a_i, a in enumerate(effectful):
        for b in effectful[a_i + 1:]:
            x, y = ops[a], ops[b]
            keep = (x.regions or y.regions or x.opdef is None or y.opdef is None or x.opdef.terminator
                    or y.opdef.terminator or x.opdef.effect is Effect.ATOMIC or y.opdef.effect is Effect.ATOMIC
                    or graph.reaches(("op", x), ("op", y)))
            if keep:
                preds[b].add(a)
    remaining = [len(p) for p in preds]
    succs: list[list[int]] = [[] for _ in ops]
    for b, p in enumerate(preds):
        for a in p:
            succs[a].append(b)
    ready = [i for i, n in enumerate(remaining) if n == 0]
    out = []
    while ready:
        pick = ready.pop(int(rng.integers(len(ready))))
        out.append(ops[pick])
        for b in succs[pick]:
            remaining[b] -= 1
            if remaining[b] == 0:
                ready.append(b)
    return out
