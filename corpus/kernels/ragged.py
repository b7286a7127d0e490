"""Kernels whose safety rests on the contents of an index array the host prepares: CSR-style segment
offsets (``nondecreasing``) and MoE token ids padded past the token count (``distinct(below=n)``).
Each kernel has a case whose contents keep the precondition and one whose contents break it."""
import cuda.tile as ct
import numpy as np

import tilecheck

ConstInt = ct.Constant[int]


def _segments(offsets):
    return (np.array(offsets, np.int32), np.arange(64 * 32, dtype=np.float32).reshape(64, 32),
            np.zeros((64, 32), np.float32), 16, 32)


# segment b is rows offsets[b] .. offsets[b + 1] (at most 16 rows each)
SORTED_OFFSETS = [0, 10, 10, 26, 40, 52, 64]
# offsets[2] < offsets[1]: segment 2 (rows 4 .. 20) overlaps segment 0 (rows 0 .. 12)
UNSORTED_OFFSETS = [0, 12, 4, 20, 36, 52, 64]


@tilecheck.case(grid=(6, 1, 1), args=lambda: _segments(SORTED_OFFSETS))
@tilecheck.case(grid=(6, 1, 1), args=lambda: _segments(UNSORTED_OFFSETS))
@ct.kernel
def csr_segment_copy(offsets, x, y, TM: ConstInt, TD: ConstInt):
    # Block b copies the rows of its segment, offsets[b] .. offsets[b + 1]. Safe when offsets never
    # decrease (then segment b ends where segment b + 1 at the earliest starts): tilecheck.nondecreasing.
    b = ct.bid(0)
    start = ct.gather(offsets, b)
    end = ct.gather(offsets, b + 1)
    rows = start + ct.arange(TM, dtype=ct.int32)
    cols = ct.arange(TD, dtype=ct.int32)
    inside = (rows < end)[:, None]
    t = ct.gather(x, (rows[:, None], cols[None, :]), mask=inside)
    ct.scatter(y, (rows[:, None], cols[None, :]), t, mask=inside)


N_TOKENS = 48  # padding entries of sorted_token_ids hold N_TOKENS


def _padded(duplicate: bool):
    # 4 blocks of 16 slots: 12 tokens and 4 padding entries each (a MoE align's layout)
    tokens = np.random.default_rng(0).permutation(N_TOKENS).astype(np.int32)
    if duplicate:
        tokens[30] = tokens[3]  # one token routed twice: two slots name the same output row
    ids = np.full((4, 16), N_TOKENS, np.int32)
    ids[:, :12] = tokens.reshape(4, 12)
    return (np.ones((64, 32), np.float32), ids.reshape(-1), np.zeros((N_TOKENS, 32), np.float32),
            N_TOKENS, 16, 32)


@tilecheck.case(grid=(4, 1, 1), args=lambda: _padded(False))
@tilecheck.case(grid=(4, 1, 1), args=lambda: _padded(True))
@ct.kernel
def moe_padded_scatter(x, sorted_token_ids, out, num_tokens: int, TM: ConstInt, TD: ConstInt):
    # Each block moves TM slots to the output rows sorted_token_ids names; padding slots (ids >=
    # num_tokens) are skipped. Safe when no token id below num_tokens repeats: the padding value
    # does repeat, so plain distinct does not hold, distinct(below=num_tokens) does.
    b = ct.bid(0)
    ids = ct.gather(sorted_token_ids, b * TM + ct.arange(TM, dtype=ct.int32))
    cols = ct.arange(TD, dtype=ct.int32)
    t = ct.load(x, index=(b, 0), shape=(TM, TD))
    ct.scatter(out, (ids[:, None], cols[None, :]), t, mask=(ids < num_tokens)[:, None])
