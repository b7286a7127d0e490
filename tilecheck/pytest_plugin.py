"""The pytest plugin (entry point ``pytest11``; loads whenever tilecheck is installed).

- ``--tilecheck``: each ``@tilecheck.case`` of a kernel found in a collected module becomes a test item.
- ``--tilecheck-launches``: every ``cuda.tile.launch`` a test makes is verified first (with its real grid
  and arguments, cached per kernel and case). A ``race`` or ``unknown`` verdict is then decided for that
  launch by ``tilecheck.detect`` (host arrays): a race at the launch fails the test; otherwise the
  launch runs and the summary lists it (an ``unknown`` on device arrays is listed as such). ``--tilecheck-backend=cpu`` runs those launches on the CPU interpreter instead of a GPU.
- ``@pytest.mark.race_free``: the same launch checking, for one test.

Heavy modules (z3, cuda.tile, numpy) are imported only when one of these is used.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

_STATE = pytest.StashKey["_State"]()


@dataclass
class _State:
    check_all_launches: bool
    backend: str
    current: str | None = None
    verified: int = 0
    unknown: list[tuple[str, str]] = field(default_factory=list)
    # launches whose static verdict was race or unknown, run because tilecheck.detect found no race there
    at_launch: list[tuple[str, str]] = field(default_factory=list)
    original_launch: Any = None
    active: int = 0  # >0 while launches are intercepted


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("tilecheck", "race detection for cuTile kernels")
    group.addoption("--tilecheck", action="store_true", default=False,
                    help="verify every @tilecheck.case of the kernels in collected modules, as test items")
    group.addoption("--tilecheck-launches", action="store_true", default=False,
                    help="verify every kernel launched through cuda.tile.launch before it runs")
    group.addoption("--tilecheck-backend", choices=("gpu", "cpu"), default="gpu",
                    help="with --tilecheck-launches: run launches on the GPU (default) or the CPU interpreter")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "race_free: verify every cuda.tile.launch this test makes before it "
                                       "runs; a race fails the test (what --tilecheck-launches does for all)")
    state = _State(config.getoption("--tilecheck-launches"), config.getoption("--tilecheck-backend"))
    config.stash[_STATE] = state
    if state.check_all_launches:
        _intercept(state)
        config.add_cleanup(lambda: _release(state))


# ---- launch interception ------------------------------------------------------------------------
def _intercept(state: _State) -> None:
    state.active += 1
    if state.active > 1:
        return
    import cuda.tile as ct

    state.original_launch = ct.launch

    def launch(stream: Any, grid: Any, kernel: Any, kernel_args: Any, *rest: Any, **kw: Any) -> Any:
        __tracebackhide__ = True
        _check_launch(state, grid, kernel, tuple(kernel_args))
        if state.backend == "cpu":
            from tilecheck.runtime import launch as cpu_launch

            return cpu_launch(grid, kernel, kernel_args, unsafe=True)  # already verified above
        return state.original_launch(stream, grid, kernel, kernel_args, *rest, **kw)

    launch.__tilecheck_original__ = state.original_launch  # type: ignore[attr-defined]  # for the cuda backend
    ct.launch = launch


def _release(state: _State) -> None:
    state.active -= 1
    if state.active == 0 and state.original_launch is not None:
        import cuda.tile as ct

        ct.launch = state.original_launch
        state.original_launch = None


def _check_launch(state: _State, grid: Any, kernel: Any, args: tuple[Any, ...]) -> None:
    __tracebackhide__ = True
    from tilecheck.runtime.launcher import check_launch, normalize_grid

    import warnings

    from tilecheck.runtime.launcher import LaunchWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", LaunchWarning)
        _, report = check_launch(kernel, args, normalize_grid(grid), prefix="tilecheck: ",
                                 refuse_unknown=False)
    if report.level == "this launch":
        text = str(caught[0].message) if caught else f"{report.kernel}: race-free at this launch"
        entry = (state.current or "?", text)
        if entry not in state.at_launch:
            state.at_launch.append(entry)
    elif report.status == "unknown":
        entry = (state.current or "?", f"{report.kernel}: " + "; ".join(report.reasons[:2]))
        if entry not in state.unknown:
            state.unknown.append(entry)
    else:
        state.verified += 1


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Any:
    state = item.config.stash[_STATE]
    state.current = item.nodeid
    marked = item.get_closest_marker("race_free") is not None
    if marked:
        _intercept(state)
    try:
        return (yield)
    finally:
        if marked:
            _release(state)
        state.current = None


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    state = config.stash.get(_STATE, None)
    if state is None or not (state.verified or state.unknown or state.at_launch):
        return
    terminalreporter.section("tilecheck")
    terminalreporter.write_line(f"{state.verified} kernel launch check(s) verified")
    for nodeid, text in state.at_launch:
        terminalreporter.write_line(f"race-free at the launch only (tilecheck.detect): {nodeid}: {text}")
    for nodeid, text in state.unknown:
        terminalreporter.write_line(f"unknown (not verified, launched anyway): {nodeid}: {text}")


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
        from tilecheck.verifier import verify

        case = cases_of(self.kernel)[self.case_index]
        report = verify(self.kernel, case.make_args(), case.grid, assume=case.assume)
        self.add_report_section("call", "tilecheck", str(report))
        if report.status != "verified":
            raise TilecheckFailure(report)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, TilecheckFailure):
            return str(excinfo.value.report)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, None, f"tilecheck: {self.name}"
