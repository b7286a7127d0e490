"""Launch contracts over the shapes (issue 20): a launch's verdict proved for every shape its
contract admits, checked against the exact detector at other shapes that satisfy the contract, and
at one that breaks it."""

import re

import cuda.tile as ct
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tilecheck
from corpus.kernels.shape_contracts import rows_and_columns as rows
from tests.tiers import examples
from tests.verifier.test_contract import copy_tiles, same_tile
from tilecheck.verifier.contracts import shapes as sc
from tilecheck.verifier.contracts.levels import EVERY_SHAPE_LEVEL

ConstInt = ct.Constant[int]


@ct.kernel
def folded(y, T: ConstInt):
    """Block b writes tile b % 4: race-free only while the grid has at most 4 blocks."""
    b = ct.bid(0)
    ct.store(y, index=(b % 4,), tile=ct.full((T,), 1.0, dtype=ct.float32))


def _launch(kernel, args, grid):
    """A launch's symbol values and index widths, as a contract reads them."""
    from tilecheck.ir.cutile import module_for

    module, _ = module_for(kernel, args)
    return sc.launch_of(module.params, grid)


_verify = tilecheck.verify


def test_term_and_rule_evaluate_and_read_like_host_code():
    t = sc.Term("n", tile=1024)
    assert t.eval({"n": 1500}) == 2 and str(t) == "cdiv(n, 1024)"
    assert sc.Term("n", tile=1024, ceil=False).eval({"n": 1500}) == 1
    product = sc.Term("B", times=sc.Term("H"))
    assert product.eval({"B": 3, "H": 5}) == 15 and str(product) == "B * H"
    rule = sc.Rule(sc.Term("grid[0]"), "<=", t, "grid")
    assert str(rule) == "grid[0] <= cdiv(n, 1024)"
    assert rule.holds({"grid[0]": 2, "n": 1500}) is True
    assert rule.holds({"grid[0]": 3, "n": 1500}) is False
    assert rule.holds({"grid[0]": 3}) is None  # a symbol the launch lacks: not admitted
    divisible = sc.Rule(sc.Term("n"), "%", sc.Term(value=16), "divisible")
    assert str(divisible) == "n % 16 == 0" and divisible.holds({"n": 48}) and not divisible.holds({"n": 50})


def test_elementwise_kernel_is_verified_for_every_shape_with_the_usual_grid():
    x, y = np.ones(64, np.float32), np.zeros(64, np.float32)
    report = _verify(copy_tiles, (x, y, 16), (4, 1, 1))
    assert report.status == "verified" and report.level == EVERY_SHAPE_LEVEL
    c = report.launch_contract
    assert c.proved
    text = str(c)
    assert "grid[1] == 1" in text and "grid[2] == 1" in text  # unread axes
    # blocks past the array load and store nothing (a partition view's out-of-bounds tiles), and
    # the tile index is not arithmetic that could wrap: any extent of axis 0
    assert "grid[0]" not in text, text
    assert "'x' and 'y' indexed below 2**31" in text
    assert "race-free for every shape when" in str(report)
    assert report.to_dict()["launch_contract"]["proved"] is True


@pytest.mark.parametrize("n, grid", [(100, (7, 1, 1)), (17, (2, 1, 1)), (4096, (256, 1, 1))])
def test_launches_the_contract_admits_are_race_free_on_the_detector(n, grid):
    x, y = np.ones(64, np.float32), np.zeros(64, np.float32)
    report = _verify(copy_tiles, (x, y, 16), (4, 1, 1))
    args = (np.ones(n, np.float32), np.zeros(n, np.float32), 16)
    env, widths = _launch(copy_tiles, args, grid)
    assert report.launch_contract.admits(env, widths)
    assert tilecheck.detect(copy_tiles, args, grid).status == "verified"


def test_a_launch_outside_the_contract_can_race():
    x, y = np.ones(64, np.float32), np.zeros(64, np.float32)
    report = _verify(copy_tiles, (x, y, 16), (4, 1, 1))
    env, widths = _launch(copy_tiles, (x, y, 16), (4, 2, 1))  # an unread axis of extent 2
    assert not report.launch_contract.admits(env, widths)
    assert tilecheck.detect(copy_tiles, (x, y, 16), (4, 2, 1)).status == "race"


def test_two_axes_each_get_their_form():
    x, y = np.ones((3, 64), np.float32), np.zeros((3, 64), np.float32)
    report = _verify(rows, (x, y, 16), (3, 4, 1))
    assert report.level == EVERY_SHAPE_LEVEL
    text = str(report.launch_contract)
    assert "grid[2] == 1" in text and "grid[0]" not in text or "shape[0]" in text, text
    args = (np.ones((5, 40), np.float32), np.zeros((5, 40), np.float32), 16)
    env, widths = _launch(rows, args, (5, 3, 1))
    assert report.launch_contract.admits(env, widths)
    assert tilecheck.detect(rows, args, (5, 3, 1)).status == "verified"


def test_a_kernel_racy_only_past_a_grid_size_gets_a_grid_bound():
    y = np.zeros(64, np.float32)
    report = _verify(folded, (y, 16), (4, 1, 1))
    assert report.status == "verified"
    c = report.launch_contract
    # a bound on the grid (the equality with a bound's term where the solver's core names it)
    assert c.proved and re.search(r"grid\[0\] (<=|==) ", str(c)) or not c.proved
    if c.proved:  # whatever bound it states, a launch past 4 blocks is outside it
        env, widths = _launch(folded, (y, 16), (5, 1, 1))
        assert not c.admits(env, widths)
        assert tilecheck.detect(folded, (y, 16), (5, 1, 1)).status == "race"


def test_a_kernel_racy_at_every_shape_has_no_contract_and_says_why():
    y = np.zeros(64, np.float32)
    report = _verify(same_tile, (y, 16), (2, 1, 1))
    assert report.status == "race"
    assert not report.launch_contract.proved
    assert report.launch_contract.breaking is not None
    verified = _verify(same_tile, (y, 16), (1, 1, 1))
    assert verified.status == "verified"
    if verified.level != EVERY_SHAPE_LEVEL:
        assert any(n.startswith("not verified for every shape") for n in verified.notes)


# ---- the corpus pairs, one per contract form (corpus/kernels/shape_contracts.py) -------------------
def _pair_cases():
    from corpus.kernels import grids
    from corpus.kernels import shape_contracts as S

    f32 = np.float32
    return [
        # (kernel, its form in the contract, twin, a launch the kernel's contract admits and the twin's not)
        pytest.param(S.wrap_at_tiles, "grid[0] <= cdiv(", S.wrap_at_six,
                     ((np.ones(160, f32), np.zeros(160, f32), 16), (10, 1, 1)), id="cdiv"),
        pytest.param(S.masked_tiles, "grid[0] <= cdiv(", grids.tiles_unmasked_up_to_cdiv,
                     ((np.ones(100, f32), np.zeros(100, f32), 16), (7, 1, 1)), id="floor"),
        pytest.param(S.batch_heads, ".shape[0] * ", S.batch_heads_mod3,
                     ((np.ones((2, 4, 16), f32), np.zeros((2, 4, 16), f32), 4, 16), (8, 1, 1)), id="product"),
        pytest.param(S.swizzled_tiles, ", 16) * cdiv(", S.swizzled_tiles_wrap2,
                     ((np.ones((48, 48), f32), np.zeros((48, 48), f32), 16, 16), (9, 1, 1)), id="swizzled"),
        pytest.param(S.grid_stride, None, S.stride_four,
                     ((np.ones(96, f32), np.zeros(96, f32), 16), (8, 1, 1)), id="persistent"),
        pytest.param(S.rows_and_columns, "grid[2] == 1", S.rows_first_tile,
                     ((np.ones((4, 64), f32), np.zeros((4, 64), f32), 16), (4, 4, 1)), id="unread-axis"),
    ]


@pytest.mark.parametrize("kernel, form, twin, launch", _pair_cases())
def test_each_contract_form_and_its_narrower_twin(kernel, form, twin, launch):
    contracts = {}
    for k in (kernel, twin):
        case = tilecheck.cases_of(k)[0]
        report = tilecheck.verify(k, case.make_args(), case.grid)
        assert report.status == "verified" and report.level == EVERY_SHAPE_LEVEL, report
        contracts[k] = report.launch_contract
    text = str(contracts[kernel])
    if form is not None:  # the form, or its equality where the solver's core names that
        assert form in text or form.replace("<=", "==") in text, text
    else:  # a grid-stride loop: any extent of axis 0
        assert "grid[0]" not in text, text
    args, grid = launch
    env, widths = _launch(kernel, args, grid)
    assert contracts[kernel].admits(env, widths), text
    assert tilecheck.detect(kernel, args, grid).status == "verified"
    env, widths = _launch(twin, args, grid)
    assert not contracts[twin].admits(env, widths), str(contracts[twin])
    assert tilecheck.detect(twin, args, grid).status in ("race", "out-of-bounds")


def test_other_observed_launches_keep_only_the_rules_they_share():
    x, y = np.ones(64, np.float32), np.zeros(64, np.float32)
    alone = tilecheck.verify(folded, (y, 16), (4, 1, 1))
    # with a launch of another size seen too, a rule that names this launch's values cannot stay
    seen = [((np.zeros(128, np.float32), 16), (4, 1, 1))]
    both = tilecheck.verify(folded, (y, 16), (4, 1, 1), observed=seen)
    assert alone.status == both.status == "verified"
    if both.level == EVERY_SHAPE_LEVEL:
        env, widths = _launch(folded, *seen[0])
        assert both.launch_contract.admits(env, widths), str(both.launch_contract)
    assert "y.shape[0] == 64" not in str(both.launch_contract)


def test_the_search_bounds_each_overflow_claim_by_intervals_once(monkeypatch):
    # the search's levels differ only in their rules, which interval arithmetic does not read: a
    # claim's interval answer (and the level's variable ranges) are computed once per search
    from corpus.kernels.shape_contracts import swizzled_tiles_wrap2
    from tilecheck.verifier.obligations.checker import Checker

    calls, levels = [], []
    real, run = Checker.never_wraps, Checker.run

    def spy(self, value, lo, hi, live):
        if self.level.widths is not None:
            calls.append((id(getattr(self, "memo", None)), str(value), str(live)))
        return real(self, value, lo, hi, live)

    def counted(self):
        if self.level.widths is not None:
            levels.append(self)
        return run(self)

    monkeypatch.setattr(Checker, "never_wraps", spy)
    monkeypatch.setattr(Checker, "run", counted)
    case = tilecheck.cases_of(swizzled_tiles_wrap2)[0]
    report = tilecheck.verify(swizzled_tiles_wrap2, case.make_args(), case.grid)
    assert report.level == EVERY_SHAPE_LEVEL
    assert len(levels) > 1 and calls, "the search ran one level: the test shows nothing"
    assert len(set(calls)) == len(calls), "a claim was bounded again at another level of the search"


def test_the_search_asks_each_tier_once_and_keeps_the_cores_it_found():
    # a stub level: tier 0 (no "fixed" rule) has a defect, the last tier proves with a core of four
    # rules; the search stops there (the cores are not asked again), its contract those four
    from types import SimpleNamespace

    grid = sc._sym("grid[0]")
    used = [sc.Rule(grid, "<=", sc.Term(f"x.shape[{d}]", tile=16), "implied") for d in range(3)]
    unused = sc.Rule(grid, "==", sc.Term("x.shape[0]", tile=16), "implied")
    fixed = sc.Rule(grid, "<=", sc.Term(value=4), "fixed")
    asked = []

    def check(rules, proved, last):
        asked.append(rules)
        assert last == (fixed in rules)
        if fixed not in rules:
            return SimpleNamespace(proved={"a"}, cores=set(), unknowns=[], reads_data=False,
                                   findings=[SimpleNamespace(is_defect=True, kind="write-write", message="m")])
        cores = {f"rule!{rules.index(r)}" for r in [*used, fixed]}
        return SimpleNamespace(proved={"a", "b"}, cores=cores, unknowns=[],
                               reads_data=False, findings=[])

    found = sc.search(check, [*used, unused, fixed], ())
    assert found.contract.proved
    assert set(found.contract.rules) == {*used, fixed}
    assert [len(r) for r in asked] == [4, 5], "a tier was asked again"


def test_a_search_under_more_preconditions_resumes_past_the_tiers_whose_defect_read_no_contents():
    # a stub level: tier 0 has a defect that reads no contents (it stays a defect under facts about
    # them), tier 1 one that does, so the search stops there; resumed under the facts, tier 0 is not
    # asked again, tier 1 is, without what the first search proved, and the proof's rules and the
    # first search's are the contract
    from types import SimpleNamespace

    grid = sc._sym("grid[0]")
    shape = sc.Rule(grid, "<=", sc.Term("x.shape[0]", tile=16), "implied")
    bound = sc.Rule(grid, "<=", sc.Term(value=64), "grid")
    fixed = sc.Rule(grid, "<=", sc.Term(value=4), "fixed")
    asked, facts = [], [False]

    def defect(reads_data, proved=()):
        return SimpleNamespace(proved=set(proved), cores={"rule!0"} if proved else set(), unknowns=[],
                               reads_data=reads_data,
                               findings=[SimpleNamespace(is_defect=True, kind="write-write", message="m")])

    def check(rules, proved, last):
        asked.append((len(rules), facts[0], frozenset(proved)))
        if bound not in rules:
            return defect(False)
        if not facts[0]:
            return defect(True, proved={"bounds"})
        return SimpleNamespace(proved={"across"}, cores={f"rule!{rules.index(bound)}"}, unknowns=[],
                               reads_data=False, findings=[])

    first = sc.search(check, [shape, bound, fixed], (), stop_on_data=True)
    assert not first.contract.proved and first.stopped == (1, frozenset({"bounds"}), frozenset({shape}))
    facts[0] = True
    again = sc.search(check, [shape, bound, fixed], (), resume=first.stopped)
    assert again.contract.proved and set(again.contract.rules) == {shape, bound}
    assert asked == [(1, False, frozenset()), (2, False, frozenset()), (2, True, frozenset({"bounds"}))]
    # a first tier with an undecided query is asked again under the facts (they may decide it)
    asked.clear()
    facts[0] = False
    unknown = SimpleNamespace(proved=set(), cores=set(), unknowns=["u"], reads_data=False, findings=[])
    stopped = sc.search(lambda rules, proved, last: unknown if bound not in rules else check(rules, proved, last),
                        [shape, bound, fixed], (), stop_on_data=True)
    assert stopped.stopped == (0, frozenset({"bounds"}), frozenset({shape}))


def test_after_a_search_without_a_proof_the_given_case_is_next():
    # the search's last tier asked the given shapes for grids up to this one: the given shapes for
    # any grid are asked only for a grid contract (whose box starts from their races)
    from tests.interp import kernels as K

    args = (np.array([3], np.int32), np.zeros(16, np.float32), 4)
    report = tilecheck.verify(K.counted_writes, args, (2, 1, 1))
    assert report.status == "race" and report.launch_contract is not None
    assert report.stats["levels"] == ["the given shapes and grid"]
    report = tilecheck.verify(K.counted_writes, args, (2, 1, 1), contract=True)
    assert report.stats["levels"] == ["the given shapes", "the given shapes and grid"]


def test_the_search_under_the_contents_facts_follows_only_a_defect_that_reads_contents(monkeypatch):
    """A search whose defect needs array contents stops there, and the search under the facts the
    given contents satisfy follows; a defect on a loop-carried value alone (any value at the
    all-shapes level, whatever the contents) is no such defect: the first search goes on through
    its tiers, and no facts about the contents can exclude what it ends with."""
    from corpus.kernels import loops as L
    from tests.verifier import cf_kernels as C

    searches = []
    search = sc.search
    monkeypatch.setattr(sc, "search", lambda check, pool, index32, stop_on_data=False, resume=None:
                        searches.append(stop_on_data) or search(check, pool, index32, stop_on_data, resume))
    x, y = np.ones((4, 16), np.float32), np.zeros((8192, 16), np.float32)
    report = tilecheck.verify(C.counted_rows, (np.array([1, 3, 0, 2], np.int32), x, y, 4, 4), (4, 1, 1))
    assert searches == [True]  # run through every tier, never stopped for contents
    assert (report.status, report.level) == ("verified", "the given shapes and grid"), str(report)
    assert "not verified for every shape: overflow" in report.notes[0]
    searches.clear()
    walk = tilecheck.verify(L.expert_walk, L._experts(), (16, 1, 1))  # its defect reads the sizes
    assert searches == [True, False] and walk.status == "verified"


_LEAVES = st.one_of(st.builds(lambda v: ["lit", v], st.integers(-5, 5)),
                    st.builds(lambda n: ["sym", n], st.sampled_from(["x.shape[0]", "n", "absent"])))
_TREES = st.recursive(_LEAVES, lambda sub: st.one_of(
    st.builds(lambda k, a, b: [k, a, b], st.sampled_from(
        ["add", "mul", "sub", "div", "mod", "le", "lt", "ge", "gt", "eq", "distinct", "and", "or", "implies", "xor"]),
        sub, sub),
    st.builds(lambda k, a: [k, a], st.sampled_from(["and", "or", "not", "uminus"]), sub),
    st.builds(lambda a, b, c: ["ite", a, b, c], sub, sub, sub)), max_leaves=8)


_NAMES = st.sampled_from(["x.shape[0]", "n", "absent"])
_TERMS = st.recursive(st.one_of(st.builds(lambda v: sc.Term(value=v), st.integers(-3, 40)),
                                st.builds(lambda n, t, c: sc.Term(n, tile=t, ceil=c), _NAMES, st.integers(1, 5),
                                          st.booleans())),
                      lambda sub: st.builds(lambda n, t: sc.Term(n, times=t), _NAMES, sub), max_leaves=3)
_RULES = st.builds(lambda a, r, b: sc.Rule(a, r, b, "shape"), _TERMS, st.sampled_from(["==", "<=", "%"]), _TERMS)


@settings(max_examples=examples(400, fast=100), deadline=None, derandomize=True)
@given(rules=st.lists(_RULES, max_size=3), facts=st.lists(_TREES, max_size=3),
       index32=st.lists(st.sampled_from(["x", "y"]), max_size=2, unique=True),
       x=st.integers(-4, 40), n=st.integers(-4, 40), widths=st.dictionaries(st.sampled_from(["x", "y"]),
                                                                            st.sampled_from([32, 64])))
def test_a_contract_admits_a_launch_as_walking_its_rules_and_facts_does(rules, facts, index32, x, n, widths):
    # the generated check (one Python function per contract, what the launcher and the proof cache
    # ask at every launch) against the tree walk it stands for; where the walk fails (a % by zero, an
    # ill-typed tree) the launch is not admitted
    contract = sc.ShapeContract(tuple(rules), tuple(index32), facts=tuple(facts))
    env = {"x.shape[0]": x, "n": n}
    try:
        expected = contract.admits_walked(env, widths)
    except (TypeError, ZeroDivisionError):
        expected = False
    assert contract.admits(env, widths) is expected


def test_a_launch_is_read_as_the_contract_names_it():
    # the grid, each array's shape and strides, the integer scalars (not a bool), and per array its
    # index width: 32 unless a dimension, a stride or the largest offset leaves int32, or a stride is
    # negative
    from tilecheck.ir.cutile import KernelParam

    params = (KernelParam("x", "array", "float32", 2, 0, None, (4, 8), (8, 1)),
              KernelParam("wide", "array", "float32", 1, 5, None, (3,), (2 ** 30,)),
              KernelParam("back", "array", "float32", 1, 8, None, (3,), (-1,)),
              KernelParam("n", "scalar", "int32", 0, 11, 7),
              KernelParam("flag", "scalar", "int32", 0, 12, True))
    env, widths = sc.launch_of(params, (2, 3, 1))
    assert env == {"grid[0]": 2, "grid[1]": 3, "grid[2]": 1, "x.shape[0]": 4, "x.shape[1]": 8,
                   "x.strides[0]": 8, "x.strides[1]": 1, "wide.shape[0]": 3, "wide.strides[0]": 2 ** 30,
                   "back.shape[0]": 3, "back.strides[0]": -1, "n": 7}
    assert widths == {"x": 32, "wide": 64, "back": 64}
