"""Every race the verifier reports on the corpus replays on the interpreter."""
import pytest

import tilecheck
from corpus.kernels import atomics, attention, inplace, norms


@pytest.mark.parametrize("kernel", [attention.head_permute_swapped, attention.head_permute_paper_fix,
                                    inplace.inplace_halo, norms.partial_sums_lock_too_early,
                                    atomics.moe_scatter])
def test_cross_block_witnesses_replay(kernel):
    case = tilecheck.cases_of(kernel)[0]
    args = case.make_args()
    if kernel is atomics.moe_scatter:
        import numpy as np

        args = (np.random.default_rng(0).standard_normal((64, 32)).astype(np.float32), np.zeros(64, np.int32),
                args[2], 16, 32)  # every row to row 0: the duplicate-index race
    report = tilecheck.verify(kernel, args, case.grid)
    races = [f for f in report.findings if f.kind in ("write-write", "read-write")]
    assert races
    for finding in races:
        result = tilecheck.replay(finding)
        assert result.reproduced, (str(finding), str(result))
        assert result.differing and "->" in str(result)


def test_write_write_replay_shows_the_element():
    case = tilecheck.cases_of(attention.head_permute_swapped)[0]
    report = tilecheck.verify(attention.head_permute_swapped, case.make_args(), case.grid)
    result = tilecheck.replay(report.findings[0])
    assert result.reproduced and result.first_order != result.second_order
    assert result.element == report.findings[0].witness.element_text()


def test_out_of_bounds_replays_as_an_interpreter_error():
    case = tilecheck.cases_of(inplace.gather_unchecked)[0]
    report = tilecheck.verify(inplace.gather_unchecked, case.make_args(), case.grid)
    result = tilecheck.replay(report.findings[0])
    assert result.reproduced and "out-of-bounds" in result.error


def test_replay_needs_arguments():
    from tilecheck import ir

    module = ir.from_cutile(attention.head_permute_swapped, attention._perm_args())
    report = tilecheck.verify(module, grid=(8, 8, 1))
    with pytest.raises(tilecheck.TilecheckError, match="launch arguments"):
        tilecheck.replay(report.findings[0])


def test_views_at_an_offset_slices():
    """x.slice(...) gives a tensor view at a non-zero origin: footprints and execution must shift."""
    import numpy as np

    from corpus.kernels import layouts

    case = tilecheck.cases_of(layouts.slice_shifted_write)[0]
    report = tilecheck.verify(layouts.slice_shifted_write, case.make_args(), case.grid)
    finding = next(f for f in report.findings if f.kind == "read-write")
    assert 512 <= finding.witness.element[0] < 1024
    assert tilecheck.replay(finding).reproduced
    x = np.arange(1024, dtype=np.float32)
    tilecheck.launch((8,), layouts.slices_disjoint, (x, 64))
    np.testing.assert_array_equal(x[:512], np.arange(512, 1024, dtype=np.float32) * 2)


def test_a_witness_whose_blocks_do_not_touch_the_element_did_not_reproduce():
    import dataclasses

    case = tilecheck.cases_of(attention.head_permute_swapped)[0]
    report = tilecheck.verify(attention.head_permute_swapped, case.make_args(), case.grid)
    real = report.findings[0]
    # the same finding, but claiming block (5, 3, 0), which writes elsewhere
    fake_side = dataclasses.replace(real.witness.second, block=(5, 3, 0))
    fake = dataclasses.replace(real, witness=dataclasses.replace(real.witness, second=fake_side))
    result = tilecheck.replay(fake)
    assert not result.reproduced
    assert "did not reproduce" in str(result) and "(5, 3, 0)" in str(result)
    assert tilecheck.replay(real).reproduced


def test_equal_values_reproduce_as_touched_by_both():
    import numpy as np

    from tests.interp import kernels as K

    args = (np.ones(16, np.float32), np.zeros(16, np.float32), 16)
    report = tilecheck.verify(K.same_tile_same_values, args, (4, 1, 1))
    result = tilecheck.replay(report.races[0])
    assert result.reproduced and not result.differing
    assert "both blocks touch it" in str(result)
