"""Symbolic op semantics; importing this package registers every rule."""
from tilecheck.verifier.model.ops import arith, control, memory, shape, views  # noqa: F401
