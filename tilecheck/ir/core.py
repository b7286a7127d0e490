"""The Tile IR object model: values, operations, blocks, regions, functions, modules."""
from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from tilecheck.ir.loc import Loc
from tilecheck.ir.types import FunctionType, TileType, Type


class Value:
    """An SSA value: an op result or a block argument. Compared by identity."""

    __slots__ = ("index", "name", "owner", "type")

    def __init__(self, type: Type, name: str | None = None) -> None:
        self.type = type
        self.name = name  # a printing hint from the producer ("tile", "pview"), not semantic
        self.owner: Op | Block | None = None
        self.index = 0

    def __repr__(self) -> str:
        return f"Value({self.name or '?'}: {self.type})"


@functools.cache
def _opdefs() -> Mapping[str, Any]:
    # imported on first use: opdefs builds on this module (the interpreter asks for every op it runs)
    from tilecheck.ir.opdefs import OPS

    return OPS


@dataclass(frozen=True, eq=False)
class Op:
    """One operation. ``segments`` names the operand groups of ``operands`` in OpDef order.

    ``opdef`` is None for an op name the model does not know (kept, never dropped: the verifier
    answers "unknown" for it).
    """

    name: str
    operands: tuple[Value, ...]
    results: tuple[Value, ...]
    attrs: Mapping[str, Any]
    regions: tuple[Region, ...] = ()
    loc: Loc = field(default_factory=Loc.unknown)
    segments: tuple[tuple[str, int], ...] = ()

    def __post_init__(self) -> None:
        for i, value in enumerate(self.results):
            value.owner, value.index = self, i

    @property
    def opdef(self) -> Any:
        return _opdefs().get(self.name)

    @property
    def is_known(self) -> bool:
        return self.opdef is not None

    def operand_group(self, name: str) -> tuple[Value, ...]:
        """The operands of the named group (``index``, ``token``, ...); empty when absent."""
        start = 0
        for seg_name, size in self.segments:
            if seg_name == name:
                return self.operands[start:start + size]
            start += size
        return ()

    def operand(self, name: str) -> Value | None:
        group = self.operand_group(name)
        return group[0] if group else None

    @property
    def result(self) -> Value:
        return self.results[0]

    @property
    def tile_rank(self) -> int:
        """The highest rank among the op's tiles (operands and results)."""
        return max((len(v.type.shape) for v in (*self.operands, *self.results) if isinstance(v.type, TileType)),
                   default=0)

    def walk(self) -> Iterator[Op]:
        """This op and every op nested in its regions, in program order."""
        yield self
        for region in self.regions:
            for block in region.blocks:
                for op in block.ops:
                    yield from op.walk()

    def __repr__(self) -> str:
        return f"Op({self.name} @ {self.loc})"


class Block:
    """A list of ops with block arguments (loop induction variables, iter values, ...)."""

    def __init__(self, args: tuple[Value, ...] = (), ops: list[Op] | None = None) -> None:
        self.args = args
        self.ops: list[Op] = ops if ops is not None else []
        for i, value in enumerate(args):
            value.owner, value.index = self, i


@dataclass(frozen=True, eq=False)
class Region:
    blocks: tuple[Block, ...]

    @property
    def block(self) -> Block:
        return self.blocks[0]


@dataclass(frozen=True, eq=False)
class Function:
    """An ``entry`` (kernel) or a plain function of a module."""

    name: str
    type: FunctionType
    body: Block
    is_entry: bool = True
    loc: Loc = field(default_factory=Loc.unknown)
    attrs: Mapping[str, Any] = field(default_factory=dict)

    @property
    def args(self) -> tuple[Value, ...]:
        return self.body.args

    def walk(self) -> Iterator[Op]:
        for op in self.body.ops:
            yield from op.walk()


@dataclass(frozen=True, eq=False)
class Module:
    """A Tile IR module: its functions (kernels are the ``entry`` ones) and globals."""

    functions: tuple[Function, ...]
    name: str = "kernels"
    globals: tuple[Op, ...] = ()
    producer: str | None = None
    # For modules from a frontend: the kernel's parameters (tilecheck.ir.cutile.KernelParam),
    # mapping Python argument names to entry arguments. Empty for Tile IR read from a file.
    params: tuple[Any, ...] = ()
    # The source language's calling convention promises distinct arrays (cuTile's does, and its
    # compiler relies on it): arguments that share memory are then a finding. Triton's does not: a
    # launch may pass one tensor twice, and the checkers follow the shared memory instead.
    distinct_arrays: bool = True

    @property
    def entries(self) -> tuple[Function, ...]:
        return tuple(f for f in self.functions if f.is_entry)

    @property
    def entry(self) -> Function:
        """The single kernel entry; an error when the module has none or several."""
        from tilecheck.ir.errors import TileIRError

        entries = self.entries
        if len(entries) != 1:
            raise TileIRError(f"expected exactly one entry function, found {len(entries)}")
        return entries[0]

    def function(self, name: str) -> Function:
        for f in self.functions:
            if f.name == name:
                return f
        raise KeyError(name)

    def walk(self) -> Iterator[Op]:
        """Every op of every function, nested ones included, in program order."""
        for f in self.functions:
            yield from f.walk()

    def to_text(self) -> str:
        from tilecheck.ir.text.printer import print_module

        return print_module(self)

    def __str__(self) -> str:
        return self.to_text()
