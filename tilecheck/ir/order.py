"""Ordering inside one tile block: the token (and data) dependence graph.

Nodes are ops, block arguments of region ops, loop-carried slots and region results. Edges run
from each value's definition to its users (token def-use, ``join_tokens``, data dependence),
from a loop's initial values to its iteration arguments, from a body's yields to the region op's
results. The loop back edges (a body's ``continue`` operand to the next iteration's argument)
are kept apart, so that the main graph is a DAG whose paths are orders *within one iteration*.
"""
from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field

import networkx as nx

from tilecheck.ir import Block, Function, Op, Value

Node = Hashable


@dataclass(frozen=True)
class LoopSlots:
    """A loop op's carried values: slot k is the body's iteration argument / continue operand k."""

    op: Op
    args: tuple[Node, ...]  # node of the iteration argument of slot k
    yields: tuple[Node, ...]  # node of the continue operand of slot k


@dataclass
class OrderGraph:
    dag: nx.DiGraph
    loops: dict[Op, LoopSlots] = field(default_factory=dict)
    _reach: dict[Node, set[Node]] = field(default_factory=dict)

    def reaches(self, a: Node, b: Node) -> bool:
        if a not in self._reach:
            self._reach[a] = nx.descendants(self.dag, a) if a in self.dag else set()
        return b in self._reach[a]

    def ordered_same_iteration(self, x: Op, y: Op) -> bool:
        """x and y (in the same iteration of every loop enclosing both) are ordered."""
        return self.reaches(("op", x), ("op", y)) or self.reaches(("op", y), ("op", x))

    def ordered_across(self, loop: Op, first: Op, later: Op) -> bool:
        """Every instance of ``first`` in iteration i of ``loop`` precedes every instance of
        ``later`` in any iteration j > i: through a carried slot that each iteration passes on."""
        slots = self.loops.get(loop)
        if slots is None:
            return False
        for arg, out in zip(slots.args, slots.yields):
            if (self.reaches(("op", first), out) and self.reaches(arg, out)
                    and self.reaches(arg, ("op", later))):
                return True
        return False


def order_graph(function: Function) -> OrderGraph:
    """Build the ordering graph of ``function`` (one per kernel, shared by all queries)."""
    g = nx.DiGraph()
    graph = OrderGraph(g)
    _Builder(g, graph).block(function.body, [])
    return graph


class _Builder:
    def __init__(self, g: nx.DiGraph, graph: OrderGraph) -> None:
        self.g, self.graph = g, graph
        self.arg_nodes: dict[Value, Node] = {}
        self.pending: dict[Op, list[tuple[Node, int]]] = {}

    def node(self, value: Value) -> Node:
        owner = value.owner
        if isinstance(owner, Op):
            if owner.regions:
                return ("res", owner, value.index)
            return ("op", owner)
        return self.arg_nodes.get(value, ("arg", id(owner), value.index))

    def block(self, block: Block, loops: list[Op]) -> None:
        for op in block.ops:
            self.op(op, loops)

    def op(self, op: Op, loops: list[Op]) -> None:
        me = ("op", op)
        self.g.add_node(me)
        for v in op.operands:
            self.g.add_edge(self.node(v), me)
        if op.name in ("break", "continue"):
            self.loop_exit(op, loops)
        elif op.name in ("for", "loop"):
            self.loop(op, loops)
        elif op.regions:  # if / reduce / scan: the body's yields give the results
            for region in op.regions:
                body = region.block
                for i, arg in enumerate(body.args):
                    self.arg_nodes[arg] = ("arg", id(body), i)
                    self.g.add_edge(me, self.arg_nodes[arg])
                self.block(body, loops)
                term = body.ops[-1] if body.ops else None
                if term is not None and term.name == "yield":
                    for k, v in enumerate(term.operands):
                        self.g.add_edge(self.node(v), ("res", op, k))
            for k in range(len(op.results)):
                self.g.add_edge(me, ("res", op, k))

    def loop(self, op: Op, loops: list[Op]) -> None:
        body = op.regions[0].block
        carried = body.args[1:] if op.name == "for" else body.args
        inits = op.operand_group("initValues")
        if op.name == "for":
            iv = body.args[0]
            self.arg_nodes[iv] = ("arg", id(body), 0)
            for name in ("lowerBound", "upperBound", "step"):
                self.g.add_edge(self.node(op.operand(name)), self.arg_nodes[iv])
        args, yields = [], []
        for k, arg in enumerate(carried):
            node = ("arg", id(body), arg.index)
            self.arg_nodes[arg] = node
            self.g.add_edge(self.node(inits[k]), node)
            args.append(node)
            yields.append(("yield", op, k))
            self.g.add_node(("yield", op, k))
            if op.name == "for":  # zero iterations: the result is the initial value
                self.g.add_edge(self.node(inits[k]), ("res", op, k))
        self.graph.loops[op] = LoopSlots(op, tuple(args), tuple(yields))
        self.pending[op] = []
        self.block(body, [*loops, op])
        # An exit value u (a for's last yield, a break operand) orders the ops of *every* iteration that
        # reach it only if u sits on a carried chain: it reaches a slot that each iteration passes on,
        # and consumes that slot. Otherwise it orders only its own iteration: no edge (sound).
        exits = [(y, k) for k, y in enumerate(yields)] if op.name == "for" else self.pending[op]
        for node, k in exits:
            if any(nx.has_path(self.g, node, y) and nx.has_path(self.g, a, node) and nx.has_path(self.g, a, y)
                   for a, y in zip(args, yields)):
                self.g.add_edge(node, ("res", op, k))

    def loop_exit(self, term: Op, loops: list[Op]) -> None:
        """``continue`` feeds the next iteration's slots; ``break`` feeds the loop's results."""
        if not loops:
            return
        loop = loops[-1]
        for k, v in enumerate(term.operands):
            if term.name == "continue":
                self.g.add_edge(self.node(v), ("yield", loop, k))
            else:  # decided once the loop body is complete (see ``loop``)
                self.pending[loop].append((self.node(v), k))

