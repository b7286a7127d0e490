"""A level of the verification (DESIGN §4): the shapes, grid and rules its queries assume, and what
its obligations came to (findings, undecided queries, proofs and the rules they used)."""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from tilecheck.report import Finding

# the level of a launch's verdict proved for every launch its contract over the shapes admits
EVERY_SHAPE_LEVEL = "every shape, under its launch contract"
# the level of a verdict without a grid, for the grids of the kernel's contract (report.contract)
CONTRACT_LEVEL = "the given shapes, for the grids of its contract"

@dataclass(frozen=True)
class Level:
    number: int
    label: str
    shapes: dict[str, tuple[int, ...]] | None  # array name -> concrete shape (None: symbolic)
    strides: dict[str, tuple[int, ...]] | None
    scalars: dict[int, int] | None  # entry-arg index -> value
    grid: tuple[int, int, int] | None
    # with a symbolic grid: the largest extent per axis (None: any); a contract search sets it
    grid_max: tuple[int | None, int | None, int | None] | None = None
    # more constraints on the grid, shapes, strides and scalars (a contract over the shapes)
    rules: tuple[Any, ...] = ()
    # at a symbolic level: what the kernel's integer widths say of every launch (shape_contract);
    # when set, the level checks that no address computation leaves its type under them
    widths: tuple[Any, ...] | None = None
    # Boolean constants each query assumes; ``rules`` may be implications of them, and a proof
    # records which it used (``LevelResult.cores``): the rules a contract needs
    tracked: tuple[Any, ...] = ()


@dataclass
class LevelResult:
    level: Level
    findings: list[Finding] = field(default_factory=list)
    unknowns: list[str] = field(default_factory=list)
    queries: int = 0
    solver_s: float = 0.0
    overflow_blocks: list[tuple[int, ...]] = field(default_factory=list)  # where overflow findings happen
    # the obligations this level proved (``Checker.solve`` keys): a run of the same level under more
    # constraints (preconditions, pinned contents) need not ask them again
    proved: set[tuple[Any, ...]] = field(default_factory=set)
    # the open obligations a probe proved with the small index arrays held at their given contents
    # (``given_case.probed``): the pinned run of the same level (verify's data step) need not ask them
    proved_pinned: set[tuple[Any, ...]] = field(default_factory=set)
    cores: set[str] = field(default_factory=set)  # the tracked assumptions the level's proofs used
    reads_data: bool = False  # a defect found needs array contents (its query reads them)
    unconfirmed: int = 0  # the level's models that did not reproduce on the interpreter (witnesses.py)

    def prove(self, keys: Iterable[tuple[Any, ...]]) -> None:
        """Record ``keys`` proved (``Checker.solve`` adds the proof's core to ``cores``)."""
        self.proved.update(keys)

    @property
    def races(self) -> list[Finding]:
        """Races and out-of-bounds accesses: the findings that keep a level from being a proof."""
        return [f for f in self.findings if f.is_defect]
