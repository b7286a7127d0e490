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
