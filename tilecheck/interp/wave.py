"""The state of one wave of blocks as the interpreter runs it, shared by the engine and the op
rules: the error an op raises, a loop's frame, the wave's context, and the per-block select."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tilecheck.errors import TilecheckError
from tilecheck.ir import Op, Value


class InterpreterError(TilecheckError):
    """An op failed or is not supported at run time; names the op and its source line."""


class TripLimitError(InterpreterError):
    """One loop ran past the schedule's ``max_trips``: a loop that does not end in this run (a spin on
    a flag that another block already moved past the value it waits for)."""


class StepLimitError(InterpreterError):
    """A run spent the schedule's ``max_steps`` of work (a bounded run: the exact detector's under the
    launcher, whose cost on a large scan or sort of spinning blocks is otherwise unbounded)."""


@dataclass
class LoopFrame:
    exited: np.ndarray  # blocks that left the current iteration (continue or break)
    broke: np.ndarray  # blocks that left the loop
    carried: list[Any]  # values for the next iteration (continue operands)
    results: list[Any]  # values at exit (break operands)


@dataclass
class WaveContext:
    """One wave's execution state."""

    blocks: np.ndarray  # (W, 3) block ids
    env: dict[Value, Any]
    active: np.ndarray  # (W,) bool: which blocks execute the current op
    loops: list[LoopFrame] = field(default_factory=list)
    yields: list[list[Any]] = field(default_factory=list)
    done: np.ndarray | None = None
    # the enclosing loops, outermost first: (loop op, iteration number, induction variable per block)
    iterations: list[tuple[Op, int, Any]] = field(default_factory=list)
    # values with lanes a GPU leaves unspecified (interp/unspecified.py): (lanes, the op that made them)
    unspecified: dict[Value, tuple[np.ndarray, Op]] = field(default_factory=dict)

    @property
    def width(self) -> int:
        return len(self.blocks)


def where(mask: np.ndarray, new: Any, old: Any) -> Any:
    """Per-block select between two wave values (tokens and views pass through; pointer tiles lane
    by lane, into several arrays where the two point into different ones)."""
    from tilecheck.interp.values import Pointer, Pointers, select_pointers

    if isinstance(new, (Pointer, Pointers)) and isinstance(old, (Pointer, Pointers)) and not mask.all():
        if not mask.any():
            return old
        return select_pointers(mask.reshape(mask.shape + (1,) * (new.offsets.ndim - 1)), new, old)
    if new is None or old is None or not isinstance(new, np.ndarray):
        return new if mask.all() or old is None else old if not mask.any() else new
    shaped = mask.reshape(mask.shape + (1,) * (new.ndim - 1))
    if isinstance(old, np.ndarray) and old.shape == new.shape:
        return np.where(shaped, new, old)
    return new
