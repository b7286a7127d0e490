"""Proofs that span constants (issue 51): the kernel's integer literals lifted into entry arguments
(``tilecheck/ir/lifting.py``), the proof cache keyed by the lifted program, a proof over the literals
paid when only they kept a stored contract from deciding a launch; and the program digest that reads
as the model reads (entry names, float casts and values no obligation reads left out)."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tilecheck
from tests.tiers import examples
from tests.verifier import constant_kernels as C
from tilecheck.ir.cutile import module_for
from tilecheck.ir.identity import access_digest
from tilecheck.ir.lifting import lifted
from tilecheck.verifier.contracts import shapes as sc


def _capped(k: int, grid: int = 8) -> tuple[tuple, tuple[int, int, int]]:
    x = np.ones((grid, 16), np.float32)
    return (x, np.zeros((max(k, grid) + 1, 16), np.float32), k), (grid, 1, 1)


# ---- the lifted program ---------------------------------------------------------------------------
def test_a_constant_that_guards_a_store_is_lifted_and_one_that_shapes_tiles_is_not():
    x, y = np.ones(64, np.float32), np.zeros(64, np.float32)
    a, b = module_for(C.guarded_copy, (x, y, 64, 16))[0], module_for(C.guarded_copy, (x, y, 48, 16))[0]
    la, lb = lifted(a), lifted(b)
    assert la.literals == (("N", 64),) and lb.literals == (("N", 48),)  # TILE = 16 is a tile extent
    assert access_digest(a) != access_digest(b)
    assert access_digest(la.module) == access_digest(lb.module)
    extra = la.module.params[len(a.params):]
    assert [(p.name, p.kind, p.value, p.first_arg) for p in extra] == [("N", "scalar", 64, len(a.entry.args))]
    assert len(la.module.entry.args) == len(a.entry.args) + 1
    assert not any(op.name == "constant" and op.attrs["value"].values == (64,) for op in la.module.entry.walk())


def test_a_loop_step_stays_a_literal():
    a = module_for(C.stepped_rows, (np.ones((4, 64), np.float32), np.zeros((4, 64), np.float32), 4))[0]
    found = lifted(a)
    assert found is not None and [v for _, v in found.literals] == [64]  # the bound, not the step 4


def test_the_lifted_program_is_made_once_per_specialisation():
    args = (np.ones(64, np.float32), np.zeros(64, np.float32), 64, 16)
    a = module_for(C.guarded_copy, args)[0]
    assert lifted(a).module.functions is lifted(a).module.functions


# ---- reuse ----------------------------------------------------------------------------------------
def test_a_proof_over_the_constant_is_paid_once_then_decides_other_values(tmp_path):
    def ask(n: int, cache) -> tilecheck.Report:
        x, y = np.ones(n, np.float32), np.zeros(n, np.float32)
        return tilecheck.verify(C.guarded_copy, (x, y, n, 64), (n // 64, 1, 1), cache=cache)

    first = ask(256, tmp_path)
    assert first.status == "verified" and first.stats.get("cache") is None
    assert sc.held_literals(first.launch_contract)  # proved as compiled: N held at 256 ...
    assert "N" not in str(first.launch_contract)  # ... which the contract's text leaves unsaid
    second = ask(512, tmp_path)  # only the literal kept the stored contract from deciding it
    assert second.status == "verified" and second.stats.get("cache") is None
    assert not sc.held_literals(second.launch_contract) and "N ==" in str(second.launch_contract)
    for n in (1024, 2048):
        again = ask(n, tmp_path)
        assert (again.status, again.stats.get("cache")) == ("verified", "hit")
        assert ask(n, False).status == "verified"


def test_a_constant_whose_value_decides_the_race_is_proved_over_its_range(tmp_path):
    # the pair of the corpus (capped_rows): K >= grid - 1 is race-free, a smaller K races
    verdicts = []
    for k in (7, 9, 12, 3, 20, 6):
        args, grid = _capped(k)
        reused = tilecheck.verify(C.capped_rows, args, grid, cache=tmp_path)
        fresh = tilecheck.verify(C.capped_rows, args, grid, cache=False)
        assert reused.status == fresh.status, (k, str(reused), str(fresh))
        verdicts.append((k, reused.status, reused.stats.get("cache")))
    assert verdicts == [(7, "verified", None), (9, "verified", None), (12, "verified", "hit"), (3, "race", None),
                        (20, "verified", "hit"), (6, "race", None)]
    args, grid = _capped(12)
    report = tilecheck.verify(C.capped_rows, args, grid, cache=tmp_path)
    assert "9 <= K" in str(report.launch_contract)  # the range of K proved, not K's value


def test_the_launchers_memo_decides_by_the_lifted_program(tmp_path, monkeypatch):
    from tilecheck.runtime.launcher import verified_report

    monkeypatch.setenv("TILECHECK_CACHE_DIR", str(tmp_path / "cache"))
    for k, status in ((7, "verified"), (9, "verified"), (12, "verified"), (3, "race")):
        args, grid = _capped(k)
        report = verified_report(module_for(C.capped_rows, args)[0], args, grid, ())
        assert report.status == status, (k, str(report))


def test_a_stored_kernel_entry_says_its_literals(tmp_path):
    from tilecheck.verifier.reuse import proof_cache

    args, grid = _capped(9)
    tilecheck.verify(C.capped_rows, args, grid, cache=tmp_path)
    entries = list((tmp_path / "kernels").glob("*/*.json"))
    assert entries
    store = proof_cache.ProofCache(tmp_path)
    found = [store.kernel(e.stem, "capped_rows") for e in entries]
    assert [["K", 9]] in [f["literals"] for f in found if f is not None]


# ---- the property: reuse over constants says no more than a fresh proof ---------------------------
_FORMS = ["ct.minimum(b, K)", "b + K", "ct.maximum(b, K) - K", "b * K", "(b + K) - 5", "ct.minimum(b + 1, K) - 1"]
_GUARDS = ["", "if b < K:", "if b + K < 12:"]


@st.composite
def _constant_kernels(draw):
    form, guard = draw(st.sampled_from(_FORMS)), draw(st.sampled_from(_GUARDS))
    body = f"    ct.store(y, index=({form}, 0), tile=t)"
    if guard:
        body = f"    {guard}\n    " + body
    source = ("import cuda.tile as ct\n\n\n@ct.kernel\ndef k(x, y, K: ct.Constant[int]):\n"
              "    b = ct.bid(0)\n    t = ct.load(x, index=(b, 0), shape=(1, 16))\n" + body + "\n")
    launches = draw(st.lists(st.tuples(st.integers(2, 14), st.integers(2, 9)), min_size=2, max_size=5))
    return source, launches


@settings(max_examples=examples(40, fast=3), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(case=_constant_kernels())
def test_a_verdict_reused_across_constants_says_no_more_than_a_fresh_proof(case, tmp_path_factory):
    from tests.verifier.generated import load_kernel

    source, launches = case
    folder = tmp_path_factory.mktemp("constants")
    kernel = load_kernel(source, folder)
    for k, g in launches:
        x = np.ones((g, 16), np.float32)
        # y large enough for every form but b * K: that one may be out of bounds, a defect too
        y = np.zeros((g + k + 2, 16), np.float32)
        reused = tilecheck.verify(kernel, (x, y, k), (g, 1, 1), cache=folder / "cache")
        fresh = tilecheck.verify(kernel, (x, y, k), (g, 1, 1), cache=False)
        assert reused.status == fresh.status or (
            reused.status == "verified" and reused.stats.get("cache") == "hit" and fresh.status == "unknown"), \
            f"{source}\nK={k} grid={g}: reused {reused}\n--- fresh {fresh}"
        if reused.status == "verified":
            exact = tilecheck.detect(kernel, (x, y, k), (g, 1, 1))
            assert exact.status not in ("race", "out-of-bounds"), f"{source}\nK={k} grid={g}: {exact}"


@pytest.mark.parametrize("rules, shown", [
    ((sc.Rule(sc.Term(value=9), "<=", sc.Term("K"), "fixed"), sc.Rule(sc.Term("K"), "<=", sc.Term(value=9), "fixed")),
     ["K == 9"]),
    ((sc.Rule(sc.Term(value=9), "<=", sc.Term("K"), "fixed"),), ["9 <= K"]),
    ((sc.Rule(sc.Term("a"), "<=", sc.Term("b"), "shape"), sc.Rule(sc.Term("b"), "<=", sc.Term("a"), "shape")),
     ["a <= b", "b <= a"]),
])
def test_two_bounds_that_meet_are_one_equality(rules, shown):
    assert sorted(map(str, sc._simplest(rules))) == sorted(shown)


def test_the_lifted_literals_names_are_part_of_the_program():
    # a contract names the literals: two specialisations that name them otherwise (here N's literal,
    # when M has N's value too) are two programs to the cache, never one whose names point at other
    # positions. (cuTile folds M + 4 into one literal, named where it is written.)
    x, y = np.ones(64, np.float32), np.zeros(64, np.float32)
    a = lifted(module_for(C.two_guards, (x, y, 40, 24))[0])
    b = lifted(module_for(C.two_guards, (x, y, 40, 40))[0])
    c = lifted(module_for(C.two_guards, (x, y, 56, 8))[0])
    assert [n for n, _ in a.literals] == ["N", "const@constant_kernels.py:57:20"] == [n for n, _ in c.literals]
    assert [v for _, v in a.literals] == [40, 28]
    assert b.literals[0][0] != "N"  # 40 is both N's and M's value
    assert access_digest(a.module) != access_digest(b.module)
    assert access_digest(a.module) == access_digest(c.module)


def test_launches_observed_with_other_constants_widen_the_range(tmp_path):
    # launches of other specialisations of the same lifted program count as launches of it: the
    # values of K seen (7, 9, 12) bound the range, so a proof that needs K >= 7 keeps 7 <= K
    cases = [_capped(k) for k in (7, 9, 12)]
    tilecheck.verify(C.capped_rows, *cases[0], cache=tmp_path)
    report = tilecheck.verify(C.capped_rows, *cases[1], cache=tmp_path, observed=[cases[0], cases[2]])
    assert report.status == "verified" and "7 <= K" in str(report.launch_contract)
    args, grid = _capped(6)
    assert tilecheck.verify(C.capped_rows, args, grid, cache=tmp_path).status == "race"
