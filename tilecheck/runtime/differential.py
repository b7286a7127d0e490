"""The differential runner: run a kernel many times under different schedules and compare outputs
bit for bit."""
from __future__ import annotations

import dataclasses

import hashlib
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from tilecheck.arrays import flat_arguments, space_of
from tilecheck.errors import TilecheckError
from tilecheck.interp.engine import Interpreter
from tilecheck.interp.memory import as_host_array, copy_with_layout, is_float
from tilecheck.interp.schedule import Schedule
from tilecheck.ir.opdefs import Effect
from tilecheck.ir.summary import memory_ops
from tilecheck.runtime.launcher import module_for, normalize_grid, resolve_backend

if TYPE_CHECKING:
    from tilecheck.report import Finding
    from tilecheck.runtime.heatmap import HeatmapSummary


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
    # array arguments the kernel reads whose elements were all bitwise equal (e.g. all zeros)
    constant_inputs: list[str] = field(default_factory=list)

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
                "fraction_differing": self.fraction_differing, "seconds": round(self.seconds, 4),
                "constant_inputs": list(self.constant_inputs), "arrays": arrays}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, default=lambda o: list(o) if isinstance(o, tuple) else str(o))

    def save_heatmap(self, path: str, races: Sequence[Finding] | None = None) -> HeatmapSummary:
        """Draw the report as a PNG figure (``tilecheck.runtime.heatmap``): each output laid out
        by its own dimensions, red where elements differ across runs, grey where never written,
        and each of ``races``' witnessed elements circled. Needs matplotlib
        (``pip install 'tilecheck[plot]'``)."""
        from tilecheck.runtime.heatmap import draw_heatmap

        return draw_heatmap(self, path, races)

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
        if self.constant_inputs:
            names = ", ".join(self.constant_inputs)
            verb = "is" if len(self.constant_inputs) == 1 else "are"
            lines.append(f"  note: input{'s' if len(self.constant_inputs) > 1 else ''} {names} {verb} constant "
                         "(every element equal): a race whose writers store equal values cannot show; "
                         "tilecheck detect does not depend on values")
        return "\n".join(lines)


# Quiet NaNs whose payload no arithmetic produces: arithmetic yields the default NaN (payload 0,
# either sign), so a kernel that computes and stores NaN (0 * inf) does not read as "never written".
# fp8 e4m3fn has only two NaNs (0x7f, 0xff), both of which arithmetic produces: the cpu backend
# checks candidates with a second run of the same schedule (see _run_repeated_on_host).
_FLOAT_SENTINELS = {"float16": 0x7E5A, "float32": 0x7FE5A5A5, "float64": 0x7FFCA5A5A5A5A5A5,
                    "bfloat16": 0x7FE5, "float8_e5m2": 0x7D, "float8_e4m3fn": 0x7F}


def sentinel_bits(dtype: np.dtype, second: bool = False) -> int | None:
    """The bit pattern pure outputs are filled with (``second``: a different one, for the run that
    tells sentinel-valued results from unwritten elements); None for types without one."""
    bits = _FLOAT_SENTINELS.get(dtype.name) if is_float(dtype) else None
    if bits is None and dtype.kind in "iu":
        bits = int(np.array(np.iinfo(dtype).min + 0x5A, dtype).view(f"u{dtype.itemsize}"))  # a marked pattern
    if bits is None:
        return None
    return bits ^ 1 if second else bits


def _sentinel(dtype: np.dtype) -> Any:
    """The sentinel as a scalar of ``dtype`` (its bits are ``sentinel_bits(dtype)``), or None."""
    bits = sentinel_bits(dtype)
    return None if bits is None else np.array(bits, f"u{dtype.itemsize}").view(dtype)[()]


def _bits(a: np.ndarray) -> np.ndarray:
    """The array's elements as unsigned words, for bitwise comparison ("V" too: bfloat16 and fp8
    device outputs arrive as raw bytes)."""
    a = np.ascontiguousarray(a)
    return a.view(f"u{a.itemsize}") if a.dtype.kind in "fiubV" and a.itemsize in (1, 2, 4, 8) else a


def argument_names(module: Any, args: Sequence[Any]) -> list[str]:
    """The name of each launch argument: the kernel's parameter names, or ``argN`` for a module
    whose arguments map one to one onto its entry arguments."""
    if module.params:
        return [p.name for p in module.params]
    return [f"arg{i}" for i in range(len(args))]


def fresh_arguments(args: Sequence[Any], names: Sequence[str], pure_outputs: set[str],
                    second_sentinel: bool = False) -> tuple[Any, ...]:
    """Copies of the array arguments; arrays the kernel only writes are filled with a sentinel
    (written as bits, so no float conversion touches its NaN payload)."""
    out = []
    for name, a in zip(names, args):
        if isinstance(a, np.ndarray):
            copy = copy_with_layout(a)
            if name in pure_outputs:
                bits = sentinel_bits(copy.dtype, second_sentinel)
                if bits is not None and copy.size:
                    copy.view(f"u{copy.itemsize}")[...] = bits
            out.append(copy)
        else:
            out.append(a)
    return tuple(out)


def constant_arrays(args: Sequence[Any], names: Sequence[str], arrays: set[str]) -> list[str]:
    """Which of the named host arrays (of more than one element) hold one bit pattern everywhere:
    repeated runs on them cannot show a race whose writers store equal values. Device arrays are
    not inspected."""
    constant = []
    for name, a in zip(names, args):
        if name not in arrays or space_of(a) != "host":
            continue
        host = as_host_array(name, a)
        if host.size < 2 or host.itemsize not in (1, 2, 4, 8):
            continue
        words = host.view(f"u{host.itemsize}")
        if bool((words == words.flat[0]).all()):
            constant.append(name)
    return constant


def read_arrays(module: Any) -> set[str]:
    """The arrays some plain load reads (atomics excluded: their old contents hide nothing)."""
    return {m.array for m in memory_ops(module) if m.effect is Effect.READ}


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
        # elements run 0 left unwritten, when known without comparing values (set by the cpu runner)
        self.unwritten_first: np.ndarray | None = None

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
            held = self.unwritten_first
            if held is None:
                held = self.ref_bits == sentinel_bits(self.ref.dtype)
            never = held & ~self.differ
            unwritten = int(never.sum())
            mask[never] = 2
        first = [tuple(int(i) for i in idx) for idx in np.argwhere(self.differ)[:10]]
        return ArrayDiff(self.name, tuple(self.ref.shape), len(self.counts) + 1, len(self.digests),
                         float(per_run.max()) if per_run.size else 0.0, float(per_run.mean()) if per_run.size else 0.0,
                         first, unwritten, self.max_abs if len(self.counts) else None, self.exact, mask)


def run_repeated(kernel: Any, args: Sequence[Any], grid: Any, runs: int = 20, backend: str | None = None, seed: int = 0,
                 progress: bool | None = None, max_wave: int | None = None,
                 max_trips: int | None = None) -> NondeterminismReport:
    """Run ``kernel`` ``runs`` times on fresh copies of ``args`` and report which outputs differ.
    Racy kernels are run on purpose: nothing is refused. The backend follows the arrays unless
    given (device arrays: "cuda"). ``backend="cpu"``: the interpreter under a
    different adversarial schedule each run (``seed``, ``max_wave``); ``backend="cuda"``: the GPU,
    whose own scheduling varies (see runtime/cuda/differential.py). On the CPU a loop that runs
    ``max_trips`` trips (default ``LOOP_TRIPS``) without ending stops the run with an error."""
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
        outcomes = _run_repeated_on_host(module, flat_arguments(args), names, written, pure, grid3, runs,
                                         Schedule(seed=seed, max_wave=max_wave, max_trips=max_trips), progress)
    elapsed = time.perf_counter() - start
    arrays = {o.name: o.result() for o in outcomes}
    constant = constant_arrays(flat_arguments(args), names, read_arrays(module))
    return NondeterminismReport(module.name, grid3, runs, backend, seed, arrays, elapsed, constant)


def _run_repeated_on_host(module: Any, args: tuple[Any, ...], names: list[str], written: list[str], pure: set[str],
                          grid3: tuple[int, int, int], runs: int, base: Schedule,
                          progress: bool | None) -> list[Outcomes]:
    """``runs`` runs, run r under ``base`` with seed ``base.seed + r``."""
    index = {name: i for i, name in enumerate(names)}
    outputs = [name for name in written if name in index]
    # numpy views of torch (or other) host arrays, so each run gets fresh copies of those too
    args = tuple(as_host_array(n, a) if space_of(a) == "host" else a for n, a in zip(names, args))
    outcomes: dict[str, Outcomes] = {}
    show = sys.stderr.isatty() if progress is None else progress
    start = time.perf_counter()
    for r in range(runs):
        fresh = fresh_arguments(args, names, pure)
        Interpreter(module, fresh, grid3, dataclasses.replace(base, seed=base.seed + r, _orders={})).run()
        for name in outputs:
            values = fresh[index[name]]
            if name in outcomes:
                outcomes[name].add(values)
            else:
                outcomes[name] = Outcomes(name, values, name in pure)
        if r == 0:
            _mark_unwritten(module, args, names, pure, grid3, dataclasses.replace(base, _orders={}), outcomes)
        if show and time.perf_counter() - start > 1.0:
            done = int(30 * (r + 1) / runs)
            print(f"\r  [{'#' * done}{'.' * (30 - done)}] {r + 1}/{runs} runs", end="", file=sys.stderr, flush=True)
    if show and time.perf_counter() - start > 1.0:
        print(file=sys.stderr)
    return list(outcomes.values())


def _mark_unwritten(module: Any, args: tuple[Any, ...], names: list[str], pure: set[str],
                    grid3: tuple[int, int, int], schedule: Schedule, outcomes: dict[str, Outcomes]) -> None:
    """Which elements run 0 left unwritten, whatever values the kernel stores: where some output
    still holds the sentinel, run 0's schedule again with a second sentinel. A pure output is
    never read, so the rerun writes the same elements with the same values; an element holding
    the first sentinel in run 0 and the second in the rerun was written by neither."""
    candidates = {}
    for name, o in outcomes.items():
        bits = sentinel_bits(o.ref.dtype) if name in pure else None
        if bits is not None:
            candidates[name] = o.ref_bits == bits
    if not any(c.any() for c in candidates.values()):
        return
    probe = fresh_arguments(args, names, pure, second_sentinel=True)
    Interpreter(module, probe, grid3, schedule).run()
    index = {name: i for i, name in enumerate(names)}
    for name, held in candidates.items():
        second = sentinel_bits(outcomes[name].ref.dtype, second=True)
        outcomes[name].unwritten_first = held & (_bits(probe[index[name]]) == second)
