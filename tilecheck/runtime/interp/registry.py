"""The registry of interpreter semantics: one small numpy function per Tile IR op name."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

Rule = Callable[..., tuple[Any, ...]]
RULES: dict[str, Rule] = {}


def interpret(*names: str) -> Callable[[Rule], Rule]:
    """Register ``fn(ctx, op, *operand_values) -> results`` for each op name (no duplicates)."""

    def register(fn: Rule) -> Rule:
        for name in names:
            if name in RULES:
                raise ValueError(f"interpreter rule for {name} registered twice")
            RULES[name] = fn
        return fn

    return register

# Ops the CPU interpreter does not run yet: executing one raises an error naming it and its line.
UNSUPPORTED = frozenset({"alloca", "get_global", "int_to_ptr", "ptr_to_int", "make_gather_scatter_view",
                         "mmaf_scaled", "pack", "unpack"})
