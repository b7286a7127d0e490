"""Grid contracts (issue 13 item 1): ``report.contract`` is the box of grids under which the kernel is
race-free and in bounds at the given shapes, and the launch just outside it that is not.

The property test compares the inferred extent of axis 0 with brute force: the exact detector run
at every extent up to a bound, on small kernels whose store index is an affine, divided or modular
function of the block id, some of which also read axis 1.
"""

import json

import cuda.tile as ct
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tilecheck
from tests.tiers import examples
from tilecheck.verifier.contracts.levels import CONTRACT_LEVEL

ConstInt = ct.Constant[int]


def verify(*args, **kw):
    """verify with the grid contract search (the default only without a grid), and without the
    contract over the shapes, which supersedes the box when it is proved (test_shape_contract.py)."""
    kw.setdefault("contract", True)
    kw.setdefault("every_shape", False)
    return tilecheck.verify(*args, **kw)


@ct.kernel
def copy_tiles(x, y, T: ConstInt):
    b = ct.bid(0)
    ct.store(y, index=(b,), tile=ct.load(x, index=(b,), shape=(T,)))


@ct.kernel
def wrap_tiles(x, y, T: ConstInt):
    b = ct.bid(0)
    ct.store(y, index=(b % 4,), tile=ct.load(x, index=(b,), shape=(T,)))


@ct.kernel
def same_tile(y, T: ConstInt):
    ct.store(y, index=(0,), tile=ct.full((T,), 1.0, dtype=ct.float32))


@ct.kernel
def affine(y, a: int, c: int, T: ConstInt):
    b = ct.bid(0)
    ct.store(y, index=(b * a + c,), tile=ct.full((T,), 1.0, dtype=ct.float32))


@ct.kernel
def divided(y, d: int, T: ConstInt):
    b = ct.bid(0)
    ct.store(y, index=(b // d,), tile=ct.full((T,), 1.0, dtype=ct.float32))


@ct.kernel
def modular(y, m: int, c: int, T: ConstInt):
    b = ct.bid(0)
    ct.store(y, index=((b + c) % m,), tile=ct.full((T,), 1.0, dtype=ct.float32))


@ct.kernel
def two_axes(y, d: int, T: ConstInt):
    b = ct.bid(0)
    r = ct.bid(1)
    ct.store(y, index=(r, b // d), tile=ct.full((1, T), 1.0, dtype=ct.float32))


def _arrays():
    return np.ones(64, np.float32), np.zeros(64, np.float32)


def test_unread_axes_must_be_one_and_read_axis_is_unbounded():
    report = verify(copy_tiles, (*_arrays(), 16), (4, 1, 1))
    assert report.status == "verified"
    c = report.contract
    assert c.reads == (True, False, False)
    # blocks past the array are masked (view bounds checks): any extent of axis 0
    assert c.extents == (None, 1, 1)
    assert c.breaking.witness.grid == (1, 2, 1)
    assert str(c).startswith("race-free for grids (any, 1, 1) (the kernel does not read axes 1 and 2); "
                             "grid (1, 2, 1) races: blocks (0, 0, 0) and (0, 1, 0) both write y[")
    assert "contract: race-free for grids (any, 1, 1)" in str(report)
    assert not any("more general level" in n for n in report.notes)


def test_bounded_axis_names_the_first_breaking_launch():
    report = verify(wrap_tiles, (*_arrays(), 16), (4, 1, 1))
    assert report.status == "verified"
    assert report.contract.extents == (4, 1, 1)
    assert report.contract.breaking.witness.grid == (5, 1, 1)
    assert "grid (5, 1, 1) races: blocks (0, 0, 0) and (4, 0, 0) both write y[" in str(report.contract)
    replay = tilecheck.replay(report.contract.breaking)  # the breaking launch is a confirmed witness
    assert replay.error is None and replay.reproduced
    data = json.loads(report.to_json())["contract"]
    assert data["extents"] == [4, 1, 1] and data["breaking_grid"] == [5, 1, 1]


def test_no_grid_answers_with_the_contract():
    report = verify(wrap_tiles, (*_arrays(), 16))
    assert report.status == "verified"
    assert report.level == CONTRACT_LEVEL
    assert report.contract.extents == (4, 1, 1)
    assert not report.races


def test_no_grid_racing_on_every_multi_block_launch_is_a_race():
    report = verify(same_tile, (np.zeros(64, np.float32), 16))
    assert report.status == "race"
    assert report.contract.extents == (1, 1, 1)
    assert report.contract.breaking is not None


def test_given_racing_grid_has_no_contract_search():
    report = verify(wrap_tiles, (*_arrays(), 16), (8, 1, 1))
    assert report.status == "race"
    assert report.contract is None


def test_race_free_kernel_for_every_grid_has_no_contract():
    """A kernel that is race-free for every grid at the given shapes needs no contract (None)."""
    report = verify(affine, (np.zeros(64, np.float32), 1, 0, 16), (4, 1, 1))
    assert report.status == "verified"
    assert report.contract is None or report.contract.extents == (None, 1, 1)


# ---- property: the inferred extent of axis 0 against brute force ------------------------------
LIMIT = 10  # brute force runs extents 1..LIMIT of axis 0


def _racy(kernel, args, grid) -> bool:
    report = tilecheck.detect(kernel, args, grid)
    assert report.status in ("verified", "race", "out-of-bounds"), report.reasons
    return report.status != "verified"


cases = st.one_of(
    st.tuples(st.just("affine"), st.integers(0, 2), st.integers(0, 3)),
    st.tuples(st.just("divided"), st.integers(1, 4), st.just(0)),
    st.tuples(st.just("modular"), st.integers(1, 6), st.integers(0, 3)),
    st.tuples(st.just("two_axes"), st.integers(1, 3), st.integers(1, 2)),
)


@settings(max_examples=examples(25), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(case=cases, tiles=st.integers(2, 6))
def test_inferred_extent_matches_brute_force(case, tiles):
    name, p, q = case
    y = np.zeros(tiles * 4, np.float32)
    if name == "affine":
        kernel, args, rows = affine, (y, p, q, 4), 1
    elif name == "divided":
        kernel, args, rows = divided, (y, p, 4), 1
    elif name == "modular":
        kernel, args, rows = modular, (y, p, q, 4), 1
    else:
        kernel, args, rows = two_axes, (np.zeros((2, tiles * 4), np.float32), p, 4), q
    report = verify(kernel, args, (1, rows, 1))
    assert report.status == "verified", str(report)
    extent = report.contract.extents[0] if report.contract is not None else None
    if extent is None:
        assert not any(_racy(kernel, args, (g, rows, 1)) for g in range(1, LIMIT + 1))
        return
    assert not any(_racy(kernel, args, (g, rows, 1)) for g in range(1, min(extent, LIMIT) + 1))
    if report.contract.undecided is None and extent < LIMIT:  # a box cut by a wrap-around is not tight
        assert _racy(kernel, args, (extent + 1, rows, 1))
        assert report.contract.breaking.witness.grid[0] in (extent + 1, 1)


def test_contract_is_reproducible():
    first = verify(wrap_tiles, (*_arrays(), 16), (4, 1, 1))
    second = verify(wrap_tiles, (*_arrays(), 16), (4, 1, 1))
    assert str(first.contract) == str(second.contract)


@pytest.mark.parametrize("rows", [1, 2])
def test_two_axes_contract(rows):
    report = verify(two_axes, (np.zeros((2, 16), np.float32), 1, 4), (2, rows, 1))
    assert report.status == "verified"
    assert report.contract.reads == (True, True, False)
    # rows and tiles past the array are masked: both read axes are unbounded, axis 2 must be 1
    assert report.contract.extents == (None, None, 1)
    assert report.contract.breaking.witness.grid == (1, 1, 2)


def test_cli_prints_the_contract_and_json_carries_it(tmp_path, capsys):
    from tilecheck.cli import main

    path = tmp_path / "k.py"
    path.write_text(
        "import cuda.tile as ct\nimport numpy as np\nimport tilecheck\n\n"
        "@tilecheck.case(grid=(4, 1, 1), args=lambda: (np.ones(64, np.float32), np.zeros(64, np.float32), 16))\n"
        "@ct.kernel\n"
        "def wrap(x, y, T: ct.Constant[int]):\n"
        "    b = ct.bid(0)\n"
        "    ct.store(y, index=(b % 4,), tile=ct.load(x, index=(b,), shape=(T,)))\n")
    # the contract over the shapes supersedes the grid box: with y of 64 elements, 4 blocks
    assert main(["verify", str(path), "-j", "1"]) == 0
    out = capsys.readouterr().out
    assert "race-free for every shape when" in out and ("grid[0] <= " in out or "grid[0] == " in out), out
    assert main(["verify", str(path), "-j", "1", "--format", "json"]) == 0
    result = json.loads(capsys.readouterr().out)["results"][0]
    contract = result["launch_contract"]
    assert contract["proved"] and any(r.startswith(("grid[0] <= ", "grid[0] == ")) for r in contract["rules"])
    assert {"y.shape[0] == 64", "x.shape[0] == 64", "grid[0] <= 4"} & set(contract["rules"]), contract


def test_a_box_whose_index_arithmetic_wraps_is_cut_before_the_wrap():
    report = verify(affine, (np.zeros(64, np.float32), 1 << 30, 0, 16), (1, 1, 1))
    assert report.status == "verified"
    # b * 2**30 wraps in i32 from block 2 on: the box stops there, and says why
    assert report.contract.extents[0] == 2
    assert "wraps around" in report.contract.undecided
    assert not _racy(affine, (np.zeros(64, np.float32), 1 << 30, 0, 16), (2, 1, 1))


def test_the_corpus_grid_contract_pairs():
    from corpus.kernels import grids

    for kernel, extents, breaking in ((grids.row_copy_ignores_bid1, (None, 1, 1), (1, 2, 1)),
                                      (grids.tiles_unmasked_up_to_cdiv, (4, 1, 1), (5, 1, 1))):
        inside, outside = tilecheck.cases_of(kernel)
        report = verify(kernel, inside.make_args(), inside.grid)
        assert report.status == "verified" and report.contract.extents == extents
        assert report.contract.breaking.witness.grid == breaking
        assert verify(kernel, outside.make_args(), outside.grid).failed


def test_the_contract_is_searched_by_default_only_without_a_grid():
    plain = tilecheck.verify(wrap_tiles, (*_arrays(), 16), (4, 1, 1), every_shape=False)
    assert plain.contract is None
    assert any("contract=True" in n for n in plain.notes)
    assert tilecheck.verify(wrap_tiles, (*_arrays(), 16)).contract is not None


@ct.kernel
def clamped_tiles(x, y, n: int, T: ConstInt):
    # blocks past cdiv(n, T) clamp to the last tile: a race with the block that owns it
    b = ct.bid(0)
    t = ct.minimum(b, ct.cdiv(n, T) - 1)
    ct.store(y, index=(t,), tile=ct.load(x, index=(t,), shape=(T,)))


def test_the_contract_in_its_symbolic_form_holds_for_every_shape():
    args = (np.ones(60, np.float32), np.zeros(60, np.float32), 60, 16)
    report = tilecheck.verify(clamped_tiles, args)
    assert report.contract.extents == (4, 1, 1)
    # proved at the all-shapes level: the bound over the scalar, not only the box at n = 60
    assert report.contract.symbolic == "grid[0] <= cdiv(n, 16) and grid[1] == 1 and grid[2] == 1"
    assert "for every shape: race-free when grid[0] <= cdiv(n, 16)" in str(report.contract)
    # and it is right at other shapes: brute force on the launch just inside and just outside it
    for n in (17, 33, 100):
        other = (np.ones(n, np.float32), np.zeros(n, np.float32), n, 16)
        blocks = -(-n // 16)
        assert tilecheck.detect(clamped_tiles, other, (blocks, 1, 1)).status == "verified"
        assert tilecheck.detect(clamped_tiles, other, (blocks + 1, 1, 1)).status == "race"


def test_unmasked_tiles_get_the_rounded_down_form():
    from corpus.kernels import grids

    case = tilecheck.cases_of(grids.tiles_unmasked_up_to_cdiv)[0]
    report = tilecheck.verify(grids.tiles_unmasked_up_to_cdiv, case.make_args())
    # a partial last tile would run past the arrays: cdiv is not the bound, floor division is
    assert report.contract.symbolic.startswith("grid[0] <= x.shape[0] // 16 and grid[0] <= y.shape[0] // 16")
