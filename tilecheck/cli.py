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
    args = parser.parse_args(argv)
    try:
        return _ir(args.paths, args.print_ir)
    except TilecheckError as exc:
        print(f"tilecheck: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:  # e.g. piped into `head`
        sys.stderr.close()
        return EXIT_OK


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
