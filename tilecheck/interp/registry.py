"""The registry of interpreter semantics: one small numpy function per Tile IR op name."""
from __future__ import annotations

from tilecheck.registry import Rule, registrar

RULES: dict[str, Rule] = {}

# ``@interpret("addi", ...)``: register ``fn(interp, ctx, op, *operand_values) -> results`` for each op name (no duplicates)
interpret = registrar(RULES, "interpreter")

# Ops the CPU interpreter does not run yet: executing one raises an error naming it and its line.
UNSUPPORTED = frozenset({"alloca", "get_global", "make_gather_scatter_view",
                         "mmaf_scaled", "pack", "unpack"})
