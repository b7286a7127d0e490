"""Issue 50: the public API checks its arguments at the door. A property draws a wrong value for one
parameter of one public function at a time (every other argument valid): the call either accepts it
or raises ``TypeError``, ``ValueError`` or ``TilecheckError`` whose message names the parameter. Then
each example the issue gives, as a test."""
import contextlib
import math
import tempfile

import cuda.tile as ct
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tilecheck
from tests.tiers import examples
from tilecheck.errors import TilecheckError


@ct.kernel
def copy(x, y, T: ct.Constant[int]):
    b = ct.bid(0)
    ct.store(y, index=(b,), tile=ct.load(x, index=(b,), shape=(T,)))


def _args():
    return (np.ones(64, np.float32), np.zeros(64, np.float32), 16)


# each public callable: a valid call as keyword arguments, and the names its message may use for each
CALLS = {
    "verify": (tilecheck.verify, lambda: dict(kernel=copy, args=_args(), grid=(4, 1, 1), assume=(), timeout_s=60.0,
                                              data=True, contract=None, work=10**8, cache=False, every_shape=True,
                                              observed=(), data_follows=False)),
    "detect": (tilecheck.detect, lambda: dict(kernel=copy, args=_args(), grid=(4, 1, 1), assume=(), seeds=2,
                                              max_elements=None)),
    "run_repeated": (tilecheck.run_repeated, lambda: dict(kernel=copy, args=_args(), grid=(4, 1, 1), runs=2,
                                                          backend="cpu", seed=0, progress=False, max_wave=None,
                                                          max_trips=None)),
    "launch": (tilecheck.launch, lambda: dict(grid=(4, 1, 1), kernel=copy, args=_args(), stream=None, backend="cpu",
                                              unsafe=False, schedule=None)),
    "device_op": (tilecheck.device_op, lambda: dict(grid=(4, 1, 1), kernel=copy, args=_args(), backend="cpu",
                                                    unsafe=False)),
    "distinct": (tilecheck.distinct, lambda: dict(array="x", below=None)),
    "bounded": (tilecheck.bounded, lambda: dict(array="x", lo=0, hi=9, also=())),
    "nondecreasing": (tilecheck.nondecreasing, lambda: dict(array="x")),
    "case": (tilecheck.case, lambda: dict(grid=(4, 1, 1), args=_args, assume=(), name=None)),
}
# how a message may name a parameter besides ``name=``: the grid's axes, the arguments by position
ALIASES = {"grid": ("grid",), "args": ("args", "argument"), "kernel": ("kernel", "@ct.kernel", "triton.jit")}

WRONG = st.sampled_from([None, True, False, 2.5, "3", -1, 0, 10**30, [], {}, (1,), ("x",), "distinct:x",
                         np.int64(2), math.nan, -math.inf, object(), b"x", [tilecheck.distinct("x")],
                         tilecheck.distinct("x"), lambda: None, (4, 1, 1), "cpu", "gpu"])


def _call(name, parameter, value):
    function, valid = CALLS[name]
    kwargs = valid()
    kwargs[parameter] = value
    # a value accepted as a path (``cache="3"``) makes that directory: in a scratch folder, not the
    # folder the tests run from
    with tempfile.TemporaryDirectory() as scratch, contextlib.chdir(scratch):
        return function(**kwargs)


@settings(max_examples=examples(600, fast=150), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_wrong_argument_is_refused_by_name_or_accepted(data):
    name = data.draw(st.sampled_from(sorted(CALLS)))
    parameter = data.draw(st.sampled_from(sorted(CALLS[name][1]())))
    value = data.draw(WRONG)
    try:
        _call(name, parameter, value)
    except (TypeError, ValueError, TilecheckError) as exc:
        message = str(exc)
        assert any(alias in message for alias in ALIASES.get(parameter, (parameter,))), \
            f"{name}({parameter}={value!r}): {type(exc).__name__}: {message}"
    # anything else escapes and fails the test


# ---- the examples ------------------------------------------------------------------------
@pytest.mark.parametrize("runs", [2.5, "3", None, 0])
def test_run_repeated_runs(runs):
    with pytest.raises((TypeError, ValueError), match="runs="):
        tilecheck.run_repeated(copy, _args(), (4, 1, 1), runs=runs)


@pytest.mark.parametrize("seed", [None, -1, "1"])
def test_run_repeated_seed(seed):
    with pytest.raises((TypeError, ValueError), match="seed="):
        tilecheck.run_repeated(copy, _args(), (4, 1, 1), runs=2, seed=seed)


def test_bounded_with_lo_above_hi_or_a_float():
    with pytest.raises(ValueError, match="lo 5 is above hi 1"):
        tilecheck.bounded("idx", 5, 1)
    with pytest.raises(TypeError, match=r"bounded\(lo=...\)"):
        tilecheck.bounded("idx", 0.5, 9)


def test_distinct_below_must_be_an_int():
    with pytest.raises(TypeError, match=r"distinct\(below=...\) takes an int or None, got 'x'"):
        tilecheck.distinct("idx", below="x")


def test_nondecreasing_takes_a_name():
    with pytest.raises(TypeError, match=r"nondecreasing\(array=...\)"):
        tilecheck.nondecreasing(["idx"])


def test_assume_takes_one_precondition_or_its_text_form_too():
    one = tilecheck.verify(copy, _args(), (4, 1, 1), assume=tilecheck.nondecreasing("x"), cache=False)
    text = tilecheck.verify(copy, _args(), (4, 1, 1), assume="nondecreasing:x", cache=False)
    listed = tilecheck.verify(copy, _args(), (4, 1, 1), assume=[tilecheck.nondecreasing("x")], cache=False)
    assert one.status == text.status == listed.status
    assert one.assumptions == text.assumptions == listed.assumptions
    with pytest.raises(ValueError, match="verify\\(assume=...\\): unknown precondition 'distinct'"):
        tilecheck.verify(copy, _args(), (4, 1, 1), assume="distinct", cache=False)
    with pytest.raises(TypeError, match="verify\\(assume=...\\)"):
        tilecheck.verify(copy, _args(), (4, 1, 1), assume=3, cache=False)


def test_a_case_returning_a_dict_for_a_cutile_kernel():
    from tilecheck.cases import CaseError

    @tilecheck.case(grid=(4, 1, 1), args=lambda: {"made": 1})
    @ct.kernel
    def k(x, y, T: ct.Constant[int]):
        pass
    (made,) = tilecheck.cases_of(k)
    with pytest.raises(CaseError, match="returned a dict, but a cuTile kernel takes its launch arguments as a tuple"):
        made.make_args()
