"""The oracle test of issue 11: ``tilecheck.verify`` (static, every schedule) against
``tilecheck.detect`` (exact for one launch) on kernels generated from a grammar
(``tests/oracle_kernels.py``).

The relation: ``verify`` says verified => ``detect`` finds no race at that launch, with random data;
equivalently, ``detect`` finds a race => ``verify`` does not say verified. ``unknown`` on either
side is no disagreement, and ``verify`` reporting a race that ``detect`` does not find is allowed
(the verifier over-approximates, e.g. the contents of index arrays).

Each disagreement found (by this test or by ``scripts/oracle_long.py``) is kept as a runnable file in
``tests/data/oracle/``: the kernel, ``make_args()``, ``GRID``, ``ASSUME``, ``TRUTH`` (``"race"``,
``"out-of-bounds"`` or ``"race-free"``, from ``run_repeated`` and reading the kernel) and, while the
bug is open, ``XFAIL`` (the reason): those run as strict xfails, so they flip when the bug is fixed.
While a class is open, ``tests.oracle_relation.KNOWN`` recognises it so the property test stays green
on it. The same files hold bugs both checkers share (found by reading the grammar's cases against
the Tile IR memory model), which the relation cannot see.
"""
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, note, settings

from tests.oracle_kernels import cases
from tests.oracle_relation import check, known_class, load, load_file
from tests.tiers import examples

DATA = Path(__file__).parent / "data" / "oracle"


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """Where generated modules are written (cuTile reads a kernel's source file)."""
    return tmp_path_factory.mktemp("oracle")


@settings(max_examples=examples(300), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(case=cases())
def test_verified_launch_has_no_race(case, workdir):
    outcome = check(load(case, workdir))
    known = known_class(case.source, outcome)
    if known:
        note(f"open disagreement class, tracked by tests/data/oracle/{known}")
        return
    assert not outcome.disagreement, f"{case.source}\n{outcome.describe()}"


def _regressions():
    out = []
    for path in sorted(DATA.glob("*.py")):
        reason = _constant(path, "XFAIL")
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        out.append(pytest.param(path, marks=marks, id=path.stem))
    return out


def _constant(path: Path, name: str) -> str | None:
    """A module-level string constant of a data file, read without importing it."""
    import ast

    for node in ast.parse(path.read_text()).body:
        targets = [t.id for t in getattr(node, "targets", ()) if isinstance(t, ast.Name)]
        if isinstance(node, ast.Assign) and name in targets:
            return ast.literal_eval(node.value)
    return None


@pytest.mark.parametrize("path", _regressions())
def test_regression(path):
    """A disagreement found once: both checkers now agree with each other and with the truth."""
    outcome = check(load_file(path))
    truth = _constant(path, "TRUTH")
    assert truth in ("race", "out-of-bounds", "race-free"), f"{path.name}: TRUTH = {truth!r}"
    assert not outcome.disagreement, outcome.describe()
    if truth == "race-free":
        assert outcome.detect.status == "verified", outcome.describe()
    else:
        assert outcome.detect.status == truth, outcome.describe()
        assert outcome.verify.status != "verified", outcome.describe()


@settings(max_examples=examples(30), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(case=cases())
def test_reductions_are_python(case):
    """oracle_long.py's minimiser only tries smaller modules that still parse (one statement, an
    ``if`` or an unused helper dropped, a grid axis shrunk)."""
    import ast

    from tests.oracle_minimize import _candidates

    for candidate in _candidates(case.source):
        assert candidate != case.source
        ast.parse(candidate)
