"""Synchronisation idioms of real Triton libraries (issue 52): a compare-and-swap retry whose plain
load only guesses (``ir.summary.validated_loads``), and the last-block reduction."""
import numpy as np
import pytest

triton = pytest.importorskip("triton")
tl = pytest.importorskip("triton.language")

import tilecheck as tc  # noqa: E402
from corpus.kernels import triton_kernels as tk  # noqa: E402
from tilecheck.ir.summary import validated_loads  # noqa: E402
from tilecheck.ir.triton import bind  # noqa: E402


@triton.jit
def retry_with_a_store_inside(x_ptr, idx_ptr, out_ptr, seen_ptr):
    pid = tl.program_id(0)
    i = tl.load(idx_ptr + pid)
    old = tl.load(out_ptr + i)
    done = False
    while not done:
        tl.store(seen_ptr + pid, pid)  # runs as often as the guess is wrong
        prev = tl.atomic_cas(out_ptr + i, old, old * 2)
        done = prev == old
        old = prev


@triton.jit
def guess_as_an_address(x_ptr, idx_ptr, out_ptr, seen_ptr):
    pid = tl.program_id(0)
    old = tl.load(out_ptr + pid)
    tl.atomic_cas(out_ptr + pid, old, old + 1)
    tl.store(seen_ptr + old, 1)


def _guesses(kernel):
    case = tc.cases_of(tk.scatter_multiply)[0]
    module = bind(kernel, case.make_args()).module
    return {op.name for op in validated_loads(module.entry)}


def test_only_a_guess_that_reaches_nothing_but_the_swap_is_validated():
    assert _guesses(tk.scatter_multiply) == {"load_ptr_tko"}
    assert _guesses(tk.scatter_multiply_keeps_guess) == set()  # stored
    assert _guesses(retry_with_a_store_inside) == set()  # a write repeated as often as the guess fails
    assert _guesses(guess_as_an_address) == set()  # an address


@pytest.mark.parametrize("kernel, expected", [(tk.scatter_multiply, "verified"),
                                              (tk.scatter_multiply_keeps_guess, "race"),
                                              (tk.last_ticket_total_reset, "verified"),
                                              (tk.last_ticket_total_reset_early, "race")])
def test_the_idioms_verdicts_agree_with_the_detector_and_the_result_is_the_product(kernel, expected):
    case = tc.cases_of(kernel)[0]
    assert tc.verify(kernel, case.make_args(), case.grid, cache=False).status == expected
    assert tc.detect(kernel, case.make_args(), case.grid).status == expected
    if kernel is tk.scatter_multiply:
        args = case.make_args()
        tc.launch(case.grid, kernel, args)
        assert list(args["out_ptr"]) == [4, 4, 4, 4]
