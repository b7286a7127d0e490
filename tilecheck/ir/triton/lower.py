"""TTIR -> Tile IR: the op map of the Triton frontend.

Each TTIR op becomes the Tile IR ops with its meaning (``tt.addptr`` an ``offset``, ``tt.load`` a
``load_ptr_tko``, ``scf.while`` a ``loop`` that breaks, ...), so the verifier, interpreter and
detector see one IR whatever the source language. Three choices shape the result:

- **Arrays.** A pointer parameter is a 1-D array over the memory its tensor spans (entry arguments:
  pointer, extent, stride, as cuTile passes a 1-D array; the stride is 1 for every launch). A
  pointer offset is scaled by that stride, so the checkers see element coordinates and bounds.
- **Order inside a program.** A Triton program runs its memory operations in program order (the
  language's sequential semantics, which Triton's own interpreter follows), so every memory op
  takes the token of the one before it; loops and branches carry the token.
- **Nothing is dropped.** An op outside the map becomes an op the model does not know
  (``tt.<name>``), which the verifier answers ``unknown`` for, naming it.
"""
from __future__ import annotations

from collections.abc import Sequence

from tilecheck.ir.core import Function
from tilecheck.ir.triton.builder import Lowering, Param
from tilecheck.ir.triton import control, library, ops, shapes
from tilecheck.ir.triton.registry import mapped_ops
from tilecheck.ir.triton.ttir import Locations, TFunc

__all__ = ["Param", "lower", "mapped_ops"]


def lower(func: TFunc, locs: Locations, params: Sequence[Param]) -> Function:
    """The Tile IR entry function of a TTIR kernel function."""
    # the op map, registered by importing them
    assert control.__name__ and library.__name__ and ops.__name__ and shapes.__name__
    return Lowering(func, locs, params).run()


