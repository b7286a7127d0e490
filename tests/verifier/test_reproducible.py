"""Same input, same verdict, same witness (DESIGN §4): whatever was verified before in the process,
and whatever the machine's load (budgets are Z3 work limits, not wall-clock time)."""
import tilecheck
from corpus.kernels import atomics, attention, gemm, layouts, norms

KERNELS = [attention.head_permute_swapped, gemm.persistent_matmul_short_stride, norms.partial_sums_lock_too_early,
           layouts.scatter_off_by_one, atomics.moe_scatter, gemm.matmul, attention.head_permute_paper_fix]


def _reports(order):
    out = {}
    for kernel in order:
        case = tilecheck.cases_of(kernel)[0]
        d = tilecheck.verify(kernel, case.make_args(), case.grid).to_dict()
        d.pop("stats")
        out[kernel.__name__ if hasattr(kernel, "__name__") else str(kernel)] = d
    return out


def test_verdicts_and_witnesses_do_not_depend_on_what_ran_before():
    forward = _reports(KERNELS)
    backward = _reports(list(reversed(KERNELS)))
    again = _reports(KERNELS[3:4])
    assert forward == backward
    key = next(iter(again))
    assert again[key] == forward[key]
    assert any(d["status"] == "race" for d in forward.values())
