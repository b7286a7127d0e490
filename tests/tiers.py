"""The two test tiers (issue 21 item 5).

The fast tier is what ``pytest -q -n auto`` runs (README, CI's first step): every feature, with
hypothesis properties drawing about a tenth of their examples and ``@pytest.mark.slow`` tests
deselected. ``pytest --thorough`` (or ``TILECHECK_THOROUGH=1``) is the thorough tier: every slow
test, and every property with its full count of examples. CI runs the fast tier, then
``pytest -n auto --thorough -m "slow or property"``: what the fast tier left out or cut short.

A slow test says in a comment which fast test covers the same behaviour. Tests parametrized over
the corpus's manifest run a fixed sample of its entries in the fast tier (``corpus_sample``) and
the other entries under ``--thorough``.
"""
import os

import pytest

ENV = "TILECHECK_THOROUGH"
FAST_EXAMPLES = 3  # the fewest examples a property draws in the fast tier
SAFE_STEP = 8  # the fast tier's corpus sample also takes every SAFE_STEP-th race-free entry


def thorough() -> bool:
    """True under ``--thorough`` (set in pytest_configure, so xdist workers see it too) or
    ``TILECHECK_THOROUGH=1``."""
    return os.environ.get(ENV, "") not in ("", "0")


def examples(n: int, fast: int | None = None) -> int:
    """``max_examples`` for a hypothesis property that draws ``n`` in the thorough tier: about a
    tenth of them in the fast tier, and at least a few (never more than ``n``); ``fast`` sets the
    fast tier's count for a property whose every example is a whole pipeline of seconds."""
    if thorough():
        return n
    return min(n, fast if fast is not None else max(n // 10, FAST_EXAMPLES))


def _forms(entry: dict) -> set[tuple[str, str]]:
    """What a manifest entry exercises: its expected finding kinds, and the manifest forms it uses."""
    expect = entry["expect"]
    forms = {(expect, kind) for kind in entry.get("kinds", [])}
    forms |= {(form, expect) for form, used in [("tileir", entry["file"].endswith(".tileir")),
                                                ("case", bool(entry.get("case"))),
                                                ("assume", bool(entry.get("assume"))),
                                                ("any contents", entry.get("data", True) is False)] if used}
    return forms


def corpus_sample(entries: list[dict]) -> set[int]:
    """Indices of the manifest entries the fast tier checks: the first entry to show each finding
    kind or manifest form (so every kind of race is in, and a race-free entry with a warning), the
    paper's head permutation, and every SAFE_STEP-th race-free entry. Deterministic: it depends on
    the manifest alone."""
    seen: set[tuple[str, str]] = set()
    picked = set()
    for i, entry in enumerate(entries):
        if _forms(entry) - seen or entry.get("kernel") == "head_permute_swapped":
            picked.add(i)
            seen |= _forms(entry)
    safe = [i for i, entry in enumerate(entries) if entry["expect"] == "verified"]
    return picked | set(safe[::SAFE_STEP])


def slow_unless(kept: bool) -> tuple:
    """The marks of a parameter the fast tier keeps (none) or leaves to the thorough tier (slow)."""
    return () if kept else (pytest.mark.slow,)
