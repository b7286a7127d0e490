"""Runs that only ask what memory blocks touch (the exact detector, a witness's confirmation) skip
the values that decide nothing (``ir.deciding``)."""
import numpy as np
from hypothesis import HealthCheck, given, settings

import tilecheck
from corpus.kernels import elementwise as E
from tilecheck.interp import ops as _ops  # noqa: F401  (registers the rules)
from tilecheck.interp.registry import RULES

from tests.oracle_kernels import cases
from tests.oracle_relation import load
from tests.tiers import examples

from ..runtime.test_budget import add_in_place


def test_the_detector_and_confirmation_runs_skip_what_decides_nothing(monkeypatch):
    """A run that asks only where blocks read and write skips the pure ops whose values decide no
    address, branch or value read back (``ir.deciding``): vector_add's sum goes to a write-only
    array. A launch computes it, and an in-place sum (read back) is computed by the detector too."""
    added = []
    real = RULES["addf"]
    monkeypatch.setitem(RULES, "addf", lambda *a: added.append(1) or real(*a))
    a, b, c = np.arange(64, dtype=np.float32), np.ones(64, np.float32), np.zeros(64, np.float32)
    assert tilecheck.detect(E.vector_add, (a, b, c, 16), (4, 1, 1)).status == "verified"
    assert not added
    tilecheck.launch((4, 1, 1), E.vector_add, (a, b, c, 16))
    assert added and (c == a + 1).all()
    added.clear()
    assert tilecheck.detect(add_in_place, (a, b, 16), (4, 1, 1)).status == "verified"
    assert added


@settings(max_examples=examples(40), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(case=cases())
def test_skipping_what_decides_nothing_changes_no_detector_verdict(case, tmp_path_factory, monkeypatch):
    """On the oracle's generated kernels (index arrays, in-place updates, atomics, locks, loops):
    the detector's status and findings are the same whether or not it skips what decides nothing."""
    import tilecheck.ir.deciding as deciding

    loaded = load(case, tmp_path_factory.mktemp("deciding"))
    kernel, args, grid = loaded.kernel, loaded.args, loaded.grid
    skipping = tilecheck.detect(kernel, args, grid, assume=loaded.assume)
    with monkeypatch.context() as m:
        m.setattr(deciding, "skippable", lambda function: frozenset())
        full = tilecheck.detect(kernel, args, grid, assume=loaded.assume)
    assert skipping.status == full.status, f"{case.source}\n{skipping}\n{full}"
    assert [(f.kind, f.loc, f.related_locs) for f in skipping.findings] == \
        [(f.kind, f.loc, f.related_locs) for f in full.findings], case.source
