"""Tests written like TileGym's: CUDA tensors, torch references, events for timing."""
import ops
import pytest
import torch


@pytest.mark.parametrize("n", [256, 1000])
def test_add(n, arch):
    assert arch.startswith("sm")
    x = torch.randn(n, device="cuda")
    y = torch.randn(n).cuda()
    torch.testing.assert_close(ops.add(x, y), x + y)


def test_row_scale_with_grad():
    x = torch.randn(40, 64, device="cuda", requires_grad=True)
    w = torch.randn(64, device=torch.device("cuda", 0), requires_grad=True)
    torch.testing.assert_close(ops.row_scale(x, w), (x * w).detach())


def test_fp8_e5m2():
    x = torch.randn(256, device="cuda")
    out = ops.to_fp8_e5m2(x, 2.0)
    assert out.dtype == torch.float8_e5m2
    torch.testing.assert_close(out.float(), (x * 2.0).to(torch.float8_e5m2).float())


def test_timing_with_events():
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    x = torch.ones(512, device="cuda")
    start.record()
    ops.add(x, x)
    end.record()
    torch.cuda.synchronize()
    assert start.elapsed_time(end) >= 0


def test_tile_sum_racy():
    x = torch.ones(128, device="cuda")
    torch.testing.assert_close(ops.tile_sum(x), torch.full((32,), 4.0, device="cuda"))


def test_group_scale_list_of_arrays():
    group = [torch.randn(rows, 16, device="cuda") for rows in (20, 8, 33)]
    for a, c in zip(group, ops.group_scale(group)):
        torch.testing.assert_close(c, a * 2)
