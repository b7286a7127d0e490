"""Data contracts at a launch (issue 13 item 4): defects whose witnesses need index contents other
than the given ones are decided on the launch's own data.

Such a defect says "with other contents of ``idx`` this would race"; the launch at hand holds real
arrays, so the question is whether its contents are among the racing ones. From the given contents
we form the facts they satisfy that a kernel's safety usually rests on (values within their range,
no duplicates, no duplicates below a padding value, non-decreasing), verify again under all of
them, and keep a smallest subset that still verifies: that subset is the precondition to suggest,
and since the given contents satisfy it, the launch is verified at level "this launch's data". When
no such set exists, the exact detector decides the launch (a race it finds is witnessed by the data
itself); when it cannot run, the verdict is unknown with the reason. A launch the static check
cannot decide at all (``undecided``) goes to the exact detector the same way.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from tilecheck.report import Report, contents_items
from tilecheck.verifier.contracts.preconditions import Bounded, Precondition, bounded, distinct, nondecreasing
from tilecheck.verifier.solver import smt

LEVEL = "this launch's data"
# how a verdict at this launch's data was proved statically (a report's stats): with the small
# index arrays at their given contents ("pinned"), or under preconditions their contents satisfy.
# Either reads only integer contents (floats are opaque to the model), so the proof cache keeps it
# by those; a verdict the exact detector gave may follow the float values too
DATA_PROOF = "data_proof"
MAX_CANDIDATES = 12  # facts tried at once
MAX_REVERIFY = 6  # verifies spent making the suggested set smaller (it stays valid at any point)
MAX_WIDEN = 3  # verifies spent widening a suggested range to an index range of the arrays
# solver work (Z3 rlimit units) spent making the suggestion smaller and wider, all verifies
# together: on hard kernels (a ragged GEMM's persistent loop) one verify can take seconds
REFINE_WORK = 12_000_000


def contents_dependent(report: Report) -> bool:
    """Every defect of ``report`` needs array contents other than the given ones."""
    defects = [f for f in report.findings if f.is_defect]
    return bool(defects) and all(f.witness is not None and f.witness.contents for f in defects)


def undecided(report: Report) -> bool:
    """The static check could not decide the launch (solver budget, an untracked value, an op it
    does not model) and found nothing but warnings: no defect, no broken assumption, no overflow.
    (The exact detector reports the order-dependent atomics of the launch itself.)"""
    return report.status == "unknown" and all(f.kind == "order-dependent-atomic" for f in report.findings)


def decide_undecided(report: Report, run_detect: Callable[[], Report]) -> Report:
    """An undecided launch, decided by the exact detector on its own data when it can run; else
    the unknown, with why the detector did not decide either."""
    exact = run_detect()
    if exact.status not in ("verified", "race", "out-of-bounds"):
        why = "; ".join(exact.reasons) or "unknown"
        report.reasons.append(f"the launch could not be run exactly either ({why})")
        return report
    reasons = _first_reasons(report)
    exact.notes.append(f"the static check could not decide this launch ({reasons}); it was decided by "
                       "tilecheck.detect on its own data, which holds for this launch only")
    exact.assumptions = list(report.assumptions)
    exact.level = LEVEL
    return exact


def _first_reasons(report: Report) -> str:
    """The static check's first two reasons, and how many more there are."""
    more = len(report.reasons) - 2
    return "; ".join(report.reasons[:2]) + (f"; and {more} more" if more > 0 else "")


def proved_on_data(report: Report, pinned: list[str]) -> Report:
    """An undecided launch the static check proves once the small index arrays (``pinned``) hold
    their given contents: verified at this launch's data, the static reasons kept as a note."""
    reasons = _first_reasons(report)
    arrays = ", ".join(f"'{a}'" for a in pinned) or "no array"
    undecided = f"the static check could not decide every content ({reasons}); " if report.reasons else ""
    report.notes.append(f"{undecided}with the given contents of {arrays} it proves this launch")
    if pinned:
        report.assumptions.append("the given contents of " + ", ".join(pinned))
    report.reasons = []
    report.status, report.level = "verified", LEVEL
    report.stats[DATA_PROOF] = "pinned"
    return report


def candidates(report: Report, arrays: dict[str, np.ndarray]) -> list[Precondition]:
    """Facts the given contents of the arrays the witnesses read satisfy."""
    names = sorted({name for f in report.findings if f.is_defect and f.witness is not None
                    for name in f.witness.contents})
    return facts_of(names, arrays)


def facts_of(names: list[str], arrays: dict[str, np.ndarray]) -> list[Precondition]:
    """Facts the given contents of the integer arrays ``names`` satisfy: their range (with a
    negative marker apart), no duplicates (below a padding value), non-decreasing."""
    out: list[Precondition] = []
    for name in names:
        values = arrays.get(name)
        if values is None or values.dtype.kind not in "iu" or values.size == 0:
            continue
        flat = values.reshape(-1).astype(np.int64)
        lo, hi = int(flat.min()), int(flat.max())
        rest = flat[flat != lo]
        if lo < 0 and rest.size and int(rest.min()) >= 0:  # a negative marker (ignore_index) besides a range
            out.append(bounded(name, int(rest.min()), hi, also=(lo,)))
        else:
            out.append(bounded(name, lo, hi))
        unique, counts = np.unique(flat, return_counts=True)
        if (counts == 1).all():
            out.append(distinct(name))
        elif (unique[counts > 1] == hi).all():  # only the largest value repeats: padding
            out.append(distinct(name, below=hi))
        if flat.size > 1 and (flat[1:] >= flat[:-1]).all():
            out.append(nondecreasing(name))
    return [c for c in out if c.violation(arrays[c.array]) is None][:MAX_CANDIDATES]


def decide(report: Report, arrays: dict[str, np.ndarray],
           reverify: Callable[[list[Precondition]], Report],
           run_detect: Callable[[], Report],
           prove_pinned: Callable[[], list[str] | None] = lambda: None) -> Report:
    """The verdict at this launch's data for a report whose defects all need other contents: under
    facts the data satisfies (a precondition to suggest), else with the small index arrays held at
    their contents (``prove_pinned``: the arrays, when that proves it), else by the exact detector."""
    facts = candidates(report, arrays)
    kept: list[Precondition] = []
    proved: Report | None = None
    wide = _widest_first(facts, report, arrays)
    if wide is not None and (attempt := reverify([wide])).status == "verified":
        kept, proved = [wide], attempt  # what the steps below end with when the first fact suffices
    elif facts:
        attempt = reverify(facts)
        if attempt.status == "verified":
            kept, proved = list(facts), attempt
            budget = MAX_REVERIFY
            start = smt.work_spent() or 0

            def spent() -> bool:
                return (smt.work_spent() or 0) - start >= REFINE_WORK
            for fact in facts:  # one fact alone is the usual answer
                if budget == 0 or len(kept) == 1 or spent():
                    break
                budget -= 1
                again = reverify([fact])
                if again.status == "verified":
                    kept, proved = [fact], again
            for fact in list(kept):  # else drop facts one at a time while the rest still verifies
                if budget == 0 or len(kept) == 1 or spent():
                    break
                budget -= 1
                fewer = [k for k in kept if k != fact]
                again = reverify(fewer)
                if again.status == "verified":
                    kept, proved = fewer, again
            kept, proved = _widened(kept, proved, report, arrays, reverify, spent, tried=wide)
    first = next(f for f in report.findings if f.is_defect)
    needs = f"{first.kind} on '{first.witness.array}'" if first.witness is not None else first.kind
    if proved is not None:
        suggestion = ", ".join(f"tilecheck.{_call(k)}" for k in kept)
        proved.level = LEVEL
        proved.notes.append(
            f"for other index contents there is {_a(needs)} (the witness needs "
            f"{_contents(first)}); add {suggestion} if callers guarantee it: with it the kernel is "
            "verified, and this launch's data satisfies it")
        proved.assumptions.append("the given contents of " + ", ".join(sorted({k.array for k in kept})) +
                                  " (checked: they satisfy the preconditions above)")
        proved.stats[DATA_PROOF] = "preconditions"
        return proved
    pinned = prove_pinned()
    if pinned is not None:
        report.findings = [f for f in report.findings if not f.is_defect]
        report.notes.append(f"the static check found {_a(needs)} only for other index contents "
                            f"({_contents(first)})")
        return proved_on_data(report, pinned)
    exact = run_detect()
    if exact.status in ("verified", "race", "out-of-bounds"):
        # what the static check found that is not a defect (a broken precondition, ...) stays
        exact.findings = [f for f in report.findings if not f.is_defect] + exact.findings
        exact.notes.append(
            f"the static check found {_a(needs)} only for other index contents ({_contents(first)}), and no "
            "precondition the given contents satisfy excludes it; this launch was decided by "
            "tilecheck.detect on its own data")
        exact.level = LEVEL
        return exact
    report.status = "unknown"
    report.reasons.append(f"the {needs} needs index contents other than the given ones "
                          f"({_contents(first)}), no precondition the given contents satisfy excludes it, "
                          f"and the launch could not be run exactly ({'; '.join(exact.reasons) or 'unknown'})")
    return report


def _widest_first(facts: list[Precondition], report: Report, arrays: dict[str, np.ndarray]) -> Precondition | None:
    """The suggestion the steps of ``decide`` end with when the first fact alone verifies and is a
    range: that range widened to the first index range it takes (``_wider``). Tried first, alone: on
    TileGym it is the usual answer, in one verify instead of three."""
    if not facts or not isinstance(facts[0], Bounded):
        return None
    return next(iter(_wider(facts[0], report, arrays)), None)


def _wider(fact: Bounded, report: Report, arrays: dict[str, np.ndarray]) -> list[Bounded]:
    """``fact``'s range widened to ``[0, n - 1]`` for the dimension sizes n of the arrays the
    defects touch (smallest first, keeping a marker value), where the data satisfies it."""
    sizes = sorted({n for f in report.findings if f.is_defect and f.witness is not None
                    for shape in f.witness.shapes.values() for n in shape if n > 1})
    return widenings(fact, sizes, arrays[fact.array])


def widenings(fact: Bounded, sizes: list[int], values: np.ndarray) -> list[Bounded]:
    """``fact``'s range widened to ``[0, n - 1]`` for each of ``sizes`` that holds it, keeping its
    markers, where ``values`` (the array's contents) satisfy it; none for a range reaching below 0."""
    if fact.lo is None or fact.lo < 0:
        return []
    out = []
    for n in sizes:
        wider = bounded(fact.array, 0, n - 1, also=fact.also)
        if wider != fact and n - 1 >= (fact.hi or 0) and wider.violation(values) is None:
            out.append(wider)
    return out


def _widened(kept: list[Precondition], proved: Report, report: Report, arrays: dict[str, np.ndarray],
             reverify: Callable[[list[Precondition]], Report], spent: Callable[[], bool] = lambda: False,
             tried: Precondition | None = None) -> tuple[list[Precondition], Report]:
    """The data's own range is a narrow suggestion (``bounded('target', -100, -100)``); the contract
    a caller states is usually an index range of the arrays the defects touch: try ``_wider``
    ranges, within a few verifies (``tried``: one that did not verify alone)."""
    tries = MAX_WIDEN
    for i, fact in enumerate(list(kept)):
        if not isinstance(fact, Bounded):
            continue
        for wider in _wider(fact, report, arrays):
            if tries == 0 or spent():
                return kept, proved
            if len(kept) == 1 and wider == tried:
                continue
            tries -= 1
            trial = kept[:i] + [wider] + kept[i + 1:]
            again = reverify(trial)
            if again.status == "verified":
                kept, proved = trial, again
                break
    return kept, proved


def _a(noun: str) -> str:
    return ("an " if noun[:1] in "aeiou" else "a ") + noun


def _contents(finding) -> str:
    w = finding.witness
    items = contents_items(w.contents)
    return ", ".join(items[:4]) + (" ..." if len(items) > 4 else "")


def _call(pre: Precondition) -> str:
    """The Python call that states ``pre``."""
    kind = type(pre).__name__.lower()
    if kind == "bounded":
        also = f", also={pre.also}" if pre.also else ""
        return f"bounded({pre.array!r}, {pre.lo}, {pre.hi}{also})"
    if kind == "distinct" and getattr(pre, "below", None) is not None:
        return f"distinct({pre.array!r}, below={pre.below})"
    return f"{kind}({pre.array!r})"
