"""A kernel's program identity (``ir.identity.program_digest``): the Tile IR less optimization
hints. Configurations of an autotuner that differ in hints alone share it, and so one verdict;
anything else that differs gives another."""
import numpy as np
import pytest

ct = pytest.importorskip("cuda.tile")

from tests.verifier import constant_kernels as C  # noqa: E402
from tilecheck.ir.cutile import module_for  # noqa: E402
from tilecheck.ir.identity import access_digest, program_digest  # noqa: E402
from tilecheck.ir.lifting import lifted  # noqa: E402
from tilecheck.runtime import launcher  # noqa: E402


@ct.kernel
def copy_tiles(x, y):
    b = ct.bid(0)
    ct.store(y, index=(b,), tile=ct.load(x, index=(b,), shape=(16,)))


@ct.kernel
def copy_tiles_shifted(x, y):
    b = ct.bid(0)
    ct.store(y, index=(b,), tile=ct.load(x, index=(b + 1,), shape=(16,)))


def _arrays(n=64):
    return np.arange(n, dtype=np.float32), np.zeros(n, np.float32)


def test_hints_alone_do_not_change_the_program():
    args = _arrays()
    plain, code = module_for(copy_tiles, args)
    hinted, hinted_code = module_for(copy_tiles.replace_hints(occupancy=4), args)
    assert code != hinted_code  # the hint is in the Tile IR
    assert program_digest(plain) == program_digest(hinted)


def test_anything_but_hints_changes_the_program():
    args = _arrays()
    assert program_digest(module_for(copy_tiles, args)[0]) != program_digest(module_for(copy_tiles_shifted, args)[0])
    # another specialisation (dtype) is another program
    ints = (np.arange(64, dtype=np.int32), np.zeros(64, np.int32))
    assert program_digest(module_for(copy_tiles, args)[0]) != program_digest(module_for(copy_tiles, ints)[0])


def test_an_autotuners_hint_only_configurations_are_verified_once(monkeypatch):
    from tilecheck.verifier import api

    calls = []
    real = api.verify

    def counted(*a, **k):
        calls.append(a[0])
        return real(*a, **k)

    monkeypatch.setattr(api, "verify", counted)
    monkeypatch.setattr(launcher, "_VERIFIED", {})
    args = _arrays(48)
    reports = [launcher.check_launch(copy_tiles.replace_hints(occupancy=n), args, (3, 1, 1))[1] for n in (1, 2, 4)]
    assert [r.status for r in reports] == ["verified"] * 3
    assert len(calls) == 1
    launcher.check_launch(copy_tiles_shifted, args, (2, 1, 1), refuse_unknown=False)
    assert len(calls) == 2  # another program is verified on its own


def test_a_launch_decided_on_its_data_is_decided_once_across_hint_only_configurations(monkeypatch):
    from tests.verifier.launch_data_kernels import scatter
    from tilecheck.verifier import api

    calls = []
    real = api.verify

    def counted(*a, **k):
        calls.append(k.get("every_shape", True))
        return real(*a, **k)

    monkeypatch.setattr(api, "verify", counted)
    monkeypatch.setattr(launcher, "_VERIFIED", {})
    monkeypatch.setattr(launcher, "_ON_DATA", {})
    x, y = np.arange(64, dtype=np.float32), np.zeros(64, np.float32)
    idx = np.array([3, 0, 2, 1], np.int32)  # a permutation: this launch is race-free
    for n in (1, 2, 4):
        _, report = launcher.check_launch(scatter.replace_hints(occupancy=n), (x, y, idx, 16), (4, 1, 1))
        assert report.status == "verified"
    assert calls == [True, False]  # one cached verify, one decided on the data
    x[0] = 7.0  # other float contents: the static data step read only the indices
    launcher.check_launch(scatter.replace_hints(occupancy=16), (x, y, idx, 16), (4, 1, 1))
    assert calls == [True, False]
    idx[1] = 3  # other contents: decided again (and refused: blocks 0 and 1 write one tile)
    with pytest.raises(launcher.RaceError):
        launcher.check_launch(scatter.replace_hints(occupancy=8), (x, y, idx, 16), (4, 1, 1))
    assert calls == [True, False, False]


def test_a_launch_the_detector_decided_is_remembered_with_its_floats(monkeypatch):
    import importlib

    from tests.verifier.launch_data_kernels import scatter
    from tilecheck.verifier import api

    exact = importlib.import_module("tilecheck.interp.detect")
    calls = []
    real = api.verify

    def by_detector(*a, **k):  # the data step as if the exact detector decided it
        if k.get("every_shape", True):
            return real(*a, **k)
        calls.append(1)
        monkeypatch.setattr(exact, "runs_started", exact.runs_started + 1)
        report = real(*a, **k)
        assert report.status == "verified"
        return report

    monkeypatch.setattr(api, "verify", by_detector)
    monkeypatch.setattr(launcher, "_VERIFIED", {})
    monkeypatch.setattr(launcher, "_ON_DATA", {})
    x, y = np.arange(64, dtype=np.float32), np.zeros(64, np.float32)
    idx = np.array([3, 0, 2, 1], np.int32)
    launcher.check_launch(scatter, (x, y, idx, 16), (4, 1, 1))
    launcher.check_launch(scatter.replace_hints(occupancy=2), (x, y, idx, 16), (4, 1, 1))
    assert len(calls) == 1
    x[0] = 7.0  # a detector's verdict may follow the floats: decided again
    launcher.check_launch(scatter.replace_hints(occupancy=4), (x, y, idx, 16), (4, 1, 1))
    assert len(calls) == 2


# ---- the contracts' key reads as the model reads (issue 51) -------------------------------------
def test_a_constant_that_decides_no_address_leaves_the_contracts_key_alone():
    x, y = np.ones(64, np.float32), np.zeros(64, np.float32)
    a, b = module_for(C.scaled_copy, (x, y, 2))[0], module_for(C.scaled_copy, (x, y, 3))[0]
    assert program_digest(a) != program_digest(b)  # a launch's whole report is still per value
    assert access_digest(a) == access_digest(b) and lifted(a) is None


def test_a_float_cast_is_the_identity_to_the_contracts_key():
    y = np.zeros(64, np.float32)
    a = module_for(C.widened_copy, (np.ones(64, np.float16), y))[0]
    b = module_for(C.widened_copy, (np.ones(64, np.float32), y))[0]
    assert any(op.name == "ftof" for op in a.entry.walk()) and not any(op.name == "ftof" for op in b.entry.walk())
    assert access_digest(a) == access_digest(b)


def test_integer_widths_and_addresses_still_make_another_key():
    x, y = np.ones(64, np.float32), np.zeros(64, np.float32)
    a = module_for(C.guarded_copy, (x, y, 64, 16))[0]
    b = module_for(C.guarded_copy, (x, y, 64, 32))[0]  # another tile shape
    assert access_digest(lifted(a).module) != access_digest(lifted(b).module)


def test_the_keys_model_rank_is_the_models():
    # ir/ does not import the verifier: the rank past which the model cannot analyse an op is
    # written twice, and an op the key leaves out must be one the model analyses
    from tilecheck.ir import identity
    from tilecheck.verifier.model.values import MAX_RANK

    assert identity.MODEL_MAX_RANK == MAX_RANK
