"""Synchronisation between blocks (issue 22): happens-before through release/acquire in detect,
verify deferring such pairs to the launch, and atomics whose returned value steers a write."""
import cuda.tile as ct
import numpy as np
import pytest

import tilecheck as tc
from corpus.kernels import steered, sync
from tilecheck.interp.sync import Sync
from tilecheck.ir.cutile import module_for
from tilecheck.ir.summary import steered_writes, steering_acquires

GRID = (4, 1, 1)


@pytest.mark.parametrize("kernel, args, truth", [
    (sync.pass_previous_tile, sync._PASS, "verified"),
    (sync.pass_previous_tile_own_flag, sync._PASS, "race"),
    (sync.pass_previous_tile_flag_first, sync._PASS, "race"),
    (sync.last_ticket_sums, sync._TICKET, "verified"),
    (sync.last_ticket_relaxed, sync._TICKET, "race"),
    (sync.exchange_lock_counts, sync._LOCKED, "verified"),
    (sync.exchange_lock_freed_early, sync._LOCKED, "race"),
])
def test_detect_and_verify_follow_release_acquire(kernel, args, truth):
    found = tc.detect(kernel, args(), GRID)
    assert found.status == truth, found.findings
    assert not [f for f in found.findings if f.kind == "order-dependent-atomic"]  # flags are protocol
    report = tc.verify(kernel, args(), GRID)
    assert report.status == truth, (report.reasons, report.findings)
    if truth == "race":
        assert all(tc.replay(f).reproduced for f in report.races), report.races


def test_sync_orders_through_a_release_sequence():
    # block 0 releases (tick 2), block 1's relaxed RMW continues the sequence (tick 3), block 2's
    # acquire reads it (tick 4): block 0's access at tick 1 happens before block 2's at tick 5
    sync_ = Sync({0}, frozenset())
    sync_.sequences[(0, 0)] = [(0, 2)]
    sync_.sequences[(0, 0)].append((1, 3))
    from tilecheck.interp.sync import _Acquire
    sync_.acquires[2] = [_Acquire(4, sync_.sequences[(0, 0)], 2)]
    assert sync_.ordered((0, 1), (2, 5))
    assert not sync_.ordered((0, 3), (2, 5))  # after block 0's release: not covered
    assert not sync_.ordered((0, 1), (2, 3))  # before block 2's acquire: not ordered


def test_a_plain_store_ends_the_release_sequence():
    module, _ = module_for(sync.pass_previous_tile, sync._PASS())
    assert [op.name for op in steering_acquires(module.entry)] == ["atomic_cas_tko"]


@pytest.mark.parametrize("kernel, args, how", [
    (steered.append_rows, steered._ROWS, "address"),
    (steered.work_queue_rows, steered._ROWS, None),
    (steered.running_max_seen, steered._AMAX, "value"),
    (steered.running_max_only, steered._AMAX, None),
    (sync.last_ticket_sums, sync._TICKET, None),
])
def test_steered_writes(kernel, args, how):
    module, _ = module_for(kernel, args())
    uses = steered_writes(module.entry)
    assert [h for h, _ in uses.values()] == ([how] if how else [])


def test_an_owner_log_is_a_steered_branch():
    args = (np.zeros(1, np.int32), np.full(1, -1, np.int32))
    module, _ = module_for(steered.first_block_logs_itself, args)
    assert [h for h, _ in steered_writes(module.entry).values()] == ["branch"]
    for report in (tc.detect(steered.first_block_logs_itself, args, GRID),
                   tc.verify(steered.first_block_logs_itself, args, GRID)):
        assert report.status == "verified"
        assert any("decides a branch" in f.message for f in report.findings), report.findings


@pytest.mark.parametrize("kernel, args, warned", [
    (steered.append_rows, steered._ROWS, True),
    (steered.work_queue_rows, steered._ROWS, False),
    (steered.running_max_seen, steered._AMAX, True),
])
def test_the_differential_runner_agrees_with_the_warning(kernel, args, warned):
    report = tc.verify(kernel, args(), GRID)
    assert report.status == "verified"
    assert any(f.kind == "order-dependent-atomic" for f in report.findings) == warned
    runs = tc.run_repeated(kernel, args(), GRID, runs=12, backend="cpu")
    assert (not runs.deterministic) == warned


@ct.kernel
def _waits_on_another_array(x, y, ready, done, T: ct.Constant[int]):
    # the release is on `done`, the acquire before the read waits on `ready` (already set): nothing
    # pairs them, so the read of the previous tile is not ordered after its store
    b = ct.bid(0)
    ct.store(y, index=(b,), tile=ct.full((T,), 1.0, dtype=ct.float32) * b)
    ct.atomic_xchg(done, b, 1, memory_order=ct.MemoryOrder.RELEASE)
    if b > 0:
        while ct.atomic_cas(ready, 0, 1, 1, memory_order=ct.MemoryOrder.ACQUIRE) == 0:
            pass
        ct.store(x, index=(b,), tile=ct.load(y, index=(b - 1,), shape=(T,)))
    while ct.atomic_cas(done, b, 1, 1, memory_order=ct.MemoryOrder.ACQUIRE) == 0:
        pass  # `done` is waited on too (after the read): a release on it is synchronisation


def test_a_release_and_an_acquire_on_different_arrays_order_nothing():
    args = (np.zeros(32, np.float32), np.zeros(32, np.float32), np.ones(1, np.int32), np.zeros(4, np.int32), 8)
    report = tc.verify(_waits_on_another_array, args, GRID)
    assert report.status == "race" and report.level == "the given shapes and grid", report.reasons
    assert tc.detect(_waits_on_another_array, args, GRID).status == "race"


def test_blocks_that_wait_for_lower_ids_run_on_a_multi_axis_grid():
    # the interpreter's default order enumerates blocks z-fastest: run one after the other, block
    # (0, 0, 1) would spin forever on flag 0 of a block not run yet; waiting blocks are stepped in turn
    grid = (2, 2, 2)
    args = (np.zeros(64, np.float32), np.zeros(64, np.float32), np.zeros(8, np.int32), 8)
    flat = _linear_message_passing
    assert tc.detect(flat, args, grid).status == "verified"
    x, y, flags, _ = args
    tc.launch(grid, flat, args, backend="cpu", unsafe=True)
    assert (flags == 1).all() and np.array_equal(x[8:], y[:-8])


@ct.kernel
def _linear_message_passing(x, y, flags, T: ct.Constant[int]):
    b = ct.bid(0) + ct.bid(1) * ct.num_blocks(0) + ct.bid(2) * ct.num_blocks(0) * ct.num_blocks(1)
    ct.store(y, index=(b,), tile=ct.full((T,), 1.0, dtype=ct.float32) * b)
    ct.atomic_xchg(flags, b, 1, memory_order=ct.MemoryOrder.RELEASE)
    if b > 0:
        while ct.atomic_cas(flags, b - 1, 1, 1, memory_order=ct.MemoryOrder.ACQUIRE) == 0:
            pass
        ct.store(x, index=(b,), tile=ct.load(y, index=(b - 1,), shape=(T,)))


# ---- a spin that can never end stops at once; one that waits for a busy block does not ----------
ConstInt = ct.Constant[int]
ACQUIRE, RELEASE = ct.MemoryOrder.ACQUIRE, ct.MemoryOrder.RELEASE


@ct.kernel
def flag_after_work(y, w, flags, N: ConstInt):
    # block 0 reads for N trips without writing memory (each read a point where block 1 may run),
    # then raises the flag block 1 waits for
    b = ct.bid(0)
    if b == 0:
        acc = ct.full((8,), 0.0, dtype=ct.float32)
        for i in range(N):
            acc = acc + ct.load(w, index=(i,), shape=(8,))
        ct.store(y, index=(0,), tile=acc)
        ct.atomic_xchg(flags, 0, 1, memory_order=RELEASE)
    else:
        while ct.atomic_cas(flags, 0, 1, 1, memory_order=ACQUIRE) == 0:
            pass
        ct.store(y, index=(1,), tile=ct.load(y, index=(0,), shape=(8,)))


@ct.kernel
def count_up(y, N: ConstInt):
    # a while loop whose carried value changes every trip, with no memory write: it ends
    i = 0
    while i < N:
        i += 1
    ct.store(y, index=(0,), tile=ct.full((8,), 1.0, dtype=ct.float32) * i)


def _interpreter(kernel, args, grid):
    from tilecheck.interp.engine import Interpreter
    from tilecheck.interp.schedule import Schedule

    module, _ = module_for(kernel, args)
    return Interpreter(module, args, grid, Schedule())


def test_a_spin_no_block_left_to_run_can_end_stops_within_a_few_trips():
    from tilecheck.interp.ops.control import STUCK_TRIPS
    from tilecheck.interp.wave import TripLimitError

    args = (np.zeros(16, np.float32), np.ones(2400, np.float32), np.zeros(1, np.int32), 300)
    interp = _interpreter(flag_after_work, args, (2, 1, 1))
    with pytest.raises(TripLimitError, match="changed nothing"):
        interp.run(np.array([[1, 0, 0]], np.int64))  # block 1 alone: nobody raises its flag
    assert interp.iterations <= STUCK_TRIPS + 1  # not the 100,000 trips of the trip limit


def test_a_spin_waiting_for_a_block_that_computes_before_it_writes_is_not_stopped():
    # block 0's 300 trips write nothing: block 1 spins through them, its state unchanged, but
    # block 0 is running, so the spin is not stuck
    y = np.zeros(16, np.float32)
    interp = _interpreter(flag_after_work, (y, np.ones(2400, np.float32), np.zeros(1, np.int32), 300), (2, 1, 1))
    interp.run(np.array([[1, 0, 0], [0, 0, 0]], np.int64))  # block 1 first: it spins while block 0 works
    assert interp.iterations > 300 + 100  # block 1 spun through block 0's trips
    assert y.tolist() == [300.0] * 16
    args = (np.zeros(16, np.float32), np.ones(2400, np.float32), np.zeros(1, np.int32), 300)
    assert tc.detect(flag_after_work, args, (2, 1, 1)).status == "verified"



def test_a_loop_whose_carried_value_changes_runs_to_its_end():
    y = np.zeros(8, np.float32)
    _interpreter(count_up, (y, 500), (1, 1, 1)).run()
    assert y.tolist() == [500.0] * 8
