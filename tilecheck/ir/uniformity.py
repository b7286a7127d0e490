"""Which values may differ between the blocks of one lockstep wave (a divergence analysis).

The CPU interpreter runs several blocks at once, one lane each, and keeps one array view per wave:
a view or list pointer that differs between the lanes, or a spin that waits for a block of its own
wave, needs waves of one block. This says, before a run, which ops can do that.

A value is *uniform* when every block that computes it at the same point of a lockstep run (the
same trip of each enclosing loop) gets the same value. It is *divergent* when it may not:

- the block's id (``get_tile_block_id``) is divergent;
- so is what a load returns, unless it reads an entry array no op of the kernel writes (at uniform
  coordinates: then every block reads the same element, whenever it reads it), and what an atomic
  returns;
- an op with a divergent operand has divergent results (tokens carry no value);
- a region op's results are divergent where blocks may leave it differently: an ``if`` on a
  divergent condition, a ``for`` with divergent bounds, a loop left by a ``break`` (or carried on by
  a ``continue``) reached under a divergent condition, or a divergent value yielded.

Inside a region entered under a divergent condition, values stay uniform among the blocks that
run it: only those are in the wave's active mask. The interpreter checks the same at run time (a
view whose sizes differ between active lanes is an error), so a mistake here is an error, never a
wrong answer.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from tilecheck.ir.core import Function, Op
from tilecheck.ir.opdefs import Effect
from tilecheck.ir.summary import address_root, may_share
from tilecheck.ir.types import TokenType

_LOOPS = ("for", "loop")


@dataclass(frozen=True)
class Uniformity:
    divergent: frozenset[int]  # ids of values that may differ between the blocks of a wave
    racy: frozenset[int]  # ids of values derived from memory other blocks may write (or atomics)

    def varies(self, op: Op) -> bool:
        """Some operand of ``op`` may differ between the blocks of a wave."""
        return any(id(v) in self.divergent for v in op.operands)

    def may_wait(self, loop: Op) -> bool:
        """Whether ``loop`` may go on until another block writes memory: a branch or a loop bound
        inside it depends on what another block may write (a spin on a flag, a ticket). Such a loop
        in lockstep could wait for a block of its own wave forever."""
        for op in loop.walk():
            if op is loop:
                continue
            if op.name == "if" and id(op.operands[0]) in self.racy:
                return True
            if op.name == "for" and any(id(v) in self.racy for v in op.operands[:3]):
                return True
        return False


@functools.lru_cache(maxsize=64)
def of(function: Function) -> Uniformity:
    """The divergent and the racy values of ``function`` (a kernel of distinct arrays: an entry
    array is written only through its own argument, and a list's arrays only through its table's
    pointers)."""
    unstable = _unstable_reads(function)
    blocks = [op for op in function.walk() if op.name == "get_tile_block_id"]
    racy = _spread(function, unstable)
    divergent = _spread(function, unstable + blocks)
    return Uniformity(frozenset(divergent), frozenset(racy))


def _unstable_reads(function: Function) -> list[Op]:
    """Reads whose value another block may change: atomics, ops of unknown effect, and loads of an
    array some op writes (every load, when a write's target cannot be traced)."""
    written = set()
    for op in function.walk():
        opdef = op.opdef
        if opdef is None or opdef.effect in (Effect.WRITE, Effect.ATOMIC):
            written.add(address_root(op, function) if opdef is not None else None)
    out = []
    for op in function.walk():
        opdef = op.opdef
        if opdef is None or opdef.effect is Effect.ATOMIC:
            out.append(op)
        elif opdef.effect is Effect.READ:
            root = address_root(op, function)
            if any(may_share(root, w) for w in written):
                out.append(op)
    return out


def _spread(function: Function, seeds: list[Op]) -> set[int]:
    """Ids of the values of ``seeds`` and of everything computed from them, by data and by the
    control flow that decides which values a region op hands on (to a fixpoint)."""
    out: set[int] = set()
    seeded = {id(op) for op in seeds}
    exits: set[int] = set()  # loops some block may leave (or go on in) under a divergent condition

    def mark(values: Any) -> bool:
        changed = False
        for v in values:
            if id(v) not in out and not isinstance(v.type, TokenType):
                out.add(id(v))
                changed = True
        return changed

    def has(values: Any) -> bool:
        return any(id(v) in out for v in values)

    def visit(ops: list[Op], loops: list[Op], diverged: set[int]) -> bool:
        """``diverged``: the enclosing loops that a divergent condition separates from here."""
        changed = False
        for op in ops:
            name = op.name
            if name in ("continue", "break") and loops:
                loop = loops[-1]
                if id(loop) in diverged and id(loop) not in exits:
                    exits.add(id(loop))
                    changed = True
                carried = loop.regions[0].block.args[1:] if loop.name == "for" else loop.regions[0].block.args
                if name == "continue":
                    changed |= mark(v for v, x in zip(carried, op.operands) if id(x) in out)
                    if loop.name == "for":
                        changed |= mark(r for r, x in zip(loop.results, op.operands) if id(x) in out)
                else:
                    changed |= mark(r for r, x in zip(loop.results, op.operands) if id(x) in out)
                continue
            if not op.regions:
                if id(op) in seeded or has(op.operands):
                    changed |= mark(op.results)
                continue
            inner_diverged = set(diverged)
            if name == "if":
                if id(op.operands[0]) in out:
                    changed |= mark(op.results)
                    inner_diverged |= {id(loop) for loop in loops}
                for region in op.regions:
                    for block in region.blocks:
                        changed |= visit(block.ops, loops, inner_diverged)
                        term = block.ops[-1] if block.ops else None
                        if term is not None and term.name == "yield":
                            changed |= mark(r for r, x in zip(op.results, term.operands) if id(x) in out)
                continue
            if name in _LOOPS:
                body = op.regions[0].block
                if name == "for":
                    lb, ub, step, *inits = op.operands
                    if has((lb, step)):
                        changed |= mark(body.args[:1])
                    bounds = has((lb, ub, step))
                    carried = body.args[1:]
                else:
                    inits, bounds, carried = op.operands, False, body.args
                changed |= mark(v for v, x in zip(carried, inits) if id(x) in out)
                changed |= mark(r for r, x in zip(op.results, inits) if id(x) in out)
                if id(op) in exits:  # blocks reach different continues: different carried values
                    changed |= mark(carried)
                if bounds or id(op) in exits:  # blocks leave it after different trips
                    changed |= mark(op.results)
                    inner_diverged |= {id(loop) for loop in loops}
                changed |= visit(body.ops, [*loops, op], inner_diverged)
                continue
            # reduce, scan and the like: computed per block from their operands
            if id(op) in seeded or has(op.operands):
                changed |= mark(op.results)
                changed |= mark(a for region in op.regions for block in region.blocks for a in block.args)
            for region in op.regions:
                for block in region.blocks:
                    changed |= visit(block.ops, loops, inner_diverged)
                    term = block.ops[-1] if block.ops else None
                    if term is not None and term.name == "yield" and has(term.operands):
                        changed |= mark(op.results)
        return changed

    while visit(function.body.ops, [], set()):
        pass
    return out
