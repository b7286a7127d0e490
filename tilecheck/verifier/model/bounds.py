"""Value bounds of integer tiles, carried alongside their terms during symbolic execution.

cuTile lowers Python's ``//`` and ``%`` to Tile IR's signed ``divi`` / ``remi`` plus sign fix-ups
(``cmpi``, ``xori``, ``select``), and their general encoding is a cascade of ``ite``s over the
operands' signs with a non-linear division inside each branch: a GEMM's group swizzle
(``pid // num_pid_in_group``, ``pid % num_pid_in_group``) became a third of its query, and the
solver case-split on signs no execution has. Block ids, lanes, loop counters and array dimensions
are never negative, so most divisions have non-negative operands, where every rounding is Z3's own
``div``. The bounds below say so without a solver: each op's result gets an interval from its
operands' (open-ended where unknown), and ``divi`` / ``remi`` / ``cmpi`` / ``select`` use it to
build the simpler, equal term.

A bound holds for every execution of the kernel (block ids within the grid, lanes within the tile,
a loop variable within its loop's range, dimensions non-negative, the kernel's own ``assume``
facts). A term built from it equals the general one on every such execution, which is all a query
needs: its variables take only those values (docs/semantics/how-it-works.md, "Division").
"""
from __future__ import annotations

Bound = tuple[int | None, int | None]  # (lowest, highest); None: unbounded on that side
UNKNOWN: Bound = (None, None)
NON_NEGATIVE: Bound = (0, None)


def exact(value: int) -> Bound:
    return (value, value)


def add(a: Bound, b: Bound) -> Bound:
    return (None if a[0] is None or b[0] is None else a[0] + b[0],
            None if a[1] is None or b[1] is None else a[1] + b[1])


def neg(a: Bound) -> Bound:
    return (None if a[1] is None else -a[1], None if a[0] is None else -a[0])


def sub(a: Bound, b: Bound) -> Bound:
    return add(a, neg(b))


def mul(a: Bound, b: Bound) -> Bound:
    if a[0] is not None and b[0] is not None and a[0] >= 0 and b[0] >= 0:  # the usual case, half-open
        return (a[0] * b[0], None if a[1] is None or b[1] is None else a[1] * b[1])
    if None in a or None in b:
        return UNKNOWN
    corners = [x * y for x in a for y in b]  # type: ignore[operator]
    return (min(corners), max(corners))


def join(a: Bound, b: Bound) -> Bound:
    """Either value (a select's)."""
    return (None if a[0] is None or b[0] is None else min(a[0], b[0]),
            None if a[1] is None or b[1] is None else max(a[1], b[1]))


def meet(a: Bound, b: Bound) -> Bound:
    """Both bounds hold (an ``assume``)."""
    lo = b[0] if a[0] is None else a[0] if b[0] is None else max(a[0], b[0])
    hi = b[1] if a[1] is None else a[1] if b[1] is None else min(a[1], b[1])
    return (lo, hi)


def minimum(a: Bound, b: Bound) -> Bound:
    return (None if a[0] is None or b[0] is None else min(a[0], b[0]),
            b[1] if a[1] is None else a[1] if b[1] is None else min(a[1], b[1]))


def maximum(a: Bound, b: Bound) -> Bound:
    return neg(minimum(neg(a), neg(b)))


def absolute(a: Bound) -> Bound:
    if non_negative(a):
        return a
    if a[1] is not None and a[1] <= 0:
        return neg(a)
    return (0, None if None in a else max(-a[0], a[1]))  # type: ignore[operator]


def non_negative(a: Bound) -> bool:
    return a[0] is not None and a[0] >= 0


def quotient(a: Bound, b: Bound) -> Bound:
    """Of ``a div b`` for a non-negative ``a`` (else unknown); a divisor that may be zero leaves it
    unknown (division by zero is unspecified)."""
    if not non_negative(a) or b[0] is None or b[0] < 1:
        return UNKNOWN
    return (0 if b[1] is None else a[0] // b[1], None if a[1] is None else a[1] // b[0])  # type: ignore[operator]


def floor_quotient(a: Bound, b: Bound) -> Bound:
    """Of ``a`` divided by a constant positive ``b``, rounded down (else unknown)."""
    if b[0] is None or b[0] != b[1] or b[0] < 1:
        return UNKNOWN
    return (None if a[0] is None else a[0] // b[0], None if a[1] is None else a[1] // b[0])


def ceiling(a: Bound, b: Bound) -> Bound:
    """Of ``a`` divided by ``b`` rounded up, for a non-negative ``a`` and a positive ``b`` (else
    unknown)."""
    if not non_negative(a) or b[0] is None or b[0] < 1:
        return UNKNOWN
    return (0, None if a[1] is None else -(-a[1] // b[0]))


def remainder(a: Bound, b: Bound) -> Bound:
    """Of the remainder of a non-negative ``a`` by a non-negative ``b``: below ``b``, and never
    above ``a`` (which it is where ``b`` is zero, as the model says); unknown otherwise."""
    if not (non_negative(a) and non_negative(b)):
        return UNKNOWN
    if b[0] == 0 or b[1] is None:
        return (0, a[1])
    return (0, b[1] - 1 if a[1] is None else min(a[1], b[1] - 1))


def compare(predicate: str, a: Bound, b: Bound) -> bool | None:
    """The comparison ``a <predicate> b`` when the bounds decide it for every value, else None.
    ``predicate``: Tile IR's ``comparison_predicate`` (signed)."""
    below = a[1] is not None and b[0] is not None and a[1] < b[0]  # every a < every b
    above = a[0] is not None and b[1] is not None and a[0] > b[1]
    at_most = a[1] is not None and b[0] is not None and a[1] <= b[0]
    at_least = a[0] is not None and b[1] is not None and a[0] >= b[1]
    if predicate == "equal":
        single = a[0] is not None and a[0] == a[1] == b[0] == b[1]
        return False if below or above else True if single else None
    if predicate == "not_equal":
        decided = compare("equal", a, b)
        return None if decided is None else not decided
    table = {"less_than": (below, at_least), "less_than_or_equal": (at_most, above),
             "greater_than": (above, at_most), "greater_than_or_equal": (at_least, below)}
    if predicate not in table:
        return None
    true, false = table[predicate]
    return True if true else False if false else None
