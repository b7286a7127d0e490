"""What a kernel's Tile IR is as a program, for the caches that key verdicts by it.

An autotuner compiles one kernel once per configuration, and configurations that change only
optimization hints (``occupancy``, ``num_ctas``, a load's ``latency``) give Tile IR that differs in
those hints alone. Hints steer the GPU compiler's code generation and never which elements a
block reads or writes, so such kernels share every verdict: ``program_digest`` is a digest of
the IR less its hints, and the verdict caches (``runtime.launcher``, ``verifier.cached``) key by
it. Everything else enters it, source locations included (they are in the reports).

The digest is built from the model's own fields (each attribute by its ``repr``, which for the
model's dataclasses is all of their fields), not from the text printer's formatting decisions: an
attribute the printer leaves out cannot make two programs look alike. A value whose ``repr`` names
its address only makes the digest differ where it need not (a cache miss).
"""
from __future__ import annotations

import hashlib
import re
from typing import Any

from tilecheck.ir.core import Block, Function, Module, Op, Value

HINTS = "optimization_hints"
# ops the model reads as the identity once float widths are erased (``access_digest``)
FLOAT_IDENTITY = frozenset({"ftof"})
_DIGESTS: dict[tuple[int, bool], tuple[Any, str]] = {}  # (id(module.functions), floats) -> (functions, digest)


def program_digest(module: Module) -> str:
    """The digest of ``module``'s functions and globals, less their optimization hints: once per
    compiled specialisation (modules bound to other launches share their functions)."""
    return _digest(module, floats=True)


def access_digest(module: Module) -> str:
    """``program_digest`` with the width of every floating-point element type erased (f16, bf16,
    f32, f64, tf32, fp8 all read as one float type) and the values of floating-point constants with
    it: kernels compiled for float16 and for float32 arrays whose Tile IR differs in nothing else get
    one digest. The verifier never reads a float's width or value (a float is an opaque value to its
    model; only whether an element type is a float matters, for the order-dependent atomics), so a
    contract proved for one such program holds for the other (issue 51: proofs that span dtypes).
    The proof cache keys contracts by it; a launch's whole report stays keyed by ``program_digest``."""
    return _digest(module, floats=False)


def _digest(module: Module, floats: bool) -> str:
    key = (id(module.functions), floats)
    found = _DIGESTS.get(key)
    if found is None or found[0] is not module.functions:
        if len(_DIGESTS) > 4096:
            _DIGESTS.clear()
        writer = _Writer(floats)
        for op in module.globals:
            writer.op(op)
        for f in module.functions:
            writer.function(f)
        found = _DIGESTS[key] = (module.functions, writer.hash.hexdigest())
    return found[1]


# floating-point element types as the model's reprs and the compiled kernel's name spell them
_FLOAT_TYPE = re.compile(r"ScalarType\(name='(?:b?f\d+|tf32|f8\w*)'\)")
_FLOAT_DENSE = re.compile(r"DenseElements\(element='(?:b?f\d+|tf32|f8\w*)', values=\(.*?\), is_float=True\)")
_FLOAT_IN_NAME = re.compile(r"(?:bf16|f16|f32|f64|tf32|f8e4m3fn|f8e5m2)", re.IGNORECASE)


class _Writer:
    def __init__(self, floats: bool = True) -> None:
        self.hash = hashlib.sha256()
        self.numbers: dict[Value, int] = {}
        self.floats = floats
        self.unread: frozenset[Op] = frozenset()
        self.count = 0

    def put(self, *parts: Any) -> None:
        text = "\x1f".join(map(str, parts))
        if not self.floats:
            text = _FLOAT_TYPE.sub("ScalarType(name='F')", text)
            text = _FLOAT_DENSE.sub("DenseElements(element='F', is_float=True)", text)
        self.hash.update((text + "\x1e").encode())

    def value(self, v: Value) -> int | str:
        if v not in self.numbers:
            self.numbers[v] = self.count  # (aliases and unread values take no number)
            self.count += 1
        return self.numbers[v]

    def function(self, f: Function) -> None:
        if not self.floats:
            self.unread = unread_ops(f)
        # an entry's name spells its specialisation (argument dtypes, constants' values: cuTile's
        # ``_I128`` suffixes) and no semantics: what the values do is in the body. Calls name the
        # functions they call, which are not entries.
        name = f.name if self.floats else "entry" if f.is_entry else _FLOAT_IN_NAME.sub("F", f.name)
        self.put("function", name, f.is_entry, repr(f.type), repr(f.loc), _attrs(f.attrs),
                 [(self.value(a), repr(a.type)) for a in f.args])
        self.block(f.body)

    def block(self, block: Block) -> None:
        self.put("block", [(self.value(a), repr(a.type)) for a in block.args])
        for op in block.ops:
            self.op(op)
        self.put("end")

    def op(self, op: Op) -> None:
        if op in self.unread:  # its results stand for values of their type, as the model reads them
            for r in op.results:
                self.numbers[r] = f"unread {r.type!r}"
            return
        if not self.floats and op.name in FLOAT_IDENTITY and len(op.operands) == 1 and len(op.results) == 1:
            # a cast between float types is the identity to the model (a float is opaque to it, its
            # width erased here): its result is its operand, so a kernel compiled for float16 arrays
            # (which casts them to float32) and for float32 ones (which does not) read as one program
            self.numbers[op.results[0]] = self.value(op.operands[0])
            return
        self.put("op", op.name, [self.value(v) for v in op.operands],
                 [(self.value(r), repr(r.type)) for r in op.results], _attrs(op.attrs), op.segments,
                 repr(op.loc), len(op.regions))
        for region in op.regions:
            self.put("region", len(region.blocks))
            for block in region.blocks:
                self.block(block)


def unread_ops(function: Function) -> frozenset[Op]:
    """The ops ``access_digest`` leaves out: the pure ops none of whose results the model reads
    (``deciding.unread_by_model``: they reach only values a store writes, which the model never
    reads back), which it computes but no obligation reads. Not one the model could not analyse (a
    tile above its rank: ``verifier.model.values.MAX_RANK``), whose fresh proof is unknown."""
    from tilecheck.ir.deciding import unread_by_model

    return frozenset(op for op in unread_by_model(function) if op.tile_rank <= MODEL_MAX_RANK)


# the highest tile rank the symbolic model analyses (``verifier.model.values.MAX_RANK``)
MODEL_MAX_RANK = 8


def _attrs(attrs: Any) -> list[tuple[str, str]]:
    return sorted((k, repr(v)) for k, v in dict(attrs).items() if k != HINTS)
