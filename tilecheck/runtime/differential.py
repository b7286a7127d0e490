"""The differential runner: run a kernel many times under different schedules and compare outputs
bit for bit."""
from __future__ import annotations

import hashlib
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from tilecheck.arrays import flat_arguments, space_of
from tilecheck.errors import TilecheckError
from tilecheck.ir.opdefs import Effect
from tilecheck.ir.summary import memory_ops
from tilecheck.interp.engine import Interpreter
from tilecheck.runtime.launcher import module_for, normalize_grid, resolve_backend
from tilecheck.interp.memory import as_host_array, is_float
from tilecheck.runtime.png import write_png
from tilecheck.interp.schedule import Schedule


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
    distinct_exact: bool = True  # False: differing runs were counted but not all kept (cuda backend)
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
    if is_float(dtype):
        return np.nan
    if dtype.kind in "iu":
        return np.iinfo(dtype).min + 0x5A  # a marked pattern no sane kernel writes
    return None


def _bits(a: np.ndarray) -> np.ndarray:
    """The array's elements as unsigned words, for bitwise comparison ("V" too: bfloat16 and fp8
    device outputs arrive as raw bytes)."""
    a = np.ascontiguousarray(a)
    return a.view(f"u{a.itemsize}") if a.dtype.kind in "fiubV" and a.itemsize in (1, 2, 4, 8) else a


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


class Outcomes:
    """How one output array varies across runs, accumulated run by run against run 0's bits; runs
    are never all kept in memory."""

    def __init__(self, name: str, reference: np.ndarray, sentinel: bool) -> None:
        self.name = name
        self.ref = np.array(reference, copy=True)
        self.ref_bits = _bits(self.ref)
        self.sentinel = sentinel
        self.differ = np.zeros(self.ref.shape, bool)
        self.counts: list[int] = []
        self.digests = {hashlib.blake2b(self.ref_bits.tobytes(), digest_size=16).digest()}
        self.exact = True
        self.max_abs: float | None = 0.0 if is_float(self.ref.dtype) else None

    def add(self, values: np.ndarray) -> None:
        """A later run's output, compared here."""
        differs = _bits(values) != self.ref_bits
        self.differ |= differs
        self.add_count(int(differs.sum()), values)

    def add_count(self, count: int, values: np.ndarray | None = None) -> None:
        """A later run compared elsewhere (on the device): its differing count, and its values when
        they were brought back."""
        self.counts.append(count)
        if not count:
            return
        if values is None:
            self.exact = False
            return
        self.digests.add(hashlib.blake2b(_bits(values).tobytes(), digest_size=16).digest())
        if self.max_abs is not None:
            with np.errstate(all="ignore"):
                diffs = np.abs(values.astype(np.float64) - self.ref.astype(np.float64))
            finite = diffs[np.isfinite(diffs)]
            if finite.size:
                self.max_abs = max(self.max_abs, float(finite.max()))

    def result(self) -> ArrayDiff:
        size = max(self.ref.size, 1)
        per_run = np.array(self.counts, np.float64) / size
        mask = self.differ.astype(np.uint8)
        unwritten = None
        if self.sentinel:
            marker = _bits(np.full(1, _sentinel(self.ref.dtype), self.ref.dtype))[0]
            never = (self.ref_bits == marker) & ~self.differ
            unwritten = int(never.sum())
            mask[never] = 2
        first = [tuple(int(i) for i in idx) for idx in np.argwhere(self.differ)[:10]]
        return ArrayDiff(self.name, tuple(self.ref.shape), len(self.counts) + 1, len(self.digests),
                         float(per_run.max()) if per_run.size else 0.0, float(per_run.mean()) if per_run.size else 0.0,
                         first, unwritten, self.max_abs if len(self.counts) else None, self.exact, mask)


def run_repeated(kernel: Any, args: Sequence[Any], grid: Any, runs: int = 20, backend: str | None = None, seed: int = 0,
                 progress: bool | None = None, max_wave: int | None = None) -> NondeterminismReport:
    """Run ``kernel`` ``runs`` times on fresh copies of ``args`` and report which outputs differ.
    Racy kernels are run on purpose: nothing is refused. The backend follows the arrays unless
    given (device arrays: "cuda"). ``backend="cpu"``: the interpreter under a
    different adversarial schedule each run (``seed``, ``max_wave``); ``backend="cuda"``: the GPU,
    whose own scheduling varies (see runtime/cuda/differential.py)."""
    if runs < 1:
        raise TilecheckError("runs must be at least 1")
    grid3 = normalize_grid(grid)
    args = tuple(args)
    backend = resolve_backend(backend, args)
    module, _ = module_for(kernel, args)
    written, pure = output_arrays(module)
    names = argument_names(module, args)
    start = time.perf_counter()
    if backend == "cuda":
        from tilecheck.runtime.cuda.differential import run_repeated_on_device

        outcomes = run_repeated_on_device(kernel, args, names, written, pure, grid3, runs)
    else:
        outcomes = _run_repeated_on_host(module, flat_arguments(args), names, written, pure, grid3, runs, seed,
                                         max_wave, progress)
    elapsed = time.perf_counter() - start
    arrays = {o.name: o.result() for o in outcomes}
    return NondeterminismReport(module.name, grid3, runs, backend, seed, arrays, elapsed)


def _run_repeated_on_host(module: Any, args: tuple[Any, ...], names: list[str], written: list[str], pure: set[str],
                          grid3: tuple[int, int, int], runs: int, seed: int, max_wave: int | None,
                          progress: bool | None) -> list[Outcomes]:
    index = {name: i for i, name in enumerate(names)}
    outputs = [name for name in written if name in index]
    # numpy views of torch (or other) host arrays, so each run gets fresh copies of those too
    args = tuple(as_host_array(n, a) if space_of(a) == "host" else a for n, a in zip(names, args))
    outcomes: dict[str, Outcomes] = {}
    show = sys.stderr.isatty() if progress is None else progress
    start = time.perf_counter()
    for r in range(runs):
        fresh = fresh_arguments(args, names, pure)
        Interpreter(module, fresh, grid3, Schedule(seed=seed + r, max_wave=max_wave)).run()
        for name in outputs:
            values = fresh[index[name]]
            if name in outcomes:
                outcomes[name].add(values)
            else:
                outcomes[name] = Outcomes(name, values, name in pure)
        if show and time.perf_counter() - start > 1.0:
            done = int(30 * (r + 1) / runs)
            print(f"\r  [{'#' * done}{'.' * (30 - done)}] {r + 1}/{runs} runs", end="", file=sys.stderr, flush=True)
    if show and time.perf_counter() - start > 1.0:
        print(file=sys.stderr)
    return list(outcomes.values())
