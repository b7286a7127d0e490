"""The Z3 encoding of user preconditions on kernel inputs (``tilecheck.distinct("idx")``,
``tilecheck.bounded(...)``, ``tilecheck.nondecreasing("offsets")``).

The preconditions themselves are plain values (``tilecheck.requirements``: their data, text form
and check on concrete contents); this module gives, per kind, the constraints a query gets
(``constraints(pre, apps)``). Each is encoded over the reads of the array a query makes
(applications of the array's content function, whose arguments are the element's coordinates),
never over the whole array: the constraints are exactly what any array keeping the precondition
implies for those reads."""
from __future__ import annotations

from collections.abc import Callable

from tilecheck.requirements import (
    Bounded,
    Distinct,
    Nondecreasing,
    Precondition,
    bounded,
    distinct,
    nondecreasing,
    parse,
)
from tilecheck.verifier.solver import smt

# the values, for the modules and tests that import them from here
__all__ = ["Bounded", "Distinct", "Nondecreasing", "Precondition", "bounded", "constraints", "distinct",
           "nondecreasing", "parse"]

Encode = Callable[[Precondition, list[smt.Expr]], list[smt.BoolExpr]]
ENCODINGS: dict[type[Precondition], Encode] = {}  # per kind of precondition


def _encodes(kind: type[Precondition]) -> Callable[[Encode], Encode]:
    """Register ``encode`` as the Z3 encoding of ``kind`` (refused twice)."""

    def add(encode: Encode) -> Encode:
        if kind in ENCODINGS:
            raise ValueError(f"Z3 encoding of {kind.__name__} registered twice")
        ENCODINGS[kind] = encode
        return encode

    return add


def constraints(pre: Precondition, apps: list[smt.Expr]) -> list[smt.BoolExpr]:
    """Constraints on the reads ``apps`` (applications of the array's content function) that
    ``pre`` implies."""
    return ENCODINGS[type(pre)](pre, apps)


@_encodes(Distinct)
def _distinct(pre: Distinct, apps: list[smt.Expr]) -> list[smt.BoolExpr]:
    out = []
    for i, a in enumerate(apps):
        for b in apps[i + 1:]:
            differ = smt.Or(*[x != y for x, y in zip(a.children(), b.children())])
            if pre.below is None:
                out.append(smt.Implies(differ, a != b))
            else:  # a == b < below at two positions is the only thing excluded
                out.append(smt.Implies(smt.And(differ, a < pre.below), a != b))
    return out


@_encodes(Nondecreasing)
def _nondecreasing(pre: Nondecreasing, apps: list[smt.Expr]) -> list[smt.BoolExpr]:
    # Row-major order of in-bounds elements is the lexicographic order of their coordinates.
    # For each pair of reads: an earlier position holds a value no greater than a later one
    # (equal coordinates give equal values by themselves).
    out = []
    for i, a in enumerate(apps):
        for b in apps[i + 1:]:
            out.append(smt.Implies(_lex_less(a.children(), b.children()), a <= b))
            out.append(smt.Implies(_lex_less(b.children(), a.children()), b <= a))
    return out


def _lex_less(xs: list[smt.Expr], ys: list[smt.Expr]) -> smt.BoolExpr:
    """Coordinates ``xs`` come before ``ys`` in lexicographic (row-major) order."""
    terms = []
    for k, (x, y) in enumerate(zip(xs, ys)):
        terms.append(smt.And(*[xs[j] == ys[j] for j in range(k)], x < y))
    return smt.Or(*terms) if terms else smt.BoolVal(False)


@_encodes(Bounded)
def _bounded(pre: Bounded, apps: list[smt.Expr]) -> list[smt.BoolExpr]:
    out = []
    for a in apps:
        inside = [c for c in ((a >= pre.lo) if pre.lo is not None else None,
                              (a <= pre.hi) if pre.hi is not None else None) if c is not None]
        if pre.also:
            out.append(smt.Or(smt.And(*inside) if inside else smt.BoolVal(True), *(a == v for v in pre.also)))
        else:
            out += inside
    return out
