"""cuTile kernels the cuda backend runs itself. They go through tilecheck like any other kernel: the
tests verify them race-free and run them on the interpreter. (No ``from __future__ import
annotations`` here: cuTile reads the ``ct.Constant`` annotations as objects.)"""

import cuda.tile as ct

DIFF_TILE = 1024


@ct.kernel
def bitwise_diff(ref, cur, mask, count, TILE: ct.Constant[int]):
    """Compare ``cur`` with ``ref`` word by word: ``mask |= ref != cur``, ``count[0] += #differing``."""
    bid = ct.bid(0)
    zero = ct.PaddingMode.ZERO
    a = ct.load(ref, index=(bid,), shape=(TILE,), padding_mode=zero)
    b = ct.load(cur, index=(bid,), shape=(TILE,), padding_mode=zero)
    differs = (a != b).astype(mask.dtype)
    seen = ct.load(mask, index=(bid,), shape=(TILE,), padding_mode=zero)
    ct.store(mask, index=(bid,), tile=seen | differs)
    ct.atomic_add(count, (0,), ct.sum(differs.astype(ct.int32)))
