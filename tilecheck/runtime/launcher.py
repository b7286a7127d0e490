"""``tilecheck.launch``: verify once per kernel and case, refuse races, then run the kernel."""
from __future__ import annotations

import importlib
import os
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tilecheck.arrays import flat_arguments, is_torch_tensor, space_of
from tilecheck.errors import TilecheckError
from tilecheck.grid import normalize_grid
from tilecheck.interp.detect import LEVEL as EXACT_LEVEL
from tilecheck.interp.detect import detect
from tilecheck.interp.engine import Interpreter
from tilecheck.ir import triton as triton_frontend
from tilecheck.interp.memory import ArgumentError, as_host_array
from tilecheck.interp.schedule import Schedule
from tilecheck.ir import Module
from tilecheck.ir.cutile import argument_signature as _signature
from tilecheck.ir.cutile import module_for
from tilecheck.ir.identity import program_digest
from tilecheck.ir.lifting import lifted
from tilecheck.memo import Memo
from tilecheck.report import contents_items
from tilecheck.requirements import Precondition, check_preconditions, configured
from tilecheck.verifier import Report


class RaceError(TilecheckError):
    """``launch`` refused a kernel whose verification found a defect (``.report`` has the witness):
    a race, or, as its subclass ``OutOfBoundsError``, an access outside its arrays."""

    def __init__(self, report: Report) -> None:
        self.report = report
        what = "a data race" if report.status == "race" else "an access outside its arrays"
        super().__init__(f"refusing to launch {report.kernel}: it has {what} (pass unsafe=True to run it "
                         f"anyway)\n{report}")

    @staticmethod
    def of(report: Report) -> RaceError:
        """The refusal that names the report's defect: ``OutOfBoundsError`` for an access outside its
        arrays (a ``RaceError`` too, so ``except RaceError`` keeps catching every defect)."""
        return OutOfBoundsError(report) if report.status == "out-of-bounds" else RaceError(report)


class OutOfBoundsError(RaceError):
    """``launch`` refused a kernel whose verification found an access outside its arrays, and no race."""


class UnverifiedError(TilecheckError):
    """``launch`` refused a kernel whose verification was inconclusive (``unknown``)."""

    def __init__(self, report: Report) -> None:
        self.report = report
        super().__init__(f"refusing to launch {report.kernel}: it could not be verified (pass unsafe=True to "
                         f"run it anyway)\n{report}")


class AliasingError(TilecheckError):
    """A written array overlaps another argument or itself."""

    def __init__(self, message: str, report: Report | None = None) -> None:
        self.report = report
        super().__init__(message)


_VERIFIED: dict[tuple[Any, ...], Report] = Memo(4096)

# the work the exact detector may spend on one launch the static check leaves open (steps: ops run
# for a wave, and the values they compute; about 25,000 a second under the detector's recorder, so a
# few minutes at most); past it the launch is unknown, and refused as unverified. FlagGems' radix
# sort (its blocks spin on one another's prefix flags) once ran 600 s and more in the detector.
# ``$TILECHECK_DETECT_STEPS`` sets it (0: no limit)
DETECT_STEPS = 4_000_000


def detect_steps() -> int | None:
    """The detector's work limit for a launch: ``$TILECHECK_DETECT_STEPS``, or ``DETECT_STEPS``."""
    value = os.environ.get("TILECHECK_DETECT_STEPS", "").strip()
    try:
        steps = int(value) if value else DETECT_STEPS
    except ValueError:
        raise TilecheckError(f"$TILECHECK_DETECT_STEPS must be a whole number of steps, got {value!r}") from None
    return steps if steps > 0 else None


def case_key(module: Module, grid: tuple[int, int, int]) -> tuple[Any, ...]:
    """A launch as the verdict caches know it: its program (the Tile IR less optimization hints,
    which an autotuner's configurations often differ in alone), its parameters and its grid."""
    params = tuple((p.name, p.kind, p.dtype, p.shape, p.strides, p.value if p.kind != "array" else None,
                    getattr(p, "items", ())) for p in module.params)
    return (program_digest(module), params, grid)


def verified_report(module: Module, args: Sequence[Any], grid: tuple[int, int, int],
                    assume: Sequence[Precondition] = ()) -> Report:
    """The verification report of this kernel + case under the preconditions ``assume``, computed
    once per process (and once more for each set of preconditions a launch's contents break)."""
    from tilecheck.verifier.api import verify
    from tilecheck.verifier.obligations.arguments import aliasing_findings

    host = _on_host(args)
    broken = broken_preconditions(module, args, assume)
    # contracts are about the lifted program (its integer literals symbols: ``ir.lifting``), which
    # launches with other constants share
    lift = lifted(module)
    program_module = lift.module if lift is not None else module
    program = (program_digest(program_module), module.name, tuple(assume), broken, host)
    proved = _PROVED.get(program)
    if proved and (module.distinct_arrays or not aliasing_findings(module, args)):  # (else verify decides)
        decided = _decided_by_contract(proved, program_module, grid)
        if decided is not None:
            return decided
    key = (*case_key(module, grid), tuple(assume), broken, host)
    if key not in _VERIFIED:
        # the launches of this Tile IR verified before: the contract over the shapes keeps only what
        # they share with this one, so it reaches the shapes a test suite launches, not one of them
        seen = _SEEN.setdefault(id(module.functions), (module.functions, []))[1]
        # data=False: the verdict is cached per signature, so it must not rest on this launch's
        # contents; a launch on the host is decided on its own data by check_launch (the data step,
        # tilecheck.detect), so queries about contents get that step's budget (data_follows): at
        # 20M units each, a 128-expert grouped GEMM's overflow claims took 45 s to end unknown
        report = verify(module, args if module.params else None, grid, assume=assume, data=False,
                        observed=list(seen), data_follows=host)
        if not content_conditions(report):  # data=False: a contract on contents is not expected here,
            _VERIFIED[key] = report.held_weakly()  # and a verdict that rests on them is never kept by
            # signature; kept, its findings do not keep this launch's arrays alive
            _remember_contract(report, program)
        if report.status == "verified" and module.params:
            seen[:] = [*seen[-(_SEEN_MAX - 1):], (module, grid)]
        return report
    return _VERIFIED[key].relaunched(args if module.params else None)


def _decided_by_contract(proved: list[Report], module: Module, grid: tuple[int, int, int]) -> Report | None:
    """The report of a launch of a Tile IR proved before for every launch its contract admits, when
    one admits this launch: integers evaluated, no solver, no compilation, no disk (what
    ``verify``'s proof cache decides, without its lookup of the kernel and its digests; issue 51).
    The caller checked what a proof cannot speak for: aliasing and the preconditions' contents."""
    from tilecheck.verifier.contracts import shapes as shape_contract

    env, widths = shape_contract.launch_of(module.params, grid)
    for report in proved:
        if report.launch_contract.admits(env, widths):
            return report
    return None


def _remember_contract(report: Report, key: tuple[Any, ...]) -> None:
    """Keep a report verified for every launch its contract admits (``_decided_by_contract``): only a
    verdict with nothing but the verdict in it (no finding: a warning has a witness of its own launch)
    whose contract rests on no contents (a memo by signature cannot read them)."""
    from tilecheck.verifier.contracts.levels import EVERY_SHAPE_LEVEL

    contract = report.launch_contract
    if (report.status != "verified" or report.level != EVERY_SHAPE_LEVEL or contract is None or not contract.proved
            or report.findings or contract.contents or contract.protocol):
        return
    if len(_PROVED) >= _PROVED_MAX:
        _PROVED.clear()
    known = _PROVED.setdefault(key, [])
    if len(known) < _CONTRACTS_PER_PROGRAM and all(r.launch_contract != contract for r in known):
        known.append(report)


# per Tile IR (its digest, name, preconditions, the ones this launch's contents break, and whether it
# runs on the host): the reports proved for every launch their contracts admit
_PROVED: dict[tuple[Any, ...], list[Report]] = {}
_PROVED_MAX = 4096
_CONTRACTS_PER_PROGRAM = 8


def content_conditions(report: Report) -> tuple[Precondition, ...]:
    """The conditions on index arrays' contents the verdict's contract over the shapes rests on
    (empty when none): a memo that decides a launch by signature must evaluate them at that launch."""
    contract = report.launch_contract
    return (*contract.contents, *contract.protocol) if report.status == "verified" and contract is not None else ()


# per Tile IR (by its functions): launches verified before, each as its module bound to them
_SEEN: dict[int, tuple[Any, list[tuple[Module, tuple[int, int, int]]]]] = Memo(1024)
_SEEN_MAX = 8


def broken_preconditions(module: Module, args: Sequence[Any],
                         assume: Sequence[Precondition]) -> tuple[Precondition, ...]:
    """The preconditions of ``assume`` this launch's host arrays break (the verdict cached for a
    signature holds only for contents that keep its preconditions); device arrays' contents are
    not read."""
    if not assume:
        return ()
    values = dict(zip([p.name for p in module.params], flat_arguments(tuple(args))))
    broken = []
    for pre in assume:
        if pre.array not in values:
            continue  # verify names it as an error
        try:
            host = as_host_array(pre.array, values[pre.array])
        except TilecheckError:  # a device array
            continue
        if pre.violation(host) is not None:
            broken.append(pre)
    return tuple(broken)


def check_launch(kernel: Any, args: tuple[Any, ...], grid: tuple[int, int, int], *,
                 prefix: str = "refusing to launch: ", refuse_unknown: bool = True,
                 assume: Sequence[Precondition] | None = None) -> tuple[Module, Report]:
    """The checks before running a kernel: no argument aliases a written array (``AliasingError``),
    then the cached verdict: ``race`` raises ``RaceError``, ``unknown`` ``UnverifiedError`` (unless
    ``refuse_unknown`` is False). Returns the module and the report.

    ``assume``: the preconditions to check under; None: the kernel's ``@tilecheck.requires`` and
    those ``[tool.tilecheck.assume]`` in the working directory's pyproject.toml names for it."""
    __tracebackhide__ = True
    from tilecheck.verifier.obligations.arguments import aliasing_findings

    if assume is None:
        assume = launch_preconditions(kernel)
    kernel, args = triton_frontend.resolve(kernel, args)
    args = tuple(args)
    check_preconditions(kernel, args, assume)
    module, _ = module_for(kernel, args)
    aliasing = aliasing_findings(module, args)
    if aliasing and module.distinct_arrays:  # else the language allows it (Triton): verify decides
        raise AliasingError(prefix + "; ".join(f.message for f in aliasing))
    report = verified_report(module, args, grid, assume)
    if report.status != "verified" and _on_host(args):
        # decided for this launch, data included: refused only if the launch itself races. First
        # statically, with the index arrays' given contents (a few solver queries: Liger's cross
        # entropy over 8192 x 32000 logits would cost the exact detector minutes and tens of GiB)
        on_data = _verified_on_data(kernel, module, args, grid, assume, report)
        if on_data is not None:
            warnings.warn(LaunchWarning(_not_at_this_launch(report, on_data)), stacklevel=3)
            return module, on_data
        launch_report = detect(kernel, args, grid, assume=assume, max_steps=detect_steps())
        if launch_report.failed:
            raise RaceError.of(launch_report)
        if launch_report.status == "verified":
            warnings.warn(LaunchWarning(_not_at_this_launch(report)), stacklevel=3)
            return module, launch_report
        if launch_report.stats.get("limit") == "steps":
            # undecided at this launch: the static finding may need contents this launch does not have
            launch_report.notes.append(f"the static check, over other contents: {report.status}"
                                       + (f" ({report.findings[0].message})" if report.findings else ""))
            if refuse_unknown:
                raise UnverifiedError(launch_report)
            return module, launch_report
    if report.failed:
        raise RaceError.of(report)
    if report.status == "unknown" and refuse_unknown:
        raise UnverifiedError(report)
    return module, report


def launch_preconditions(kernel: Any) -> tuple[Precondition, ...]:
    """The preconditions a launch of ``kernel`` is checked under: its ``@tilecheck.requires`` and what
    ``[tool.tilecheck.assume]`` of the working directory's pyproject.toml names for it (once per
    kernel and directory: a launch loop asks this at every launch)."""
    key = (kernel, os.getcwd())
    try:
        return _PRECONDITIONS[key]
    except (KeyError, TypeError):  # (an unhashable kernel: asked every time)
        pass
    found = tuple(configured(kernel, *assume_table(Path.cwd())))
    try:
        if len(_PRECONDITIONS) < 4096:
            _PRECONDITIONS[key] = found
    except TypeError:
        pass
    return found


_PRECONDITIONS: dict[tuple[Any, str], tuple[Precondition, ...]] = {}


def assume_table(start: Path) -> tuple[dict[str, list[str]], Path | None]:
    """``[tool.tilecheck.assume]`` of the pyproject.toml at or above ``start`` (empty when none) and
    that file, read once per pyproject.toml (a launch loop must not parse it each time)."""
    from tilecheck.config import find_pyproject, load_config

    where = _PYPROJECTS.get(str(start))
    if where is None:  # resolved once per directory: a launch loop asks from the same one
        where = _PYPROJECTS[str(start)] = (find_pyproject(start.resolve()),)
    path = where[0]
    if path not in _ASSUME_TABLES:
        _ASSUME_TABLES[path] = load_config(start).assume if path is not None else {}
    return _ASSUME_TABLES[path], path


_ASSUME_TABLES: dict[Path | None, dict[str, list[str]]] = {}
_PYPROJECTS: dict[str, tuple[Path | None]] = {}  # per directory asked from: its pyproject.toml


class LaunchWarning(UserWarning):
    """A kernel whose static verdict is not ``verified`` ran because this launch has no race."""


def _on_host(args: Sequence[Any]) -> bool:
    return all(space_of(a) != "cuda" for a in flat_arguments(args))


def _verified_on_data(kernel: Any, module: Module, args: Sequence[Any], grid: tuple[int, int, int],
                      assume: Sequence[Precondition], report: Report) -> Report | None:
    """The launch verified on its own contents by verify's data step, for a static verdict that
    rests on them (a defect that needs other contents, or an undecided query); None otherwise.
    Remembered per launch contents (``_ON_DATA``), not per signature: it holds for them only."""
    from tilecheck.verifier.data import launch_data
    from tilecheck.verifier.api import verify
    from tilecheck.verifier.reuse.lookup import contents_digest

    exact = importlib.import_module("tilecheck.interp.detect")  # the module: the package exports the function

    if not (launch_data.contents_dependent(report) or launch_data.undecided(report)):
        return None
    # the same launch again (an autotuner's configurations): its integer contents are what the
    # static data step reads; a verdict of the exact detector may follow the floats too
    contents = contents_digest(module.params, args, floats=False)
    key = (*case_key(module, grid), tuple(assume), contents)
    if contents is not None and key in _ON_DATA:
        found, floats = _ON_DATA[key]
        if floats is None or floats == contents_digest(module.params, args, floats=True):
            # None: not verified on the data (the caller runs the detector on this launch)
            return found.relaunched(args) if found is not None else None
    runs = exact.runs_started
    # the contract over the shapes was searched (or not) by the cached verify: not again here
    on_data = verify(kernel, args, grid, assume=assume, every_shape=False, cache=False)
    found = on_data if on_data.status == "verified" else None
    # a verdict the detector gave is remembered with the floats' digest, and not at all when they
    # are too large to hash; None only sends the next launch to the detector, whatever its floats
    by_detector = found is not None and exact.runs_started != runs
    floats = contents_digest(module.params, args, floats=True) if by_detector else None
    if contents is not None and (floats is not None or not by_detector):
        if len(_ON_DATA) >= _ON_DATA_MAX:
            _ON_DATA.pop(next(iter(_ON_DATA)))
        _ON_DATA[key] = (found.held_weakly() if found is not None else None, floats)
    return found


# launches decided on their data: (program, parameters, grid, preconditions, integer contents) ->
# (the report, or None when not verified; the float contents' digest where the verdict may follow them)
_ON_DATA: dict[tuple[Any, ...], tuple[Report | None, str | None]] = {}
_ON_DATA_MAX = 256


def launch_only(report: Report) -> bool:
    """A verdict that holds for one launch only: its data, or its exact run."""
    from tilecheck.verifier.data import launch_data

    return report.level in (EXACT_LEVEL, launch_data.LEVEL)


def _not_at_this_launch(report: Report, decided: Report | None = None) -> str:
    """The static finding, and that the launch at hand does not have it (``decided``: the data
    step's report that verified it; None: tilecheck.detect's run)."""
    if report.failed:
        f = next(f for f in report.findings if f.is_defect)
        where = f.loc.outermost().short()
        what = f"{f.kind} on '{f.witness.array}'" if f.witness is not None else f.kind
        when = "for some contents of its index arrays"
        if f.witness is not None and f.witness.contents:
            values = contents_items(f.witness.contents)[:4]
            when = "when " + ", ".join(values)
        text = f"{report.kernel}: the static check reports {what} ({where}) {when}"
    else:
        reason = report.reasons[0] if report.reasons else "no reason given"
        text = f"{report.kernel}: the static check could not verify it ({reason})"
    if decided is not None:
        return text + f"; not at this launch: verified on its own contents ({decided.level})"
    return text + "; not at this launch (tilecheck.detect ran it and found no race)"


def launch(grid: Any, kernel: Any, args: Sequence[Any], stream: Any = None, *, backend: str | None = None,
           unsafe: bool = False, schedule: Schedule | None = None) -> None:
    """Run ``kernel`` on ``args`` in place, as ``ct.launch(stream, grid, kernel, args)`` does.

    The kernel and case are verified first (once per process): a ``race`` raises ``RaceError``,
    ``unknown`` raises ``UnverifiedError``, an aliasing argument ``AliasingError`` — unless
    ``unsafe=True``. The backend follows the arrays unless given: device arrays run on ``"cuda"``,
    host arrays on ``"cpu"``. ``backend="cpu"`` runs the numpy interpreter (``schedule`` picks block order
    and interleaving; the default is deterministic lockstep) and returns when done.
    ``backend="cuda"`` queues the kernel with ``ct.launch`` on ``stream`` (None: the default stream)
    and returns at once, as ``ct.launch`` does; the arrays must be device arrays.
    """
    from tilecheck import checks

    checks.kernel("launch(kernel=...)", kernel, module=True)
    checks.arguments("launch(args=...)", args, by_name=True)
    checks.flag("launch(unsafe=...)", unsafe)
    checks.choice("launch(backend=...)", backend, ("cpu", "cuda"), none=True)
    if schedule is not None and not isinstance(schedule, Schedule):
        raise checks.ArgumentTypeError(f"launch(schedule=...) takes a tilecheck.Schedule or None, got "
                                       f"{checks.show(schedule)}")
    original = kernel
    kernel, args = triton_frontend.resolve(kernel, args)
    grid3 = normalize_grid(grid)
    args = tuple(args)
    backend = resolve_backend(backend, args)
    if backend == "cuda" and kernel is not original:
        raise TilecheckError("tilecheck.launch runs Triton kernels on the CPU interpreter only: on the GPU, "
                             "launch them with kernel[grid](...) (tilecheck.verify checks them first)")
    if backend == "cuda":
        from tilecheck.runtime.cuda.backend import launch_on_stream

        checked_module(kernel, args, grid3, backend, unsafe=unsafe)
        launch_on_stream(grid3, kernel, args, stream)
        return
    if stream is not None:
        raise TilecheckError("stream= is for backend='cuda'; the cpu backend runs synchronously")
    module = checked_module(kernel, args, grid3, backend, unsafe=unsafe)
    Interpreter(module, args, grid3, schedule or Schedule()).run()


def resolve_backend(backend: str | None, args: Sequence[Any]) -> str:
    """``backend`` checked, or, when None, the one the arrays live on: all on a device -> "cuda";
    otherwise "cpu" (a mix of host and device arrays is an error)."""
    if backend is not None:
        if backend not in ("cpu", "cuda"):
            raise TilecheckError(f"backend={backend!r} is not a backend (expected 'cpu', 'cuda' or None)")
        return backend
    spaces = {space for a in flat_arguments(args) if (space := space_of(a)) is not None}
    if spaces == {"cuda"}:
        return "cuda"
    if "cuda" in spaces:
        raise ArgumentError("the arguments mix host and device arrays; pass all of them on one side "
                            "(or backend='cuda', where host arrays are refused by name)")
    return "cpu"


def checked_module(kernel: Any, args: tuple[Any, ...], grid: tuple[int, int, int], backend: str, *,
                   unsafe: bool = False, prefix: str = "refusing to launch: ") -> Module:
    """The module to run, after every check a launch needs (``check_launch``; on the cuda backend,
    device arrays only), each done once per kernel, grid and argument layout. ``unsafe`` keeps only
    the argument checks."""
    key = _launch_key(backend, unsafe, kernel, grid, args)
    cached = _CHECKED.get(key) if key is not None else None
    # a verdict under preconditions holds for contents that keep them: the same arrays may have
    # been refilled since, so their contents are checked again at each launch
    if cached is not None and not broken_preconditions(cached[0], args, cached[1]):
        return cached[0]
    if backend == "cuda":
        from tilecheck.runtime.cuda.backend import check_device_arguments

        check_device_arguments(flat_arguments(args))
    assume: tuple[Precondition, ...] = ()
    if unsafe:
        module = module_for(kernel, args)[0]
    else:
        assume = launch_preconditions(kernel)
        module, report = check_launch(kernel, args, grid, prefix=prefix, assume=assume)
        if launch_only(report):  # decided on this launch's data: decide the next one again
            key = None
        # a contract on contents is evaluated again at every launch the memo decides (as the
        # preconditions are); contents that cannot be read there (a device array) leave no memo
        conditions = content_conditions(report)
        if conditions and not _on_host(args):
            key = None
        assume = (*assume, *conditions)
    if key is not None:
        if len(_CHECKED) >= _CHECKED_MAX:
            _CHECKED.clear()
        _CHECKED[key] = (module, assume)
    return module


# Launches that passed every check, by everything the checks depend on: kernel, grid, and each
# argument's address, layout and type (arrays) or value (scalars). A hit skips the checks, which
# is what keeps the launcher's overhead per launch small (docs/performance.md), except the kernel's
# preconditions, which are about contents: they are checked on the host arrays again.
_CHECKED: dict[tuple[Any, ...], tuple[Module, tuple[Precondition, ...]]] = {}  # and the preconditions
_CHECKED_MAX = 4096


def _launch_key(backend: str, unsafe: bool, kernel: Any, grid: tuple[int, int, int],
                args: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """The cache key of a launch, or None when some argument has no cheap, complete identity."""
    parts: list[Any] = [backend, unsafe, kernel, grid, _signature(args) if any(isinstance(a, tuple) for a in args) else None]
    for a in flat_arguments(args):
        if isinstance(a, list):  # a list argument: checked at every launch (its arrays are its identity)
            return None
        if isinstance(a, (bool, int, float)):
            parts.append((type(a), a))
        elif isinstance(a, np.ndarray):
            parts.append(("host", a.ctypes.data, a.shape, a.strides, a.dtype.str))  # (faster than the interface)
        elif is_torch_tensor(a):
            parts.append(("torch", a.data_ptr(), tuple(a.shape), a.stride(), str(a.dtype), str(a.device)))
        elif (iface := getattr(a, "__cuda_array_interface__", None)) is not None:
            parts.append(("cuda", iface["data"][0], tuple(iface["shape"]), iface.get("strides"), iface["typestr"]))
        else:
            return None
    try:
        hash(kernel)
    except TypeError:
        return None
    return tuple(parts)
