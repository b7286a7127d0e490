"""Long fuzzing run of the tilecheck command line and the two Tile IR readers (issue 14).

    python scripts/fuzz_cli.py [--examples 10000] [--seed 0] [--timeout 60] [--out fuzz-report.json]

Draws inputs with the strategies of tests/cli/fuzz_inputs.py (argument vectors over a generated
kernel file, a mutated .tileir text file, a mutated .tileirbc bytecode file and a pyproject.toml),
runs ``tilecheck.cli.main`` in-process on each, and asserts: no traceback, no exception escaping
``main``, an exit status of 0-3, and exit 1 only with a race in the output. Every fourth input
also feeds its two IR files straight to the readers (``parse``, ``read_bytecode``), which may
raise ``TilecheckError`` and nothing else. Failures are collected, not fatal: the run goes on and
prints a summary (inputs, failures by kind, slow inputs, exit statuses, time); each failure is
written to the JSON report with its argument vector and output, and its files are kept.
Exits 1 if anything failed.

Issue 23's classes: kernel files that print while they load and while their factories run (a
JSON or SARIF report on stdout must still parse), a twin kernel file whose path ends like the
first one's (every reported kernel must be defined in the file it is reported under), big .tileir
files (2,000-8,000 ops), and reruns of an input: one in four with stdout/stderr closed or failing
(the exit status must not change), one in eight with SIGTERM at a random moment (exit 143, or the
status it had if it finished first; no worker left running).
"""
from __future__ import annotations

import argparse
import collections
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.cli import fuzz_inputs as F


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=int, default=60, help="seconds per input before it counts as slow")
    parser.add_argument("--out", default="fuzz-report.json")
    parser.add_argument("--keep", default=None, help="folder for the files of failing inputs (default: a temp dir)")
    opts = parser.parse_args()

    from tilecheck import ir
    from tilecheck.errors import TilecheckError

    work = Path(tempfile.mkdtemp(prefix="tilecheck-fuzz-"))
    keep = Path(opts.keep) if opts.keep else work / "failures"
    statuses: collections.Counter[str] = collections.Counter()
    kinds: collections.Counter[str] = collections.Counter()
    failures: list[dict] = []
    slow: list[list[str]] = []
    count = [0]
    start = time.perf_counter()

    def reader_problems(project: F.Project) -> list[str]:
        found = []
        for name, read in (("parse", lambda: ir.parse(project.text, "t.tileir")),
                           ("read_bytecode", lambda: ir.read_bytecode(project.bytecode))):
            try:
                read()
            except TilecheckError:
                pass
            except Exception as exc:  # noqa: BLE001
                found.append(f"{name} raised {type(exc).__name__}: {exc}")
        return found

    projects = st.builds(lambda k, t, b, p, twin: F.Project(Path(), k, t, b, p, twin),
                         F.loud_kernel_file(), F.tileir_text_or_big(), F.tileir_bytes(), F.PYPROJECTS,
                         st.one_of(st.none(), st.none(), st.none(), F.loud_kernel_file()))

    @settings(max_examples=opts.examples, deadline=None, database=None, derandomize=False,
              suppress_health_check=list(HealthCheck))
    @given(project=projects, args=F.argv(jobs=("1", "2")), rerun=st.integers(0, 7),
           streams=st.tuples(F.broken_streams(), F.broken_streams()), delay=st.floats(0.0, 3.0))
    def one(project: F.Project, args: list[str], rerun: int, streams: tuple, delay: float) -> None:
        n = count[0]
        count[0] += 1
        folder = work / "inputs" / str(n)
        F.write_project(folder, project)
        args = F.resolve(args, folder)
        try:
            status, out, err = F.run_main(args, folder, opts.timeout)
        except F.Slow:
            slow.append(args)
            statuses["slow"] += 1
            return
        statuses[str(status) if not isinstance(status, BaseException) else type(status).__name__] += 1
        found = F.problems(args, status, out, err, folder)
        if n % 4 == 0:
            found += reader_problems(project)
        if not isinstance(status, BaseException) and rerun < 2:  # the same input, with broken streams
            try:
                again, _, _ = F.run_main(args, folder, opts.timeout, *streams)
                found += F.stream_problems(again, status, *streams)
                statuses["streams"] += 1
            except F.Slow:
                slow.append(args)
        elif not isinstance(status, BaseException) and rerun == 2:  # the same input, cancelled
            try:
                again, out2, err2 = F.run_main(args, folder, opts.timeout, sigterm_after=delay)
                found += [f"{p} (after {delay:.2f} s)" for p in F.signal_problems(again, status, out2, err2, args)]
                statuses[f"sigterm:{again}"] += 1
            except F.Slow:
                slow.append(args)
        if found:
            for f in found:
                kinds[f.split(":")[0]] += 1
            shutil.copytree(folder, keep / str(n), dirs_exist_ok=True)
            failures.append({"input": n, "args": args, "status": repr(status), "problems": found,
                             "stdout": out[-4000:], "stderr": err[-4000:], "files": str(keep / str(n))})
            with open(opts.out + ".partial.jsonl", "a") as log:  # readable while the run goes on
                log.write(json.dumps(failures[-1]) + "\n")
        else:
            shutil.rmtree(folder, ignore_errors=True)
        if count[0] % 500 == 0:
            print(f"  {count[0]} inputs, {len(failures)} failing, {time.perf_counter() - start:.0f} s",
                  file=sys.stderr, flush=True)

    import hypothesis

    hypothesis.seed(opts.seed)(one)()
    elapsed = time.perf_counter() - start
    summary = {"inputs": count[0], "failures": len(failures), "failure_kinds": dict(kinds), "slow": len(slow),
               "exit_statuses": dict(statuses), "seconds": round(elapsed, 1), "seed": opts.seed,
               "timeout_s": opts.timeout}
    Path(opts.out).write_text(json.dumps({"summary": summary, "failures": failures, "slow": slow}, indent=2))
    print(json.dumps(summary, indent=2))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
