"""The ordering obligation inside a block (a mixin of ``obligations.Checker``): two accesses of one
block that may touch one element must be ordered by tokens, in the same iteration of their common
loops and across iterations of each (``ir.order.OrderGraph``); else the compiler may reorder them.
Decided by enumeration at a concrete case where it can (``enumeration.in_block``), else by the
solver."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tilecheck.verifier.concrete import enumeration
from tilecheck.verifier.model.footprints import Access, Instance, common_loops, instantiate, same_element
from tilecheck.verifier.solver import smt

if TYPE_CHECKING:
    from tilecheck.ir.order import OrderGraph
    from tilecheck.verifier.contracts.levels import Level, LevelResult


def inside(inst: Instance) -> list[smt.BoolExpr]:
    """The instance's element is in bounds, where its op does not check bounds itself (a pointer
    op's out-of-bounds lane is an obligation of its own)."""
    return [] if inst.access.checks_bounds else [inst.in_bounds]


class InBlockOrdering:
    """``inside_block``: the token-order question for two accesses of one block."""

    graph: OrderGraph
    level: Level
    result: LevelResult
    names: dict[int, str]
    known_proved: Any
    concrete: Any
    _enumerated: dict[Any, Any]

    def inside_block(self, x: Access, y: Access) -> None:
        common = common_loops(x, y)
        loops = [lv.op for lv in x.loops[:common]]
        # same iteration of every common loop (one op against itself: two lanes of one instance)
        if x is y or not self.graph.ordered_same_iteration(x.op, y.op):
            self.same_block_query(x, y, common, None)
        for depth, loop in enumerate(loops):
            if x is y:
                if not self.graph.ordered_across(loop, x.op, x.op):
                    self.same_block_query(x, y, depth, "<")
                continue
            if not self.graph.ordered_across(loop, x.op, y.op):
                self.same_block_query(x, y, depth, "<")
            if not self.graph.ordered_across(loop, y.op, x.op):
                self.same_block_query(x, y, depth, ">")

    def same_block_query(self, x: Access, y: Access, depth: int, relation: str | None) -> None:
        """x and y in one block; iterations equal for loops above ``depth``; at ``depth``
        x's iteration is before (<) / after (>) y's, or (None) equal in all common loops."""
        a = instantiate(x, "b1")
        shared = {d: a.loop_vars[d] for d in range(depth)}
        b = instantiate(y, "b1", shared)
        same = same_element(a, b)
        if same is None:
            return
        constraints = [*self.base(("b1",)), a.active, b.active, same, *inside(a), *inside(b)]
        if relation is not None:
            ia, ib = a.loop_vars[depth], b.loop_vars[depth]
            constraints.append(ia < ib if relation == "<" else ia > ib)
        elif x is y:  # one op, two lanes of one instance: e.g. a scatter with duplicate indices
            constraints.append(smt.Or(*[p != q for p, q in zip(a.lanes, b.lanes)]) if a.lanes else
                               smt.BoolVal(False))
        key = ("inside", x.index, y.index, depth, relation)
        found = early = None
        if relation is None and self.level.grid is not None and key not in self.known_proved:
            early = self._before_listing(x, y, constraints, "ordering inside a block", key)
            if isinstance(early, smt.Unsat):
                return
            if not isinstance(early, smt.Sat):
                found = enumeration.in_block(x, y, self.level.grid, self.concrete, self.enumerated_functions(),
                                             self._enumerated)
        if found is True:
            self.result.proved.add(key)  # every lane of every block enumerated: no element shared
            return
        result, constraints = self._pinned_first(found, a, b, constraints, "ordering inside a block",
                                                 (x.op.loc, y.op.loc))
        result = early if isinstance(early, smt.Sat) else result
        if not isinstance(result, smt.Sat):
            result = self.solve(constraints, "ordering inside a block", (x.op.loc, y.op.loc), key)
        if isinstance(result, smt.Sat):
            if x is y and relation is None:
                message = (f"one {x.op.name} writes the same element of '{self.names.get(x.array)}' from two "
                           f"lanes; which value lands is unspecified")
            else:
                message = (f"{x.op.name} and {y.op.name} of one block touch the same element of "
                           f"'{self.names.get(x.array)}' and no token orders them (the compiler may reorder)")
            self.add("unordered-in-block", message, a, b, result, constraints)
