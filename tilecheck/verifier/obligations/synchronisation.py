"""What the static check knows of synchronisation between blocks (docs/semantics/synchronisation.md):
which conflicts release/acquire edges may order (deferred to the exact detector
at a launch, never reported as races), which compare-and-swaps only read, and which atomics'
returned values steer what the kernel writes (``order-dependent-atomic`` warnings)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tilecheck.ir.summary import (
    CROSS_BLOCK_SCOPES,
    RELEASE_ORDERS,
    steered_message,
    steered_writes,
    steering_acquires,
)
from tilecheck.verifier.model.footprints import Access, common_loops
from tilecheck.verifier.obligations.locks import SpinLock, constant_value
from tilecheck.verifier.solver import smt


@dataclass(frozen=True)
class Synchronising:
    """A kernel's steering acquires (``ir.summary.steering_acquires``: their value decides a
    branch, so they wait for what they read), the releases on the arrays they read, and those
    arrays (flags, counters, exchange locks). A recognised CAS spin lock's acquire is left to
    ``Checker.lock_exclusion``, which models it exactly."""

    releases: tuple[Access, ...]
    acquires: tuple[Access, ...]
    flags: frozenset[int]

    @classmethod
    def of(cls, fp: Any, locks: list[SpinLock]) -> Synchronising:
        steering = set(steering_acquires(fp.function)) - {lock.acquire.op for lock in locks}
        acquires = tuple(a for a in fp.accesses if a.op in steering)
        flags = frozenset(a.array for a in acquires)
        releases = tuple(a for a in fp.accesses if a.array in flags and a.ordering in RELEASE_ORDERS
                         and a.op.attrs.get("memory_scope") in CROSS_BLOCK_SCOPES)
        return cls(releases, acquires, flags)

    def ordering(self, x: Access, y: Access) -> tuple[Access, Access] | None:
        """A release the block of one access may make after it, and a steering acquire of the array
        that release writes, which the other block may make before its own access: then a release/acquire edge may order the two (Tile IR memory
        model), and a conflict the solver finds is not yet a race. None when no such pair exists."""
        for first, later in ((x, y), (y, x)):
            for acquire in (a for a in self.acquires if may_follow(a, later)):
                # (the release may be the access itself: a block's acq_rel ticket, then the block
                # that draws the last ticket resets the counter)
                release = next((r for r in self.releases if r.array == acquire.array
                                and (r is first or may_follow(first, r))), None)
                if release is not None:
                    return release, acquire
        return None


def may_follow(first: Access, later: Access) -> bool:
    """``later`` may run after ``first`` in one block: later in program order, or both inside a
    common loop (a later iteration)."""
    return first.index < later.index or common_loops(first, later) > 0


def keeps_value(x: Access) -> bool:
    """A compare-and-swap that writes the value it compares with (``cas(p, 1, 1)``): it only reads,
    whichever order it runs in."""
    if x.op.name != "atomic_cas_tko":
        return False
    cmp, val = x.op.operand("cmp"), x.op.operand("val")
    return cmp is not None and (cmp is val or constant_value(cmp) is not None
                                and constant_value(cmp) == constant_value(val))


def steered_results(ch: Any) -> None:
    """An atomic whose returned value steers a write (``ir.summary.steered_writes``) and that two
    blocks may apply to one element: the output depends on the order the blocks drew in (an
    ``order-dependent-atomic`` warning naming the atomic and the write)."""
    uses = steered_writes(ch.fp.function)
    for x in ch.fp.accesses:
        if x.op not in uses or not x.is_atomic:
            continue
        pair = ch.two_blocks(x, x)
        if pair is None:
            continue
        a, b, constraints = pair
        how, use = uses[x.op]
        result = ch.solve(constraints, "order-dependent atomic result", (x.op.loc, use.loc), ("steered", x.index))
        if isinstance(result, smt.Sat):
            ch.add("order-dependent-atomic", steered_message(x.op, how, use, ch.names.get(x.array, "?")),
                   a, b, result, constraints)


_FLOAT_ORDER_DEPENDENT = ("addf",)
_SWAP_MODES = ("xchg", "cas")


class AtomicOrder:
    """``Checker``'s ``order-dependent-atomic`` obligation; it uses the checker's ``locks``,
    ``names``, ``synchronising``, ``two_blocks``, ``solve`` and ``add``."""

    locks: list[SpinLock]
    names: dict[int, str]
    synchronising: Any
    two_blocks: Any
    solve: Any
    add: Any

    def order_dependent(self, x: Access, y: Access) -> None:
        """Atomics from two blocks on one element whose result depends on their order: float adds
        (rounding), exchanges and compare-and-swaps (which value remains), integer ones of two
        different kinds (an add and a max). Integer add, min, max and the bitwise ones commute
        with themselves. The acquire and release of a recognised spin lock, and the atomics on an
        array a steering acquire waits on (flags, locks, tickets), are protocol, not results; a
        compare-and-swap that writes the value it compares with only reads."""
        if keeps_value(x) or keeps_value(y) or x.array in self.synchronising().flags:
            return  # a read, or the protocol of a flag, lock or counter that blocks wait on
        modes = (x.atomic_mode, y.atomic_mode)
        is_float = x.element is not None and x.element.is_float
        lock_ops = {lock.acquire.op for lock in self.locks} | {lock.release.op for lock in self.locks}
        if x.op in lock_ops or y.op in lock_ops:
            return
        floats = is_float and any(m in _FLOAT_ORDER_DEPENDENT for m in modes)
        swaps = any(m in _SWAP_MODES for m in modes)
        stores = not x.is_atomic and not y.is_atomic and x.writes and y.writes  # strong (relaxed) stores
        # two integer read-modify-writes of different kinds (an add and a max) do not commute
        mixed = (x.is_atomic and y.is_atomic and None not in modes and modes[0] != modes[1]
                 and not floats and not swaps)
        if not floats and not swaps and not stores and not mixed:
            return
        pair = self.two_blocks(x, y)
        if pair is None:
            return
        a, b, constraints = pair
        result = self.solve(constraints, "order-dependent atomics", (x.op.loc, y.op.loc),
                            ("order", x.index, y.index))
        if isinstance(result, smt.Sat):
            what = (f"float atomic {x.atomic_mode}" if floats else f"{x.ordering} stores" if stores
                    else f"integer atomics of different kinds ({modes[0]} and {modes[1]})" if mixed
                    else f"atomic {'/'.join(dict.fromkeys(m for m in modes if m in _SWAP_MODES))}")
            why = ("the result depends on their order (rounding)" if floats
                   else "they do not commute, so the result depends on their order" if mixed
                   else "which value remains depends on their order")
            self.add("order-dependent-atomic", f"{what} from several blocks on one element of "
                     f"'{self.names.get(x.array)}': {why}", a, b, result, constraints)
