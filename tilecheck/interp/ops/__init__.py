"""Interpreter op semantics; importing this package registers every rule."""
from tilecheck.interp.ops import arith, control, memory, shape, views  # noqa: F401
