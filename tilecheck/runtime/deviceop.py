"""DeviceOp: lazy, composable kernel launches run in three modes — sync, async (awaitable) and graph
(capture once, replay many). Every launch goes through the launcher's checks: verified once per kernel
and case, arguments checked for aliasing; ops zipped together must not touch each other's outputs.

On the cpu backend a graph is a recorded, pre-verified replay through the interpreter; on the cuda
backend the modes map onto a stream (sync), a CUDA event polled from the event loop (async) and a
captured CUDA graph (graph), see runtime/cuda/backend.py.
"""
from __future__ import annotations

import asyncio
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tilecheck.arrays import ArrayLayout, flat_arguments, layout_of, layouts_overlap
from tilecheck.errors import TilecheckError
from tilecheck.interp.engine import Interpreter
from tilecheck.runtime.launcher import (
    AliasingError,
    checked_module,
    module_for,
    normalize_grid,
    resolve_backend,
)
from tilecheck.interp.schedule import Schedule

if TYPE_CHECKING:
    from tilecheck.runtime.cuda.backend import CudaGraph


@dataclass(frozen=True)
class _Launch:
    grid: tuple[int, int, int]
    kernel: Any
    args: tuple[Any, ...]
    unsafe: bool


class DeviceOp:
    """A lazy unit of work: launches in ``stages`` run stage after stage; the launches of one stage
    are independent (``zip``) and may run in any order."""

    def __init__(self, stages: Sequence[Sequence[_Launch]], backend: str) -> None:
        self.stages = tuple(tuple(s) for s in stages)
        self.backend = backend

    def then(self, other: DeviceOp) -> DeviceOp:
        """``self`` then ``other`` (other sees self's results)."""
        _same_backend(self, other)
        return DeviceOp(self.stages + other.stages, self.backend)

    @staticmethod
    def zip(*ops: DeviceOp) -> DeviceOp:
        """Independent ops, which may run concurrently: none may write memory another one touches
        (checked when the op runs)."""
        if not ops:
            raise TilecheckError("zip() needs at least one op")
        for op in ops[1:]:
            _same_backend(ops[0], op)
        depth = max(len(op.stages) for op in ops)
        if depth == 1:
            return DeviceOp([tuple(launch for op in ops for launch in op.stages[0])], ops[0].backend)
        # zipping multi-stage ops: each op runs as a unit; keep them independent by running the
        # chains one after another (still a valid order for independent work)
        return DeviceOp([s for op in ops for s in op.stages], ops[0].backend)

    # ---- the three modes -----------------------------------------------------------------------
    def sync(self, stream: Any = None) -> None:
        """Run now and return when done (cuda: on ``stream``, None = the default stream)."""
        if self.backend == "cpu":
            if stream is not None:
                raise TilecheckError("stream= is for backend='cuda'; the cpu backend runs synchronously")
            self.graph().replay()
            return
        from tilecheck.runtime.cuda.backend import run_sync

        run_sync(self._checked(), stream)

    def __await__(self) -> Generator[Any, None, None]:
        """``await op``: the event loop keeps running other tasks while the work runs."""
        if self.backend == "cpu":
            return asyncio.get_running_loop().run_in_executor(None, self.sync).__await__()
        from tilecheck.runtime.cuda.backend import run_async

        return run_async(self._checked()).__await__()

    def graph(self) -> Graph | CudaGraph:
        """Capture once (compile, verify, check ownership), to ``replay()`` many times cheaply."""
        stages = self._checked()
        if self.backend == "cpu":
            return Graph([[(module_for(k, a)[0], a, g) for k, a, g in stage] for stage in stages])
        from tilecheck.runtime.cuda.backend import CudaGraph

        return CudaGraph(stages)

    def _checked(self) -> list[list[tuple[Any, tuple[Any, ...], tuple[int, int, int]]]]:
        """Every launch verified and checked (arguments, ownership between zipped launches); the
        launcher remembers checked launches, so running an op again costs a cache lookup."""
        stages = []
        for stage in self.stages:
            _check_independent(stage)
            for launch in stage:
                checked_module(launch.kernel, launch.args, launch.grid, self.backend, unsafe=launch.unsafe,
                               prefix="refusing to capture: ")
            stages.append([(launch.kernel, launch.args, launch.grid) for launch in stage])
        return stages


@dataclass
class Graph:
    """A captured DeviceOp on the cpu backend: compiled, verified launches, replayed without re-checking."""

    stages: list[list[tuple[Any, tuple[Any, ...], tuple[int, int, int]]]]

    def replay(self, sync: bool = True) -> None:
        for stage in self.stages:
            for module, args, grid in stage:
                Interpreter(module, args, grid, Schedule()).run()

    def synchronize(self) -> None:
        """Nothing to wait for: the cpu backend runs synchronously."""

    @property
    def launches(self) -> int:
        return sum(len(s) for s in self.stages)


def device_op(grid: Any, kernel: Any, args: Sequence[Any], *, backend: str | None = None,
              unsafe: bool = False) -> DeviceOp:
    """A lazy launch of ``kernel`` on ``args`` (run it with ``.sync()``, ``await``, or ``.graph()``);
    the backend follows the arrays unless given (see ``launch``)."""
    from tilecheck import checks

    checks.kernel("device_op(kernel=...)", kernel, module=True)
    checks.arguments("device_op(args=...)", args)
    checks.flag("device_op(unsafe=...)", unsafe)
    checks.choice("device_op(backend=...)", backend, ("cpu", "cuda"), none=True)
    args = tuple(args)
    return DeviceOp([[_Launch(normalize_grid(grid), kernel, args, unsafe)]], resolve_backend(backend, args))


def _same_backend(a: DeviceOp, b: DeviceOp) -> None:
    if a.backend != b.backend:
        raise TilecheckError(f"cannot compose a {a.backend} op with a {b.backend} op")


def _written_and_touched(launch: _Launch) -> tuple[list[ArrayLayout], list[ArrayLayout]]:
    from tilecheck.runtime.differential import argument_names, output_arrays

    module, _ = module_for(launch.kernel, launch.args)
    written, _pure = output_arrays(module)
    names = argument_names(module, launch.args)
    arrays = [(n, layout) for n, a in zip(names, flat_arguments(launch.args)) if (layout := layout_of(a)) is not None]
    return [a for n, a in arrays if n in written], [a for _, a in arrays]


def _check_independent(stage: Sequence[_Launch]) -> None:
    """The ownership rule for concurrent launches: an array one launch writes may not be read or
    written by another launch of the same stage."""
    if len(stage) < 2:
        return
    footprints = [_written_and_touched(launch) for launch in stage]
    for i, (written, _) in enumerate(footprints):
        for j, (_, touched) in enumerate(footprints):
            if i != j and any(layouts_overlap(w, t) for w in written for t in touched):
                raise AliasingError(f"zipped ops are not independent: launch {i + 1} writes memory that "
                                    f"launch {j + 1} touches; sequence them with .then()")
