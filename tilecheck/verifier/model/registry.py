"""The registry of symbolic op semantics: one small function per Tile IR op name."""
from __future__ import annotations

from tilecheck.registry import Rule, registrar

RULES: dict[str, Rule] = {}

# ``@symbolic("addi", ...)``: register ``fn(state, op, *operand_values) -> results`` for each op name (no duplicates)
symbolic = registrar(RULES, "symbolic")

# Pure ops whose results the verifier deliberately treats as unknowns (floats, matrix products,
# casts out of the integers, pointer casts, local memory). Addresses never depend on them in the
# kernels we check; where one does, the unknown makes the verdict weaker, never unsound.
OPAQUE = frozenset({
    "absf", "addf", "subf", "mulf", "divf", "remf", "fma", "maxf", "minf", "negf", "pow", "fpowi", "atan2",
    "exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "tan", "sinh", "cosh", "tanh", "floor", "ceil",
    "cmpf", "ftof", "itof", "ftoi", "mulhii", "mmaf", "mmai", "mmaf_scaled", "extract", "insert",
    "pack", "unpack", "ptr_to_int", "int_to_ptr", "alloca", "get_global", "make_gather_scatter_view",
})
