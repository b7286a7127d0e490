"""Same input, same verdict, same witness (DESIGN §4): whatever was verified before in the process,
and whatever the machine's load (budgets are Z3 work limits, not wall-clock time)."""
import pytest

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


_SCRIPT = """
import json, sys
sys.path.insert(0, {root!r})
from tests.verifier.test_reproducible import KERNELS, _reports
order = KERNELS if sys.argv[1] == "forward" else list(reversed(KERNELS))
print(json.dumps({{v["kernel"]: v for v in _reports(order).values()}}, sort_keys=True))
"""


@pytest.mark.slow  # four busy processes; the fast tier checks the order part in-process (the test above)
def test_the_same_verdicts_in_concurrent_processes_under_cpu_load():
    """Issue 21: verdicts, witnesses and reasons do not depend on machine load or kernel order. Two
    processes verify the kernels at once (one in reverse order) while two more spin the CPU; both
    answer exactly as a quiet single run does."""
    import subprocess
    import sys

    from tests.conftest import ROOT

    script = _SCRIPT.format(root=str(ROOT))

    def start(order):
        return subprocess.Popen([sys.executable, "-c", script, order], stdout=subprocess.PIPE, text=True, cwd=ROOT)

    quiet, _ = start("forward").communicate(timeout=900)
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        loaded = [start("forward"), start("backward")]
        answers = [p.communicate(timeout=1800)[0] for p in loaded]
    finally:
        for b in burners:
            b.kill()
            b.wait()
    assert quiet.strip() and all(a == quiet for a in answers)
