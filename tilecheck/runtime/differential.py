"""The differential runner: run a kernel many times under different schedules and compare outputs
bit for bit."""
from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from tilecheck.errors import TilecheckError
from tilecheck.ir.opdefs import Effect
from tilecheck.ir.summary import memory_ops
from tilecheck.runtime.interp.engine import Interpreter
from tilecheck.runtime.launcher import module_for, normalize_grid
from tilecheck.runtime.png import write_png
from tilecheck.runtime.schedule import Schedule


@dataclass
class ArrayDiff:
    """How one output array varied across runs (compared bitwise with run 0)."""

    name: str
    shape: tuple[int, ...]
    runs: int
    distinct_outcomes: int
    fraction_differing_max: float
    fraction_differing_mean: float
    first_differing: list[tuple[int, ...]]
    unwritten: int | None  # elements still holding the sentinel in every run (None: no sentinel)
    max_abs_difference: float | None
    differing_mask: np.ndarray = field(repr=False, compare=False, default=None)  # type: ignore[assignment]


@dataclass
class NondeterminismReport:
    kernel: str
    grid: tuple[int, int, int]
    runs: int
    backend: str
    seed: int
    arrays: dict[str, ArrayDiff]
    seconds: float

    @property
    def deterministic(self) -> bool:
        return all(a.distinct_outcomes == 1 for a in self.arrays.values())

    @property
    def fraction_differing(self) -> float:
        return max((a.fraction_differing_max for a in self.arrays.values()), default=0.0)

    def to_dict(self) -> dict[str, Any]:
        arrays = {}
        for name, a in self.arrays.items():
            d = asdict(a)
            d.pop("differing_mask", None)
            arrays[name] = d
        return {"kernel": self.kernel, "grid": list(self.grid), "runs": self.runs, "backend": self.backend,
                "seed": self.seed, "deterministic": self.deterministic,
                "fraction_differing": self.fraction_differing, "seconds": round(self.seconds, 4), "arrays": arrays}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, default=lambda o: list(o) if isinstance(o, tuple) else str(o))

    def save_heatmap(self, path: str) -> None:
        """A PNG per report: one band per output array, red where elements differ across runs,
        grey where never written, dark where stable."""
        bands = []
        width = 0
        for a in self.arrays.values():
            mask = a.differing_mask
            if mask is None:
                continue
            grid = mask.reshape(-1, mask.shape[-1]) if mask.ndim > 1 else mask.reshape(1, -1)
            bands.append(grid)
            width = max(width, grid.shape[1])
        if not bands:
            raise TilecheckError("no output arrays to draw")
        scale = max(1, min(8, 1024 // max(width, 1)))
        rows = []
        for grid in bands:
            rgb = np.zeros((*grid.shape, 3), np.uint8)
            rgb[...] = (40, 40, 48)
            rgb[grid == 1] = (230, 40, 40)
            rgb[grid == 2] = (140, 140, 140)
            rgb = np.pad(rgb, ((0, 2), (0, width - grid.shape[1]), (0, 0)), constant_values=255)
            rows.append(rgb)
        image = np.concatenate(rows, axis=0).repeat(scale, axis=0).repeat(scale, axis=1)
        write_png(path, image)

    def __str__(self) -> str:
        head = (f"{self.kernel}: {'deterministic' if self.deterministic else 'NONDETERMINISTIC'} over {self.runs} "
                f"runs ({self.backend}, grid {self.grid}, {self.seconds:.2f}s)")
        lines = [head]
        for a in self.arrays.values():
            line = (f"  {a.name} {a.shape}: {a.distinct_outcomes} distinct outcome(s), "
                    f"{a.fraction_differing_max:.1%} of elements differ (max; mean {a.fraction_differing_mean:.1%})")
            if a.unwritten:
                line += f", {a.unwritten} never written"
            if a.max_abs_difference:
                line += f", max |diff| {a.max_abs_difference:.4g}"
            if a.first_differing:
                line += f"; first at {', '.join(str(list(i)) for i in a.first_differing[:3])}"
            lines.append(line)
        return "\n".join(lines)


def _sentinel(dtype: np.dtype) -> Any:
    if dtype.kind == "f":
        return np.nan
    if dtype.kind in "iu":
        return np.iinfo(dtype).min + 0x5A  # a marked pattern no sane kernel writes
    return None


def _bits(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    return a.view(f"u{a.itemsize}") if a.dtype.kind in "fiu" and a.itemsize in (1, 2, 4, 8) else a


def copy_with_layout(a: np.ndarray) -> np.ndarray:
    """A writable copy with the same strides (a stride-0 or strided view stays one), so a run sees
    the memory layout the caller passed."""
    if a.flags.c_contiguous or a.size == 0 or any(s < 0 for s in a.strides):
        return np.array(a, copy=True)
    extent = 1 + sum((n - 1) * (s // a.itemsize) for n, s in zip(a.shape, a.strides))
    flat = np.lib.stride_tricks.as_strided(a, shape=(extent,), strides=(a.itemsize,)).copy()
    return np.lib.stride_tricks.as_strided(flat, shape=a.shape, strides=a.strides, writeable=True)


def argument_names(module: Any, args: Sequence[Any]) -> list[str]:
    """The name of each launch argument: the kernel's parameter names, or ``argN`` for a module
    whose arguments map one to one onto its entry arguments."""
    if module.params:
        return [p.name for p in module.params]
    return [f"arg{i}" for i in range(len(args))]


def fresh_arguments(args: Sequence[Any], names: Sequence[str], pure_outputs: set[str]) -> tuple[Any, ...]:
    """Copies of the array arguments; arrays the kernel only writes are filled with a sentinel."""
    out = []
    for name, a in zip(names, args):
        if isinstance(a, np.ndarray):
            copy = copy_with_layout(a)
            if name in pure_outputs:
                s = _sentinel(copy.dtype)
                if s is not None:
                    copy.fill(s)
            out.append(copy)
        else:
            out.append(a)
    return tuple(out)


def output_arrays(module: Any) -> tuple[list[str], set[str]]:
    """(written arrays, written-and-never-read arrays) by parameter name."""
    written, read = [], set()
    for m in memory_ops(module):
        if m.effect in (Effect.WRITE, Effect.ATOMIC) and m.array not in written:
            written.append(m.array)
        if m.effect in (Effect.READ, Effect.ATOMIC):
            read.add(m.array)
    return written, {w for w in written if w not in read}


def run_repeated(kernel: Any, args: Sequence[Any], grid: Any, runs: int = 20, backend: str = "cpu", seed: int = 0,
                 progress: bool | None = None, max_wave: int | None = None) -> NondeterminismReport:
    """Run ``kernel`` ``runs`` times on fresh copies of ``args`` under different schedules and report
    which outputs differ. Racy kernels are run on purpose: nothing is refused."""
    if runs < 1:
        raise TilecheckError("runs must be at least 1")
    if backend != "cpu":
        raise TilecheckError("run_repeated: only backend='cpu' is available yet (the cuda backend is not built)")
    grid3 = normalize_grid(grid)
    args = tuple(args)
    module, _ = module_for(kernel, args)
    written, pure = output_arrays(module)
    names = argument_names(module, args)
    index = {name: i for i, name in enumerate(names)}
    outcomes: dict[str, list[np.ndarray]] = {name: [] for name in written if name in index}
    show = sys.stderr.isatty() if progress is None else progress
    start = time.perf_counter()
    for r in range(runs):
        fresh = fresh_arguments(args, names, pure)
        Interpreter(module, fresh, grid3, Schedule(seed=seed + r, max_wave=max_wave)).run()
        for name, values in outcomes.items():
            values.append(np.array(fresh[index[name]], copy=True))
        if show and time.perf_counter() - start > 1.0:
            done = int(30 * (r + 1) / runs)
            print(f"\r  [{'#' * done}{'.' * (30 - done)}] {r + 1}/{runs} runs", end="", file=sys.stderr, flush=True)
    if show and time.perf_counter() - start > 1.0:
        print(file=sys.stderr)
    elapsed = time.perf_counter() - start
    arrays = {name: _compare(name, values, name in pure) for name, values in outcomes.items()}
    return NondeterminismReport(module.name, grid3, runs, backend, seed, arrays, elapsed)


def _compare(name: str, values: list[np.ndarray], sentinel: bool) -> ArrayDiff:
    stack = np.stack([_bits(v) for v in values])
    ref = stack[0]
    differ = stack[1:] != ref if len(values) > 1 else np.zeros((0, *ref.shape), bool)
    per_run = differ.reshape(len(values) - 1, -1).mean(axis=1) if len(values) > 1 else np.zeros(0)
    any_differ = differ.any(axis=0) if len(values) > 1 else np.zeros(ref.shape, bool)
    distinct = len({v.tobytes() for v in stack})
    unwritten = None
    mask = any_differ.astype(np.uint8)
    if sentinel:
        s = _sentinel(values[0].dtype)
        marker = _bits(np.full(1, s, values[0].dtype))[0]
        never = (stack == marker).all(axis=0)
        unwritten = int(never.sum())
        mask[never & ~any_differ] = 2
    max_abs = None
    if values[0].dtype.kind == "f" and len(values) > 1:
        with np.errstate(all="ignore"):
            diffs = np.abs(np.stack(values[1:]).astype(np.float64) - values[0].astype(np.float64))
        finite = diffs[np.isfinite(diffs)]
        max_abs = float(finite.max()) if finite.size else 0.0
    first = [tuple(int(i) for i in idx) for idx in np.argwhere(any_differ)[:10]]
    return ArrayDiff(name, tuple(ref.shape), len(values), distinct, float(per_run.max()) if per_run.size else 0.0,
                     float(per_run.mean()) if per_run.size else 0.0, first, unwritten, max_abs, mask)
