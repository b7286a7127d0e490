import functools
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests import tiers  # after the path above

# tests verify from scratch and write nothing beside the project: the proof cache is off unless a
# test turns it on (tests/verifier/test_proof_cache.py); subprocesses and xdist workers inherit it
os.environ["TILECHECK_NO_CACHE"] = "1"


def pytest_addoption(parser):
    parser.addoption("--thorough", action="store_true", default=False,
                     help="the thorough test tier: run the tests marked slow, and every hypothesis property "
                          f"with its full count of examples (also {tiers.ENV}=1; tests/tiers.py)")


# what a test session itself may leave in the folder it runs from
_SESSION_FILES = {".pytest_cache", ".hypothesis", "__pycache__"}


def pytest_configure(config):
    # in the environment, so that xdist workers and test modules (tiers.examples at import) see it
    if config.getoption("thorough"):
        os.environ[tiers.ENV] = "1"
    config._tilecheck_folder = (Path.cwd(), set(os.listdir()))


def pytest_sessionfinish(session, exitstatus):
    """Fail a session whose tests left files in the folder it ran from (a property once passed
    ``cache="3"`` and made a cache directory ``3`` in the checkout): tests write under tmp_path."""
    if hasattr(session.config, "workerinput"):
        return  # xdist: the controller looks once, at the end
    folder, before = session.config._tilecheck_folder
    left = sorted(set(os.listdir(folder)) - before - _SESSION_FILES)
    if left:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(f"tests left files in {folder}: {', '.join(left)}", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.hookimpl(tryfirst=True)  # before -m reads the markers
def pytest_collection_modifyitems(config, items):
    for item in items:
        if getattr(getattr(item, "obj", None), "is_hypothesis_test", False):
            item.add_marker(pytest.mark.property)
    if tiers.thorough():
        return
    slow = [item for item in items if item.get_closest_marker("slow") is not None]
    if slow:
        items[:] = [item for item in items if item.get_closest_marker("slow") is None]
        config.hook.pytest_deselected(items=slow)


@functools.cache
def _compiled(module_name: str, kernel_name: str):
    import importlib

    import tilecheck
    from tilecheck.ir.cutile import compile_kernel

    module = importlib.import_module(f"corpus.kernels.{module_name}")
    kernel = getattr(module, kernel_name)
    return compile_kernel(kernel, tilecheck.cases_of(kernel)[0].make_args())


@pytest.fixture
def compiled():
    """compiled("elementwise", "vector_add") -> CompiledKernel (cached for the session)."""
    return _compiled


def source_line(module_name: str, needle: str) -> int:
    """1-based line of the first line of corpus/kernels/<module>.py containing ``needle``."""
    lines = (ROOT / "corpus" / "kernels" / f"{module_name}.py").read_text().splitlines()
    for i, line in enumerate(lines, 1):
        if needle in line:
            return i
    raise AssertionError(f"{needle!r} not in {module_name}.py")


pytest_plugins = ["pytester"]
