"""The launcher's aliasing shortcut (``arguments._apart``: numpy arguments whose byte ranges are apart
need no exact check) against the exact check it skips, on views of one buffer."""
import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from corpus.kernels.elementwise import vector_add
from tilecheck.errors import TilecheckError
from tilecheck.ir.cutile import module_for
from tilecheck.verifier.obligations import arguments


def _exact(module, args):
    saved = arguments._apart
    arguments._apart = lambda *_: None  # the shortcut off: the exact check only
    try:
        return arguments.aliasing_findings(module, args)
    finally:
        arguments._apart = saved


@settings(max_examples=200, deadline=None)
@given(starts=st.lists(st.integers(0, 96), min_size=3, max_size=3), steps=st.lists(st.sampled_from([1, 2, -1]),
                                                                                      min_size=3, max_size=3),
       separate=st.lists(st.booleans(), min_size=3, max_size=3))
def test_the_shortcut_never_hides_an_overlap_the_exact_check_finds(starts, steps, separate):
    buffer = np.zeros(256, np.float32)
    views = []
    for start, step, alone in zip(starts, steps, separate):
        base = np.zeros(256, np.float32) if alone else buffer
        view = base[start:start + 64 * abs(step):abs(step)]
        views.append(view[::-1] if step < 0 else view)
    args = (*views, 16)
    try:
        module, _ = module_for(vector_add, args)
    except TilecheckError:  # (cuTile refuses negative strides: the module of the same arrays, contiguous)
        assume(any(s < 0 for s in steps))
        module, _ = module_for(vector_add, tuple(np.ascontiguousarray(v) for v in views) + (16,))
    exact = _exact(module, args)
    if arguments._apart(module.params, args, arguments.written_arrays(module)):
        assert exact == []
    assert [f.message for f in arguments.aliasing_findings(module, args)] == [f.message for f in exact]
