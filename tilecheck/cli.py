"""The ``tilecheck`` command line."""
from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

from tilecheck.errors import TilecheckError

EXIT_OK, EXIT_RACE, EXIT_UNKNOWN, EXIT_USAGE = 0, 1, 2, 3


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tilecheck", description="Race detection for cuTile / Tile IR kernels")
    sub = parser.add_subparsers(dest="command", required=True)
    ir = sub.add_parser("ir", help="compile kernels to Tile IR and print a summary (or the IR itself)")
    ir.add_argument("paths", nargs="+", help="Python files, packages or .tileir files")
    ir.add_argument("--print-ir", action="store_true", help="print the full Tile IR text of each kernel")
    ev = sub.add_parser("eval", help="verify every kernel of a labelled corpus and score the verdicts")
    ev.add_argument("corpus", help="a corpus directory (with manifest.toml) or a manifest file")
    ev.add_argument("--format", choices=("text", "json"), default="text")
    ev.add_argument("--run", action="store_true", help="also run each kernel repeatedly on the CPU interpreter")
    ev.add_argument("--runs", type=int, default=10, help="runs per kernel with --run (default 10)")
    ev.add_argument("--timeout", type=float, default=10.0, help="solver timeout per query, seconds")
    args = parser.parse_args(argv)
    try:
        if args.command == "eval":
            return _eval(args)
        return _ir(args.paths, args.print_ir)
    except TilecheckError as exc:
        print(f"tilecheck: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:  # e.g. piped into `head`
        sys.stderr.close()
        return EXIT_OK


def _eval(args: argparse.Namespace) -> int:
    import json

    from tilecheck.evaluation import evaluate

    def progress(entry: object) -> None:
        if args.format == "text":
            e = entry  # type: ignore[assignment]
            mark = "ok " if e.agrees else "XX "  # type: ignore[attr-defined]
            extra = ""
            if e.run is not None:  # type: ignore[attr-defined]
                r = e.run  # type: ignore[attr-defined]
                extra = ("  runs: deterministic" if r["deterministic"] else
                         f"  runs: NONDETERMINISTIC, {r['fraction_differing']:.1%} of elements differ")
            print(f"{mark}{e.status:9s} {e.id}{extra}", flush=True)  # type: ignore[attr-defined]

    result = evaluate(args.corpus, run=args.run, runs=args.runs, timeout_s=args.timeout, progress=progress)
    if args.format == "json":
        print(json.dumps(result.to_dict(), indent=2))
    else:
        print()
        print(result.table())
    return EXIT_OK if not result.disagreements else EXIT_RACE


def _ir(paths: list[str], print_ir: bool) -> int:
    from tilecheck.collect import collect
    from tilecheck.ir import from_cutile, parse
    from tilecheck.ir.summary import summarize

    status = EXIT_OK
    for entry in collect(paths):
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
        print(module.to_text() if print_ir else summarize(module))
        print()
    return status


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
