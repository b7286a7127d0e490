"""Which values of a kernel decide what memory it touches (a backward liveness analysis).

A run that only asks where blocks read and write (the exact detector, a witness's confirmation)
need not compute a value that decides no address, no mask, no branch or loop bound, no atomic and
nothing read back from memory: an attention kernel's matrix products and exponentials only reach
its output. The interpreter skips the pure ops whose results are all such values
(``Interpreter(..., compute="deciding")``), giving zero tiles of their type instead.

A value *decides* when it is, or flows into (through an op's operands, a region's yields and a
loop's carried values):

- an operand of a memory op other than the value a store writes (views, indices, pointers, masks,
  padding, tokens), every operand of an atomic, and the value a store writes to memory some op may
  read (it may come back as an address or a branch);
- the condition of an ``if``, the bounds of a ``for``, the operands of an op of unknown effect or
  of one with no result (an assert, a print).
"""
from __future__ import annotations

import functools
from typing import Any

from tilecheck.ir.core import Function, Op
from tilecheck.ir.opdefs import Effect
from tilecheck.ir.summary import address_root, may_share
from tilecheck.ir.types import ScalarType, TileType

# the operand a store writes (what it does not decide by itself)
_STORED = {"store_view_tko": "tile", "store_ptr_tko": "value"}
_LOOPS = ("for", "loop")


@functools.lru_cache(maxsize=64)
def skippable(function: Function) -> frozenset[Op]:
    """The pure ops (no memory effect, not a terminator, not a branch or loop: a reduction whose
    combiner touches no memory is one) none of whose results decides what memory the kernel
    touches."""
    return _pure_unless(function, _deciding(function, stores_come_back=True))


@functools.lru_cache(maxsize=64)
def unread_by_model(function: Function) -> frozenset[Op]:
    """``skippable``'s ops for the symbolic model, which reads a loaded value as an unknown of the
    array's contents, never as what a store wrote: a stored value decides nothing there, wherever
    it is stored. The kernel's assume ops are kept (the model keeps their facts)."""
    return frozenset(op for op in _pure_unless(function, _deciding(function, stores_come_back=False))
                     if op.name != "assume")


def _pure_unless(function: Function, live: set[int]) -> frozenset[Op]:
    out = set()
    for op in function.walk():
        opdef = op.opdef
        if (opdef is None or opdef.terminator or opdef.effect is not Effect.NONE or not op.results
                or op.name in ("if", *_LOOPS) or not _pure(op)):
            continue
        if not any(id(v) in live or not _numeric(v.type) for v in op.results):
            out.add(op)
    return frozenset(out)


def _pure(op: Op) -> bool:
    """Nothing inside ``op``'s regions (a reduction's combiner) touches memory."""
    return all(inner.opdef is not None and inner.opdef.effect is Effect.NONE for inner in op.walk())


def _numeric(t: Any) -> bool:
    """A tile (or scalar) of numbers: what a skipped op gives zeros of (not a pointer, view or token)."""
    element = t.element if isinstance(t, TileType) else t
    return isinstance(element, ScalarType)


def _deciding(function: Function, stores_come_back: bool) -> set[int]:
    ops = list(function.walk())
    read = [address_root(op, function) for op in ops
            if op.opdef is not None and op.opdef.effect in (Effect.READ, Effect.ATOMIC)]
    live: set[int] = set()
    loops: dict[int, Op] = {}  # each terminator's loop (continue, break) or region op (yield)
    _parents(function.body.ops, None, None, loops)

    def add(values: Any) -> bool:
        changed = False
        for v in values:
            if id(v) not in live:
                live.add(id(v))
                changed = True
        return changed

    for op in ops:  # the roots
        opdef = op.opdef
        if opdef is None or opdef.effect is Effect.ATOMIC:
            add(op.operands)
        elif opdef.effect is Effect.WRITE:
            stored = op.operand(_STORED.get(op.name, ""))
            root = address_root(op, function)
            comes_back = stores_come_back and any(may_share(root, r) for r in read)
            add(v for v in op.operands if v is not stored or comes_back)
        elif opdef.effect is Effect.READ:
            add(op.operands)
        elif op.name == "if":
            add(op.operands[:1])
        elif op.name == "for":
            add(op.operands[:3])
        elif not op.results and not opdef.terminator:  # an assert, a print: what it reads matters
            add(op.operands)
    changed = True
    while changed:
        changed = False
        for op in ops:
            name = op.name
            if name in ("yield", "continue", "break"):
                target = loops.get(id(op))
                if target is None:
                    changed |= add(op.operands)
                    continue
                changed |= add(x for x, r in zip(op.operands, _fed(target, name)) if id(r) in live)
            elif name in _LOOPS:
                body = op.regions[0].block
                carried = body.args[1:] if name == "for" else body.args
                inits = op.operands[3:] if name == "for" else op.operands
                for i, arg in enumerate(carried):
                    if id(arg) in live or name == "for" and i < len(op.results) and id(op.results[i]) in live:
                        changed |= add((arg, inits[i]))
                        if name == "for" and i < len(op.results):
                            changed |= add((op.results[i],))
            elif op.regions and name != "if":
                # reduce, scan and the like: a result that decides makes all they read decide
                if any(id(r) in live for r in op.results):
                    changed |= add(op.operands)
                    changed |= add(v for region in op.regions for block in region.blocks
                                   for inner in block.ops for v in (*inner.operands, *block.args))
            elif (not op.regions and op.opdef is not None and op.opdef.effect is Effect.NONE
                  and any(id(r) in live for r in op.results)):
                changed |= add(op.operands)  # (a memory op's operands are roots, or not: above)
    return live


def _fed(target: Op, terminator: str) -> tuple[Any, ...]:
    """The values a terminator's operands become: an ``if``'s results for its yield, a loop's
    carried values for a continue (and a ``for``'s results), a ``loop``'s results for a break."""
    if target.name == "if" or terminator == "break":
        return target.results
    body = target.regions[0].block
    return body.args[1:] if target.name == "for" else body.args


def _parents(ops: list[Op], loop: Op | None, branch: Op | None, loops: dict[int, Op]) -> None:
    """Record each terminator's target: the innermost loop for continue and break, the innermost
    region op for a yield."""
    for op in ops:
        if op.name in ("continue", "break") and loop is not None:
            loops[id(op)] = loop
        elif op.name == "yield" and branch is not None:
            loops[id(op)] = branch
        for region in op.regions:
            for block in region.blocks:
                inner_loop = op if op.name in _LOOPS else loop
                _parents(block.ops, inner_loop, op, loops)
