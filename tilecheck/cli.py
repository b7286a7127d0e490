"""The ``tilecheck`` command line: verify, run, explain, eval, merge, ir (``run`` and ``explain`` are
``tilecheck.cli_run``; the worker pool that runs verify's cases is ``tilecheck.jobs``).

Exit status (docs/ci.md): 0 all verified (or outputs identical), 1 a race (or differing outputs; with
--strict also an order-dependent result) and nothing else, 2 an unknown verdict (unless allowed),
3 a usage or input error or an internal failure (one line each on stderr; ``--debug`` adds the
traceback), 130 interrupted (Ctrl-C), 143 terminated (SIGTERM). The streams never change it: a
closed or broken stdout/stderr loses output, not the status (``tilecheck.console``).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tilecheck import cli_run
from tilecheck.console import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_RACE,
    EXIT_TERMINATED,
    EXIT_UNKNOWN,
    EXIT_USAGE,
    Terminated,
    guarded_streams,
    sigterm_as_interrupt,
    stdout_to_stderr,
    write_file,
)
from tilecheck.errors import TilecheckError


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # usage errors exit 3, not argparse's 2 (2 means unknown)
        self.print_usage(sys.stderr)
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        sys.exit(EXIT_USAGE)


def _positive(kind: type) -> Any:
    def convert(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a positive {kind.__name__}, got {text!r}") from None
        if not value > 0 or value == float("inf"):  # also refuses nan
            raise argparse.ArgumentTypeError(f"expected a positive {kind.__name__}, got {text!r}")
        return value

    convert.__name__ = f"positive {kind.__name__}"
    return convert


def _non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}")
    return value


def _shard(text: str) -> tuple[int, int]:
    """``I/N`` -> (I, N) with 1 <= I <= N."""
    index, _, count = text.partition("/")
    try:
        i, n = int(index), int(count)
    except ValueError:
        i = n = 0
    if not 1 <= i <= n:
        raise argparse.ArgumentTypeError(f"expected I/N with 1 <= I <= N (e.g. 2/4), got {text!r}")
    return i, n


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="tilecheck", description="Race detection for cuTile Python / CUDA Tile IR kernels")
    parser.add_argument("--debug", action="store_true", help="show the traceback of errors (for bug reports)")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    v = sub.add_parser("verify", help="verify every declared case of the kernels in PATHs")
    v.add_argument("paths", nargs="*", help="Python files, packages, .tileir (text) or .tileirbc (bytecode) files "
                                            "([tool.tilecheck] paths)")
    v.add_argument("--format", choices=("text", "json", "sarif"), default="text")
    v.add_argument("--output", "-o", help="write the report to FILE instead of stdout")
    v.add_argument("--jobs", "-j", type=_positive(int), help="parallel workers (default: all cores)")
    v.add_argument("--timeout", type=_positive(float), help="wall-clock backstop per case, seconds (default 600; verdicts come from work budgets, and a "
                        "case stopped by the backstop is unknown with a reason that says so)")
    v.add_argument("--work", type=_positive(int), help="solver work per case, in Z3 rlimit units (default "
                   "400000000; deterministic: past it the case is unknown with a reason that says so)")
    v.add_argument("--grid", help="grid for Tile IR files, e.g. 8,1,1 (default: any grid)")
    v.add_argument("--strict", action="store_true", help="an order-dependent float-atomic result fails (exit 1)")
    v.add_argument("--allow-unknown", action="store_true", help="an unknown verdict does not fail (exit 0)")
    v.add_argument("--no-cache", action="store_true",
                   help="neither read nor write the proof cache (.tilecheck_cache beside the project)")
    v.add_argument("--shard", type=_shard, metavar="I/N",
                   help="verify only shard I of N (1 <= I <= N): the cases, in collection order, dealt round-robin; "
                        "merge the shards' JSON or SARIF with `tilecheck merge`")

    r = sub.add_parser("run", help="run a kernel repeatedly under adversarial schedules; compare outputs")
    r.add_argument("target", help="FILE::KERNEL")
    r.add_argument("--case", type=_non_negative_int, default=0, help="which @tilecheck.case (default 0)")
    r.add_argument("--repeat", type=_positive(int), default=20, help="number of runs (default 20)")
    r.add_argument("--backend", choices=("cpu", "cuda"), default="cpu")
    r.add_argument("--seed", type=_non_negative_int, default=0, help="seed of the first run's schedule (default 0)")
    r.add_argument("--report", help="write the JSON report to FILE")
    r.add_argument("--heatmap", help="write a PNG of differing elements to FILE")
    r.add_argument("--picture", help="write a picture of which block writes which element, the races "
                                     "marked, to FILE (.svg, or .png with the plot extra)")
    r.add_argument("--max-trips", type=_positive(int), default=None,
                   help="trips of one loop before a CPU run stops, taking it for a loop that never ends "
                        "(default 100000)")

    e = sub.add_parser("explain", help="verify a kernel and replay each race's witness on the interpreter")
    e.add_argument("target", help="FILE::KERNEL")
    e.add_argument("--case", type=_non_negative_int, default=0)
    e.add_argument("--picture", help="write a picture of which block writes which element, the races "
                                     "marked and the first witness outlined, to FILE (.svg, or .png with the plot extra)")

    ev = sub.add_parser("eval", help="verify every kernel of a labelled corpus and score the verdicts")
    ev.add_argument("corpus", help="a corpus directory (with manifest.toml) or a manifest file")
    ev.add_argument("--format", choices=("text", "json"), default="text")
    ev.add_argument("--run", action="store_true", help="also run each kernel repeatedly on the CPU interpreter "
                    "and check its launch with tilecheck.detect (a contradiction with verify fails)")
    ev.add_argument("--runs", type=_positive(int), default=10, help="runs per kernel with --run (default 10)")
    ev.add_argument("--timeout", type=_positive(float), default=600.0,
                    help="wall-clock backstop per kernel, seconds (verdicts come from work budgets)")

    m = sub.add_parser("merge", help="merge the JSON reports or SARIF logs of `tilecheck verify --shard` runs")
    m.add_argument("reports", nargs="+", help="report files, all JSON or all SARIF")
    m.add_argument("--output", "-o", help="write the merged report to FILE instead of stdout")
    c = sub.add_parser("cache", help="the proof cache: `tilecheck cache clear` removes it")
    c.add_argument("action", choices=("clear",), help="clear: remove the cache directory")
    i = sub.add_parser("ir", help="compile kernels to Tile IR and print a summary (or the IR itself)")
    i.add_argument("paths", nargs="+", help="Python files, packages, .tileir or .tileirbc files")
    i.add_argument("--print-ir", action="store_true", help="print the full Tile IR text of each kernel")
    for command in sub.choices.values():  # also after the command; SUPPRESS keeps a --debug given before it
        command.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                             help="show the traceback of errors (for bug reports)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; its exit status, whatever happened to stdout and stderr meanwhile."""
    with guarded_streams() as (out, err):
        try:
            with sigterm_as_interrupt():
                status = _main(argv)
        except KeyboardInterrupt as stop:  # a signal after the command had finished
            status = _interrupted(stop=stop)
        if out.lost is not None:  # the status stands; say why the report is missing, where we can
            print(f"tilecheck: stdout was lost ({out.lost}): the output is incomplete; the exit status ({status}) "
                  "is the verdict", file=sys.stderr)
    return status


def entry() -> None:
    """The process's entry point (``tilecheck``, ``python -m tilecheck``): ``main``'s status as the
    exit status. After Ctrl-C or SIGTERM the process ends at once, its streams flushed: interpreter
    teardown joins the stopped worker pool's manager thread, and a signal arriving then printed a
    traceback after the summary (the status stood; the output must stay clean too)."""
    status = main()
    if status in (EXIT_INTERRUPTED, EXIT_TERMINATED):
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(status)
    sys.exit(status)


def _main(argv: Sequence[str] | None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except KeyboardInterrupt as stop:
        return _interrupted(stop=stop)
    commands = {"verify": _verify, "run": cli_run.run, "explain": cli_run.explain, "eval": _eval, "ir": _ir,
                "merge": _merge, "cache": _cache}
    try:
        return commands[args.command](args)
    except TilecheckError as exc:
        _debug_traceback(args, exc)
        print(f"tilecheck: error: {_in_context(args, str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt as stop:
        return _interrupted(stop=stop)
    except OSError as exc:  # e.g. --output names a directory, or a folder that does not exist
        _debug_traceback(args, exc)
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"tilecheck: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:  # noqa: BLE001 - a tilecheck bug: exit 3 with one line, never 1 (a race)
        from tilecheck.jobs import internal_error_message

        _debug_traceback(args, exc)
        print(f"tilecheck: error: {_in_context(args, internal_error_message(exc))}", file=sys.stderr)
        return EXIT_USAGE


def _in_context(args: argparse.Namespace, message: str) -> str:
    """``run``/``explain`` errors name the file, kernel and case (FILE::KERNEL[CASE]: cause), as
    ``verify``'s do."""
    target = getattr(args, "target", None)
    if not target or "::" not in target or message.startswith(target.split("::")[0]):
        return message
    return f"{target}[{args.case}]: {message}"


def _interrupted(summary: str = "", stop: BaseException | None = None) -> int:
    """Ctrl-C (130) or SIGTERM (143): what finished, on stderr."""
    what = "terminated (SIGTERM)" if isinstance(stop, Terminated) else "interrupted"
    print(f"\ntilecheck: {what}{': ' + summary if summary else ''}", file=sys.stderr)
    return EXIT_TERMINATED if isinstance(stop, Terminated) else EXIT_INTERRUPTED


def _debug_traceback(args: argparse.Namespace, exc: BaseException) -> None:
    if getattr(args, "debug", False):
        import traceback

        traceback.print_exception(exc, file=sys.stderr)


def _cache(args: argparse.Namespace) -> int:
    from tilecheck.verifier.reuse.proof_cache import ProofCache, default_directory

    directory = default_directory()
    removed = ProofCache(directory).clear()
    print(f"removed {directory}" if removed else f"no cache at {directory}")
    return 0


# ---- verify --------------------------------------------------------------------------------------
def _verify(args: argparse.Namespace) -> int:
    from tilecheck import __version__
    from tilecheck.collect import collect
    from tilecheck.config import load_config
    from tilecheck.formats import render_json, render_sarif, render_text, summary
    from tilecheck.grid import parse_grid
    from tilecheck.jobs import Interrupted, Job, JobResult, error_result, run_jobs

    config = load_config()
    paths = args.paths or config.paths
    if not paths:
        raise TilecheckError("no paths given (pass files or directories, or set [tool.tilecheck] paths)")
    timeout = args.timeout or config.timeout
    work = args.work or config.work
    grid = parse_grid(args.grid) if args.grid else None
    plan: list[Job | JobResult] = []  # in report order: jobs to run, and paths that already failed
    no_case: list[str] = []
    shard, shards = args.shard or (1, 1)
    dealt = 0  # every case, kernel without a case and failed path is dealt to one shard, round-robin

    def mine() -> bool:
        nonlocal dealt
        dealt += 1
        return (dealt - 1) % shards == shard - 1

    with stdout_to_stderr():  # a kernel module that prints as it loads must not corrupt a JSON report
        entries = collect(paths)
    for entry in entries:
        if entry.cases and entry.error is None and entry.kernel is not None:
            assume = tuple(config.assume.get(entry.name, ()))
            source = str(config.source) if config.source else None
            plan.extend(Job(str(entry.path), entry.name, i, timeout, assume, None, source, work, not args.no_cache)
                        for i in range(len(entry.cases)) if mine())
            continue
        if not mine():
            continue
        if entry.error is not None:
            failed = error_result(entry.id, str(entry.path), None, None, entry.error)
            failed.traceback = entry.detail
            plan.append(failed)
        elif entry.kernel is None:
            plan.append(Job(str(entry.path), None, 0, timeout, (), grid, work=work))
        else:
            no_case.append(entry.id)
    jobs = [j for j in plan if isinstance(j, Job)]
    try:
        with stdout_to_stderr():  # nor one whose args factory prints
            finished = run_jobs(jobs, args.jobs or config.jobs or os.cpu_count() or 1)
    except Interrupted as stop:
        done = [r for r in plan if isinstance(r, JobResult)] + stop.results
        if args.format == "text" and not args.output:
            print(render_text(done, no_case))
        s = summary(done, no_case)
        return _interrupted(f"{len(stop.results)} of {len(jobs)} case(s) finished: {s['verified']} verified, "
                            f"{s['race']} racy, {s['unknown']} unknown, {s['error']} error(s)", stop=stop.signal)
    ran = iter(finished)
    results = [next(ran) if isinstance(j, Job) else j for j in plan]
    # a shard says its place, so `tilecheck merge` can refuse a shard twice, one missing, or a mix of splits
    place = {"index": shard, "count": shards, "dealt": dealt} if args.shard else None
    if args.format == "json":
        text = render_json(results, no_case, place)
    elif args.format == "sarif":
        text = render_sarif(results, Path.cwd(), __version__, place)
    else:
        text = render_text(results, no_case)
    _emit(text, args.output)
    errors = [r for r in results if r.status == "error"]
    for r in errors:  # one line each: file, kernel, case and cause (the report has the rest)
        if args.debug and r.traceback:
            print(r.traceback.rstrip(), file=sys.stderr)
        print(f"tilecheck: error: {r.id}: {r.cause}", file=sys.stderr)
    if errors:
        return EXIT_USAGE
    strict_hit = args.strict and any(f["kind"] == "order-dependent-atomic" for r in results if r.report
                                     for f in r.report["findings"])
    if any(r.status in ("race", "out-of-bounds") for r in results) or strict_hit:
        return EXIT_RACE
    allow = args.allow_unknown
    if any(r.status == "unknown" and not (allow or config.unknown_allowed(r.id, r.kernel)) for r in results):
        return EXIT_UNKNOWN
    return EXIT_OK


def _merge(args: argparse.Namespace) -> int:
    import json

    from tilecheck.formats import merge_reports

    documents = []
    for name in args.reports:
        try:
            documents.append(json.loads(Path(name).read_text()))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise TilecheckError(f"{name}: not a JSON report or SARIF log ({exc})") from None
    try:
        merged = merge_reports(documents)
    except ValueError as exc:
        raise TilecheckError(f"cannot merge {', '.join(args.reports)}: {exc}") from None
    _emit(json.dumps(merged, indent=2), args.output)
    return EXIT_OK


def _emit(text: str, output: str | None) -> None:
    """The report: to FILE (an error naming it when it cannot be written), else to stdout."""
    if output:
        write_file(output, text + "\n", "the report")
    else:
        print(text)


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
        if e.detected is not None:
            extra += f"  detect: {e.detected['status']}"
        if e.status == "skipped":
            extra = f"  ({e.skipped})"
        mark = '-- ' if e.status == "skipped" else 'ok ' if e.agrees else 'XX '
        print(f"{mark}{e.status:9s} {e.id}{extra}", flush=True)

    result = evaluate(args.corpus, run=args.run, runs=args.runs, timeout_s=args.timeout, progress=progress)
    if args.format == "json":
        print(json.dumps(result.to_dict(), indent=2))
    else:
        print()
        print(result.table())
    return EXIT_OK if not result.disagreements else EXIT_RACE


def _ir(args: argparse.Namespace) -> int:
    from tilecheck.collect import collect

    status = EXIT_OK
    for entry in collect(args.paths):
        if entry.error is not None:
            error = entry.error
        elif entry.kernel is not None and not entry.cases:
            print(f"{entry.id}: no case declared (add @tilecheck.case(grid=..., args=...))\n")
            continue
        else:
            try:
                print(_ir_entry(entry, args.print_ir))
                print()
                continue
            except TilecheckError as exc:
                _debug_traceback(args, exc)
                error = str(exc)
            except Exception as exc:  # noqa: BLE001 - a bug costs this entry, not the others
                from tilecheck.jobs import internal_error_message

                _debug_traceback(args, exc)
                error = internal_error_message(exc)
        print(f"{entry.id}: error: {error}\n")
        print(f"tilecheck: error: {entry.id}: {error.splitlines()[0]}", file=sys.stderr)
        status = EXIT_USAGE
    return status


def _ir_entry(entry: Any, print_ir: bool) -> str:
    """The summary (or the text) of one collected kernel's Tile IR, with a header line."""
    from tilecheck.collect import read_ir
    from tilecheck.ir import from_cutile
    from tilecheck.ir import triton as triton_frontend
    from tilecheck.ir.summary import summarize

    start = time.perf_counter()
    if entry.kernel is None:
        module = read_ir(entry.path)
        header = f"{entry.id}"
    else:
        case = entry.cases[0]
        args = case.make_args()
        module = triton_frontend.bind(entry.kernel, args).module \
            if triton_frontend.is_triton_kernel(entry.kernel) else from_cutile(entry.kernel, args)
        header = f"{entry.id}  [case 1 of {len(entry.cases)}, grid {case.grid}]"
    body = module.to_text() if print_ir else summarize(module)
    elapsed = (time.perf_counter() - start) * 1000
    return f"{header}  ({elapsed:.0f} ms)\n{body}"


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
