"""Lists of arrays as kernel arguments (cuTile's ListConstraint, TileGym's group GEMM): the frontend,
the interpreter (the in-memory table cuTile reads each array's pointer, shape and strides from),
launch, detect, the aliasing check and what the static verifier says."""
import cuda.tile as ct
import numpy as np
import pytest

import tilecheck
from tilecheck.interp.memory import ArgumentError
from tilecheck.ir import FrontendError
from tilecheck.ir.cutile import compile_kernel


@ct.kernel
def scale_each(As, Cs, T: ct.Constant[int]):
    b = ct.bid(0)
    for g in range(len(As)):
        t = ct.load(As[g], index=(b, 0), shape=(1, T), padding_mode=ct.PaddingMode.ZERO)
        ct.store(Cs[g], index=(b, 0), tile=t * (g + 1))


@ct.kernel
def scale_each_racy(As, Cs, T: ct.Constant[int]):
    b = ct.bid(0)
    for g in range(len(As)):
        t = ct.load(As[g], index=(b, 0), shape=(1, T), padding_mode=ct.PaddingMode.ZERO)
        ct.store(Cs[g], index=(b // 2, 0), tile=t)  # two blocks, one row


@ct.kernel
def by_block(As, out, T: ct.Constant[int]):
    # the list index depends on the block: blocks running together read different arrays
    b = ct.bid(0)
    ct.store(out, index=(b,), tile=ct.load(As[b], index=(0,), shape=(T,)))


def _lists(rows=(4, 6, 5), cols=16):
    As = [np.arange(r * cols, dtype=np.float32).reshape(r, cols) + 100 * i for i, r in enumerate(rows)]
    Cs = [np.zeros((r, cols), np.float32) for r in rows]
    return As, Cs


def test_the_frontend_maps_a_list_to_cutiles_table_and_length():
    As, Cs = _lists()
    compiled = compile_kernel(scale_each, (As, Cs, 16))
    a, c, t = compiled.params
    assert (a.kind, a.dtype, a.ndim, a.shape, a.num_args) == ("list", "float32", 2, (3,), 2)
    assert a.items == (((4, 16), (16, 1)), ((6, 16), (16, 1)), ((5, 16), (16, 1)))
    assert (c.first_arg, t.kind) == (2, "constant")
    entry = compiled.module.entry
    assert [str(v.type) for v in entry.args] == ["tile<ptr<i64>>", "tile<i32>"] * 2


def test_launch_runs_every_array_of_the_lists():
    As, Cs = _lists()
    tilecheck.launch((6, 1, 1), scale_each, (As, Cs, 16))
    for g, (a, c) in enumerate(zip(As, Cs)):
        np.testing.assert_array_equal(c, a * (g + 1))


def test_strided_arrays_in_a_list():
    As, Cs = _lists()
    wide = [np.zeros((a.shape[0], 32), np.float32) for a in As]
    Cs = [w[:, ::2] for w in wide]  # stride 2 in the last dimension
    tilecheck.launch((6, 1, 1), scale_each, (As, Cs, 16))
    for g, (a, w) in enumerate(zip(As, wide)):
        np.testing.assert_array_equal(w[:, ::2], a * (g + 1))
        assert not w[:, 1::2].any()


def test_detect_finds_a_race_on_a_list_element_and_launch_refuses_it():
    As, Cs = _lists()
    report = tilecheck.detect(scale_each_racy, (As, Cs, 16), (6, 1, 1))
    assert report.status == "race"
    finding = next(f for f in report.findings if f.is_defect)
    assert finding.witness.array == "Cs[0]" and finding.kind == "write-write"
    with pytest.raises(tilecheck.RaceError, match="Cs\\[0\\]"):
        tilecheck.launch((6, 1, 1), scale_each_racy, (As, Cs, 16))
    assert not any(c.any() for c in Cs)


def test_detect_says_race_free_for_the_correct_kernel():
    As, Cs = _lists()
    assert tilecheck.detect(scale_each, (As, Cs, 16), (6, 1, 1)).status == "verified"


def test_the_static_check_does_not_follow_list_pointers_and_says_so():
    As, Cs = _lists()
    report = tilecheck.verify(scale_each, (As, Cs, 16), (6, 1, 1), data=False)
    assert report.status == "unknown"
    assert any("an array of a list argument" in r and "tilecheck.detect" in r for r in report.reasons)
    # on the launch's own data, the exact detector decides it, and the report says why
    report = tilecheck.verify(scale_each, (As, Cs, 16), (6, 1, 1))
    assert (report.status, report.level) == ("verified", "this launch's data")
    assert any("an array of a list argument" in n and "decided by tilecheck.detect" in n for n in report.notes)


def test_arrays_of_a_list_that_share_memory_are_refused():
    As, _ = _lists(rows=(4, 4))
    out = np.zeros((4, 16), np.float32)
    with pytest.raises(tilecheck.AliasingError, match="'Cs\\[0\\]'.*'Cs\\[1\\]'"):
        tilecheck.launch((4, 1, 1), scale_each, (As, [out, out], 16))
    with pytest.raises(tilecheck.AliasingError, match="As\\[1\\]"):
        tilecheck.launch((4, 1, 1), scale_each, (As, [np.zeros_like(out), As[1]], 16))


def test_a_block_dependent_list_index():
    # blocks run one at a time when the kernel reads arrays from a list: each may pick another array
    As = [np.full(8, i, np.float32) for i in range(4)]
    out = np.zeros(32, np.float32)
    assert tilecheck.detect(by_block, (As, out, 8), (4, 1, 1)).status == "verified"
    tilecheck.launch((4, 1, 1), by_block, (As, out, 8))
    np.testing.assert_array_equal(out, np.repeat(np.arange(4, dtype=np.float32), 8))


def test_lists_the_frontend_refuses():
    As, Cs = _lists()
    with pytest.raises(FrontendError, match="share one dtype and rank"):
        compile_kernel(scale_each, ([As[0], As[1].astype(np.float16)], Cs[:2], 16))
    with pytest.raises(FrontendError, match="non-empty list of arrays"):
        compile_kernel(scale_each, ([], Cs, 16))


def test_run_repeated_says_it_does_not_take_lists():
    As, Cs = _lists()
    with pytest.raises(ArgumentError, match="is a list of arrays"):
        tilecheck.run_repeated(scale_each, (As, Cs, 16), (6, 1, 1), runs=2)


@ct.kernel
def group_copy(As, Bs, Cs, NUM_SMS: ct.Constant[int], TILE: ct.Constant[int]):
    # TileGym's group GEMM, reduced: persistent blocks walk the tiles of every group
    tile_idx = ct.bid(0)
    first = 0
    for g in range(len(As)):
        a, b, c = As[g], Bs[g], Cs[g]
        tiles = ct.num_tiles(a, 0, (TILE, TILE))
        while tile_idx >= first and tile_idx < first + tiles:
            t = ct.load(a, index=(tile_idx - first, 0), shape=(TILE, TILE), padding_mode=ct.PaddingMode.ZERO)
            u = ct.load(b, index=(0, 0), shape=(TILE, TILE), padding_mode=ct.PaddingMode.ZERO)
            ct.store(c, index=(tile_idx - first, 0), tile=t + u)
            tile_idx += NUM_SMS
        first = first + tiles


def test_persistent_group_kernel_over_many_blocks_is_race_free():
    # a regression: list arrays have negative memory ids, which collided with other blocks' table reads
    # in detect's (block, array, element) keys and made false unordered-in-block races
    groups = 4
    As = [np.ones((16, 4), np.float32) * i for i in range(groups)]
    Bs = [np.ones((4, 4), np.float32) for _ in range(groups)]
    Cs = [np.zeros((16, 4), np.float32) for _ in range(groups)]
    report = tilecheck.detect(group_copy, (As, Bs, Cs, 12, 4), (12, 1, 1))
    assert report.status == "verified", report
    tilecheck.launch((12, 1, 1), group_copy, (As, Bs, Cs, 12, 4))
    for a, c in zip(As, Cs):
        np.testing.assert_array_equal(c, a + 1)
