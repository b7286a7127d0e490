"""The ``run`` and ``explain`` commands of the ``tilecheck`` command line (``tilecheck.cli``): one
case of one kernel, named ``FILE::KERNEL``, run repeatedly or verified with its witnesses replayed;
both also run the exact detector on the case's launch."""
from __future__ import annotations

import argparse
from pathlib import Path

from tilecheck.console import EXIT_OK, EXIT_RACE, EXIT_UNKNOWN, stdout_to_stderr, write_file
from tilecheck.errors import TilecheckError


def target(spec: str, case_index: int) -> tuple[object, tuple, object, tuple]:
    """The kernel, the case's arguments and grid, and the preconditions it is checked under: the
    case's, the kernel's ``@tilecheck.requires`` and what ``[tool.tilecheck.assume]`` names for it."""
    from tilecheck.cases import cases_of
    from tilecheck.collect import is_kernel, load_module
    from tilecheck.config import load_config
    from tilecheck.requirements import check_preconditions, configured

    if "::" not in spec:
        raise TilecheckError(f"expected FILE::KERNEL, got '{spec}'")
    file, name = spec.rsplit("::", 1)
    config = load_config()
    module = load_module(Path(file))
    kernel = getattr(module, name, None)
    if kernel is None:
        raise TilecheckError(f"{file} has no kernel '{name}'")
    if not is_kernel(kernel):
        raise TilecheckError(f"{spec}: '{name}' is not a kernel but a {type(kernel).__name__} (tilecheck checks "
                             "@ct.kernel functions)")
    cases = cases_of(kernel)
    if not cases:
        raise TilecheckError(f"{spec}: no case declared (add @tilecheck.case(grid=..., args=...))")
    if not 0 <= case_index < len(cases):
        raise TilecheckError(f"{spec} has {len(cases)} case(s); --case {case_index} does not exist")
    case = cases[case_index]
    args = case.make_args()
    assume = (*case.assume, *configured(kernel, config.assume, config.source))
    check_preconditions(kernel, args, assume)  # a stale one is exit 3, as under verify
    return kernel, args, case.grid, assume


def run(args: argparse.Namespace) -> int:
    """``tilecheck run FILE::KERNEL``: run the case repeatedly, compare outputs, and run the exact
    detector on its launch."""
    from tilecheck.runtime import run_repeated

    if args.heatmap:
        from tilecheck.runtime.heatmap import check_heatmap_path

        check_heatmap_path(args.heatmap)  # before the runs, not after
    _check_picture_path(args.picture)
    with stdout_to_stderr():
        kernel, kargs, grid, assume = target(args.target, args.case)
    report = run_repeated(kernel, kargs, grid, runs=args.repeat, backend=args.backend, seed=args.seed,
                          max_trips=args.max_trips)
    print(report)
    detected = _detect(kernel, kargs, grid, assume)
    if args.report:
        write_file(args.report, report.to_json() + "\n", "the run report")
    if args.heatmap:
        report.save_heatmap(args.heatmap, races=detected.races if detected is not None else None)
    if args.picture:
        _save_picture(args.picture, kernel, kargs, grid, detected.races[0] if detected and detected.races else None)
    racy = detected is not None and detected.failed
    return EXIT_OK if report.deterministic and not racy else EXIT_RACE


def explain(args: argparse.Namespace) -> int:
    """``tilecheck explain FILE::KERNEL``: verify the case, replay each race's witness on the
    interpreter, and run the exact detector on its launch."""
    from tilecheck.runtime import replay
    from tilecheck.verifier import verify

    _check_picture_path(args.picture)
    with stdout_to_stderr():
        kernel, kargs, grid, assume = target(args.target, args.case)
    report = verify(kernel, kargs, grid, assume=assume)
    print(report)
    races = [f for f in report.findings if f.is_race]
    for f in races:
        print()
        print(replay(f))
    detected = _detect(kernel, kargs, grid, assume)
    if args.picture:
        _save_picture(args.picture, kernel, kargs, grid, races[0] if races else
                      detected.races[0] if detected is not None and detected.races else None)
    if races or report.failed or detected is not None and detected.failed:
        return EXIT_RACE
    return EXIT_UNKNOWN if report.status == "unknown" else EXIT_OK


def _check_picture_path(path: str | None) -> None:
    """A ``TilecheckError`` for a picture name of another format, before any work."""
    if path is not None and Path(path).suffix.lower() not in (".svg", ".png"):
        raise TilecheckError(f"cannot write the picture to {path}: it is drawn as .svg (or .png with the "
                             "plot extra)")


def _save_picture(path: str, kernel: object, kargs: tuple, grid: object, witness: object) -> None:
    from tilecheck.runtime.picture import picture

    written = picture(kernel, kargs, grid, witness=witness).save(path)
    print(f"\npicture of the partition: {written}")


def _detect(kernel: object, kargs: tuple, grid: object, assume: tuple = ()) -> object:
    """The exact detector on this launch, printed; None when it cannot run here (device arrays)."""
    from tilecheck.interp import detect

    try:
        detected = detect(kernel, kargs, grid, assume=assume)
    except TilecheckError as exc:
        print(f"\ntilecheck.detect could not check this launch: {exc}")
        return None
    print()
    if detected.failed:
        oob = sum(f.kind == "out-of-bounds" for f in detected.findings)
        print(f"tilecheck.detect, this launch: {len(detected.races)} race(s)"
              + (f", {oob} out-of-bounds access(es)" if oob else "")
              + " (exact: these blocks and lines race under some schedule)")
        for f in detected.findings:
            print()
            print(f)
    elif detected.status == "verified":
        print("tilecheck.detect, this launch: no race under any schedule of these arguments")
    else:
        print("tilecheck.detect, this launch: " + "; ".join(detected.reasons))
    return detected
