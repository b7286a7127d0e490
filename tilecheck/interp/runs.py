"""Running a launch, or a few of its blocks, on copies of the arguments: the copies keep the
arguments' aliasing, and the caller's arrays stay as they were. ``touched_by`` is the confirmation
channel's question (which of these blocks touch this element, and how); ``with_contents`` writes a
witness's index contents into copies of the arguments."""
from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from tilecheck.errors import TilecheckError
from tilecheck.grid import normalize_grid
from tilecheck.interp.engine import Interpreter
from tilecheck.interp.memory import (Window, as_host_array, blank_with_layout, copies_keeping_overlaps,
                                     copy_with_layout, windows_keeping_overlaps)
from tilecheck.interp.recorder import Recorder
from tilecheck.interp.schedule import Schedule

# what running a few blocks to confirm a witness may cost (tile-level memory ops, loop iterations)
CONFIRM_MEMORY_OPS = 100_000
CONFIRM_ITERATIONS = 20_000
# the loop iterations of a witness whose index contents the solver chose (not the given ones): the
# verdict on a launch rests on its own data (verify's data step), and a model's contents can make
# a loop run for billions of iterations (TileGym's ragged BMM: 20,000 of them, 6 s, to say no).
# Past it the witness is not confirmed: its obligation stays open, never a pass
OTHER_CONTENTS_ITERATIONS = 2_000
LAUNCH_BLOCKS = 4096  # a launch this small runs whole when one of a witness's blocks may wait for another
from tilecheck.ir import Module
from tilecheck.ir.cutile import module_for
from tilecheck.ir.summary import read_arguments, steering_reads, written_arguments


def block_of(linear: int, grid: tuple[int, int, int]) -> tuple[int, int, int]:
    """The block ids of a linear block number (row-major over the grid)."""
    _, gy, gz = grid
    return (linear // (gy * gz), (linear // gz) % gy, linear % gz)


def copies(module: Module, args: tuple[Any, ...], only_written: bool = False,
           scratch: dict[int, tuple[Any, np.ndarray]] | None = None,
           windows: dict[int, Window] | None = None) -> tuple[Any, ...]:
    """Copies of every host array argument (nested tuples too) that alias one another as the
    originals do, so the caller's arrays stay as they were and overlapping arguments still overlap.
    ``only_written``: an array no op writes is passed as it is (a run of a few blocks on large
    inputs, the exact detector's run), unless it shares memory with a written one: then the arrays
    overlapping a written one, and those overlapping them, are copied together, and no other (a
    confirmation once copied every array of an in-place launch, 2.44 GiB, because one written
    output was a view of one input). ``scratch`` (the caller's, kept across runs): an array that
    ops write but none reads, and that shares memory with no other argument, is not copied: what it
    holds decides nothing in a run (no address, no branch), so it gets a zeroed array of its layout
    (``blank_with_layout``), the one an earlier run left there when there is one. ``windows`` (with
    ``only_written``): the copies are made lazily, page by page where a run touches them
    (``memory.Window``), and each copy's window is put there by ``id`` for ``Interpreter.windowed``."""
    leaves: list[np.ndarray] = []
    _collect(args, leaves)
    written = _written_leaves(module, len(leaves)) if only_written else None
    if written is None:
        made = copies_keeping_overlaps(leaves)
        return _rebuilt(args, made)
    copied_ones = _sharing_with_written(leaves, written)
    write_only = _write_only(module, leaves, written) if scratch is not None else []
    kept = {i: scratch[i][1] if i in scratch and _same_memory(scratch[i][0], leaves[i])
            else blank_with_layout(leaves[i]) for i in write_only}
    to_copy = [a for i, a in enumerate(leaves) if i in copied_ones and i not in kept]
    if windows is not None:
        lazy, made_windows = windows_keeping_overlaps(to_copy)
        windows.update(made_windows)
        copied = iter(lazy)
    else:
        copied = iter(copies_keeping_overlaps(to_copy))
    made = [kept[i] if i in kept else next(copied) if i in copied_ones else a for i, a in enumerate(leaves)]
    if scratch is not None:
        scratch.update({i: (leaves[i], made[i]) for i in write_only})
    return _rebuilt(args, made)


def _rebuilt(args: tuple[Any, ...], made: list[np.ndarray]) -> tuple[Any, ...]:
    """``args`` with their array leaves replaced by ``made``, in ``_collect``'s order."""
    leaves = iter(made)
    return tuple(_rebuild(a, leaves) for a in args)


def _sharing_with_written(leaves: list[np.ndarray], written: list[bool]) -> set[int]:
    """The leaves a run must copy: the written ones, and every leaf that shares memory with one of
    those, transitively (one buffer seen through several arguments is copied once, as one)."""
    out = {i for i, w in enumerate(written) if w}
    frontier = list(out)
    while frontier:
        i = frontier.pop()
        for j, b in enumerate(leaves):
            if j not in out and _overlap(leaves[i], b):
                out.add(j)
                frontier.append(j)
    return out


# module functions, not closures: a recursive closure is a reference cycle, and this one held the
# copies of the arguments until a collection (a GB per confirmation run on Liger's cross entropy)
def _collect(a: Any, leaves: list[np.ndarray]) -> None:
    if isinstance(a, (tuple, list)):  # tuple arguments, and the arrays of list arguments
        for x in a:
            _collect(x, leaves)
    elif _is_array(a):
        leaves.append(as_host_array("argument", a))


def _rebuild(a: Any, copies: Iterator[Any]) -> Any:
    if isinstance(a, (tuple, list)):
        return type(a)(_rebuild(x, copies) for x in a)
    return next(copies) if _is_array(a) else a


def _written_leaves(module: Module, count: int) -> list[bool] | None:
    """Per array leaf of the arguments (in ``copies`` order): may an op write it? None when that
    cannot be told (a write the IR does not trace, or leaves that do not match the parameters)."""
    return _leaf_flags(module, count, written_arguments(module.entry))


def _leaf_flags(module: Module, count: int, touched: set[int | None]) -> list[bool] | None:
    """Per array leaf: is its entry argument in ``touched`` (an array of a list argument always
    counts: its accesses go through the list's table, which is not traced)? None when ``touched``
    holds an untraced access or the leaves do not match the parameters."""
    if None in touched:
        return None
    flags: list[bool] = []
    for p in module.params:
        if p.kind == "array":
            flags.append(p.first_arg in touched)
        elif p.kind == "list":
            flags += [True] * len(getattr(p, "items", ()))
    return flags if len(flags) == count else None


def _write_only(module: Module, leaves: list[np.ndarray], written: list[bool]) -> list[int]:
    """The leaves ops write and none reads, sharing memory with no other leaf."""
    read = _leaf_flags(module, len(leaves), read_arguments(module.entry))
    if read is None:
        return []
    return [i for i, a in enumerate(leaves) if written[i] and not read[i]
            and not any(_overlap(a, b) for j, b in enumerate(leaves) if j != i)]


def _same_memory(a: np.ndarray, b: np.ndarray) -> bool:
    """One array, even through two view objects (the scratch entry keeps its memory alive)."""
    return (a.__array_interface__["data"][0], a.shape, a.strides, a.dtype) == \
        (b.__array_interface__["data"][0], b.shape, b.strides, b.dtype)


def _overlap(a: np.ndarray, b: np.ndarray) -> bool:
    """The two arrays' address ranges meet (conservative: interleaved views count)."""
    return bool(np.may_share_memory(a, b)) if a.size and b.size else False


def _is_array(a: Any) -> bool:
    return isinstance(a, np.ndarray) or (hasattr(a, "shape")
                                         and (hasattr(a, "__dlpack__") or hasattr(a, "__array__"))
                                         and getattr(a, "shape", ()) != ())


def touched_by(kernel: Any, args: Sequence[Any], grid: Any, blocks: Sequence[tuple[int, ...]], array: str,
               element: tuple[int, ...] | None = None, offset: int | None = None, *,
               by_op: bool = False, scratch: dict[int, tuple[Any, np.ndarray]] | None = None,
               iterations: int = CONFIRM_ITERATIONS) -> dict[tuple[int, ...], set[Any]]:
    """Run only ``blocks`` (in the given order; together, with every other block of a small launch,
    when the kernel has blocks that wait for others) on copies of ``args`` and say which of them touch one
    element of ``array`` (by coordinates, or by element offset) and how: block -> {"read", "write",
    "atomic"} (with ``by_op``: {(effect, op's location, event, lane)}, one per touch). The confirmation channel for a witness:
    both of its blocks must touch its element, with its ops. ``iterations``: the loop iterations
    the run may take (per pair of blocks), past which it raises ``InterpreterError``."""
    with _BlockRun(kernel, args, grid, blocks, scratch, iterations) as run:
        return _touches(run, array, element, offset, by_op)


def reproduced(kernel: Any, args: Sequence[Any], grid: Any, witness: Any, *,
               scratch: dict[int, tuple[Any, np.ndarray]] | None = None,
               iterations: int = CONFIRM_ITERATIONS) -> bool:
    """Run the blocks of a race ``witness`` (as ``touched_by`` runs them): does each touch its element
    the way the witness says (``reproduces``)? A block stops as soon as it has shown its sides'
    touches: what it does afterwards cannot undo them (a witness whose loop runs on for thousands
    of trips after the racing store is confirmed in the trips up to it)."""
    blocks = [witness.first.block] + ([witness.second.block] if witness.second is not None else [])
    with _BlockRun(kernel, args, grid, blocks, scratch, iterations) as run:
        touched = _touches(run, witness.array, witness.element, witness.offset, True, until=witness)
    return reproduces(witness, touched)


class _Shown(Exception):
    """A run has shown what it was asked (``reproduced``): the rest of the block is not run."""


def _touches(run: _BlockRun, array: str, element: tuple[int, ...] | None, offset: int | None,
             by_op: bool, until: Any = None) -> dict[tuple[int, ...], set[Any]]:
    index = next((i for i, mem in run.interp.arrays.items() if mem.name == array), None)
    if index is None:
        raise TilecheckError(f"{run.module.name} has no array argument '{array}'")
    mem = run.interp.arrays[index]
    if offset is None:
        if (element is None or len(element) != len(mem.shape)
                or any(not 0 <= c < n for c, n in zip(element, mem.shape))):
            return {}
        offset = int(sum(c * s for c, s in zip(element, mem.strides)))
    recorder = run.recorder
    target, shift = recorder.alias.get(index, (index, 0))
    watch = np.zeros(recorder.sizes[target], bool)
    if 0 <= offset + shift < len(watch):
        watch[offset + shift] = True
    recorder.watch = {target: watch}
    grid3 = run.grid
    if until is not None:
        live: dict[tuple[int, ...], set[Any]] = {}

        def watched(event: int, blocks: np.ndarray, lanes: np.ndarray) -> None:
            _add_touches(recorder, live, grid3, itertools.repeat(event), blocks.tolist(), lanes.tolist(), True)
            if _shown(until, live, run.current):
                raise _Shown
        recorder.on_watch = watched
    run.run()
    out: dict[tuple[int, ...], set[Any]] = {}
    for records in recorder.records.values():
        col = records.columns()
        _add_touches(recorder, out, grid3, col["event"].tolist(), col["block"].tolist(), col["lane"].tolist(), by_op)
    return out


def _add_touches(recorder: Recorder, out: dict[tuple[int, ...], set[Any]], grid: tuple[int, int, int],
                 events: Iterable[int], linears: Iterable[int], lanes: Iterable[int], by_op: bool) -> None:
    """Touches of the watched element into ``out``: block -> {(effect, op's location, event, lane)}
    (with ``by_op``; else the effects alone)."""
    for event, linear, lane in zip(events, linears, lanes):
        e = recorder.events[event]
        effect = ("read", "write", "atomic")[e.effect]
        out.setdefault(block_of(linear, grid), set()).add((effect, e.op.loc, event, lane) if by_op else effect)


def leaves_array(kernel: Any, args: Sequence[Any], grid: Any, block: tuple[int, ...], op_name: str,
                 loc: Any, scratch: dict[int, tuple[Any, np.ndarray]] | None = None,
                 iterations: int = CONFIRM_ITERATIONS) -> bool:
    """Run ``block`` (as ``touched_by`` runs blocks) on copies of ``args``: does the op at ``loc``
    touch an element outside its array there? The confirmation channel for an out-of-bounds witness."""
    with _BlockRun(kernel, args, grid, [block], scratch, iterations) as run:
        run.run()
        block3 = tuple(block) + (0,) * (3 - len(block))
        return any(op.name == op_name and op.loc == loc and tuple(oob.block) == block3
                   for op, oob in run.recorder.oob.items())


class _BlockRun:
    """Some blocks of a launch on copies of the written arrays, under a recorder, in a bounded run:
    a witness whose contents make a loop run for millions of iterations is not confirmed (the
    verdict is then unknown), rather than run for hours."""

    def __init__(self, kernel: Any, args: Sequence[Any], grid: Any, blocks: Sequence[tuple[int, ...]],
                 scratch: dict[int, tuple[Any, np.ndarray]] | None = None,
                 iterations: int = CONFIRM_ITERATIONS) -> None:
        self.grid = normalize_grid(grid)
        self.module, _ = module_for(kernel, tuple(args))
        named = list(dict.fromkeys(tuple(b) + (0,) * (3 - len(b)) for b in blocks))  # a block named twice runs once
        self.waits = bool(steering_reads(self.module.entry))
        # a block may spin until another raises a flag: then the blocks run together (the interpreter
        # steps them in turn), and in a small launch every block runs, so the one it waits for does
        self.order = (launch_around(self.grid, named[0], named[-1]) or named) if self.waits and named else named
        scale = max(1, len(self.order) // 2)
        schedule = Schedule(max_memory_ops=CONFIRM_MEMORY_OPS * scale,
                            max_iterations=iterations * scale)
        # the copies are windows: two blocks touch a few tiles of arrays that may be gigabytes
        windows: dict[int, Window] = {}
        run_args = copies(self.module, tuple(args), only_written=True, scratch=scratch, windows=windows)
        # which elements the blocks touch, not what they compute (``Interpreter`` deciding_only)
        self.interp = Interpreter(self.module, run_args, self.grid, schedule, deciding_only=True)
        self.interp.windowed(windows)
        self.recorder = Recorder(self.grid, set(), None, ())
        self.recorder.summarise = False
        self.recorder.bind(self.interp.arrays)
        self.interp.recorder = self.recorder
        self.current: tuple[int, int, int] | None = None  # the block running alone (None: all together)
        del run_args  # this frame may outlive the call (see __exit__): it must not hold the copies

    def __enter__(self) -> _BlockRun:
        return self

    def __exit__(self, *exc: Any) -> None:
        # the copies go now, not when a collection finds them: a frame a compile keeps (cuda-tile's)
        # can hold this run in a cycle, and a confirmation per witness copies the written arrays
        # again (Liger's in-place cross entropy: 1 GB logits a copy, 24 GB before a collection)
        self.interp.arrays.clear()
        self.interp.arg_values = ()

    def run(self) -> None:
        """Run the blocks; one that raises ``_Shown`` stops there (with every other block, when they
        run together)."""
        if self.waits:
            self.current = None
            with contextlib.suppress(_Shown):
                self.interp.run(np.array(self.order, np.int64))
        else:
            for block in self.order:
                self.current = block
                with contextlib.suppress(_Shown):
                    self.interp.run(np.array([block], np.int64))


def launch_around(grid: tuple[int, int, int], first: tuple[int, ...], last: tuple[int, ...]
                  ) -> list[tuple[int, int, int]] | None:
    """Every block of a small launch, ``first`` first and ``last`` last, the others in linear order
    (None past ``LAUNCH_BLOCKS``)."""
    if grid[0] * grid[1] * grid[2] > LAUNCH_BLOCKS:
        return None
    pad = lambda b: tuple(b) + (0,) * (3 - len(b))  # noqa: E731
    ends = {pad(first), pad(last)}
    others = [b for b in itertools.product(range(grid[0]), range(grid[1]), range(grid[2])) if b not in ends]
    return list(dict.fromkeys([pad(first), *sorted(others, key=lambda b: (b[2], b[1], b[0])), pad(last)]))


def reproduces(witness: Any, touched: dict[tuple[int, ...], set[Any]]) -> bool:
    """Each side of ``witness`` touches its element in its block the way it says (``touched``:
    ``touched_by(..., by_op=True)``). Inside one block, one op on both sides must touch it twice (two
    lanes of one instance, or two iterations): a single touch is no race with itself."""
    return _shown(witness, touched, None)


def _shown(witness: Any, touched: dict[tuple[int, ...], set[Any]], block: tuple[int, ...] | None) -> bool:
    """``reproduces``, for the sides in ``block`` only (None: every side)."""
    sides = [witness.first] + ([witness.second] if witness.second is not None else [])
    if block is not None:
        sides = [side for side in sides if tuple(side.block) + (0,) * (3 - len(side.block)) == block]
        if not sides:  # a block the witness does not name has nothing to show: it runs to its end
            return False
    uses = [{(event, lane) for effect, loc, event, lane in touched.get(tuple(side.block), set())
             if loc == side.loc and effect in _effects(side.effect)} for side in sides]
    if not all(uses):
        return False
    second = witness.second
    if second is not None and tuple(second.block) == tuple(witness.first.block) \
            and (second.op, second.loc) == (witness.first.op, witness.first.loc) and len(sides) == 2:
        return len(uses[0]) >= 2
    return True


def _effects(effect: str) -> set[str]:
    """What the interpreter may record for an access of this kind (a tile-block-scoped atomic is a
    plain write to other blocks, and recorded as one)."""
    return {"atomic", "write"} if effect == "atomic" else {effect}


def with_contents(args: Sequence[Any], names: Sequence[str], contents: dict[str, dict[tuple[int, ...], int]]
                  ) -> tuple[Any, ...]:
    """``args`` (flat, named by ``names``) with ``contents`` (array name -> {coordinates: value})
    written into copies of the arrays they name; coordinates outside an array are ignored."""
    run_args = list(args)
    for name, values in contents.items():
        if name not in names:
            continue
        i = list(names).index(name)
        array = copy_with_layout(as_host_array(name, run_args[i]))
        for coords, value in values.items():
            if len(coords) == array.ndim and all(0 <= c < n for c, n in zip(coords, array.shape)):
                array[coords] = value
        run_args[i] = array
    return tuple(run_args)
