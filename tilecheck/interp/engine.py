"""The numpy interpreter of Tile IR.

Blocks execute in *waves*: a wave is a set of blocks run in lockstep, each value carrying a
leading wave axis (vectorised over blocks). Control flow is masked per block (an ``if`` whose
condition differs across the wave runs both branches under complementary masks; loops run until
every block has left them). Each wave is a generator that pauses before every memory op, so a
scheduler can interleave waves at memory-op granularity and order independent ops in any order.
"""
from __future__ import annotations

import functools
from collections.abc import Generator, Sequence
from typing import Any

import numpy as np

from tilecheck.ir import Block, Function, Module, Op
from tilecheck.ir import types as T
from tilecheck.ir.opdefs import Effect
from tilecheck.interp.registry import RULES
from tilecheck.interp.values import Pointer, numpy_dtype
from tilecheck.interp.memory import ArrayMemory, Window, bind_arguments
from tilecheck.interp import unspecified
from tilecheck.interp.wave import InterpreterError, LoopFrame, StepLimitError, TripLimitError, WaveContext, where

Steps = Generator[None, None, Any]
# the wave's state, shared with the op rules (which must not import this module back)
__all__ = ["Interpreter", "InterpreterError", "LoopFrame", "WaveContext", "linear_block_ids", "where"]


# Both depend only on the function: computed once, not once per run of a differential campaign.
@functools.lru_cache(maxsize=64)
def _written(function: Function) -> frozenset[int | None]:
    from tilecheck.ir.summary import written_arguments

    return frozenset(written_arguments(function))


@functools.lru_cache(maxsize=64)
def _order_graph(function: Function) -> Any:
    from tilecheck.ir.order import order_graph

    return order_graph(function)


def linear_block_ids(blocks: np.ndarray, grid: tuple[int, int, int]) -> np.ndarray:
    """Block (x, y, z) -> x * gy * gz + y * gz + z: the order of ``Interpreter.all_blocks``."""
    return (blocks[:, 0] * grid[1] + blocks[:, 1]) * grid[2] + blocks[:, 2]


class Interpreter:
    """Executes one kernel launch on numpy arrays (in place)."""

    def __init__(self, module: Module, args: Sequence[Any], grid: tuple[int, int, int], schedule: Any,
                 recorder: Any = None, deciding_only: bool = False) -> None:
        from tilecheck.interp import ops as _ops  # noqa: F401  (registers the rules)

        self.module = module
        self.function: Function = module.entry
        # a run that only asks what memory blocks touch (the detector, a witness's confirmation)
        # skips the pure ops that decide no address, branch or value read back (``ir.deciding``):
        # what it stores to write-only arrays is then zeros
        self.skip: frozenset[Op] = frozenset()
        if deciding_only:
            from tilecheck.ir.deciding import skippable

            self.skip = skippable(self.function)
        self.grid = grid
        self.schedule = schedule
        # sees every memory access (``tilecheck.interp.detect``); None: run at full speed
        self.recorder = recorder
        self.arg_values, self.arrays = bind_arguments(module, self.function, args)
        self.memory_ops = 0
        self.max_memory_ops = schedule.max_memory_ops
        self.iterations = 0
        self.elements = 0
        self.steps = 0  # the run's work (``count_step``), bounded by the schedule's ``max_steps``
        self.writes = 0  # memory writes so far, by any block (a spin that sees none is stuck)
        written = _written(self.function)
        # arrays no op writes: loads may return views of them, no copy
        self.read_only = set() if None in written else set(self.arrays) - written
        self.constants: dict[tuple[Op, int], tuple[np.ndarray, ...]] = {}  # (op, wave width) -> its value
        self._waits: bool | None = None
        self._single: bool | None = None

    def windowed(self, windows: dict[int, Window]) -> None:
        """Arrays bound from lazily made copies (``memory.windows_keeping_overlaps``, by the copy's
        ``id``): their accesses copy the window's pages in first (``ArrayMemory.touch``)."""
        for mem in self.arrays.values():
            window = windows.get(id(mem.array))
            if window is not None:
                mem.in_window(window)

    def count_elements(self, ctx: WaveContext, op: Op) -> None:
        """The array elements a memory op moves (its data tile, in each active block); past the
        schedule's ``max_elements``, an error (a run bounded by its work, not by the clock)."""
        self.elements += _data_size(op) * int(np.count_nonzero(ctx.active))
        limit = self.schedule.max_elements
        if self.elements > limit:
            raise InterpreterError(f"more than {limit} array elements moved, the limit of this run, at "
                                   f"{op.loc.outermost()}", op.loc)

    def count_step(self, ctx: WaveContext, op: Op) -> None:
        """The work of one op run for a wave: one step, and one per ``VALUES_PER_STEP`` values of its
        results; past the schedule's ``max_steps``, an error. Deterministic (the same on any machine
        under any load), and close to time: a step is a few microseconds of interpreter overhead, a
        spin loop of scalar loads is all steps, a large tile's arithmetic is all values."""
        self.steps += 1 + (ctx.width * _result_size(op)) // VALUES_PER_STEP
        limit = self.schedule.max_steps
        if self.steps > limit:
            raise StepLimitError(f"more than {limit} steps of work (ops run for a wave, and values computed), "
                                 f"the limit of this run, at {op.loc.outermost()}", op.loc)

    def count_iteration(self, op: Op, trip: int) -> None:
        """One more loop iteration (``trip``: of this run of the loop, from 0); past the schedule's
        ``max_iterations`` in all or ``max_trips`` of one loop, an error (a bounded run, e.g.
        confirming a witness whose contents make a loop run for millions of iterations, or a while
        loop that never ends)."""
        if self.schedule.max_trips is not None and trip >= self.schedule.max_trips:
            raise TripLimitError(f"this '{op.name}' loop ran {trip} trips without ending, the limit of one "
                                   "loop in a CPU run (a loop that never ends? raise the limit with "
                                   "--max-trips / Schedule(max_trips=...))", op.loc)
        self.iterations += 1
        limit = self.schedule.max_iterations
        if limit is not None and self.iterations > limit:
            raise InterpreterError(f"more than {limit} loop iterations, the limit of this run, at "
                                   f"{op.loc.outermost()}", op.loc)

    def order_graph(self) -> Any:
        """The token/data order graph (only adversarial schedules need it)."""
        return _order_graph(self.function)

    # ---- launching -----------------------------------------------------------------------------
    def all_blocks(self) -> np.ndarray:
        gx, gy, gz = self.grid
        ids = np.indices((gx, gy, gz)).reshape(3, -1).T
        return ids.astype(np.int64)

    def run(self, blocks: np.ndarray | None = None) -> None:
        """Run ``blocks`` (the whole grid by default), never more blocks at once than memory allows
        (refused up front, before anything is allocated, when even one at a time does not fit)."""
        from tilecheck.interp.budget import blocks_alive

        fixed = self.recorder.summary_bytes(self.arrays) if self.recorder is not None else 0
        alive = blocks_alive(self.function, self.grid, self.module.name, fixed)
        if blocks is None:
            blocks = self.all_blocks()
        waves = self.schedule.waves(blocks, self.needs_single_block_waves(), alive)
        width = self.recorder.wave_width if self.recorder is not None else None
        self.schedule.drive(waves, self.wave, alive, waiting=self.waits(), width=width)

    def waits(self) -> bool:
        """Some block may spin until another raises a flag, or branch on what others did first (an
        atomic whose value decides a branch: ``ir.summary.steering_reads``)."""
        if self._waits is None:
            from tilecheck.ir.summary import steering_reads

            self._waits = bool(steering_reads(self.function))
        return self._waits

    def needs_single_block_waves(self) -> bool:
        """A ``loop`` that may wait for another block (a spin on a flag) could, in lockstep, wait for
        a block of its own wave forever; an ``int_to_ptr`` (an array of a list argument) may name a
        different array in each block, and a tensor view made from computed values (``arr.slice`` at
        a block's own offsets) a different origin or size: a view is one per wave. Where the
        divergence analysis (``ir.uniformity``) shows that the pointer or the view is the same in
        every block of a wave, or that the loop waits for no one, waves keep their blocks: a grouped
        GEMM's list arguments and a ragged BMM's per-expert slices are indexed by a loop counter, not
        by the block. (A kernel whose arrays may share memory keeps the rule without the analysis.)"""
        if self._single is None:
            self._single = self._single_block_ops()
        return self._single

    def _single_block_ops(self) -> bool:
        ops = list(self.function.walk())
        if not self.module.distinct_arrays:
            return any(op.name in ("loop", "int_to_ptr") or (op.name == "make_tensor_view" and _computed(op))
                       for op in ops)
        from tilecheck.ir import uniformity

        found = uniformity.of(self.function)
        return any(op.name == "loop" and found.may_wait(op)
                   or op.name in ("int_to_ptr", "make_tensor_view") and found.varies(op) for op in ops)

    def wave(self, blocks: np.ndarray) -> Steps:
        width = len(blocks)
        ctx = WaveContext(blocks, {}, np.ones(width, bool), done=np.zeros(width, bool))
        for i, (value, arg) in enumerate(zip(self.function.args, self.arg_values)):
            if i in self.arrays:
                shape = value.type.shape if isinstance(value.type, T.TileType) else ()
                ctx.env[value] = Pointer(i, np.zeros((width, *shape), np.int64))
            else:
                ctx.env[value] = np.broadcast_to(np.asarray(arg, dtype=numpy_dtype(value.type)), (width,))
        yield from self.region(ctx, self.function.body)
        if self.recorder is not None:
            self.recorder.finished(blocks)

    # ---- execution -----------------------------------------------------------------------------
    def region(self, ctx: WaveContext, block: Block) -> Steps:
        """Run a block's ops (in the schedule's order); the terminator records its operands."""
        for op in self.schedule.order(block, self):
            if not ctx.active.any():
                return
            opdef = op.opdef
            if opdef is not None and opdef.terminator:
                if ctx.unspecified:
                    unspecified.before(ctx, op)
                self.terminate(ctx, op)
                return
            yield from self.execute(ctx, op)

    def execute(self, ctx: WaveContext, op: Op) -> Steps:
        opdef = op.opdef
        if opdef is None:
            raise InterpreterError(f"unsupported op '{op.name}' at {op.loc.outermost()}", op.loc)
        rule = RULES.get(op.name)
        if rule is None:
            raise InterpreterError(f"the CPU interpreter does not support '{op.name}' "
                                   f"(at {op.loc.outermost()})", op.loc)
        if op in self.skip:
            for value in op.results:
                shape = (ctx.width, *value.type.shape) if isinstance(value.type, T.TileType) else (ctx.width,)
                ctx.env[value] = np.broadcast_to(np.zeros((), numpy_dtype(value.type)), shape)
            return
        if self.schedule.max_steps is not None:
            self.count_step(ctx, op)
        operands = [ctx.env[v] for v in op.operands]
        if ctx.unspecified:
            unspecified.before(ctx, op)
        if op.regions:
            results = yield from rule(self, ctx, op, *operands)
        else:
            if opdef.effect is not Effect.NONE:
                yield  # a scheduling point: other waves may run first
                self.memory_ops += 1
                if self.memory_ops > self.max_memory_ops:
                    raise InterpreterError(f"no progress after {self.max_memory_ops} memory ops (a spin lock "
                                           f"that is never released?) at {op.loc.outermost()}", op.loc)
                if self.schedule.max_elements is not None:
                    self.count_elements(ctx, op)
            try:
                results = rule(self, ctx, op, *operands)
            except InterpreterError:
                raise
            except (ValueError, TypeError, IndexError, FloatingPointError, ZeroDivisionError) as exc:
                raise InterpreterError(f"{op.name} at {op.loc.outermost()} failed: {exc}", op.loc) from None
        if len(results) != len(op.results):
            raise InterpreterError(f"{op.name}: rule returned {len(results)} results", op.loc)
        for value, result in zip(op.results, results):
            ctx.env[value] = result
        if ctx.unspecified:
            unspecified.after(ctx, op)

    def terminate(self, ctx: WaveContext, op: Op) -> None:
        values = [ctx.env[v] for v in op.operands]
        mask = ctx.active
        if op.name == "yield":
            frame = ctx.yields[-1] if ctx.yields else None
            if frame is not None:
                for i, v in enumerate(values):
                    frame[i] = v if frame[i] is None else where(mask, v, frame[i])
        elif op.name in ("continue", "break"):
            frame = ctx.loops[-1]
            target = frame.carried if op.name == "continue" else frame.results
            for i, v in enumerate(values):
                target[i] = v if target[i] is None else where(mask, v, target[i])
            frame.exited = frame.exited | mask
            if op.name == "break":
                frame.broke = frame.broke | mask
        elif op.name == "return":
            ctx.done = ctx.done | mask

    # ---- memory helpers for rules ------------------------------------------------------------
    def memory(self, array: int, op: Op) -> ArrayMemory:
        mem = self.arrays.get(array)
        if mem is None:
            raise InterpreterError(f"{op.name} at {op.loc.outermost()}: pointer into an unknown array", op.loc)
        return mem


def _computed(op: Op) -> bool:
    """Some operand of ``op`` is computed in the kernel, not an entry argument (through ``assume``)."""
    for v in op.operands:
        while isinstance(v.owner, Op) and v.owner.name == "assume":
            v = v.owner.operands[0]
        if isinstance(v.owner, Op):
            return True
    return False


# values an op computes per step of work (``Interpreter.count_step``): numpy handles a few thousand
# values in about the time the interpreter spends running one op
VALUES_PER_STEP = 4096


@functools.lru_cache(maxsize=4096)
def _result_size(op: Op) -> int:
    """The element count of an op's results (their tiles, per block)."""
    return sum(_tile_elements(v.type) for v in op.results)


def _tile_elements(t: T.Type) -> int:
    """The elements of a tile of data (0 for a token, a view or a scalar type)."""
    if isinstance(t, T.TileType) and not isinstance(t.element, T.TokenType):
        return int(np.prod(t.shape)) if t.shape else 1
    return 0


@functools.lru_cache(maxsize=4096)
def _data_size(op: Op) -> int:
    """The element count of the largest non-token tile a memory op takes or gives (its data)."""
    return max(1, *(_tile_elements(v.type) for v in (*op.operands, *op.results)))
