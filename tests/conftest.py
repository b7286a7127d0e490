import functools
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


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
