"""The ``tilecheck`` command line: verify, run, explain, eval, ir.

Exit status: 0 all verified (or outputs identical), 1 a race (or differing outputs; with --strict also an
order-dependent result), 2 an unknown verdict (unless allowed), 3 a usage or input error.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from tilecheck.errors import TilecheckError

EXIT_OK, EXIT_RACE, EXIT_UNKNOWN, EXIT_USAGE = 0, 1, 2, 3


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # usage errors exit 3, not argparse's 2 (2 means unknown)
        self.print_usage(sys.stderr)
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        sys.exit(EXIT_USAGE)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="tilecheck", description="Race detection for cuTile Python / CUDA Tile IR kernels")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    v = sub.add_parser("verify", help="verify every declared case of the kernels in PATHs")
    v.add_argument("paths", nargs="*", help="Python files, packages or .tileir files ([tool.tilecheck] paths)")
    v.add_argument("--format", choices=("text", "json", "sarif"), default="text")
    v.add_argument("--output", "-o", help="write the report to FILE instead of stdout")
    v.add_argument("--jobs", "-j", type=int, help="parallel workers (default: all cores)")
    v.add_argument("--timeout", type=float, help="solver timeout per query, seconds")
    v.add_argument("--grid", help="grid for .tileir files, e.g. 8,1,1 (default: any grid)")
    v.add_argument("--strict", action="store_true", help="an order-dependent float-atomic result fails (exit 1)")
    v.add_argument("--allow-unknown", action="store_true", help="an unknown verdict does not fail (exit 0)")

    r = sub.add_parser("run", help="run a kernel repeatedly under adversarial schedules; compare outputs")
    r.add_argument("target", help="FILE::KERNEL")
    r.add_argument("--case", type=int, default=0, help="which @tilecheck.case (default 0)")
    r.add_argument("--repeat", type=int, default=20, help="number of runs (default 20)")
    r.add_argument("--backend", choices=("cpu", "cuda"), default="cpu")
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--report", help="write the JSON report to FILE")
    r.add_argument("--heatmap", help="write a PNG of differing elements to FILE")

    e = sub.add_parser("explain", help="verify a kernel and replay each race's witness on the interpreter")
    e.add_argument("target", help="FILE::KERNEL")
    e.add_argument("--case", type=int, default=0)

    ev = sub.add_parser("eval", help="verify every kernel of a labelled corpus and score the verdicts")
    ev.add_argument("corpus", help="a corpus directory (with manifest.toml) or a manifest file")
    ev.add_argument("--format", choices=("text", "json"), default="text")
    ev.add_argument("--run", action="store_true", help="also run each kernel repeatedly on the CPU interpreter")
    ev.add_argument("--runs", type=int, default=10, help="runs per kernel with --run (default 10)")
    ev.add_argument("--timeout", type=float, default=10.0, help="solver timeout per query, seconds")

    i = sub.add_parser("ir", help="compile kernels to Tile IR and print a summary (or the IR itself)")
    i.add_argument("paths", nargs="+", help="Python files, packages or .tileir files")
    i.add_argument("--print-ir", action="store_true", help="print the full Tile IR text of each kernel")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    commands = {"verify": _verify, "run": _run, "explain": _explain, "eval": _eval, "ir": _ir}
    try:
        return commands[args.command](args)
    except TilecheckError as exc:
        print(f"tilecheck: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:  # e.g. piped into `head`
        sys.stderr.close()
        return EXIT_OK


# ---- verify --------------------------------------------------------------------------------------
def _verify(args: argparse.Namespace) -> int:
    from tilecheck import __version__
    from tilecheck.collect import collect
    from tilecheck.config import load_config
    from tilecheck.formats import render_json, render_sarif, render_text
    from tilecheck.jobs import Job

    config = load_config()
    paths = args.paths or config.paths
    if not paths:
        raise TilecheckError("no paths given (pass files or directories, or set [tool.tilecheck] paths)")
    timeout = args.timeout or config.timeout
    grid = tuple(int(g) for g in args.grid.split(",")) if args.grid else None
    jobs: list[Job] = []
    no_case: list[str] = []
    for entry in collect(paths):
        if entry.kernel is None:
            jobs.append(Job(str(entry.path), None, 0, timeout, (), grid))
        elif not entry.cases:
            no_case.append(entry.id)
        else:
            assume = tuple(config.assume.get(entry.name, ()))
            jobs.extend(Job(str(entry.path), entry.name, i, timeout, assume) for i in range(len(entry.cases)))
    results = _run_jobs(jobs, args.jobs or config.jobs or os.cpu_count() or 1)
    if args.format == "json":
        text = render_json(results, no_case)
    elif args.format == "sarif":
        text = render_sarif(results, Path.cwd(), __version__)
    else:
        text = render_text(results, no_case)
    if args.output:
        Path(args.output).write_text(text + "\n")
    else:
        print(text)
    if any(r.status == "error" for r in results):
        return EXIT_USAGE
    strict_hit = args.strict and any(f["kind"] == "order-dependent-atomic" for r in results if r.report
                                     for f in r.report["findings"])
    if any(r.status == "race" for r in results) or strict_hit:
        return EXIT_RACE
    allow = args.allow_unknown
    if any(r.status == "unknown" and not (allow or config.unknown_allowed(r.id, r.kernel)) for r in results):
        return EXIT_UNKNOWN
    return EXIT_OK


def _run_jobs(jobs: list, workers: int) -> list:
    from concurrent.futures import ProcessPoolExecutor

    from tilecheck.jobs import run_job

    show = sys.stdout.isatty() and len(jobs) > 1
    results = []
    if workers <= 1 or len(jobs) <= 1:
        for n, job in enumerate(jobs, 1):
            results.append(run_job(job))
            _progress(show, n, len(jobs))
    else:
        with ProcessPoolExecutor(max_workers=min(workers, len(jobs))) as pool:
            for n, result in enumerate(pool.map(run_job, jobs), 1):
                results.append(result)
                _progress(show, n, len(jobs))
    if show:
        print(file=sys.stderr)
    return results


def _progress(show: bool, done: int, total: int) -> None:
    if show:
        bar = int(30 * done / total)
        print(f"\r  verifying [{'#' * bar}{'.' * (30 - bar)}] {done}/{total}", end="", file=sys.stderr, flush=True)


# ---- run / explain -------------------------------------------------------------------------------
def _target(spec: str, case_index: int) -> tuple[object, tuple, object]:
    from tilecheck.cases import cases_of
    from tilecheck.collect import load_module

    if "::" not in spec:
        raise TilecheckError(f"expected FILE::KERNEL, got '{spec}'")
    file, name = spec.rsplit("::", 1)
    module = load_module(Path(file))
    kernel = getattr(module, name, None)
    if kernel is None:
        raise TilecheckError(f"{file} has no kernel '{name}'")
    cases = cases_of(kernel)
    if not cases:
        raise TilecheckError(f"{spec}: no case declared (add @tilecheck.case(grid=..., args=...))")
    if not 0 <= case_index < len(cases):
        raise TilecheckError(f"{spec} has {len(cases)} case(s); --case {case_index} does not exist")
    case = cases[case_index]
    return kernel, case.make_args(), case.grid


def _run(args: argparse.Namespace) -> int:
    from tilecheck.runtime import run_repeated

    kernel, kargs, grid = _target(args.target, args.case)
    report = run_repeated(kernel, kargs, grid, runs=args.repeat, backend=args.backend, seed=args.seed)
    print(report)
    if args.report:
        Path(args.report).write_text(report.to_json() + "\n")
    if args.heatmap:
        report.save_heatmap(args.heatmap)
    return EXIT_OK if report.deterministic else EXIT_RACE


def _explain(args: argparse.Namespace) -> int:
    from tilecheck.verifier import verify

    kernel, kargs, grid = _target(args.target, args.case)
    report = verify(kernel, kargs, grid)
    print(report)
    races = [f for f in report.findings if f.is_race]
    for f in races:
        print()
        print(f.replay())
    return EXIT_RACE if races else EXIT_UNKNOWN if report.status == "unknown" else EXIT_OK


# ---- eval / ir -----------------------------------------------------------------------------------
def _eval(args: argparse.Namespace) -> int:
    import json

    from tilecheck.evaluation import EntryResult, evaluate

    def progress(e: EntryResult) -> None:
        if args.format != "text":
            return
        extra = ""
        if e.run is not None:
            extra = ("  runs: deterministic" if e.run["deterministic"] else
                     f"  runs: NONDETERMINISTIC, {e.run['fraction_differing']:.1%} of elements differ")
        print(f"{'ok ' if e.agrees else 'XX '}{e.status:9s} {e.id}{extra}", flush=True)

    result = evaluate(args.corpus, run=args.run, runs=args.runs, timeout_s=args.timeout, progress=progress)
    if args.format == "json":
        print(json.dumps(result.to_dict(), indent=2))
    else:
        print()
        print(result.table())
    return EXIT_OK if not result.disagreements else EXIT_RACE


def _ir(args: argparse.Namespace) -> int:
    from tilecheck.collect import collect
    from tilecheck.ir import from_cutile, parse
    from tilecheck.ir.summary import summarize

    status = EXIT_OK
    for entry in collect(args.paths):
        start = time.perf_counter()
        try:
            if entry.kernel is None:
                module = parse(entry.path.read_text(), str(entry.path))
                header = f"{entry.id}"
            elif not entry.cases:
                print(f"{entry.id}: no case declared (add @tilecheck.case(grid=..., args=...))\n")
                continue
            else:
                case = entry.cases[0]
                module = from_cutile(entry.kernel, case.make_args())
                header = f"{entry.id}  [case 1 of {len(entry.cases)}, grid {case.grid}]"
        except TilecheckError as exc:
            print(f"{entry.id}: error: {exc}\n")
            status = EXIT_USAGE
            continue
        elapsed = (time.perf_counter() - start) * 1000
        print(f"{header}  ({elapsed:.0f} ms)")
        print(module.to_text() if args.print_ir else summarize(module))
        print()
    return status


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
