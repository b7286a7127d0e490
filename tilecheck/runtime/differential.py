"""The differential runner: run a kernel many times under different schedules and compare outputs
bit for bit. The runs happen here on the CPU interpreter, or on the device
(``runtime.cuda.differential``); what each output did across runs is ``runtime.outcomes``, which
both use."""
from __future__ import annotations

import dataclasses
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
from tilecheck.interp.memory import as_host_array, copies_keeping_overlaps
from tilecheck.interp.schedule import Schedule
from tilecheck.ir import triton as triton_frontend
from tilecheck.ir.opdefs import Effect
from tilecheck.ir.summary import memory_ops
from tilecheck.runtime.launcher import module_for, normalize_grid, resolve_backend
from tilecheck.runtime.outcomes import ArrayDiff, Outcomes, as_words, sentinel_bits

# run_repeated(runs=...): each run is a whole launch, so a count past a million is a slip, not a plan
MAX_RUNS = 1_000_000

if TYPE_CHECKING:
    from tilecheck.report import Finding
    from tilecheck.runtime.heatmap import HeatmapSummary


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


def argument_names(module: Any, args: Sequence[Any]) -> list[str]:
    """The name of each launch argument: the kernel's parameter names, or ``argN`` for a module
    whose arguments map one to one onto its entry arguments."""
    if module.params:
        return [p.name for p in module.params]
    return [f"arg{i}" for i in range(len(args))]


def fresh_arguments(args: Sequence[Any], names: Sequence[str], pure_outputs: set[str],
                    second_sentinel: bool = False) -> tuple[Any, ...]:
    """Copies of the array arguments, overlapping one another as the arguments do (two views of one
    buffer stay two views of one buffer: a race between them shows); arrays the kernel only writes
    are filled with a sentinel (written as bits, so no float conversion touches its NaN payload),
    unless they overlap another argument, whose contents they then are."""
    hosts = [a for a in args if isinstance(a, np.ndarray)]
    copies = iter(copies_keeping_overlaps(hosts))
    shared = _overlapping(hosts)
    out = []
    for name, a in zip(names, args):
        if isinstance(a, np.ndarray):
            copy = next(copies)
            if name in pure_outputs and id(a) not in shared:
                bits = sentinel_bits(copy.dtype, second_sentinel)
                if bits is not None and copy.size:
                    copy.view(f"u{copy.itemsize}")[...] = bits
            out.append(copy)
        else:
            out.append(a)
    return tuple(out)


def _overlapping(arrays: Sequence[np.ndarray]) -> set[int]:
    """The ids of the arrays that share memory with another one of ``arrays``."""
    out = set()
    for i, a in enumerate(arrays):
        for b in arrays[i + 1:]:
            try:
                overlap = bool(a.size and b.size and np.shares_memory(a, b, max_work=10**6))
            except np.exceptions.TooHardError:  # (unproven disjointness counts as sharing)
                overlap = True
            if overlap:
                out |= {id(a), id(b)}
    return out


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


def run_repeated(kernel: Any, args: Sequence[Any], grid: Any, runs: int = 20, backend: str | None = None, seed: int = 0,
                 progress: bool | None = None, max_wave: int | None = None,
                 max_trips: int | None = None) -> NondeterminismReport:
    """Run ``kernel`` ``runs`` times on fresh copies of ``args`` and report which outputs differ.
    Racy kernels are run on purpose: nothing is refused. The backend follows the arrays unless
    given (device arrays: "cuda"). ``backend="cpu"``: the interpreter under a
    different adversarial schedule each run (``seed``, ``max_wave``); ``backend="cuda"``: the GPU,
    whose own scheduling varies (see runtime/cuda/differential.py). On the CPU a loop that runs
    ``max_trips`` trips (default ``LOOP_TRIPS``) without ending stops the run with an error."""
    from tilecheck import checks

    checks.kernel("run_repeated(kernel=...)", kernel, module=True)
    checks.arguments("run_repeated(args=...)", args, by_name=True)
    runs = checks.integer("run_repeated(runs=...)", runs, minimum=1, maximum=MAX_RUNS)
    seed = checks.integer("run_repeated(seed=...)", seed, minimum=0)
    checks.choice("run_repeated(backend=...)", backend, ("cpu", "cuda"), none=True)
    checks.flag("run_repeated(progress=...)", progress, none=True)
    max_wave = checks.integer("run_repeated(max_wave=...)", max_wave, minimum=1, none=True)
    max_trips = checks.integer("run_repeated(max_trips=...)", max_trips, minimum=1, none=True)
    kernel, args = triton_frontend.resolve(kernel, args)
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


# the orders of run_repeated's sequential runs (every fourth run), in turn
SEQUENTIAL_ORDERS = ("forward", "reverse", "shuffled", "shuffled")


def _run_repeated_on_host(module: Any, args: tuple[Any, ...], names: list[str], written: list[str], pure: set[str],
                          grid3: tuple[int, int, int], runs: int, base: Schedule,
                          progress: bool | None) -> list[Outcomes]:
    """``runs`` runs, run r under ``base`` with seed ``base.seed + r``; one run in four (r = 3, 7, ...)
    runs its blocks one at a time (``Schedule.sequential``): in order, in reverse, then shuffled twice,
    and so on."""
    index = {name: i for i, name in enumerate(names)}
    outputs = [name for name in written if name in index]
    # numpy views of torch (or other) host arrays, so each run gets fresh copies of those too
    args = tuple(as_host_array(n, a) if space_of(a) == "host" else a for n, a in zip(names, args))
    outcomes: dict[str, Outcomes] = {}
    show = sys.stderr.isatty() if progress is None else progress
    start = time.perf_counter()
    for r in range(runs):
        fresh = fresh_arguments(args, names, pure)
        sequential = base.sequential or (SEQUENTIAL_ORDERS[r // 4 % len(SEQUENTIAL_ORDERS)] if r % 4 == 3 else None)
        schedule = dataclasses.replace(base, seed=base.seed + r, _orders={}, sequential=sequential)
        Interpreter(module, fresh, grid3, schedule).run()
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
        outcomes[name].unwritten_first = held & (as_words(probe[index[name]]) == second)
