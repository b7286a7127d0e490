"""Integer literals lifted into entry arguments (issue 51: proofs that span constants).

cuTile compiles a ``ct.Constant`` into the Tile IR as a literal, so a kernel launched with another
size is another program, and a proof of one is no proof of the other. ``lifted(module)`` is the
same program with its liftable literals turned into entry arguments: scalars of the launch, their
values the literals'. A proof over the lifted program (a contract over those scalars, as over any
scalar argument) holds for every value its contract admits, and two launches whose Tile IR differs
only in those literals compile to one lifted program: the proof cache keys the lifted program
(``identity.access_digest`` of the lifted module) and evaluates the contract on the literals' values.

Which literals: the integer scalars (0-d ``constant`` ops, not ``i1``) other than those a proof
over a symbol would only make harder, all kept as they are:

- 0, 1 and -1 (offsets and unit steps: structure, not sizes);
- a value some tile of the kernel has as an extent (the literal most likely spells that tile's
  shape, which stays a literal of the types: ``bid * 128`` next to a 128-wide tile);
- a literal used as a ``for`` loop's step, a shift amount or a divisor (a symbolic step
  over-approximates the loop; a symbolic shift or divisor makes the query non-linear).

The choice steers cost only, never soundness: a lifted literal is a symbol the contract constrains,
and one kept is part of the program's key.

Each lifted literal is named after the ``ct.Constant`` whose value it is, when exactly one constant
has that value and the literal sits at the kernel's own line (where cuTile writes a constant's
value), else by where it is written (``const@file.py:12:8``, a ``#2`` after the name of a second
one there). The names are an attribute of the lifted entry, so part of the lifted program's digest:
a stored contract's names mean the same literals at every launch it is asked of.

Which literal stays one is a cost choice, and the proof cache, not this module, decides when a
proof over the lifted program is worth paying (``verifier.pipeline.spanning``).
"""
from __future__ import annotations

import dataclasses
import os
from typing import Any

from tilecheck.ir import types as T
from tilecheck.ir.attrs import DenseElements
from tilecheck.ir.core import Block, Function, Module, Op, Region, Value
from tilecheck.memo import Memo

# operands whose literal stays one: (op name, operand position)
_KEPT_USES = frozenset({("for", 2), ("shli", 1), ("shri", 1), ("divi", 1), ("remi", 1)})


@dataclasses.dataclass(frozen=True)
class Lifted:
    """A module with its liftable literals as entry arguments: ``module.params`` are the original
    parameters and then one scalar per literal (named, with the literal's value)."""

    module: Module
    literals: tuple[tuple[str, int], ...]  # (name, value), in the order of the new arguments


def lifted(module: Module) -> Lifted | None:
    """``module`` with its liftable literals lifted (None when it has none, or is not one entry):
    once per compiled specialisation, bound to this launch's parameters."""
    key = id(module.functions)
    found = _LIFTED.get(key)
    if found is None or found[0] is not module.functions:  # (a race only computes it twice)
        found = _LIFTED[key] = (module.functions, _lift(module))
    base = found[1]
    if base is None:
        return None
    functions, literals, extra = base
    return Lifted(Module(functions, module.name, module.globals, module.producer, (*module.params, *extra),
                         module.distinct_arrays), literals)


# the lifted entry's attribute naming its lifted literals, in the order of their arguments
LIFTED_ATTR = "tilecheck.lifted_literals"
# per compiled specialisation (by its functions): the lifted functions, literals and parameters
_LIFTED: dict[int, tuple[Any, Any]] = Memo(1024)


def liftable(function: Function) -> list[Op]:
    """The literals ``lifted`` turns into arguments, in program order (the module docstring says which)."""
    extents = {n for op in function.walk() for v in op.results for n in _extents(v.type)}
    kept: set[int] = set()
    for op in function.walk():
        for i, v in enumerate(op.operands):
            if (op.name, i) in _KEPT_USES:
                kept.add(id(v))
    out = []
    for op in function.walk():
        if op.name != "constant" or len(op.results) != 1:
            continue
        t, value = op.results[0].type, op.attrs.get("value")
        if not (isinstance(t, T.TileType) and t.shape == () and isinstance(t.element, T.ScalarType)
                and t.element.is_integer and t.element != T.I1):
            continue
        if not isinstance(value, DenseElements) or value.is_float or len(value.values) != 1:
            continue
        v = value.values[0]
        if -1 <= v <= 1 or v in extents or id(op.results[0]) in kept:
            continue
        out.append(op)
    return out


def _extents(t: Any) -> tuple[int, ...]:
    """A type's tile extents: a tile's shape, a view's tile shape."""
    if isinstance(t, T.TileType):
        return tuple(t.shape)
    return tuple(n for n in getattr(t, "tile_shape", ()) or () if isinstance(n, int))


def _lift(module: Module) -> tuple[tuple[Function, ...], tuple[tuple[str, int], ...], tuple[Any, ...]] | None:
    """The lifted functions (shared by every launch of this specialisation), the literals, and
    their parameters."""
    from tilecheck.ir.cutile import KernelParam

    found = _lifted_entry(module)
    if found is None:
        return None
    function, literals = found
    first = len(module.entry.args)
    extra = tuple(KernelParam(name, "scalar", "int", 0, first + i, value) for i, (name, value) in enumerate(literals))
    return tuple(function if f is module.entry else f for f in module.functions), literals, extra


def _lifted_entry(module: Module) -> tuple[Function, tuple[tuple[str, int], ...]] | None:
    if len(module.entries) != 1:
        return None
    entry = module.entry
    ops = liftable(entry)
    if not ops:
        return None
    # a ct.Constant's value is written at the kernel's own line: named after the constant whose
    # value it is, when exactly one has it (a name only: a launch that names it otherwise misses)
    constants: dict[int, list[str]] = {}
    for p in module.params:
        if p.kind == "constant" and type(p.value) is int:
            constants.setdefault(p.value, []).append(p.name)
    names: list[str] = []
    for op in ops:
        loc = op.loc  # where the literal is written (inside a helper, when inlined from one)
        value = op.attrs["value"].values[0]
        if len(constants.get(value, ())) == 1 and loc == entry.loc:
            base = constants[value][0]
        else:
            base = f"const@{os.path.basename(loc.file)}:{loc.line}:{loc.col}" if loc.is_known() else "const"
        name, n = base, 1
        while name in names:
            n += 1
            name = f"{base}#{n}"
        names.append(name)
    new_args = tuple(Value(op.results[0].type, name) for op, name in zip(ops, names))
    copy = _Copy({id(op) for op in ops}, {op.results[0]: arg for op, arg in zip(ops, new_args)})
    body = copy.block(entry.body, extra=new_args)
    # the names in the program (and so in its digest): a contract names the literals, and a launch
    # that names them otherwise (another constant with the same value) is another program to it
    attrs = {**dict(entry.attrs), LIFTED_ATTR: tuple(names)}
    function = Function(entry.name, T.FunctionType(tuple(a.type for a in body.args), entry.type.results), body,
                        entry.is_entry, entry.loc, attrs)
    return function, tuple((name, op.attrs["value"].values[0]) for name, op in zip(names, ops))


class _Copy:
    """A copy of a function body with new values throughout (an op or block owns its results and
    arguments), the lifted literal ops left out and their uses reading the new arguments."""

    def __init__(self, dropped: set[int], values: dict[Value, Value]) -> None:
        self.dropped, self.values = dropped, values

    def fresh(self, v: Value) -> Value:
        out = self.values[v] = Value(v.type, v.name)
        return out

    def block(self, block: Block, extra: tuple[Value, ...] = ()) -> Block:
        args = tuple(self.fresh(a) for a in block.args) + extra
        return Block(args, [self.op(op) for op in block.ops if id(op) not in self.dropped])

    def op(self, op: Op) -> Op:
        operands = tuple(self.values.get(v, v) for v in op.operands)
        regions = tuple(Region(tuple(self.block(b) for b in r.blocks)) for r in op.regions)
        results = tuple(self.fresh(r) for r in op.results)
        return Op(op.name, operands, results, op.attrs, regions, op.loc, op.segments)
