"""Preconditions that live with the kernel: ``@tilecheck.requires`` and ``[tool.tilecheck.assume]``,
honoured by verify, detect and tilecheck.launch."""
import warnings

import cuda.tile as ct
import numpy as np
import pytest

import tilecheck
from tilecheck.requirements import configured, requirements
from tilecheck.runtime import LaunchWarning, RaceError

ConstInt = ct.Constant[int]
GRID = (4, 1, 1)
DISTINCT = "'idx' holds no duplicate values (precondition)"


def _args(idx=None):
    idx = np.random.default_rng(0).permutation(64).astype(np.int32) if idx is None else idx
    return np.ones((64, 32), np.float32), idx, np.zeros((64, 32), np.float32), 16, 32


# The same scatter through idx three times: without a precondition, with it above @ct.kernel,
# and with it below.
@ct.kernel
def scatter_plain(x, idx, out, TM: ConstInt, TD: ConstInt):
    b = ct.bid(0)
    dst = ct.gather(idx, b * TM + ct.arange(TM, dtype=ct.int32))
    cols = ct.arange(TD, dtype=ct.int32)
    ct.scatter(out, (dst[:, None], cols[None, :]), ct.load(x, index=(b, 0), shape=(TM, TD)))


@tilecheck.requires(tilecheck.distinct("idx"))
@ct.kernel
def scatter_above(x, idx, out, TM: ConstInt, TD: ConstInt):
    b = ct.bid(0)
    dst = ct.gather(idx, b * TM + ct.arange(TM, dtype=ct.int32))
    cols = ct.arange(TD, dtype=ct.int32)
    ct.scatter(out, (dst[:, None], cols[None, :]), ct.load(x, index=(b, 0), shape=(TM, TD)))


@ct.kernel
@tilecheck.requires(tilecheck.distinct("idx"))
def scatter_below(x, idx, out, TM: ConstInt, TD: ConstInt):
    b = ct.bid(0)
    dst = ct.gather(idx, b * TM + ct.arange(TM, dtype=ct.int32))
    cols = ct.arange(TD, dtype=ct.int32)
    ct.scatter(out, (dst[:, None], cols[None, :]), ct.load(x, index=(b, 0), shape=(TM, TD)))


def test_verify_assumes_the_kernels_own_precondition():
    required = tilecheck.verify(scatter_above, _args(), GRID)
    assert required.status == "verified", required
    assert DISTINCT in required.assumptions
    # without it, verified for every shape only for contents like this launch's (distinct), which
    # the contract then names, and which it checks at each launch
    plain = tilecheck.verify(scatter_plain, _args(), GRID)
    assert plain.status != "verified" or plain.level != required.level or \
        "'idx' holds no duplicate values" in str(plain.launch_contract), plain
    # the kernel states it: its contract does not take it from the launch's data again
    assert not any(p == tilecheck.distinct("idx") for p in required.launch_contract.contents)
    dup = _args()
    dup[1][1] = dup[1][0]  # a launch whose contents break it is not admitted
    from tilecheck.ir.cutile import module_for
    from tilecheck.verifier.contracts import shapes as sc
    from tilecheck.verifier.obligations.arguments import given_integer_arrays

    module, _ = module_for(scatter_plain, dup)
    env, widths = sc.launch_of(module.params, GRID)
    if plain.launch_contract is not None and plain.launch_contract.proved:
        assert not plain.launch_contract.admits(env, widths, given_integer_arrays(module.params, dup))
    # stated twice (decorator and assume=): assumed and listed once
    again = tilecheck.verify(scatter_above, _args(), GRID, assume=[tilecheck.distinct("idx")])
    assert again.status == "verified" and again.assumptions.count(DISTINCT) == 1


@pytest.mark.parametrize("kernel", [scatter_above, scatter_below], ids=["above", "below"])
def test_the_decorator_works_above_and_below_ct_kernel(kernel):
    assert isinstance(kernel, ct.kernel)
    assert requirements(kernel) == (tilecheck.distinct("idx"),)
    report = tilecheck.verify(kernel, _args(), GRID)
    assert report.status == "verified" and DISTINCT in report.assumptions


def test_a_given_case_that_breaks_the_kernels_precondition_is_a_finding():
    idx = np.arange(64, dtype=np.int32)
    idx[17] = 3
    report = tilecheck.verify(scatter_below, _args(idx), GRID)
    (broken,) = [f for f in report.findings if f.kind == "assumption-violated"]
    assert "value 3 appears at flat positions 3 and 17" in broken.message
    assert report.status == "race"


def test_detect_lists_the_kernels_precondition_and_checks_it():
    assert DISTINCT in tilecheck.detect(scatter_above, _args(), GRID).assumptions
    assert DISTINCT not in tilecheck.detect(scatter_plain, _args(), GRID).assumptions
    idx = np.arange(64, dtype=np.int32)
    idx[40] = 1
    found = tilecheck.detect(scatter_above, _args(idx), GRID)
    assert found.status == "race"
    broken = "violates its precondition: value 1 appears at flat positions 1 and 40"
    assert any(broken in n for n in found.notes)


def test_stacked_decorators_keep_source_order():
    @tilecheck.requires(tilecheck.bounded("idx", 0, 63))
    @ct.kernel
    @tilecheck.requires(tilecheck.distinct("idx"), tilecheck.bounded("idx", 0, 63))
    @tilecheck.requires(tilecheck.nondecreasing("idx"))
    def k(x, idx, out, TM: ConstInt, TD: ConstInt):
        ct.bid(0)

    assert requirements(k) == (tilecheck.bounded("idx", 0, 63), tilecheck.distinct("idx"),
                               tilecheck.nondecreasing("idx"))
    assert requirements(scatter_plain) == ()


def test_the_decorator_takes_only_preconditions():
    for bad in ("idx", None, ["distinct:idx"]):
        with pytest.raises(tilecheck.TilecheckError, match="takes preconditions such as"):
            tilecheck.requires(bad)
    with pytest.raises(tilecheck.TilecheckError, match="with parentheses"):
        tilecheck.requires(scatter_plain)  # @tilecheck.requires without (...)
    with pytest.raises(tilecheck.TilecheckError, match="not a cuTile kernel"):
        tilecheck.requires(tilecheck.distinct("idx"))(42)


def test_the_configured_table_adds_to_the_kernels_own():
    table = {"scatter_plain": ["distinct:idx:64"], "scatter_above": ["bounded:idx:0:63", "distinct:idx"]}
    assert configured(scatter_plain, table) == (tilecheck.distinct("idx", below=64),)
    assert configured(scatter_above, table) == (tilecheck.distinct("idx"), tilecheck.bounded("idx", 0, 63))
    assert configured(scatter_below, {}) == (tilecheck.distinct("idx"),)
    with pytest.raises(tilecheck.TilecheckError, match="unknown precondition 'distinct'"):
        configured(scatter_plain, {"scatter_plain": ["distinct"]})


def _launch_warnings(kernel, args):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", LaunchWarning)
        tilecheck.launch(GRID, kernel, args)
    return [w for w in caught if issubclass(w.category, LaunchWarning)]


def _duplicate():
    idx = np.arange(64, dtype=np.int32)
    idx[40] = 1
    return idx


def test_launch_honours_the_decorator_and_the_pyproject_table(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no pyproject.toml here or above naming these kernels
    args = _args()
    assert _launch_warnings(scatter_above, args) == []  # verified statically, under its precondition
    assert (args[2] == 1).all()
    # a launch whose idx repeats races whatever is assumed; its report says what was
    with pytest.raises(RaceError) as plain:
        tilecheck.launch(GRID, scatter_plain, _args(_duplicate()))
    assert DISTINCT not in plain.value.report.assumptions
    (tmp_path / "pyproject.toml").write_text('[tool.tilecheck.assume]\nscatter_plain = ["distinct:idx"]\n')
    sub = tmp_path / "sub"
    sub.mkdir()
    monkeypatch.chdir(sub)  # the table of the pyproject.toml above the working directory
    with pytest.raises(RaceError) as configured_:
        tilecheck.launch(GRID, scatter_plain, _args(_duplicate()))
    assert DISTINCT in configured_.value.report.assumptions
    assert any("violates its precondition" in n for n in configured_.value.report.notes)
    assert _launch_warnings(scatter_plain, _args()) == []


def test_a_launch_checks_the_preconditions_on_each_launchs_contents():
    args = _args()
    tilecheck.launch(GRID, scatter_below, args)  # verified under distinct(idx), cached for these arrays
    args[1][40] = args[1][1]  # the same arrays, refilled: idx now repeats
    with pytest.raises(RaceError):
        tilecheck.launch(GRID, scatter_below, args)
    args[1][40] = _missing(args[1])
    tilecheck.launch(GRID, scatter_below, args)  # distinct again


def _missing(idx):
    """The value in 0..63 that ``idx`` lacks (it has one duplicate)."""
    return int(np.setdiff1d(np.arange(64), idx)[0])
