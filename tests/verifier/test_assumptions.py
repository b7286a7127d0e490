"""No vacuous proofs: a case that breaks the kernel's own assume ops is not 'verified'."""
import numpy as np

import tilecheck
from tests.interp import kernels as K


def test_a_reversed_output_breaks_the_stride_assumption_and_is_not_verified():
    x, y = np.arange(64, dtype=np.float32), np.zeros(64, np.float32)
    report = tilecheck.verify(K.xor_partner_halved, (x, y[::-1], 3, 8), (8, 1, 1))
    assert report.status == "unknown"
    (f,) = report.findings
    assert f.kind == "assumption-violated" and not f.is_race
    assert "y.strides[0] = -1" in f.message and f.loc.line
    assert any("break the kernel's own assumptions" in r for r in report.reasons)


def test_the_same_kernel_with_a_forward_output_has_its_race_found():
    x, y = np.arange(64, dtype=np.float32), np.zeros(64, np.float32)
    assert tilecheck.verify(K.xor_partner_halved, (x, y, 3, 8), (8, 1, 1)).status == "race"


def test_index_arithmetic_that_wraps_at_the_given_case_is_an_overflow_finding():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "data" / "oracle" / "index_overflow_wraps.py"
    spec = importlib.util.spec_from_file_location("index_overflow_wraps", path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    report = tilecheck.verify(m.k, m.make_args(), m.GRID, contract=True)
    assert report.status == "unknown"
    (f,) = [f for f in report.findings if f.kind == "overflow"]
    assert "2147483648" in f.message and "(2, 0, 0)" in f.message  # the first block whose product wraps
    # the contract leaves out the blocks whose index wraps (its probes assume it does not)
    assert report.contract.extents == (2, 1, 1) and "wraps around in block (2, 0, 0)" in report.contract.undecided
    assert any("checked at this case" in a for a in report.assumptions)


def _search_tier(rule):
    """A contract search's tier of ``same_tile_same_values``, where every block writes tile 0 of y
    (its footprints, one tracked rule)."""
    from tilecheck.ir.cutile import module_for
    from tilecheck.ir.order import order_graph
    from tilecheck.report import LEVELS
    from tilecheck.verifier.contracts import shapes as shape_contract
    from tilecheck.verifier.solver import smt
    from tilecheck.verifier.contracts.levels import Level
    from tilecheck.verifier.obligations.checker import Checker
    from tilecheck.verifier.model.engine import execute

    x, y = np.arange(64, dtype=np.float32), np.zeros(64, np.float32)
    module, _ = module_for(K.same_tile_same_values, (x, y, 8))
    with smt.own_context():
        fp = execute(module)
        flag = smt.Bool("rule!0")
        level = Level(1, LEVELS[1], None, None, None, None, tracked=(flag,),
                      rules=(smt.Implies(flag, rule(shape_contract.symbols(fp))),))
        return Checker(fp, order_graph(fp.function), [], [], level, stop_early=True, witnesses=False,
                       rlimit=2_000_000).run()


def test_a_search_tier_whose_rules_contradict_the_kernels_assumptions_proves_nothing():
    # the tier's question about its assumptions is asked after its obligations (a model answers it):
    # a rule breaking the stride assumption leaves every query unsatisfiable, so its proofs are dropped
    result = _search_tier(lambda s: s["y.strides[0]"] == -1)
    assert not result.proved and not result.cores and not result.findings
    assert any("cannot all hold" in u for u in result.unknowns)


def test_a_search_tier_with_satisfiable_assumptions_keeps_its_model():
    result = _search_tier(lambda s: s["y.strides[0]"] == 1)
    assert [f.kind for f in result.findings] == ["write-write"] and not result.unknowns


def test_at_the_given_case_assume_facts_on_launch_symbols_are_evaluated_not_asked(monkeypatch):
    # the stride facts name only the launch's symbols: the case's values answer them, no query;
    # a case that breaks one still asks (its finding names the fact the solver singles out)
    from tests.verifier.spies import given_case_questions

    asked = given_case_questions(monkeypatch)
    x, y = np.arange(64, dtype=np.float32), np.zeros(64, np.float32)
    assert tilecheck.verify(K.xor_partner_halved, (x, y, 3, 8), (8, 1, 1)).status == "race"
    assert asked and "the kernel's assumptions" not in asked
    asked.clear()
    assert tilecheck.verify(K.xor_partner_halved, (x, y[::-1], 3, 8), (8, 1, 1)).status == "unknown"
    assert "the kernel's assumptions" in asked
