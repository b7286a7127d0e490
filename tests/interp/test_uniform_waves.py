"""Waves keep their blocks where the divergence analysis (``ir.uniformity``) shows that a list
pointer, a view's origin and sizes, and a loop's exit are the same in every block of a wave; they
are single blocks where a block may pick another array or view, or spin on what another writes."""
import cuda.tile as ct
import numpy as np

import tilecheck
from tilecheck.interp.engine import Interpreter
from tilecheck.interp.schedule import Schedule
from tilecheck.ir import uniformity
from tilecheck.ir.cutile import compile_kernel
from tilecheck.ir.types import TokenType

from .test_list_arguments import by_block, group_copy


@ct.kernel
def segments(x, offsets, y, SEGS: ct.Constant[int], T: ct.Constant[int]):
    # a ragged walk: each segment's slice starts at an offset read from a read-only index array
    b = ct.bid(0)
    for s in range(SEGS):
        start = ct.load(offsets, index=(s,), shape=(1,)).item()
        stop = ct.load(offsets, index=(s + 1,), shape=(1,)).item()
        part, out = x.slice(axis=0, start=start, stop=stop), y.slice(axis=0, start=start, stop=stop)
        ct.store(out, index=(b,), tile=ct.load(part, index=(b,), shape=(T,), padding_mode=ct.PaddingMode.ZERO))


@ct.kernel
def own_slice(x, y, T: ct.Constant[int]):
    # each block cuts its own slice: the view's origin differs between blocks
    b = ct.bid(0)
    part = x.slice(axis=0, start=b * T, stop=b * T + T)
    ct.store(y, index=(b,), tile=ct.load(part, index=(0,), shape=(T,)))


@ct.kernel
def written_offsets(x, offsets, y, T: ct.Constant[int]):
    # the offset array is written by the kernel: what a block reads there may differ
    b = ct.bid(0)
    ct.store(offsets, index=(b,), tile=ct.full((1,), 0, ct.int32) + b * T)
    start = ct.load(offsets, index=(0,), shape=(1,)).item()
    part = x.slice(axis=0, start=start, stop=start + T)
    ct.store(y, index=(b,), tile=ct.load(part, index=(0,), shape=(T,)))


@ct.kernel
def wait_for_flag(flags, out):
    # a weak spin: blocks after the first wait until the block before them raised its flag
    b = ct.bid(0)
    seen = ct.full((1,), 0, ct.int32)
    if b > 0:
        while ct.load(flags, index=(b - 1,), shape=(1,)).item() == 0:
            seen = seen + 1
    ct.store(out, index=(b,), tile=seen)
    ct.store(flags, index=(b,), tile=ct.full((1,), 1, ct.int32))


def _single(kernel, args, grid=(4, 1, 1)) -> bool:
    module = compile_kernel(kernel, args).module
    return Interpreter(module, args, grid, Schedule()).needs_single_block_waves()


def _groups():
    As = [np.ones((16, 4), np.float32) * i for i in range(3)]
    return As, [np.ones((4, 4), np.float32) for _ in range(3)], [np.zeros((16, 4), np.float32) for _ in range(3)]


def test_a_list_indexed_by_a_loop_counter_keeps_its_waves():
    As, Bs, Cs = _groups()
    assert not _single(group_copy, (As, Bs, Cs, 8, 4))
    report = tilecheck.detect(group_copy, (As, Bs, Cs, 8, 4), (8, 1, 1))
    assert report.status == "verified", report
    tilecheck.launch((8, 1, 1), group_copy, (As, Bs, Cs, 8, 4))
    for a, c in zip(As, Cs):
        np.testing.assert_array_equal(c, a + 1)


def test_a_list_indexed_by_the_block_runs_one_block_per_wave():
    As = [np.full(8, i, np.float32) for i in range(4)]
    assert _single(by_block, (As, np.zeros(32, np.float32), 8))


def test_slices_at_offsets_read_from_an_index_array_keep_their_waves():
    x, y = np.arange(40, dtype=np.float32), np.zeros(40, np.float32)
    offsets = np.array([0, 12, 20, 40], np.int32)
    args = (x, offsets, y, 3, 4)
    assert not _single(segments, args)
    tilecheck.launch((5, 1, 1), segments, args)
    np.testing.assert_array_equal(y, x)


def test_a_slice_at_the_blocks_own_offset_or_at_written_contents_runs_one_block_per_wave():
    x, y = np.arange(16, dtype=np.float32), np.zeros(16, np.float32)
    assert _single(own_slice, (x, y, 4))
    tilecheck.launch((4, 1, 1), own_slice, (x, y, 4))
    np.testing.assert_array_equal(y, x)
    assert _single(written_offsets, (x, np.zeros(4, np.int32), y, 4))


def test_a_loop_that_waits_for_another_blocks_store_runs_one_block_per_wave():
    flags, out = np.zeros(4, np.int32), np.zeros(4, np.int32)
    assert _single(wait_for_flag, (flags, out))
    function = compile_kernel(wait_for_flag, (flags, out)).module.entry
    loop = next(op for op in function.walk() if op.name == "loop")
    assert uniformity.of(function).may_wait(loop)
    # the loop of a persistent walk waits for nobody
    As, Bs, Cs = _groups()
    function = compile_kernel(group_copy, (As, Bs, Cs, 8, 4)).module.entry
    loop = next(op for op in function.walk() if op.name == "loop")
    found = uniformity.of(function)
    assert not found.may_wait(loop)
    pointers = [op for op in function.walk() if op.name == "int_to_ptr"]
    assert pointers and not any(found.varies(op) for op in pointers)


def test_divergent_values_follow_control_flow():
    """The walk's loop results differ between blocks (each leaves after its own trips), while the
    group counter and the tile count do not."""
    As, Bs, Cs = _groups()
    function = compile_kernel(group_copy, (As, Bs, Cs, 8, 4)).module.entry
    found = uniformity.of(function)
    walk = next(op for op in function.walk() if op.name == "loop")
    outer = next(op for op in function.walk() if op.name == "for")
    values = [r for r in walk.results if not isinstance(r.type, TokenType)]  # tokens carry no value
    assert values and all(id(r) in found.divergent for r in values)
    assert id(outer.regions[0].block.args[0]) not in found.divergent  # g
    assert id(outer.regions[0].block.args[1]) not in found.divergent  # first
    assert id(outer.regions[0].block.args[2]) in found.divergent  # tile_idx, carried out of the walk
