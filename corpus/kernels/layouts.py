"""Memory layout bugs: stride-0 outputs, aliased arguments, in-place transposes, overlapping
tiled views, off-by-one indices; and their safe twins."""
import cuda.tile as ct
import numpy as np

import tilecheck

ConstInt = ct.Constant[int]


def _x():
    return np.arange(1024, dtype=np.float32)


@tilecheck.case(grid=(8, 1, 1), args=lambda: (_x(), np.broadcast_to(np.zeros(1, np.float32), (1024,)), 128))
@ct.kernel
def copy_to_stride0(src, dst, TILE: ConstInt):
    # Racy through the layout: dst has stride 0 (np.broadcast_to), every element is one address.
    bid = ct.bid(0)
    ct.store(dst, index=(bid,), tile=ct.load(src, index=(bid,), shape=(TILE,)))


def _same_array_twice():
    x = _x()
    return x, x, 128


@tilecheck.case(grid=(8, 1, 1), args=_same_array_twice)
@ct.kernel
def copy_onto_itself_shifted(src, dst, TILE: ConstInt):
    # Racy through aliasing: src and dst are the same array and block b reads tile b + 1.
    bid = ct.bid(0)
    ct.store(dst, index=(bid,), tile=ct.load(src, index=(bid + 1,), shape=(TILE,),
                                             padding_mode=ct.PaddingMode.ZERO))


@tilecheck.case(grid=(8, 1, 1), args=lambda: (_x(), np.zeros((1024, 2), np.float32)[:, 0], 128))
@ct.kernel
def copy_to_strided_output(src, dst, TILE: ConstInt):
    # Safe: the output has stride 2 (every other element of a wider buffer), still injective.
    bid = ct.bid(0)
    ct.store(dst, index=(bid,), tile=ct.load(src, index=(bid,), shape=(TILE,)))


@tilecheck.case(grid=(4, 4, 1), args=lambda: (np.arange(128 * 128, dtype=np.float32).reshape(128, 128), 32))
@ct.kernel
def transpose_inplace(a, T: ConstInt):
    # Racy: block (i, j) reads tile (j, i) while block (j, i) overwrites it.
    i = ct.bid(0)
    j = ct.bid(1)
    t = ct.load(a, index=(j, i), shape=(T, T))
    ct.store(a, index=(i, j), tile=ct.transpose(t))


@tilecheck.case(grid=(8, 1, 1), args=lambda: (_x(), np.zeros(1024, np.float32), 128))
@ct.kernel
def tiled_view_store_overlap(src, dst, TILE: ConstInt):
    # Racy: stores through a view whose tiles overlap by half (traversal step TILE // 2).
    bid = ct.bid(0)
    out = dst.tiled_view((TILE,), traversal_steps=(TILE // 2,))
    out.store((bid,), ct.load(src, index=(bid,), shape=(TILE,)))


@tilecheck.case(grid=(8, 1, 1), args=lambda: (_x(), np.zeros(1024, np.float32), 128))
@ct.kernel
def scatter_off_by_one(src, dst, TILE: ConstInt):
    # Racy: an off-by-one stride (TILE - 1): each block's last element is the next block's first.
    bid = ct.bid(0)
    mine = bid * TILE + ct.arange(TILE, dtype=ct.int32)
    ct.scatter(dst, bid * (TILE - 1) + ct.arange(TILE, dtype=ct.int32), ct.gather(src, mine))


@tilecheck.case(grid=(8, 1, 1), args=lambda: (_x(), np.zeros(1024, np.float32), 128))
@ct.kernel
def scatter_shifted_tiles(src, dst, TILE: ConstInt):
    # Safe: a shift by a whole tile is a bijection between blocks (the last tile drops out of bounds).
    bid = ct.bid(0)
    idx = bid * TILE + ct.arange(TILE, dtype=ct.int32)
    ct.scatter(dst, idx + TILE, ct.gather(src, idx))


@tilecheck.case(grid=(8, 1, 1), args=lambda: (_x(), 64))
@ct.kernel
def slices_disjoint(x, TILE: ConstInt):
    # Safe: reads the upper half through a slice, writes the lower half through another.
    b = ct.bid(0)
    t = ct.load(x.slice(0, 512, 1024), index=(b,), shape=(TILE,))
    ct.store(x.slice(0, 0, 512), index=(b,), tile=t * 2.0)


@tilecheck.case(grid=(8, 1, 1), args=lambda: (_x(), 64))
@ct.kernel
def slice_shifted_write(x, TILE: ConstInt):
    # Racy: block b reads tile b of the upper half (a slice starting at 512) and writes tile 9 + b
    # of the whole array, which is tile b + 1 of that slice: the next block's input.
    b = ct.bid(0)
    t = ct.load(x.slice(0, 512, 1024), index=(b,), shape=(TILE,))
    ct.store(x, index=(9 + b,), tile=t + 1.0)


def _grouped():
    rng = np.random.default_rng(0)
    srcs = tuple(rng.standard_normal(256).astype(np.float32) for _ in range(3))
    return srcs, tuple(np.zeros(256, np.float32) for _ in range(3)), 64


@tilecheck.case(grid=(4, 1, 1), args=_grouped)
@ct.kernel
def grouped_scale(srcs, dsts, TILE: ConstInt):
    # Race-free: a tuple of arrays (one group each, as in a grouped GEMM); block b owns tile b of
    # every group.
    bid = ct.bid(0)
    for g in ct.static_iter(range(len(srcs))):
        ct.store(dsts[g], index=(bid,), tile=ct.load(srcs[g], index=(bid,), shape=(TILE,)) * 2.0)


@tilecheck.case(grid=(4, 1, 1), args=_grouped)
@ct.kernel
def grouped_scale_shared_tile(srcs, dsts, TILE: ConstInt):
    # Racy: the last group is stored at tile bid // 2, so blocks 2k and 2k + 1 write one tile.
    bid = ct.bid(0)
    for g in ct.static_iter(range(len(srcs))):
        tile = bid // 2 if g == len(srcs) - 1 else bid
        ct.store(dsts[g], index=(tile,), tile=ct.load(srcs[g], index=(bid,), shape=(TILE,)))
