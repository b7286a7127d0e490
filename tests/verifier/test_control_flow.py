"""Control-flow shapes cuTile emits: the verifier follows them as the interpreter runs them."""
import numpy as np
import pytest

import tilecheck
from tests.verifier import cf_kernels as C


@pytest.mark.parametrize("kernel", [C.helper_early_return, C.helper_early_return_rmw])
def test_an_early_return_in_a_helper_is_a_single_trip_loop(kernel):
    from tilecheck.ir.cutile import module_for
    from tilecheck.verifier.model.ops.control import single_trip

    args = (np.ones(64, np.float32), np.zeros(64, np.float32), 8)
    module, _ = module_for(kernel, args)
    loops = [op for op in module.walk() if op.name == "loop"]
    assert loops and all(single_trip(op) for op in loops)
    assert tilecheck.verify(kernel, args, (8, 1, 1)).status == "verified"
    assert tilecheck.detect(kernel, args, (8, 1, 1)).status == "verified"


def test_a_spin_loop_is_not_single_trip():
    from corpus.kernels import norms
    from tilecheck.ir.cutile import module_for
    from tilecheck.verifier.model.ops.control import single_trip

    case = tilecheck.cases_of(norms.layer_norm_bwd)[0]
    module, _ = module_for(norms.layer_norm_bwd, case.make_args())
    loops = [op for op in module.walk() if op.name == "loop"]
    assert loops and not any(single_trip(op) for op in loops)


def test_continue_after_an_inner_for():
    x = np.random.default_rng(0).standard_normal((16, 8)).astype(np.float32)
    args = (x, np.zeros((16, 4), np.float32), 4, 4)
    assert tilecheck.verify(C.continue_after_inner_for, args, (4, 1, 1)).status == "verified"


@pytest.mark.parametrize("flagged_row", [None, 1])
def test_a_counter_an_early_continue_updates_differently_has_no_closed_form(flagged_row):
    """The closed form init + n * c held only for the final continue; an early one adding 2 made the
    kernel 'verified' although some contents make it race (row 1 flagged: this launch races)."""
    x = np.ones((8, 4), np.float32)
    if flagged_row is not None:
        x[flagged_row, 0] = -1
    args = (x, np.zeros((64, 4), np.float32), 8, 4)
    assert tilecheck.verify(C.skip_counter, args, (4, 1, 1), data=False).status != "verified"
    assert tilecheck.detect(C.skip_counter, args, (4, 1, 1)).status == ("race" if flagged_row else "verified")
    # on this launch's own data (the default) the verdict is the launch's
    report = tilecheck.verify(C.skip_counter, args, (4, 1, 1))
    assert report.status == ("race" if flagged_row else "verified"), str(report)
    if flagged_row is None:
        assert report.level == "this launch's data"
