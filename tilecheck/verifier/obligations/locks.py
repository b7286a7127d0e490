"""Recognise the spin-lock idiom (CAS-acquire loop ... xchg-release) that orders accesses across
blocks, as in cuTile's layer-norm backward:

    while ct.atomic_cas(Locks, i, 0, 1, memory_order=ACQUIRE) == 1: pass
    ... plain loads/stores of the shared partial sums ...
    ct.atomic_xchg(Locks, i, 0, memory_order=RELEASE)

Accesses ordered after the acquire loop and before the release (by tokens) are protected by the
lock element; two blocks holding the *same* lock element cannot run them concurrently. The lock
counts only when the acquire-CAS and one release are the only writes to the lock array.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tilecheck.ir import Function, Op, Value
from tilecheck.ir.attrs import DenseElements
from tilecheck.ir.order import OrderGraph
from tilecheck.ir.summary import ACQUIRE_ORDERS, CROSS_BLOCK_SCOPES, RELEASE_ORDERS
from tilecheck.verifier.model.footprints import Access, Instance, common_loops, instantiate, same_element
from tilecheck.verifier.solver import smt


@dataclass(frozen=True)
class SpinLock:
    acquire: Access  # the atomic_cas_tko inside the spin loop
    release: Access  # the atomic_rmw_tko xchg (or atomic store) that unlocks
    loop: Op
    protected: frozenset[int]  # Access.index of the accesses inside the critical section
    # (free, taken) when the loop exits whenever the CAS did not see ``taken`` (``while cas(...) ==
    # 1``): that means "acquired" only while the lock array holds nothing but those two values, a
    # fact about its contents at launch (its only writes are the protocol's, so it stays true once
    # true); None when the loop exits only on seeing ``free``, whatever the contents
    needs_values: tuple[int, int] | None = None


def constant_value(value: Value | None) -> int | None:
    """The integer a splat constant holds (None for anything else)."""
    if value is None or not isinstance(value.owner, Op) or value.owner.name != "constant":
        return None
    dense = value.owner.attrs.get("value")
    if isinstance(dense, DenseElements) and dense.is_splat and not dense.is_float:
        return dense.values[0]
    return None


def _breaks_when_acquired(loop: Op, cas: Op, free: int, taken: int) -> str | None:
    """How the loop exits when the CAS saw the lock free: "free" when it exits exactly then (an
    ``if`` on ``old != free`` breaking when false, or on ``old == free`` breaking when true),
    "not taken" when it exits whenever the CAS did not see ``taken`` (on ``old == taken`` breaking
    when false, or ``old != taken`` breaking when true: the same only while the lock holds ``free``
    or ``taken``), None when it is not an acquire loop."""
    old = cas.results[0]
    for op in loop.regions[0].block.ops:
        if op.name != "if":
            continue
        cond = op.operand("condition")
        cmp = cond.owner if cond is not None else None
        if not isinstance(cmp, Op) or cmp.name != "cmpi" or old not in cmp.operands:
            continue
        other = cmp.operands[1] if cmp.operands[0] is old else cmp.operands[0]
        value, pred = constant_value(other), cmp.attrs.get("comparison_predicate")
        breaks_then = any(o.name == "break" for o in op.regions[0].block.ops)
        breaks_else = any(o.name == "break" for o in op.regions[1].block.ops)
        exits_when_true = (pred == "equal" and value == free) or (pred == "not_equal" and value == taken)
        exits_when_false = (pred == "equal" and value == taken) or (pred == "not_equal" and value == free)
        if (exits_when_true and breaks_then and not breaks_else) or \
                (exits_when_false and breaks_else and not breaks_then):
            return "not taken" if value == taken else "free"
    return None


def find_spin_locks(function: Function, accesses: list[Access], graph: OrderGraph) -> list[SpinLock]:
    by_op = {a.op: a for a in accesses}
    locks = []
    for loop in (op for op in function.walk() if op.name == "loop"):
        body_ops = list(loop.walk())
        cas = next((op for op in body_ops if op.name == "atomic_cas_tko"
                    and op.attrs.get("memory_ordering_semantics") in ACQUIRE_ORDERS), None)
        if cas is None or cas not in by_op or not any(op.name == "break" for op in body_ops):
            continue
        free, taken = constant_value(cas.operand("cmp")), constant_value(cas.operand("val"))
        exits = _breaks_when_acquired(loop, cas, free, taken) if free is not None and taken is not None \
            and free != taken else None
        if exits is None:
            continue
        if cas.attrs.get("memory_scope") not in CROSS_BLOCK_SCOPES:
            continue
        acquire = by_op[cas]
        for release_op in (a.op for a in accesses if a.array == acquire.array and a.op is not cas):
            if release_op.attrs.get("memory_ordering_semantics") not in RELEASE_ORDERS or \
                    release_op.attrs.get("memory_scope") not in CROSS_BLOCK_SCOPES:
                continue
            if release_op.name == "atomic_rmw_tko" and release_op.attrs.get("mode") == "xchg":
                released = constant_value(release_op.operand("arg"))
            elif release_op.name == "atomic_cas_tko" and constant_value(release_op.operand("cmp")) == taken:
                released = constant_value(release_op.operand("val"))  # CAS taken -> free: the holder's release
            else:
                continue
            if released != free or not graph.reaches(("op", loop), ("op", release_op)) and not any(
                    graph.reaches(("res", loop, k), ("op", release_op)) for k in range(len(loop.results))):
                continue
            protected = frozenset(
                a.index for a in accesses
                if a.op not in (cas, release_op) and a.array != acquire.array
                and any(graph.reaches(("res", loop, k), ("op", a.op)) for k in range(len(loop.results)))
                and graph.reaches(("op", a.op), ("op", release_op)))
            locks.append(SpinLock(acquire, by_op[release_op], loop, protected,
                                  (free, taken) if exits == "not taken" else None))
    return [lock for lock in locks if _only_protocol_writes(lock, accesses)]


def _only_protocol_writes(lock: SpinLock, accesses: list[Access]) -> bool:
    """A lock orders its critical sections only if its acquire-CAS and its one release are the only
    ops that write the lock array. Any other write — a second release after the write-back, a
    release of an element the block never took, a store — can free an element another block holds,
    and two blocks are then inside one critical section."""
    protocol = {lock.acquire.op, lock.release.op}
    return all(a.op in protocol for a in accesses if a.array == lock.acquire.array and a.writes)


class LockExclusion:
    """``Checker``'s lock obligations (a mixin, as ``witnesses.WitnessBuilding``): which recognised
    locks provably guard one element, and the constraint that two accesses in critical sections of
    the same lock element do not overlap. Uses the checker's ``locks``, ``solve`` and ``base``."""

    locks: list[SpinLock]
    protected: dict[int, list[SpinLock]]
    solve: Any
    base: Any

    def check_locks(self) -> None:
        """Keep only locks whose acquire and release provably use the same lock element."""
        kept = []
        for lock in self.locks:
            a = instantiate(lock.acquire, "b1")
            common = common_loops(lock.acquire, lock.release)
            r = instantiate(lock.release, "b1", {d: a.loop_vars[d] for d in range(common)})
            differ = smt.Not(same_element(a, r) if same_element(a, r) is not None else smt.BoolVal(False))
            result = self.solve([*self.base(("b1",)), a.active, r.active, differ], "lock check",
                                (lock.acquire.op.loc, lock.release.op.loc))
            spin_vars = {str(lv.var) for lv in lock.acquire.loops[common:]}
            coords = lock.acquire.coords or ()
            if isinstance(result, smt.Unsat) and not any(
                    smt.free_constants(c) & spin_vars for c in coords):
                kept.append(lock)
        self.protected = {}
        for lock in kept:
            for index in lock.protected:
                self.protected.setdefault(index, []).append(lock)

    def lock_exclusion(self, x: Instance, y: Instance) -> list[smt.BoolExpr]:
        """Both accesses inside critical sections of the same lock element: they cannot overlap."""
        out = []
        for lx in self.protected.get(x.access.index, []):
            for ly in self.protected.get(y.access.index, []):
                if lx.acquire.array != ly.acquire.array:
                    continue
                ax = instantiate(lx.acquire, x.block_tag, _first_spin(x, lx.acquire))
                ay = instantiate(ly.acquire, y.block_tag, _first_spin(y, ly.acquire))
                same = same_element(ax, ay)
                if same is not None:
                    out.append(smt.Not(smt.And(ax.active, ay.active, same)))
        return out



def _shared(inst: Instance, other: Access) -> dict[int, smt.IntExpr]:
    common = common_loops(inst.access, other)
    return {d: inst.loop_vars[d] for d in range(common)}


def _first_spin(inst: Instance, acquire: Access) -> dict[int, smt.IntExpr]:
    """The acquire in the same iteration as the protected access, first spin iteration (the lock
    element it names does not depend on the spin iteration; ``check_locks`` ensures that)."""
    shared = _shared(inst, acquire)
    for depth in range(len(shared), len(acquire.loops)):
        shared[depth] = smt.IntVal(0)
    return shared


def locks_at_case(locks: list[SpinLock], fp: Any, params: tuple[Any, ...], args: Any
                  ) -> tuple[list[SpinLock], list[Any], list[str], set[str]]:
    """The locks a verification of this case may count, the facts about the lock arrays' contents
    they rest on, and a note for each lock left out. A lock whose loop exits only on seeing it free
    counts whatever the contents. One whose loop exits whenever the CAS did not see ``taken``
    (cuTile's own layer-norm backward: ``while cas(...) == 1``) counts only where the lock array's
    given contents hold nothing but ``free`` and ``taken``, the lock's launch protocol (a zeroed
    lock array): then that fact is an assumption of the verdict, in any mode (``data=False`` too: the
    lock array is the protocol's state, not an index array), and its contract carries it as
    ``protocol``, evaluated again at each launch it decides. With other contents two blocks both
    leave the loop and their critical sections overlap; without arguments it is not counted. A lock
    array on the device, whose contents the host cannot read, is treated as a precondition on a
    device array is: assumed, said so in the report (its name is in the fourth value returned), and
    not checked."""
    from tilecheck.requirements import bounded
    from tilecheck.verifier.obligations.arguments import given_integer_arrays

    kept, facts, notes, unchecked = [], [], [], set()
    arrays = None
    names = {p.name for p in params if p.kind == "array"} if params else set()
    for lock in locks:
        if lock.needs_values is None:
            kept.append(lock)
            continue
        free, taken = lock.needs_values
        name = fp.arrays[lock.acquire.array].name
        if params and args is not None:
            arrays = given_integer_arrays(params, args) if arrays is None else arrays
            fact = bounded(name, min(free, taken), max(free, taken)) if abs(free - taken) == 1 else \
                bounded(name, free, free, also=(taken,))
            if name in arrays and fact.violation(arrays[name]) is None or name not in arrays and name in names:
                kept.append(lock)
                facts.append(fact)
                if name not in arrays:
                    unchecked.add(name)
                continue
        loc = lock.acquire.op.loc.outermost().short()
        notes.append(f"the spin lock on '{name}' ({loc}) is not counted: its acquire loop exits whenever the CAS "
                     f"does not see {taken}, which means acquired only while '{name}' holds nothing but {free} and "
                     f"{taken}" + (", and the given contents hold other values" if params and args is not None
                                   else ", and no contents are given") +
                     f" (loop until the CAS sees {free} instead, or launch it with {free}/{taken} only)")
    return kept, facts, notes, unchecked
