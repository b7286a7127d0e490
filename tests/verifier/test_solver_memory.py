"""Issue 53: Z3's memory is capped for the process, and Z3 running out of it (or failing) makes that
verification ``unknown`` with the reason, never a crash of the test session (solver/memory.py)."""
import json
import os
import subprocess
import sys
import textwrap

import z3

import tilecheck
from corpus.kernels import attention
from tests.conftest import ROOT
from tilecheck.verifier.solver import memory


def _case(kernel):
    case = tilecheck.cases_of(kernel)[0]
    return case.make_args(), case.grid


def _run(code, **env):
    """``code`` in a fresh interpreter (Z3's cap is process-wide); its last line of output as JSON."""
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, capture_output=True, text=True,
                          timeout=600, env={**os.environ, "PYTHONPATH": str(ROOT), **env})
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_cap_is_set_at_import_and_the_variable_moves_it():
    code = "import json, z3, tilecheck; print(json.dumps(z3.get_param('memory_max_size')))"
    assert _run(code) == str(memory.DEFAULT_MEMORY_MB)
    assert _run(code, TILECHECK_Z3_MEMORY_MB="512") == "512"
    assert _run(code, TILECHECK_Z3_MEMORY_MB="0") == "0"
    # a process that set Z3's cap itself keeps it
    assert _run("import json, z3; z3.set_param('memory_max_size', 777); import tilecheck; "
                "print(json.dumps(z3.get_param('memory_max_size')))") == "777"


def test_out_of_memory_is_unknown_and_the_next_verification_has_the_memory_again():
    # 5 MB: Z3 cannot even make the verification's context, where z3-solver's own Context would hand
    # Z3's NULL to Z3_set_error_handler and end the process
    verdicts = _run("""
        import json, z3, tilecheck
        from corpus.kernels import attention
        case = tilecheck.cases_of(attention.head_permute_safe)[0]
        args = case.make_args()
        out = [tilecheck.verify(attention.head_permute_safe, args, case.grid, cache=False) for _ in range(2)]
        z3.set_param("memory_max_size", 0)
        out.append(tilecheck.verify(attention.head_permute_safe, args, case.grid, cache=False))
        print(json.dumps([[r.status, r.reasons] for r in out]))
    """, TILECHECK_Z3_MEMORY_MB="5")
    for status, reasons in verdicts[:2]:
        assert status == "unknown"
        assert "the solver ran out of memory (its cap: 5 MB)" in reasons[0] and "TILECHECK_Z3_MEMORY_MB" in reasons[0]
    assert verdicts[2][0] == "verified"


def test_a_query_that_fails_inside_z3_is_unknown(monkeypatch):
    kernel = attention.head_permute_safe
    args, grid = _case(kernel)

    def out_of_memory(self, *assumptions):
        raise z3.Z3Exception(b"out of memory")

    monkeypatch.setattr(z3.Solver, "check", out_of_memory)
    report = tilecheck.verify(kernel, args, grid, cache=False)
    assert report.status == "unknown" and report.kernel == "head_permute_safe"
    assert report.reasons[0].startswith("the solver ran out of memory")
    monkeypatch.undo()
    assert tilecheck.verify(kernel, args, grid, cache=False).status == "verified"


def test_failure_reasons_name_what_failed():
    assert "ran out of memory" in memory.failure_reason(z3.Z3Exception(b"out of memory"))
    assert memory.failure_reason(z3.Z3Exception(b"invalid argument")) == \
        "the solver failed (invalid argument): the verdict is unknown"
    assert memory.failure_reason(MemoryError()).startswith("out of memory while verifying (MemoryError)")


def test_out_of_memory_is_unknown_at_once_and_collects_the_garbage(monkeypatch):
    # a query that ran out runs out again when asked again, at the same cost: unknown at once; the
    # garbage (contexts in reference cycles) goes now, and the next verification has its budget
    import gc

    kernel = attention.head_permute_safe
    args, grid = _case(kernel)
    real, calls, collected = z3.Solver.check, [], []

    def once(self, *assumptions):
        calls.append(1)
        if len(calls) == 1:
            raise z3.Z3Exception(b"out of memory")
        return real(self, *assumptions)

    monkeypatch.setattr(z3.Solver, "check", once)
    monkeypatch.setattr(gc, "collect", lambda *a: collected.append(1) or 0)
    report = tilecheck.verify(kernel, args, grid, cache=False)
    assert report.status == "unknown" and "ran out of memory" in report.reasons[0]
    assert calls == [1] and collected == [1]
    assert tilecheck.verify(kernel, args, grid, cache=False).status == "verified"


def test_a_verification_after_one_that_ran_out_has_its_budget_again():
    # Z3 keeps counting what a failed allocation asked for: after one query runs out of memory, the
    # process's count stays near the cap with nothing alive; each new verification gets the budget
    # above what Z3 counts (FlagGems' suite: 127 launches unknown after one bitonic sort ran out)
    verdicts = _run("""
        import gc, json, z3, tilecheck
        from corpus.kernels import attention
        from tilecheck.verifier.solver import memory

        def blow():
            ctx = memory.new_context()
            x, y = z3.BitVec("x", 4096, ctx), z3.BitVec("y", 4096, ctx)
            solver = z3.Solver(ctx=ctx)
            solver.add(x * y == 12345, x * x * y != y * y * x)
            try:
                return str(solver.check())
            except z3.Z3Exception as exc:
                return str(exc)

        ran_out = [blow() for _ in range(3)]  # each leaves more counted (65, 97, 113 MB of 120)
        gc.collect()
        stuck = z3.z3core.Z3_get_estimated_alloc_size() >> 20
        case = tilecheck.cases_of(attention.head_permute_safe)[0]
        report = tilecheck.verify(attention.head_permute_safe, case.make_args(), case.grid, cache=False)
        print(json.dumps([ran_out, stuck, report.status, report.reasons]))
    """, TILECHECK_Z3_MEMORY_MB="120")
    ran_out, stuck, status, reasons = verdicts
    assert set(ran_out) <= {"unknown", "out of memory"} and stuck > 100, verdicts  # the count stays
    assert status == "verified", reasons
