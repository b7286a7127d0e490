"""torch CPU tensors in every path that takes arrays: tensors that require grad, bfloat16 and the two
fp8 formats (launch, run_repeated, detect, DeviceOp, the pytest plugin's launch check)."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
import cuda.tile as ct

import tilecheck
from tilecheck.runtime.launcher import check_launch


@ct.kernel
def copy(src, dst, T: ct.Constant[int]):
    b = ct.bid(0)
    ct.store(dst, index=(b,), tile=ct.load(src, index=(b,), shape=(T,)))


@ct.kernel
def scale(src, dst, T: ct.Constant[int]):
    b = ct.bid(0)
    t = ct.load(src, index=(b,), shape=(T,))
    ct.store(dst, index=(b,), tile=ct.astype(ct.astype(t, ct.float32) * 2.0, dst.dtype))


DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float8_e4m3fn, torch.float8_e5m2]


def _pair(dtype, grad):
    src = torch.arange(64, dtype=torch.float32).remainder(13).to(dtype)
    if grad:
        src.requires_grad_(True)  # only floating dtypes with autograd support take it
    return src, torch.zeros(64, dtype=dtype)


def _grad_ok(dtype):
    return dtype in (torch.float32, torch.float16, torch.bfloat16)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_launch_copies_in_place(dtype):
    src, dst = _pair(dtype, _grad_ok(dtype))
    tilecheck.launch((4, 1, 1), copy, (src, dst, 16))
    assert torch.equal(dst.float(), src.detach().float())


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float8_e5m2], ids=str)
def test_launch_computes_at_the_dtypes_precision(dtype):
    src, dst = _pair(dtype, _grad_ok(dtype))
    tilecheck.launch((4, 1, 1), scale, (src, dst, 16))
    assert torch.equal(dst, (src.detach().float() * 2).to(dtype))


def test_requires_grad_output_is_written_and_keeps_its_graph_flag():
    src = torch.arange(64, dtype=torch.float32)
    dst = torch.zeros(64, requires_grad=True)
    tilecheck.launch((4, 1, 1), copy, (src, dst, 16))
    assert dst.requires_grad and torch.equal(dst.detach(), src)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_run_repeated_and_detect(dtype):
    src, dst = _pair(dtype, _grad_ok(dtype))
    report = tilecheck.run_repeated(copy, (src, dst, 16), (4, 1, 1), runs=3)
    assert report.deterministic
    assert tilecheck.detect(copy, (src, dst, 16), (4, 1, 1)).status == "verified"
    # the caller's output is untouched by either
    assert not dst.float().any()


def test_detect_finds_the_race_on_grad_tensors():
    @ct.kernel
    def racy(src, dst, T: ct.Constant[int]):
        b = ct.bid(0)
        ct.store(dst, index=(b // 2,), tile=ct.load(src, index=(b,), shape=(T,)))

    src, dst = _pair(torch.float32, True)
    report = tilecheck.detect(racy, (src, dst, 16), (4, 1, 1))
    assert report.status == "race"


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_a_race_verify_finds_on_tensors_replays_without_touching_them(dtype):
    # verify's race on torch CPU arguments replays (the runs work on numpy copies: a tensor was
    # run on in place and its outputs compared as numpy arrays, a crash), and the caller's tensors
    # keep their contents
    @ct.kernel
    def racy(src, dst, T: ct.Constant[int]):
        b = ct.bid(0)
        ct.store(dst, index=(b // 2,), tile=ct.load(src, index=(b,), shape=(T,)))

    src, dst = _pair(dtype, _grad_ok(dtype))
    before = src.detach().clone()
    report = tilecheck.verify(racy, (src, dst, 16), (4, 1, 1))
    race = next(f for f in report.races if f.kind == "write-write")
    assert tilecheck.replay(race).reproduced
    assert not dst.float().any() and torch.equal(src.detach(), before)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float8_e5m2], ids=str)
def test_device_op_and_check_launch(dtype):
    src, dst = _pair(dtype, _grad_ok(dtype))
    _, report = check_launch(copy, (src, dst, 16), (4, 1, 1))
    assert report.status == "verified"
    op = tilecheck.device_op((4, 1, 1), copy, (src, dst, 16))
    op.sync()
    assert torch.equal(dst.float(), src.detach().float())
    dst.zero_()
    graph = op.graph()
    graph.replay()
    assert torch.equal(dst.float(), src.detach().float())


def test_aliasing_is_seen_through_grad_tensors():
    buf = torch.zeros(80, requires_grad=True)
    with pytest.raises(tilecheck.AliasingError):
        tilecheck.launch((4, 1, 1), copy, (buf[:64], buf[16:], 16))


def test_numpy_fp8_e5m2_round_trip():
    import ml_dtypes

    src = np.arange(64, dtype=np.float32).astype(ml_dtypes.float8_e5m2)
    dst = np.zeros(64, ml_dtypes.float8_e5m2)
    tilecheck.launch((4, 1, 1), copy, (src, dst, 16))
    assert (dst.astype(np.float32) == src.astype(np.float32)).all()


def test_a_cpu_tensor_is_written_in_place_even_where_numpy_imports_dlpack_read_only(monkeypatch):
    # numpy before 2.2 (which FlagGems pins) returns read-only arrays from np.from_dlpack
    from tilecheck.interp.memory import as_host_array

    def read_only(obj, *args, **kw):
        out = original(obj, *args, **kw)
        out.flags.writeable = False
        return out
    original = np.from_dlpack
    monkeypatch.setattr(np, "from_dlpack", read_only)
    t = torch.zeros(4)
    view = as_host_array("t", t)
    view[1] = 3.0
    assert t[1].item() == 3.0
