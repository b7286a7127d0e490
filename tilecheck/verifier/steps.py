"""The values the steps of one verification hand each other (``pipeline.prove``): what the proof
is about (``Model``) and what the levels came to (``Proof``)."""
from __future__ import annotations

import dataclasses
from typing import Any

from tilecheck.ir import Module
from tilecheck.verifier.contracts.levels import Level, LevelResult


@dataclasses.dataclass
class Model:
    """Step 1: what the proof is about."""

    kernel: Any  # as the user gave it (a kernel, or a Module)
    module: Module
    params: tuple[Any, ...]
    fp: Any  # the footprints (``model.engine.Footprints``)
    graph: Any  # the accesses' token order (``ir.order.OrderGraph``)
    locks: list[Any]  # spin locks that order their critical sections
    lock_facts: list[Any]  # what the locks counted rest on (the lock arrays' contents)
    lock_notes: list[str]
    unchecked: set[str]  # lock arrays whose contents are on the device
    compile_s: float  # seconds to the Tile IR


@dataclasses.dataclass
class Proof:
    """Step 5: the levels asked, what each came to, and the last level's checker."""

    levels: list[Level]
    results: list[LevelResult]
    checker: Any  # the last level's ``obligations.checker.Checker`` (None: no level was asked)
