"""Triton programs address memory, not tensor views (issue 52): an argument's memory runs past its
view's last element to the end of its allocation (a row's padding, a padded tail). An argument the
kernel only reads runs on past other arguments' memory in that allocation (a fused QKV buffer: k's
rows into v's), so the arguments overlap and a write to the other one is shared memory; an argument
the kernel writes stops where another one's memory begins (a store past it is out of bounds)."""
import numpy as np
import pytest

triton = pytest.importorskip("triton")
tl = pytest.importorskip("triton.language")

import tilecheck as tc  # noqa: E402


@triton.jit
def row_sums_reading_the_padding(x_ptr, out_ptr, stride, WIDTH: tl.constexpr, BLOCK: tl.constexpr):
    # each row is WIDTH wide in a BLOCK-wide buffer: the load reads the padding, the sum drops it
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride + cols)
    tl.store(out_ptr + row, tl.sum(tl.where(cols < WIDTH, x, 0.0)))


@triton.jit
def copy_one_too_far(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK) + 1  # the last program reads past x
    tl.store(y_ptr + offs - 1, tl.load(x_ptr + offs))


def test_a_read_of_a_rows_padding_is_inside_memory_verified_and_run():
    buf = np.ones((8, 128), np.float32)
    args = (buf[:, :100], np.zeros(8, np.float32), 128, 100, 128)
    report = tc.verify(row_sums_reading_the_padding, args, (8,), cache=False)
    assert report.status == "verified", report
    assert tc.detect(row_sums_reading_the_padding, args, (8,)).status == "verified"
    tc.launch((8,), row_sums_reading_the_padding, args)
    assert np.array_equal(args[1], np.full(8, 100, np.float32))


def test_past_the_allocation_is_out_of_bounds_and_into_another_argument_is_shared_memory():
    # x alone in its allocation: the element past it is outside memory
    x, y = np.arange(64, dtype=np.float32), np.zeros(64, np.float32)
    assert tc.verify(copy_one_too_far, (x, y, 16), (4,), cache=False).status == "out-of-bounds"
    # x followed by y in one buffer, x only read: the last program reads y[0], which program 0
    # writes (a read-write race in shared memory, as on a GPU)
    buf = np.arange(128, dtype=np.float32)
    assert tc.verify(copy_one_too_far, (buf[:64], buf[64:], 16), (4,), cache=False).status == "race"
    assert tc.detect(copy_one_too_far, (buf[:64], buf[64:], 16), (4,)).status == "race"
    # x followed by padding in its buffer: the element past x is memory (read, never written)
    buf = np.arange(80, dtype=np.float32)
    report = tc.verify(copy_one_too_far, (buf[:64], np.zeros(64, np.float32), 16), (4,), cache=False)
    assert report.status == "verified", report


@triton.jit
def shifted_sum(k_ptr, v_ptr, out_ptr, SHIFT: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(k_ptr + offs + SHIFT) + tl.load(v_ptr + offs))


@triton.jit
def store_one_too_far(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs + 1, tl.load(y_ptr + offs))  # the last program writes past x


def test_a_read_past_one_argument_into_the_next_one_of_its_buffer_is_memory():
    # q | k | v in one buffer (a fused QKV projection): k's last program reads into v's rows
    qkv = np.arange(48, dtype=np.float32)
    args = (qkv[16:32], qkv[32:], np.zeros(16, np.float32), 2, 4)
    assert tc.verify(shifted_sum, args, (4,), cache=False).status == "verified"
    assert tc.detect(shifted_sum, args, (4,)).status == "verified"
    assert tc.run_repeated(shifted_sum, args, (4,), runs=4, progress=False).deterministic
    tc.launch((4,), shifted_sum, args)
    assert np.array_equal(args[2], qkv[18:34] + qkv[32:48])


def test_a_store_past_a_written_argument_into_the_next_one_is_out_of_bounds():
    buf = np.zeros(128, np.float32)
    args = (buf[:64], buf[64:], 16)
    assert tc.verify(store_one_too_far, args, (4,), cache=False).status == "out-of-bounds"
    assert tc.detect(store_one_too_far, args, (4,)).status == "out-of-bounds"


class StridedBuffer:
    """FlagGems' duck-typed tensor: a pointer, a dtype, a shape and strides, and nothing else."""

    def __init__(self, base, shape, strides, offset=0):
        self.base, self.shape, self._strides, self.offset = base, shape, strides, offset
        self.dtype, self.device = base.dtype, "cpu"

    def data_ptr(self):
        return self.base.__array_interface__["data"][0] + self.offset * self.base.itemsize

    def stride(self):
        return self._strides


@triton.jit
def scale(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)


def test_any_object_triton_takes_as_a_pointer_is_read_in_place():
    x, y = np.arange(100, dtype=np.float32), np.zeros(120, np.float32)
    args = (StridedBuffer(x, (100,), (1,)), StridedBuffer(y, (100,), (1,), offset=20), 100, 32)
    assert tc.verify(scale, args, (4,), cache=False).status == "verified"
    tc.launch((4,), scale, args)
    assert np.array_equal(y[20:], 2 * x) and not y[:20].any()


class TypedPtr:
    """FlagGems' typed pointer: an address and a dtype, no shape (a complex tensor read as its floats)."""

    def __init__(self, address, dtype):
        self.address, self.dtype, self.device = address, dtype, "cpu"

    def data_ptr(self):
        return self.address


def test_a_pointer_given_as_an_address_alone_reaches_its_allocation():
    torch = pytest.importorskip("torch")
    x = torch.complex(torch.randn(50), torch.randn(50))  # 100 floats behind one address
    y = torch.empty_like(x)
    args = (TypedPtr(x.data_ptr(), torch.float32), TypedPtr(y.data_ptr(), torch.float32), 100, 32)
    assert tc.verify(scale, args, (4,), cache=False).status == "verified"  # not out of bounds at element 1
    tc.launch((4,), scale, args)
    assert torch.equal(y, x * 2)
    # an address no live tensor holds: its memory is not known, and nothing is read there
    lost = np.zeros(8, np.float32)
    with pytest.raises(tc.TilecheckError, match="address alone, into memory tilecheck cannot find"):
        tc.verify(scale, (TypedPtr(lost.__array_interface__["data"][0], torch.float32), torch.zeros(8), 8, 32),
                  (1,), cache=False)


@triton.jit
def reverse_rows(x_ptr, y_ptr, n, stride, BLOCK: tl.constexpr):
    # FlagGems' flip: the input's strides are negative, its pointer at its first element in view order
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    tl.store(y_ptr + row * n + cols, tl.load(x_ptr + row * stride + cols, mask=cols < n), mask=cols < n)


def test_negative_strides_reach_below_the_pointer_into_memory():
    x = np.arange(4 * 8, dtype=np.float32).reshape(4, 8)
    flipped = x[::-1]  # strides (-32, 4): the pointer is at the last row
    y = np.zeros((4, 8), np.float32)
    args = (flipped, y, 8, -8, 8)
    assert tc.verify(reverse_rows, args, (4,), cache=False).status == "verified"
    tc.launch((4,), reverse_rows, args)
    assert np.array_equal(y, x[::-1])
    # a StridedBuffer over the same memory, negative strides given as FlagGems gives them
    y[:] = 0
    duck = StridedBuffer(x, (4, 8), (-8, 1), offset=24)
    tc.launch((4,), reverse_rows, (duck, y, 8, -8, 8))
    assert np.array_equal(y, x[::-1])
    # reading past the first row in memory (below the lowest element) is out of bounds
    assert tc.verify(reverse_rows, (flipped, y, 8, -16, 8), (4,), cache=False).status == "out-of-bounds"
