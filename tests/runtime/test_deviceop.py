"""DeviceOp on the cpu backend: sync, async and graph modes; ownership of zipped ops."""
import asyncio

import numpy as np
import pytest

import tilecheck
from corpus.kernels import elementwise as E
from corpus.kernels import inplace as I


def _vectors(n=1024):
    rng = np.random.default_rng(0)
    return rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)


def test_sync_then_sequences_launches():
    a, b = _vectors()
    c, d = np.zeros_like(a), np.zeros_like(a)
    first = tilecheck.device_op((64,), E.vector_add, (a, b, c, 16))
    second = tilecheck.device_op((8,), I.inplace_scale, (c, 128))  # c *= 2 after c = a + b
    first.then(second).sync()
    np.testing.assert_array_equal(c, (a + b) * 2)
    tilecheck.device_op((64,), E.vector_add, (c, b, d, 16)).sync()
    np.testing.assert_array_equal(d, (a + b) * 2 + b)


def test_await_runs_without_blocking_the_event_loop():
    a, b = _vectors()
    c = np.zeros_like(a)
    ticks = []

    async def ticker():
        for _ in range(3):
            ticks.append(1)
            await asyncio.sleep(0)

    async def main():
        await asyncio.gather(tilecheck.device_op((64,), E.vector_add, (a, b, c, 16)), ticker())

    asyncio.run(main())
    np.testing.assert_array_equal(c, a + b)
    assert len(ticks) == 3


def test_graph_captures_once_and_replays_in_place():
    a, b = _vectors()
    c = np.zeros_like(a)
    op = tilecheck.device_op((64,), E.vector_add, (a, b, c, 16)).then(tilecheck.device_op((8,), I.inplace_scale,
                                                                                          (c, 128)))
    graph = op.graph()
    assert graph.launches == 2
    graph.replay()
    np.testing.assert_array_equal(c, (a + b) * 2)
    a += 1  # replays see the arrays' current contents
    graph.replay()
    np.testing.assert_array_equal(c, (a + b) * 2)


def test_zip_of_independent_ops_runs_and_conflicting_zip_is_refused():
    a, b = _vectors()
    c1, c2 = np.zeros_like(a), np.zeros_like(a)
    tilecheck.DeviceOp.zip(tilecheck.device_op((64,), E.vector_add, (a, b, c1, 16)),
                           tilecheck.device_op((64,), E.vector_add, (b, a, c2, 16))).sync()
    np.testing.assert_array_equal(c1, c2)
    clash = tilecheck.DeviceOp.zip(tilecheck.device_op((64,), E.vector_add, (a, b, c1, 16)),
                                   tilecheck.device_op((8,), I.inplace_scale, (c1, 128)))
    with pytest.raises(tilecheck.AliasingError, match="not independent"):
        clash.sync()


def test_racy_ops_are_refused_at_capture():
    x = np.ones(1024, np.float32)
    with pytest.raises(tilecheck.RaceError):
        tilecheck.device_op((8,), I.inplace_halo, (x, 128)).graph()
    assert (x == 1).all()
    tilecheck.device_op((8,), I.inplace_halo, (x, 128), unsafe=True).sync()


def test_cuda_ops_refuse_host_arrays_and_other_backends():
    a, b = _vectors()
    op = tilecheck.device_op((64,), E.vector_add, (a, b, np.zeros_like(a), 16), backend="cuda")
    with pytest.raises(tilecheck.TilecheckError, match="host array"):
        op.sync()
    with pytest.raises(tilecheck.TilecheckError, match="cannot compose"):
        op.then(tilecheck.device_op((64,), E.vector_add, (a, b, np.zeros_like(a), 16)))
