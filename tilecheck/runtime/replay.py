"""Replay a verifier witness on the CPU interpreter: run the two witness blocks in both orders and
show the element whose value depends on the order."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tilecheck.errors import TilecheckError
from tilecheck.runtime.differential import argument_names, fresh_arguments, output_arrays
from tilecheck.arrays import flat_arguments, is_torch_tensor, rebuild_arguments
from tilecheck.interp.memory import as_host_array
from tilecheck.interp.runs import launch_around, reproduces, touched_by, with_contents
from tilecheck.interp.engine import Interpreter, InterpreterError
from tilecheck.runtime.launcher import module_for, normalize_grid
from tilecheck.interp.schedule import Schedule


@dataclass
class ReplayResult:
    finding: Any
    reproduced: bool
    element: str
    first_order: Any = None  # the element's value when the witness's first block runs first
    second_order: Any = None
    differing: dict[str, int] = field(default_factory=dict)  # array -> elements that differ between orders
    error: str | None = None
    note: str | None = None
    touched: dict[tuple[int, ...], set[str]] | None = None  # which witness blocks touch the element, how

    def __str__(self) -> str:
        f = self.finding
        if self.error is not None:
            return f"replay of {f.kind}: the interpreter stopped: {self.error}"
        if self.touched is not None and not self.reproduced:
            w = f.witness
            missing = [b for b in {w.first.block, (w.second or w.first).block} if b not in self.touched]
            if not missing:
                return (f"replay of {f.kind} on {self.element}: did not reproduce: the witness's ops do not "
                        "touch it the way it says (one op, once) when run with the given arguments")
            return (f"replay of {f.kind} on {self.element}: did not reproduce: block(s) "
                    f"{', '.join(map(str, sorted(missing)))} do not touch it when run with the given arguments")
        if not self.differing:
            return (f"replay of {f.kind} on {self.element}: both blocks touch it, but both orders give the "
                    "same outputs (the racing accesses store equal values here)")
        w = f.witness
        order = f"block {w.first.block} then {w.second.block}" if w.second else "one order"
        text = (f"replay of {f.kind} on {self.element}: {order} -> {self.first_order!r}; "
                f"the other order -> {self.second_order!r}")
        if self.differing:
            text += "; differing elements: " + ", ".join(f"{k}: {v}" for k, v in self.differing.items())
        if self.note:
            text += f" ({self.note})"
        return text


INTERLEAVED_ORDERS = 32  # seeded interleavings tried when one block waits for the other


def replay(finding: Any) -> ReplayResult:
    """Replay ``finding``'s witness (a ``tilecheck.Finding`` from ``verify(kernel, args, grid)``)."""
    if finding.witness is None or getattr(finding, "case", None) is None:
        raise TilecheckError("this finding has no replayable witness (verify a kernel with its launch arguments)")
    case = finding.launch_case()
    if case is None:
        raise TilecheckError("this finding's launch arrays were freed (a verdict the launcher kept): verify the "
                             "kernel again with its arguments, and replay that report's finding")
    kernel, args, grid = case
    if args is None:
        raise TilecheckError("replay needs the launch arguments: verify(kernel, args, grid)")
    # torch CPU tensors as numpy views: the runs below work on copies of numpy arrays (a tensor
    # was run on in place, the caller's data changed, and its outputs compared as numpy arrays)
    args = rebuild_arguments(args, [as_host_array("argument", a) if is_torch_tensor(a) and a.device.type == "cpu"
                                    else a for a in flat_arguments(args)])
    w = finding.witness
    element = w.element_text()
    if finding.kind == "aliasing":
        return ReplayResult(finding, False, element,
                            error="aliasing is a property of the arguments, not of an execution order")
    module, _ = module_for(kernel, args)
    grid3 = normalize_grid(grid if grid is not None else w.grid)
    written, pure = output_arrays(module)
    if w.contents and module.params:  # the index contents the race needs, written into copies
        args = with_contents(flat_arguments(args), [p.name for p in module.params], w.contents)
    names = argument_names(module, args)
    index = {name: i for i, name in enumerate(names)}
    first = np.array([w.first.block], np.int64)
    second = np.array([w.second.block], np.int64) if w.second is not None else first
    result = _replay(finding, module, args, names, written, pure, index, grid3, first, second)
    if result.error is None and finding.kind in ("write-write", "read-write", "unordered-in-block"):
        blocks = [w.first.block] + ([w.second.block] if w.second is not None else [])
        touched = touched_by(kernel, args, grid3, blocks, w.array, w.element, w.offset, by_op=True)
        both = reproduces(w, touched)
        if not both and len(set(blocks)) == 2:
            # the path to the element may depend on what other blocks did first (a ticket drawn
            # after theirs): the whole launch, the witness's first block first and its second last
            launch = launch_around(grid3, blocks[0], blocks[1])
            if launch is not None:
                try:
                    whole = touched_by(kernel, args, grid3, launch, w.array, w.element, w.offset, by_op=True)
                except InterpreterError:
                    whole = {}
                if reproduces(w, whole):
                    touched, both = whole, True
                    result.note = "with every other block of the launch run between the two"
        result.touched = {block: {t[0] for t in how} for block, how in touched.items()}
        result.reproduced = both
        if not both or result.differing:
            return result
    if not result.differing and result.error is None:
        # equal inputs can hide the race (e.g. an all-ones array): retry with random float inputs
        rng = np.random.default_rng(0)
        noisy = tuple(rng.standard_normal(a.shape).astype(a.dtype) if isinstance(a, np.ndarray) and a.dtype.kind == "f"
                      else a for a in args)
        retry = _replay(finding, module, noisy, names, written, pure, index, grid3, first, second)
        retry.touched = result.touched
        retry.reproduced = result.reproduced or retry.reproduced
        if retry.differing:
            retry.note = "with random float inputs: the given ones hide the difference"
            return retry
    return result


def _replay(finding: Any, module: Any, args: tuple[Any, ...], names: list[str], written: list[str], pure: set[str],
            index: dict[str, int], grid3: tuple[int, int, int], first: np.ndarray, second: np.ndarray
            ) -> ReplayResult:
    w = finding.witness
    element = w.element_text()

    def run(order: list[np.ndarray], seed: int | None, interleave: bool = False) -> dict[str, np.ndarray]:
        fresh = fresh_arguments(args, names, pure)
        interp = Interpreter(module, fresh, grid3, Schedule(seed=seed, interleave=interleave))
        for blocks in order:
            interp.run(blocks)
        return {name: fresh[index[name]] for name in written if name in index}

    def interleaved(a: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The two blocks interleaved at memory-op granularity (seeded orders), for a second block
        that waits for the first (a spin on a flag): the first order whose outputs differ."""
        b = a
        for seed in range(INTERLEAVED_ORDERS):
            b = run([np.concatenate([first, second])], seed, interleave=True)
            if any(not _same(a[k], b[k]).all() for k in a):
                break
        return b

    try:
        if w.second is not None and w.second.block != w.first.block:
            a = run([first, second], None)
            try:
                b = run([second, first], None)
            except InterpreterError:  # the second block alone waits forever for the first
                b = interleaved(a)
        else:  # one block: its unordered ops in different orders
            a = run([first], None)
            b = a
            for seed in range(64):
                b = run([first], seed)
                if any(not np.array_equal(a[k], b[k], equal_nan=True) for k in a):
                    break
    except InterpreterError as exc:
        return ReplayResult(finding, finding.kind == "out-of-bounds", element, error=str(exc))
    differing = {k: int((~_same(a[k], b[k])).sum()) for k in a if not _same(a[k], b[k]).all()}
    value_a = value_b = None
    if w.array in a and w.element is not None:
        value_a, value_b = a[w.array][w.element].item(), b[w.array][w.element].item()
    return ReplayResult(finding, bool(differing), element, value_a, value_b, differing)


def _same(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return (x == y) | (np.isnan(x) & np.isnan(y)) if x.dtype.kind == "f" else x == y
