"""The two test tiers (issue 21 item 5).

The fast tier is what ``pytest -q -n auto`` runs (README, CI's first step): every feature, with
hypothesis properties drawing about a tenth of their examples and ``@pytest.mark.slow`` tests
deselected. ``pytest --thorough`` (or ``TILECHECK_THOROUGH=1``) is the thorough tier: every slow
test, and every property with its full count of examples. CI runs the fast tier, then
``pytest -n auto --thorough -m "slow or property"``: what the fast tier left out or cut short.

A slow test says in a comment which fast test covers the same behaviour, or how the fast tier
samples it.
"""
import os

ENV = "TILECHECK_THOROUGH"
FAST_EXAMPLES = 3  # the fewest examples a property draws in the fast tier


def thorough() -> bool:
    """True under ``--thorough`` (set in pytest_configure, so xdist workers see it too) or
    ``TILECHECK_THOROUGH=1``."""
    return os.environ.get(ENV, "") not in ("", "0")


def examples(n: int) -> int:
    """``max_examples`` for a hypothesis property that draws ``n`` in the thorough tier: about a
    tenth of them in the fast tier, and at least a few (never more than ``n``)."""
    if thorough():
        return n
    return min(n, max(n // 10, FAST_EXAMPLES))
