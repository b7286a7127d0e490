"""The registry of the Triton frontend's op map (one function per TTIR op family, in ops.py) and the
helpers those functions share for reading an op's text."""
from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from tilecheck.ir import types as T
from tilecheck.ir.attrs import TypedValue, float_to_bits
from tilecheck.ir.core import Value
from tilecheck.ir.triton.ttir import TOp, TRegion, split_top, value_refs

_MEMORY_OPS = frozenset({"tt.load", "tt.store", "tt.atomic_rmw", "tt.atomic_cas", "tt.descriptor_load",
                         "tt.descriptor_store"})


class Unsupported(Exception):
    """This op (or this use of it) has no Tile IR counterpart here; the reason names it."""


def touches_memory(region: TRegion) -> bool:
    return any(op.name in _MEMORY_OPS or any(touches_memory(r) for r in op.regions) for op in region.ops)


HANDLERS: dict[str, Callable[[Any, TOp], None]] = {}


def handles(*names: str) -> Callable[[Callable[[Any, TOp], None]], Callable[[Any, TOp], None]]:
    def register(fn: Callable[[Any, TOp], None]) -> Callable[[Any, TOp], None]:
        for name in names:
            assert name not in HANDLERS, name
            HANDLERS[name] = fn
        return fn
    return register


def signature(top: TOp) -> tuple[str, str]:
    """The text before the op's top-level `` : `` (operands, attributes) and the types after it."""
    parts = split_top(top.rest, " : ")
    if len(parts) < 2:
        return top.rest, ""
    return " : ".join(parts[:-1]), parts[-1].strip()


def typed_value(element: T.ScalarType, value: int | float) -> TypedValue:
    if element.is_float:
        return TypedValue(element, float_to_bits(element.name, float(value)))
    return TypedValue(element, int(value))




def mapped_ops() -> frozenset[str]:
    """The TTIR ops the frontend lowers (anything else becomes an op the model does not know)."""
    return frozenset(HANDLERS)


# ---- reading an op's text ----------------------------------------------------------------------
def types_of(text: str) -> list[str]:
    """``(a, b) -> c`` or ``a, b`` -> the type texts, in order (a trailing ``-> r`` included)."""
    out: list[str] = []
    for part in split_top(text, "->"):
        part = part.strip()
        if part.startswith("(") and part.endswith(")"):
            part = part[1:-1]
        out += [t.strip() for t in split_top(part, ",") if t.strip()]
    return out


def operands_of(L: Any, text: str) -> list[Value]:
    return [L.value(r) for r in value_refs(text)]


def attr_text(text: str, name: str) -> str | None:
    m = re.search(rf"\b{name}\s*=\s*([^,}}]+)", text)
    return m.group(1).strip() if m else None


def int_attr(text: str, name: str) -> int:
    value = attr_text(text, name)
    if value is None:
        raise Unsupported(f"missing attribute {name}")
    return int(value.split(":")[0].strip())


def i32s_attr(text: str, name: str) -> tuple[int, ...]:
    m = re.search(rf"\b{name}\s*=\s*array<i32(?::\s*([^>]*))?>", text)
    if m is None:
        raise Unsupported(f"missing attribute {name}")
    return tuple(int(x) for x in (m.group(1) or "").split(",") if x.strip())


def tile_of(v: Value) -> T.TileType:
    assert isinstance(v.type, T.TileType)
    return v.type


def scalar_of(t: T.TileType) -> T.ScalarType:
    assert isinstance(t.element, T.ScalarType)
    return t.element
