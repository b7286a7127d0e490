"""The fast binding of a launch's arguments (``cutile.rebind``, issue 51): whenever it answers, it
answers what cuTile's signature machinery (``_parameters``) does, so the specialization, hence the
Tile IR and every verdict keyed by it, is the same."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.tiers import examples
from tests.verifier.test_shape_contract import copy_tiles
from tilecheck.ir import cutile

DTYPES = [np.float32, np.float16, np.int32, np.int64]


@st.composite
def launches(draw):
    n = draw(st.integers(1, 64)) * 16
    x = np.zeros(draw(st.sampled_from([n, 2 * n])), draw(st.sampled_from(DTYPES)))
    x = x[::2] if x.size == 2 * n and draw(st.booleans()) else x
    y = np.zeros((n,) if draw(st.booleans()) else (n, 2), draw(st.sampled_from(DTYPES)))
    tile = draw(st.sampled_from([16, 32, 2**31, True, 1.5, -3]))
    return (x, y, tile)


@settings(max_examples=examples(300), deadline=None, derandomize=True)
@given(first=launches(), second=launches())
def test_rebind_binds_as_cutile_does(first, second):
    _, _, before, _ = cutile._parameters(copy_tiles, first)
    fast = cutile.rebind(before, second)
    if fast is None:
        return
    _, _, slow, _ = cutile._parameters(copy_tiles, second)
    assert list(fast) == list(slow)
    assert cutile.specialization(fast) == cutile.specialization(slow)


def test_rebind_refuses_another_form():
    x = np.zeros(64, np.float32)
    _, _, params, _ = cutile._parameters(copy_tiles, (x, x, 16))
    assert cutile.rebind(params, (x, np.zeros((8, 8), np.float32), 16)) is None  # another rank
    assert cutile.rebind(params, (x, np.zeros(64, np.float16), 16)) is None  # another dtype
    assert cutile.rebind(params, (x, x, 16.0)) is None  # a float where an int was
    assert cutile.rebind(params, (x, x)) is None
    again = cutile.rebind(params, (np.zeros(128, np.float32), x, 32))
    assert again is not None and again[0].shape == (128,) and again[-1].value == 32
