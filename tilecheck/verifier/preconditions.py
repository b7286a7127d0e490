"""User preconditions on kernel inputs: ``tilecheck.distinct("idx")``, ``tilecheck.bounded(...)``,
``tilecheck.nondecreasing("offsets")``.

Each is encoded over the reads of the array a query makes (applications of the array's content
function, whose arguments are the element's coordinates), never over the whole array: the
constraints are exactly what any array keeping the precondition implies for those reads."""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tilecheck.errors import TilecheckError
from tilecheck.verifier import smt


@dataclass(frozen=True)
class Precondition(ABC):
    """A fact about the contents of an integer array argument the kernel does not write."""

    array: str
    # where it was stated (the decorator's line, the pyproject table), for the error a stale one gets
    source: str | None = field(default=None, compare=False, repr=False, kw_only=True)

    @abstractmethod
    def describe(self) -> str:
        """How the report's assumptions list it."""

    @abstractmethod
    def constraints(self, apps: list[smt.Expr]) -> list[smt.BoolExpr]:
        """Constraints on the reads ``apps`` (applications of the array's content function)."""

    @abstractmethod
    def violation(self, values: np.ndarray) -> str | None:
        """Why concrete contents break the precondition (None when they keep it)."""

    @staticmethod
    def with_requirements(kernel: Any, assume: Iterable[Any]) -> tuple[Any, ...]:
        """The preconditions ``@tilecheck.requires`` attached to ``kernel``, then ``assume`` (each
        once): what ``verify`` assumes (``tilecheck.requirements``)."""
        from tilecheck.requirements import with_requirements

        return with_requirements(kernel, assume)


@dataclass(frozen=True)
class Distinct(Precondition):
    """No two elements of the array are equal (e.g. a permutation or unique destination rows).
    With ``below``, only values below it must be distinct: values >= ``below`` are padding or
    marker entries that may repeat (a MoE ``sorted_token_ids`` padded with the token count)."""

    below: int | None = None

    def describe(self) -> str:
        scope = "" if self.below is None else f" below {self.below}"
        return f"'{self.array}' holds no duplicate values{scope} (precondition)"

    def constraints(self, apps: list[smt.Expr]) -> list[smt.BoolExpr]:
        out = []
        for i, a in enumerate(apps):
            for b in apps[i + 1:]:
                differ = smt.Or(*[x != y for x, y in zip(a.children(), b.children())])
                if self.below is None:
                    out.append(smt.Implies(differ, a != b))
                else:  # a == b < below at two positions is the only thing excluded
                    out.append(smt.Implies(smt.And(differ, a < self.below), a != b))
        return out

    def violation(self, values: np.ndarray) -> str | None:
        flat = np.asarray(values).reshape(-1)
        checked = flat if self.below is None else flat[flat < self.below]
        unique, counts = np.unique(checked, return_counts=True)
        if (counts > 1).any():
            value = unique[counts > 1][0]
            where = np.flatnonzero(flat == value)[:2].tolist()
            return f"value {value} appears at flat positions {where[0]} and {where[1]}"
        return None


@dataclass(frozen=True)
class Nondecreasing(Precondition):
    """The array's elements never decrease in row-major (flat) order: CSR row offsets,
    ``m_indptr``, prefix sums of segment sizes."""

    def describe(self) -> str:
        return f"values of '{self.array}' are non-decreasing in row-major order (precondition)"

    def constraints(self, apps: list[smt.Expr]) -> list[smt.BoolExpr]:
        # Row-major order of in-bounds elements is the lexicographic order of their coordinates.
        # For each pair of reads: an earlier position holds a value no greater than a later one
        # (equal coordinates give equal values by themselves).
        out = []
        for i, a in enumerate(apps):
            for b in apps[i + 1:]:
                out.append(smt.Implies(_lex_less(a.children(), b.children()), a <= b))
                out.append(smt.Implies(_lex_less(b.children(), a.children()), b <= a))
        return out

    def violation(self, values: np.ndarray) -> str | None:
        flat = np.asarray(values).reshape(-1)
        drops = np.flatnonzero(flat[1:] < flat[:-1])
        if drops.size:
            i = int(drops[0])
            return (f"values {flat[i]} at flat position {i} and {flat[i + 1]} at flat position {i + 1} "
                    "decrease")
        return None


def _lex_less(xs: list[smt.Expr], ys: list[smt.Expr]) -> smt.BoolExpr:
    """Coordinates ``xs`` come before ``ys`` in lexicographic (row-major) order."""
    terms = []
    for k, (x, y) in enumerate(zip(xs, ys)):
        terms.append(smt.And(*[xs[j] == ys[j] for j in range(k)], x < y))
    return smt.Or(*terms) if terms else smt.BoolVal(False)


@dataclass(frozen=True)
class Bounded(Precondition):
    """Every element lies in [lo, hi] (None: unbounded on that side), or is one of ``also`` (the
    marker values a kernel tests for first, such as a cross-entropy's ignore_index)."""

    lo: int | None = None
    hi: int | None = None
    also: tuple[int, ...] = ()

    def describe(self) -> str:
        lo = "-inf" if self.lo is None else self.lo
        hi = "+inf" if self.hi is None else self.hi
        extra = "".join(f" or equal {v}" for v in self.also)
        return f"values of '{self.array}' lie in [{lo}, {hi}]{extra} (precondition)"

    def constraints(self, apps: list[smt.Expr]) -> list[smt.BoolExpr]:
        out = []
        for a in apps:
            inside = [c for c in ((a >= self.lo) if self.lo is not None else None,
                                  (a <= self.hi) if self.hi is not None else None) if c is not None]
            if self.also:
                out.append(smt.Or(smt.And(*inside) if inside else smt.BoolVal(True), *(a == v for v in self.also)))
            else:
                out += inside
        return out

    def violation(self, values: np.ndarray) -> str | None:
        flat = np.asarray(values).reshape(-1)
        ok = np.ones(flat.shape, bool)
        if self.lo is not None:
            ok &= flat >= self.lo
        if self.hi is not None:
            ok &= flat <= self.hi
        for v in self.also:
            ok |= flat == v
        if not ok.all():
            i = int(np.flatnonzero(~ok)[0])
            return f"value {flat[i]} at flat position {i} is outside the bound"
        return None


def parse(spec: str) -> Precondition:
    """A precondition from its text form, as written in corpus manifests and
    ``[tool.tilecheck.assume]``: ``distinct:NAME``, ``distinct:NAME:BELOW`` (values below BELOW
    are distinct), ``nondecreasing:NAME`` or ``bounded:NAME:LO:HI[:V,...]`` (LO/HI may be empty
    for no bound; the optional V,... are values allowed besides the range)."""
    parts = spec.split(":")
    try:
        if parts[0] == "distinct" and len(parts) in (2, 3) and parts[1]:
            return distinct(parts[1], below=int(parts[2]) if len(parts) == 3 else None)
        if parts[0] == "nondecreasing" and len(parts) == 2 and parts[1]:
            return nondecreasing(parts[1])
        if parts[0] == "bounded" and len(parts) in (4, 5) and parts[1]:
            also = tuple(int(v) for v in parts[4].split(",")) if len(parts) == 5 else ()
            return bounded(parts[1], None if parts[2] == "" else int(parts[2]),
                           None if parts[3] == "" else int(parts[3]), also=also)
    except ValueError:
        pass
    raise TilecheckError(f"unknown precondition '{spec}' (use distinct:NAME, distinct:NAME:BELOW, "
                         "nondecreasing:NAME or bounded:NAME:LO:HI[:V,...])")


def distinct(array: str, *, below: int | None = None) -> Distinct:
    """Precondition: the integer array argument ``array`` holds no duplicate values; with
    ``below``, no duplicate values below it (values >= ``below``, such as MoE padding entries,
    may repeat): ``distinct("sorted_token_ids", below=num_tokens)``."""
    return Distinct(array, None if below is None else int(below))


def nondecreasing(array: str) -> Nondecreasing:
    """Precondition: the integer array argument ``array`` never decreases in row-major order
    (``nondecreasing("offsets")`` for CSR row offsets or prefix sums of segment sizes)."""
    return Nondecreasing(array)


def bounded(array: str, lo: int | None = None, hi: int | None = None, *, also: tuple[int, ...] = ()) -> Bounded:
    """Precondition: every value of the integer array argument ``array`` lies in [lo, hi], or is one
    of ``also`` (e.g. ``bounded("target", 0, V - 1, also=(-100,))`` for an ignore_index)."""
    return Bounded(array, lo, hi, tuple(int(v) for v in also))
