"""Issue 23: ``verify``, ``detect``, ``launch`` and ``run_repeated`` called from several threads at
once. Each call owns its solver context and state, so the results equal the single-threaded ones
(eight threads used to crash the process inside Z3: per-verify contexts replaced Z3's
process-wide main context while other threads were using it)."""
import threading

import numpy as np

import tilecheck
from corpus.kernels import attention, elementwise
from tilecheck.cases import cases_of

KERNELS = [attention.head_permute_swapped, attention.head_permute_safe, elementwise.tiled_view_overlap,
           elementwise.vector_add]


def _case(kernel):
    case = cases_of(kernel)[0]
    return case.make_args(), case.grid


def _verdict(kernel):
    args, grid = _case(kernel)
    report = tilecheck.verify(kernel, args, grid)
    return report.status, str(report)


def _detected(kernel):
    args, grid = _case(kernel)
    report = tilecheck.detect(kernel, args, grid)
    return report.status, [str(f.witness) for f in report.findings]


def _launched(kernel):
    args, grid = _case(kernel)
    try:
        tilecheck.launch(grid, kernel, args)
    except tilecheck.RaceError:
        return "refused", None
    return "ran", [np.asarray(a).tobytes() for a in args if isinstance(a, np.ndarray)]


def _repeated(kernel):
    args, grid = _case(kernel)
    report = tilecheck.run_repeated(kernel, args, grid, runs=3)
    return report.deterministic, sorted((name, d.distinct_outcomes) for name, d in report.arrays.items())


CALLS = [_verdict, _detected, _launched, _repeated]


def test_concurrent_calls_give_the_single_threaded_results():
    work = [(call, kernel) for call in CALLS for kernel in KERNELS]
    expected = {(call, kernel): call(kernel) for call, kernel in work}
    got, errors = {}, []

    def worker(items):
        for call, kernel in items:
            try:
                got[(call, kernel)] = call(kernel)
            except Exception as exc:  # noqa: BLE001 - reported below, with the call that raised
                errors.append((call.__name__, kernel, repr(exc)))

    # eight threads, each with every kind of call, in different orders, all running at once
    threads = [threading.Thread(target=worker, args=(work[i::8] + work[(i + 3) % 8::8],)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(got) == len(work)
    for key, value in got.items():
        assert value == expected[key], key


def test_no_solver_term_is_left_to_the_cycle_collector():
    """What makes per-thread contexts safe: a Z3 term must be freed in the thread that made it, so
    none may sit in a reference cycle (the cycle collector runs in whichever thread triggers it)."""
    import gc

    import z3

    for kernel in KERNELS[:3]:
        args, grid = _case(kernel)
        gc.collect()
        gc.disable()
        gc.set_debug(gc.DEBUG_SAVEALL)
        try:
            tilecheck.verify(kernel, args, grid)
            gc.collect()
            leaked = [o for o in gc.garbage if isinstance(o, (z3.AstRef, z3.Solver, z3.ModelRef, z3.Context))]
        finally:
            gc.garbage.clear()
            gc.set_debug(0)
            gc.enable()
        assert not leaked, (kernel, leaked[:3])


def test_a_verify_leaves_the_older_objects_out_of_the_collector_and_hands_them_back(monkeypatch):
    """While a verification runs, the objects alive before it are frozen (a full collection would
    walk a long process's whole heap); after it they are back, and a freeze made by someone else
    is left as it was."""
    import gc

    from tilecheck.verifier import pipeline

    inside = []
    real = pipeline.prove

    def spy(*a, **kw):
        inside.append(gc.get_freeze_count())
        return real(*a, **kw)

    monkeypatch.setattr(pipeline, "prove", spy)
    args, grid = _case(elementwise.vector_add)
    assert gc.get_freeze_count() == 0
    tilecheck.verify(elementwise.vector_add, args, grid, cache=False)
    assert inside[-1] > 0 and gc.get_freeze_count() == 0
    calls = []
    monkeypatch.setattr(gc, "unfreeze", lambda real=gc.unfreeze: calls.append("unfreeze") or real())
    gc.freeze()  # a process that froze its heap itself (before a fork, say)
    try:
        tilecheck.verify(elementwise.vector_add, args, grid, cache=False)
        assert not calls and gc.get_freeze_count() > 0
    finally:
        monkeypatch.undo()
        gc.unfreeze()
