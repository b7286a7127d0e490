"""Symbolic op semantics; importing this package registers every rule."""
from tilecheck.verifier.symbolic.ops import arith, control, memory, shape, views  # noqa: F401
