"""The pytest plugin (entry point ``pytest11``; loads whenever tilecheck is installed).

- ``--tilecheck``: each ``@tilecheck.case`` of a kernel found in a collected module becomes a test item.
- ``--tilecheck-launches``: every ``cuda.tile.launch`` a test makes is verified first (with its real grid
  and arguments, cached per kernel and case). A ``race`` or ``unknown`` verdict is then decided for that
  launch by ``tilecheck.detect`` (host arrays): a race at the launch fails the test; otherwise the
  launch runs and the summary lists it. An ``unknown`` that remains (device arrays, or a launch the
  interpreter cannot run) is refused unless ``--tilecheck-allow-unknown`` or ``[tool.tilecheck]
  allow-unknown`` allows it; the summary says which.
  Launches made through cuTile's autotuner (``cuda.tile.tune.exhaustive_search``) are checked too:
  every configuration of the search space, before any is timed.
  ``--tilecheck-backend=cpu`` runs launches on the CPU interpreter instead of a GPU, and picks an
  autotuned configuration by rule (the first that passes its check: ``tilecheck.runtime.autotune``),
  for cuTile's autotuner and Triton's ``@triton.autotune`` alike.
- ``--tilecheck-cpu-device[=sm_90]``: a CUDA-only test suite on a CPU-only machine: implies the two
  options above and installs ``tilecheck.cpu_device`` (``device="cuda"`` tensors are CPU tensors,
  ``torch.cuda`` answers as the named GPU) before the suite's own conftest is loaded.
- ``@pytest.mark.race_free``: the same launch checking, for one test.
- Under pytest-xdist each worker checks its own tests; the controller's summary merges theirs.

Heavy modules (z3, cuda.tile, numpy, torch) are imported only when one of these is used.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from typing import Any

import pytest

_STATE = pytest.StashKey["_State"]()

# outcomes of a checked launch, in the order the summary lists them
_OUTCOMES = {  # what a launch came to, and how the summary names it: refusals by their kind, then
    # tilecheck's own failures apart from them
    "race": "refused (a race)",
    "out-of-bounds": "refused (out of bounds)",
    "aliasing": "refused (an argument aliases a written array)",
    "unverified": "refused (unknown)",
    "error": "tilecheck could not check it (not a verdict on the kernel)",
    "at-launch": "race-free at the launch only (on its own data, or run by tilecheck.detect)",
    "unknown": "unknown (not verified; launched: allowed by configuration)",
    "autotuned": "autotuned",
}


@dataclass
class _State:
    check_all_launches: bool
    backend: str
    cpu_device: Any = None  # tilecheck.cpu_device.CpuDevice while installed
    current: str | None = None
    verified: dict[str, int] = field(default_factory=dict)  # kernel -> launches verified
    # (kernel, outcome, nodeid, text), each once; plain values so xdist can send them
    events: list[tuple[str, str, str, str]] = field(default_factory=list)
    # kernels whose unknown verdict may launch (True: all): --tilecheck-allow-unknown, or [tool.tilecheck]
    # allow-unknown read from the rootdir's pyproject.toml at the first check (None until then)
    allow_unknown: bool | list[str] | None = None
    rootpath: Any = None
    config: Any = None  # tilecheck.config.Config of the rootdir's pyproject.toml, read at the first check
    original_launch: Any = None
    original_search: Any = None
    original_triton_run: Any = None  # JITFunction.run, while Triton launches are intercepted
    original_autotune_run: Any = None  # triton's Autotuner.run, likewise
    original_do_bench: Any = None  # and its do_bench
    checking_only: int = 0  # >0 while Triton's autotuner "times" a configuration on the cpu backend
    active: int = 0  # >0 while launches are intercepted
    unchecked: bool = False  # --tilecheck-unchecked: launches run, none is verified (a baseline)
    unchecked_launches: int = 0

    def note(self, kernel: str, outcome: str, text: str) -> None:
        event = (kernel, outcome, self.current or "?", text)
        if event not in self.events:
            self.events.append(event)

    def merge(self, data: dict[str, Any]) -> None:
        for kernel, n in data.get("verified", {}).items():
            self.verified[kernel] = self.verified.get(kernel, 0) + n
        for event in data.get("events", []):
            if tuple(event) not in self.events:
                self.events.append(tuple(event))
        self.unchecked_launches += data.get("unchecked", 0)

    def export(self) -> dict[str, Any]:
        return {"verified": dict(self.verified), "events": [list(e) for e in self.events],
                "unchecked": self.unchecked_launches}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("tilecheck", "race detection for cuTile kernels")
    group.addoption("--tilecheck", action="store_true", default=False,
                    help="verify every @tilecheck.case of the kernels in collected modules, as test items")
    group.addoption("--tilecheck-launches", action="store_true", default=False,
                    help="verify every kernel launched through cuda.tile.launch (or its autotuner) before it runs")
    group.addoption("--tilecheck-backend", choices=("gpu", "cpu"), default=None,
                    help="with --tilecheck-launches: run launches on the GPU (default) or the CPU interpreter")
    group.addoption("--tilecheck-allow-unknown", action="store_true", default=False,
                    help="launch kernels whose verdict is unknown (listed in the summary) instead of refusing "
                         "them; [tool.tilecheck] allow-unknown names kernels one by one")
    group.addoption("--tilecheck-unchecked", action="store_true", default=False,
                    help="with --tilecheck-cpu-device (or --tilecheck-launches --tilecheck-backend=cpu): run "
                         "every launch on the interpreter without verifying it, to measure what the checks "
                         "cost a suite (time, memory); nothing is checked")
    group.addoption("--tilecheck-cpu-device", nargs="?", const="sm_90", default=None, metavar="ARCH",
                    help="run a CUDA-only test suite without a GPU: device='cuda' tensors become CPU "
                         "tensors, torch.cuda answers as GPU ARCH (default sm_90), launches run on the "
                         "interpreter, checked (implies --tilecheck-launches --tilecheck-backend=cpu)")


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser, args: list[str]) -> None:
    """``--tilecheck-cpu-device`` must be in place before a conftest asks torch about the GPU."""
    arch = getattr(early_config.known_args_namespace, "tilecheck_cpu_device", None)
    if arch is None:
        return
    arch = _arch_not_a_path(early_config, args, arch)
    from tilecheck.cpu_device import CpuDevice, parse_arch
    from tilecheck.errors import TilecheckError

    try:
        gpu = parse_arch(arch)
    except TilecheckError as exc:
        raise pytest.UsageError(str(exc)) from None
    if getattr(early_config.known_args_namespace, "tilecheck_backend", None) == "gpu":
        raise pytest.UsageError("--tilecheck-cpu-device runs launches on the CPU; it cannot be combined "
                                "with --tilecheck-backend=gpu")
    try:
        import torch  # noqa: F401
    except ImportError:
        raise pytest.UsageError("--tilecheck-cpu-device stands in for CUDA in torch; install torch "
                                "(the CPU build is enough)") from None
    state = _State(True, "cpu", allow_unknown=_allow_flag(early_config), rootpath=early_config.rootpath,
                   unchecked=bool(getattr(early_config.known_args_namespace, "tilecheck_unchecked", False)))
    state.cpu_device = CpuDevice(gpu)
    state.cpu_device.install()
    early_config.stash[_STATE] = state
    _intercept(state)
    early_config.add_cleanup(lambda: _release(state))
    early_config.add_cleanup(state.cpu_device.uninstall)


def _arch_not_a_path(early_config: pytest.Config, args: list[str], arch: str) -> str:
    """``pytest --tilecheck-cpu-device tests/`` (as docs/ci.md writes it): argparse takes ``tests/``
    for the option's optional ARCH. A value that names no architecture (``sm_...``) but a path that
    exists goes back to the paths to test, and the default architecture is meant. ``args`` is the
    command line pytest parses again after this hook, so it is mended in place."""
    if arch.startswith("sm_") or not os.path.exists(arch.split("::")[0]):
        return arch
    for i in range(len(args) - 1):
        if args[i] == "--tilecheck-cpu-device" and args[i + 1] == arch:
            args[i] = "--tilecheck-cpu-device=sm_90"
            early_config.known_args_namespace.tilecheck_cpu_device = "sm_90"
            return "sm_90"
    return arch


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "race_free: verify every cuda.tile.launch this test makes before it "
                                       "runs; a race fails the test (what --tilecheck-launches does for all)")
    if _STATE in config.stash:  # --tilecheck-cpu-device: set up before the conftests
        return
    state = _State(config.getoption("--tilecheck-launches"), config.getoption("--tilecheck-backend") or "gpu",
                   allow_unknown=_allow_flag(config), rootpath=config.rootpath,
                   unchecked=config.getoption("--tilecheck-unchecked"))
    if state.unchecked and state.backend != "cpu":
        raise pytest.UsageError("--tilecheck-unchecked runs launches on the CPU interpreter unchecked: it needs "
                                "--tilecheck-cpu-device or --tilecheck-backend=cpu")
    config.stash[_STATE] = state
    if state.check_all_launches:
        _intercept(state)
        config.add_cleanup(lambda: _release(state))


def _allow_flag(config: pytest.Config) -> bool | None:
    """True with --tilecheck-allow-unknown; None: ask [tool.tilecheck] when a launch is checked."""
    flag = getattr(config.known_args_namespace, "tilecheck_allow_unknown", False) or \
        getattr(config.option, "tilecheck_allow_unknown", False)
    return True if flag else None


def _project_config(state: _State) -> Any:
    """``[tool.tilecheck]`` of the rootdir's pyproject.toml, read once (a broken file: the test that
    asked fails, saying so)."""
    if state.config is None:
        from tilecheck.config import load_config

        state.config = load_config(state.rootpath)
    return state.config


def _unknown_allowed(state: _State, name: str) -> bool:
    if state.allow_unknown is None:
        state.allow_unknown = _project_config(state).allow_unknown
    allow = state.allow_unknown
    return allow is True or isinstance(allow, list) and any(e == name or e.endswith(f"::{name}") for e in allow)


# ---- launch interception ------------------------------------------------------------------------
def _intercept(state: _State) -> None:
    state.active += 1
    if state.active > 1:
        return
    import cuda.tile as ct
    from cuda.tile import tune

    from tilecheck.runtime.autotune import checked_exhaustive_search

    state.original_launch = ct.launch

    def launch(stream: Any, grid: Any, kernel: Any, kernel_args: Any, *rest: Any, **kw: Any) -> Any:
        __tracebackhide__ = True
        _check_launch(state, _grid(grid), kernel, tuple(kernel_args))
        if state.backend == "cpu":
            from tilecheck.runtime import launch as cpu_launch

            return cpu_launch(grid, kernel, kernel_args, unsafe=True)  # already verified above
        return state.original_launch(stream, grid, kernel, kernel_args, *rest, **kw)

    launch.__tilecheck_original__ = state.original_launch  # type: ignore[attr-defined]  # for the cuda backend
    ct.launch = launch
    _intercept_triton(state)

    def searched(kernel: Any, outcomes: list[Any], chosen: Any) -> None:
        passed = sum(o.passed for o in outcomes)
        rejected = [f"{o.config} ({type(o.error).__name__})" for o in outcomes if not o.passed]
        how = "the first that passes its check (--tilecheck-backend=cpu times nothing)" \
            if state.backend == "cpu" else "timed by cuTile's search"
        text = (f"{len(outcomes)} configuration(s) checked, {passed} passed"
                + (f", rejected by cuTile: {'; '.join(rejected)}" if rejected else "")
                + f"; chose {chosen}: {how}")
        state.note(_kernel_name(kernel), "autotuned", text)

    def check(grid: tuple[int, int, int], kernel: Any, args: tuple[Any, ...]) -> None:
        __tracebackhide__ = True
        _check_launch(state, grid, kernel, args)

    state.original_search = tune.exhaustive_search
    tune.exhaustive_search = checked_exhaustive_search(state.original_search, check,
                                                       time_on_gpu=state.backend != "cpu", on_search=searched)


def _intercept_triton(state: _State) -> None:
    """``kernel[grid](...)`` of a ``@triton.jit`` kernel (heuristics-wrapped and autotuned ones reach it
    too): checked like ``ct.launch``, then run on the interpreter with ``--tilecheck-backend=cpu``. Only
    when the tests imported Triton (the plugin does not import it for projects that do not use it)."""
    if "triton" not in sys.modules or state.original_triton_run is not None:
        return  # (called again before each test: the tests may import Triton after interception began)
    from triton.runtime.autotuner import Autotuner
    from triton.runtime.jit import JITFunction

    original = JITFunction.run
    state.original_triton_run = original

    def run(self: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
        __tracebackhide__ = True
        if warmup:
            return original(self, *args, grid=grid, warmup=warmup, **kwargs)
        bound = _bound_as_triton_binds(self, args, kwargs)
        for hook in getattr(self, "pre_run_hooks", ()):  # as Triton's run calls them, first
            hook(*args, **kwargs)
        shape = grid(bound) if callable(grid) else grid  # given what Triton's binder gives: defaults too
        launched = _Launched(self, bound)  # what Triton returns: a kernel to launch again
        if _no_blocks(shape):
            return launched  # a grid with no block: Triton launches nothing
        grid3 = _grid(shape)
        _check_launch(state, grid3, self, bound)
        if state.checking_only:
            return None  # a configuration the autotuner "times" on the cpu backend: checked, not run
        if state.backend == "cpu":
            from tilecheck.errors import TilecheckError
            from tilecheck.runtime import launch as cpu_launch

            try:
                cpu_launch(grid3, self, bound, unsafe=True)  # already verified above
            except TilecheckError as exc:  # the interpreter could not run it: not a verdict
                state.note(_kernel_name(self), "error", str(exc).splitlines()[0])
                raise
            return launched
        return original(self, *args, grid=grid, warmup=warmup, **kwargs)

    JITFunction.run = run
    if state.backend == "cpu":
        state.original_autotune_run = Autotuner.run
        Autotuner.run = _checked_autotune(state, Autotuner.run)
        # an autotuner subclass with its own run (FlagGems' LibTuner) still times through do_bench:
        # every autotuner's do_bench checks instead (the run above keeps a tally on its instance)
        state.original_do_bench = Autotuner.__dict__.get("do_bench")
        Autotuner.do_bench = property(lambda self: self.__dict__.get("do_bench") or _checking_bench(state, []))


def _bound_as_triton_binds(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """The kernel's parameters bound to a launch as Triton's binder binds them: positional and
    keyword arguments, then each missing parameter's default (a constexpr's too), in parameter
    order. Launch options (num_warps, ...) are not parameters."""
    import inspect

    names = list(fn.arg_names)
    given = {**dict(zip(names, args)), **{k: v for k, v in kwargs.items() if k in names}}
    try:
        defaults = {name: p.default for name, p in inspect.signature(fn.fn).parameters.items()
                    if p.default is not inspect.Parameter.empty}
    except (TypeError, ValueError):
        defaults = {}
    return {name: given[name] if name in given else defaults[name] for name in names
            if name in given or name in defaults}


def _no_blocks(grid: Any) -> bool:
    """A grid with an extent of 0 (Triton launches nothing for it)."""
    extents = grid if isinstance(grid, (tuple, list)) else (grid,)
    return any(isinstance(n, int) and not isinstance(n, bool) and n == 0 for n in extents)


class _Launched:
    """What an intercepted ``kernel[grid](...)`` returns in place of Triton's compiled kernel: launch
    wrappers keep it and launch it again as ``launched[grid](*args)`` (FlagGems' LibEntry), with
    every parameter's value in order, or only the non-constexpr ones (the constexprs are compiled
    in: this launch's). Each such launch goes through the same checks."""

    def __init__(self, fn: Any, bound: dict[str, Any]) -> None:
        constexpr = {p.name for p in getattr(fn, "params", ()) if getattr(p, "is_constexpr", False)}
        self.fn = fn
        # only the constexprs are kept: a relaunch passes every runtime argument again, and the
        # wrappers keep this object for the whole session (FlagGems' LibEntry caches it), so keeping
        # this launch's tensors kept them all alive (13 GB over 15 of FlagGems' test files)
        self.bound = {name: value for name, value in bound.items() if name in constexpr}
        self.names = list(bound)
        self.runtime = [name for name in self.names if name not in constexpr]

    def __getitem__(self, grid: Any) -> Any:
        def runner(*args: Any, stream: Any = None) -> Any:
            __tracebackhide__ = True
            names = self.names if len(args) == len(self.names) else self.runtime
            values = {**self.bound, **dict(zip(names, args))}
            return self.fn.run(**values, grid=tuple(grid), warmup=False)
        return runner


def _checking_bench(state: _State, tally: list[bool]) -> Any:
    """An autotuner's ``do_bench`` without a GPU: the configuration's launch is checked and not run;
    one that passes "takes" 0.0, one Triton cannot compile inf (``tally`` records which)."""
    from tilecheck.ir import FrontendError

    def bench(kernel_call: Any, quantiles: Any = (0.5,), **_: Any) -> list[float]:
        __tracebackhide__ = True
        state.checking_only += 1
        try:
            kernel_call()
        except FrontendError:
            tally.append(False)
            return [float("inf")] * len(quantiles)
        finally:
            state.checking_only -= 1
        tally.append(True)
        return [0.0] * len(quantiles)

    return bench


def _checked_autotune(state: _State, original: Any) -> Any:
    """Triton's autotuner without a GPU: it would time every configuration with the driver's
    benchmarker. Here each configuration's launch is checked and not run, and the rule of cuTile's
    checked search applies: the first configuration whose check passes is chosen (every one that
    passes "takes" 0.0; one Triton cannot compile, inf). A race or a refused unknown in any
    configuration fails the test, as on the GPU."""
    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True
        tally: list[bool] = []
        self.__dict__["do_bench"] = _checking_bench(state, tally)  # (Autotuner.do_bench reads it)
        try:
            result = original(self, *args, **kwargs)
        finally:
            self.__dict__.pop("do_bench", None)
        if tally:
            state.note(self.base_fn.__name__, "autotuned",
                       f"{len(tally)} configuration(s) checked, {sum(tally)} passed; chose {self.best_config}: "
                       "the first that passes its check (--tilecheck-backend=cpu times nothing)")
        return result

    return run


def _release(state: _State) -> None:
    state.active -= 1
    if state.active == 0 and state.original_triton_run is not None:
        from triton.runtime.jit import JITFunction

        JITFunction.run = state.original_triton_run
        state.original_triton_run = None
        if state.original_autotune_run is not None:
            from triton.runtime.autotuner import Autotuner

            Autotuner.run = state.original_autotune_run
            state.original_autotune_run = None
            if state.original_do_bench is not None:
                Autotuner.do_bench = state.original_do_bench
                state.original_do_bench = None
    if state.active == 0 and state.original_launch is not None:
        import cuda.tile as ct
        from cuda.tile import tune

        ct.launch = state.original_launch
        tune.exhaustive_search = state.original_search
        state.original_launch = state.original_search = None


def _grid(grid: Any) -> tuple[int, int, int]:
    from tilecheck.grid import normalize_grid

    return normalize_grid(grid)


def _kernel_name(kernel: Any) -> str:
    from tilecheck.collect import python_function

    return getattr(python_function(kernel), "__name__", None) or getattr(kernel, "name", "?")


def _check_launch(state: _State, grid: tuple[int, int, int], kernel: Any, args: tuple[Any, ...]) -> None:
    __tracebackhide__ = True
    if state.unchecked:
        state.unchecked_launches += 1
        return
    import warnings

    from tilecheck.errors import TilecheckError
    from tilecheck.ir import FrontendError
    from tilecheck.requirements import configured
    from tilecheck.runtime.launcher import LaunchWarning, UnverifiedError, check_launch, launch_only

    name = _kernel_name(kernel)
    allowed = _unknown_allowed(state, name)
    try:
        # the kernel's @tilecheck.requires, and what [tool.tilecheck.assume] names for it
        config = _project_config(state)
        assume = configured(kernel, config.assume, config.source)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", LaunchWarning)
            _, report = check_launch(kernel, args, grid, prefix="tilecheck: ", refuse_unknown=not allowed,
                                     assume=assume)
    except FrontendError:
        raise  # not a verdict: cuTile could not compile it (the autotuner counts it as a failed config)
    except UnverifiedError as exc:
        reasons = "; ".join(exc.report.reasons[:2]) or "no reason given"
        state.note(name, "unverified", f"unknown, not launched ({reasons}); allow it with --tilecheck-allow-unknown "
                                       "or [tool.tilecheck] allow-unknown")
        raise
    except TilecheckError as exc:
        from tilecheck.runtime.launcher import AliasingError, OutOfBoundsError, RaceError

        # a verdict (a defect, an aliasing argument) refuses the launch; any other error (the
        # interpreter could not run it, an argument tilecheck cannot read) is tilecheck's own
        outcome = ("out-of-bounds" if isinstance(exc, OutOfBoundsError) else "race" if isinstance(exc, RaceError)
                   else "aliasing" if isinstance(exc, AliasingError) else "error")
        state.note(name, outcome, str(exc).splitlines()[0])
        raise
    if launch_only(report):
        text = str(caught[0].message) if caught else f"{report.kernel}: race-free at this launch"
        state.note(report.kernel, "at-launch", text)
    elif report.status == "unknown":
        state.note(report.kernel, "unknown", f"{report.kernel}: " + "; ".join(report.reasons[:2]))
    else:
        state.verified[report.kernel] = state.verified.get(report.kernel, 0) + 1


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Any:
    state = item.config.stash[_STATE]
    state.current = item.nodeid
    marked = item.get_closest_marker("race_free") is not None
    if marked:
        _intercept(state)
    if state.active:
        _intercept_triton(state)
    try:
        return (yield)
    finally:
        if marked:
            _release(state)
        state.current = None


# ---- pytest-xdist: each worker sends what it saw; the controller merges it ----------------------
def pytest_sessionfinish(session: pytest.Session) -> None:
    workeroutput = getattr(session.config, "workeroutput", None)
    state = session.config.stash.get(_STATE, None)
    if workeroutput is not None and state is not None:
        workeroutput["tilecheck"] = state.export()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    data = getattr(node, "workeroutput", {}).get("tilecheck")
    state = node.config.stash.get(_STATE, None)
    if data and state is not None:
        state.merge(data)


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    state = config.stash.get(_STATE, None)
    if state is None:
        return
    if state.unchecked:
        terminalreporter.section("tilecheck")
        terminalreporter.write_line(f"--tilecheck-unchecked: {state.unchecked_launches} launch(es) ran on the "
                                    "interpreter, none verified", yellow=True, bold=True)
        return
    if not (state.verified or state.events):
        if state.check_all_launches or state.cpu_device is not None:
            # a suite whose kernels never went through a checked launch (ops dispatched elsewhere,
            # a launch path tilecheck does not intercept) must not look checked
            terminalreporter.section("tilecheck")
            terminalreporter.write_line("no kernel launch was checked: no ct.launch or kernel[grid](...) of the tests "
                                        "reached a verdict (none was made, or none compiled)", yellow=True, bold=True)
        return
    terminalreporter.section("tilecheck")
    if state.cpu_device is not None:
        gpu = state.cpu_device.gpu
        terminalreporter.write_line(f"CUDA stood in for by the CPU ({gpu.name}, {gpu.arch}); launches ran on "
                                    "the interpreter")
    terminalreporter.write_line(f"{sum(state.verified.values())} kernel launch check(s) verified")
    totals = {outcome: sum(1 for e in state.events if e[1] == outcome) for outcome in _OUTCOMES}
    refusals = [o for o, label in _OUTCOMES.items() if label.startswith("refused")]
    refused = {o: totals[o] for o in refusals if totals[o]}
    if refused or totals["error"]:
        terminalreporter.write_line(
            f"{sum(refused.values())} launch(es) refused ({', '.join(f'{n} {o}' for o, n in refused.items()) or 'none'}); "
            f"{totals['error']} tilecheck could not check", red=bool(totals["error"]))
    kernels = sorted(set(state.verified) | {e[0] for e in state.events})
    for kernel in kernels:
        counts = [f"{state.verified[kernel]} verified"] if kernel in state.verified else []
        counts += [f"{n} {_OUTCOMES[outcome] if outcome in refusals else outcome}" for outcome in _OUTCOMES
                   if (n := sum(1 for e in state.events if e[0] == kernel and e[1] == outcome))]
        terminalreporter.write_line(f"{kernel}: {', '.join(counts)}")
        for outcome, label in _OUTCOMES.items():
            for _, _, nodeid, text in (e for e in state.events if e[0] == kernel and e[1] == outcome):
                terminalreporter.write_line(f"  {label}: {nodeid}: {text}")


# ---- declared cases as test items ----------------------------------------------------------------
@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makeitem(collector: pytest.Collector, name: str, obj: Any) -> Any:
    if not collector.config.getoption("--tilecheck") or getattr(obj, "__tilecheck_cases__", None) is None:
        return None
    from tilecheck.cases import cases_of

    return [TilecheckItem.from_parent(collector, name=f"{name}[tilecheck{i}]", kernel=obj, case_index=i)
            for i in range(len(cases_of(obj)))]


class TilecheckFailure(Exception):
    def __init__(self, report: Any) -> None:
        super().__init__(str(report))
        self.report = report


class TilecheckItem(pytest.Item):
    """One declared case of one kernel: passes when the verdict is ``verified``."""

    def __init__(self, *, kernel: Any, case_index: int, **kw: Any) -> None:
        super().__init__(**kw)
        self.kernel, self.case_index = kernel, case_index

    def runtest(self) -> None:
        from tilecheck.cases import cases_of
        from tilecheck.requirements import check_preconditions, configured
        from tilecheck.verifier import verify

        case = cases_of(self.kernel)[self.case_index]
        # the kernel's @tilecheck.requires, the case's own and what [tool.tilecheck.assume] names
        config = _project_config(self.config.stash[_STATE])
        args = case.make_args()
        assume = (*case.assume, *configured(self.kernel, config.assume, config.source))
        check_preconditions(self.kernel, args, assume)
        report = verify(self.kernel, args, case.grid, assume=assume)
        self.add_report_section("call", "tilecheck", str(report))
        if report.status != "verified":
            raise TilecheckFailure(report)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, TilecheckFailure):
            return str(excinfo.value.report)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, None, f"tilecheck: {self.name}"
