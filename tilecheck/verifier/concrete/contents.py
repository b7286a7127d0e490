"""What a query knows of the values it reads beside the blocks' indices: array contents (in the
element type's range, under the kernel's preconditions, pinned to the given contents where the
level asks about this launch's data) and loop-carried scalars, iteration by iteration; and the
questions asked in the given contents (a witness the launch's own data shows, the pinned question,
the late-probe budget once an obligation is open). A mixin of ``obligations.Checker``, whose state
(level, footprints, confirmation channel, result) it uses."""
from __future__ import annotations

import functools
import time
from typing import Any

from tilecheck.ir.types import ScalarType
from tilecheck.verifier.concrete import given_case
from tilecheck.verifier.contracts.preconditions import constraints
from tilecheck.verifier.model import carried
from tilecheck.verifier.model.footprints import Instance
from tilecheck.verifier.solver import smt

# each query looking for a witness in the given contents (an optional improvement of the witness)
PIN_RLIMIT = 2_000_000


class ContentQuestions:
    """``Checker``'s methods about contents and carried values (see the module docstring)."""

    fp: Any
    level: Any
    result: Any
    names: dict[int, str]
    preconditions: dict[str, list[Any]]
    confirmer: Any
    confirm: Any
    pin_given: bool
    data_rlimit: int | None
    detector_follows: bool
    open_is_final: bool
    settled: int
    concrete: Any
    corners: Any
    _read_memory: bool
    _apps: dict[int, Any]
    _shared: set[int]
    _carried: dict[int, Any]
    _enumerated: dict[Any, Any]
    given_listings: dict[Any, Any]
    _unrolled: Any
    bitwise_limit: Any
    canonical: Any
    witness: Any
    contents: Any

    def _contents_range(self, index: int) -> tuple[int, int] | None:
        """The range of array ``index``'s contents, its element type's (None: not bounded here)."""
        element = self.fp.arrays[index].element
        bits = element.bitwidth if isinstance(element, ScalarType) else 64
        return (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if 1 < bits < 64 else None

    def content_facts(self, formula: smt.BoolExpr) -> list[smt.BoolExpr]:
        """What is known of the values ``formula`` reads: the loop-carried scalars it mentions,
        iteration by iteration (at a level with concrete shapes), and the array contents, in the
        element type's range and under the preconditions. Every query and every witness search
        includes them."""
        extra = self.carried_facts(formula)
        if not self.fp.memory:  # no array contents in the model: nothing to find in the formula
            self._read_memory = False
            return extra
        by_name = smt.applications_of([formula, *extra], self._apps, self._shared, self.memory_names)
        self._read_memory = any(func.name() in by_name for func in self.fp.memory.values())
        for index, func in self.fp.memory.items():
            name = self.names.get(index, "")
            apps = by_name.get(func.name(), [])
            if (span := self._contents_range(index)) is not None:  # in the element type's range
                extra += [smt.And(app >= span[0], app < span[1] + 1) for app in apps]
            for pre in self.preconditions.get(name, []):
                extra += constraints(pre, apps)
            if self.pin_given and apps and (values := self._small_contents(index)) is not None:
                extra += given_case.full_pins(apps, values)
        return extra

    @functools.cached_property
    def memory_names(self) -> frozenset[str]:
        """The names of the array-contents functions: what the walks of ``content_facts`` and
        ``given_pins`` look for (the loop-carried and padding values they pass are not wrapped)."""
        return frozenset(func.name() for func in self.fp.memory.values())

    def _small_contents(self, index: int) -> Any:
        """The given contents of array ``index`` when it is small enough to be pinned whole
        (``given_case.FULL_PIN_ELEMENTS``), else None."""
        values = None if self.confirmer is None else self.confirmer.contents(self.names.get(index, ""))
        return values if values is not None and values.size <= given_case.FULL_PIN_ELEMENTS else None

    @property
    def about_contents(self) -> bool:
        """The last query read array contents, at a given case the data step follows (not its
        pinned run): what a probe, and the pinned question, are for."""
        return self.data_rlimit is not None and self._read_memory and not self.pin_given

    def after_open(self, rlimit: int) -> int:
        """``rlimit``, or a late probe's budget once an obligation is open that the given contents
        do not settle, where the exact detector follows: the launch goes to the data step whatever
        a query answers; a race is found within this (TileGym), and a proof only spares the pinned
        run a question (TileBench's stream-K GEMM: twelve 2M-unit queries in turn ran out, 4.7 s,
        before the detector decided). Likewise where nothing decides an open obligation after this
        level but the pinned run (``open_is_final``): the verdict is unknown whatever the queries
        left prove, and only a race would change it (TileBench's radix scatter at 19,532 blocks:
        its in-block question ran to 0.5M units, unknown, after its across-blocks one had)."""
        if (self.detector_follows or self.open_is_final) and not self.pinned_may_prove:
            return min(rlimit, given_case.PROBE_OPEN_RLIMIT)
        return rlimit

    def leave_open(self, reason: str, key: tuple[Any, ...] | None) -> None:
        """Record obligation ``key`` undecided at this level, for ``reason`` (counted as settled when
        it holds with the given contents pinned: ``pinned_may_prove``)."""
        self.result.unknowns.append(reason)
        self.settled += key is not None and key in self.result.proved_pinned

    @property
    def pinned_may_prove(self) -> bool:
        """Every obligation the level left open so far holds with the small index arrays at their
        given contents: the data step's pinned run may still prove the launch."""
        return len(self.result.unknowns) == self.settled

    def ask_pinned(self, terms: list[smt.BoolExpr], key: tuple[Any, ...] | None, rlimit: int) -> smt.Result | None:
        """``given_case.pinned``: ``terms`` with the small index arrays at their given contents."""
        return given_case.pinned(self, terms, key, rlimit)

    def given_pins(self, terms: list[smt.BoolExpr]) -> list[smt.BoolExpr]:
        """The reads of small arrays in ``terms`` held at their given contents. (Walked again, not
        kept from ``content_facts``: a read kept alive longer changes the ids Z3 gives the terms
        made after it, and with them the solver's answers on TileGym.)"""
        by_name = smt.applications_of(terms, self._apps, self._shared, self.memory_names)
        out = []
        for index, func in self.fp.memory.items():
            if func.name() in by_name and (values := self._small_contents(index)) is not None:
                out += given_case.full_pins(by_name[func.name()], values)
        return out

    @functools.cached_property
    def _given_memory(self) -> dict[str, Any]:
        """The given contents of the small integer arrays, by content-function name (what a pinned
        query holds them at), where the level has a confirmer (the launch's data); else none."""
        if self.confirmer is None:
            return {}
        return {func.name(): values for index, func in self.fp.memory.items()
                if (values := self._small_contents(index)) is not None}

    def enumerated_functions(self, given: bool = False) -> dict[str, Any]:
        """What enumeration evaluates function applications by (``rows.Evaluator``'s memory): at a
        level with concrete shapes the loop-carried values, from their facts; and the given
        contents of the small arrays where the level pins them (``pin_given``), or ``given``: a
        question about the given contents asked at a level that does not pin them."""
        cache = self.enumerated(given)
        if "functions" not in cache:
            functions = dict(self.fp.carried) if self.level.shapes is not None else {}
            cache["functions"] = {**functions, **(self._given_memory if given or self.pin_given else {})}
        return cache["functions"]

    def enumerated(self, given: bool = False) -> dict[Any, Any]:
        """Enumeration's cache for the level (each access's listing, the evaluators' DAGs and
        carried values: ``enumeration.compare``'s ``cache``), or with ``given`` for the questions
        about the given contents at a level that does not pin them (other values: a cache apart)."""
        if not given or self.pin_given:
            return self._enumerated
        return self._enumerated.setdefault("given", {"accesses": self._enumerated["accesses"]})

    def carried_facts(self, formula: smt.BoolExpr) -> list[smt.BoolExpr]:
        """The loop-carried scalars ``formula`` mentions, iteration by iteration (``carried``), at a
        level with concrete shapes (at the general ones they stay any value)."""
        if self.level.shapes is None or not self.fp.carried:
            return []
        key = smt.term_id(formula)
        if key not in self._carried:  # the same formula comes back (witness, contents, minimising)
            facts = carried.facts(formula, self.fp.carried, self.concrete, self.corners, self._unrolled)
            self._carried[key] = (formula, facts)
        return self._carried[key][1]

    def with_given_contents(self, a: Instance, b: Instance | None, constraints: list[smt.BoolExpr],
                            obligation: tuple[Any, ...] | None = None) -> smt.Sat | None:
        """A model of ``constraints`` that reads the given array contents, confirmed on the
        interpreter (None when the solver finds none within its rounds). ``obligation``: the key of
        the obligation ``constraints`` state whole (not narrowed to instances), whose proof with the
        small arrays held at their given contents is recorded for the data step's pinned run
        (``LevelResult.proved_pinned``: not asked again; TileGym's LPT prefills asked it again at
        three times the work)."""
        def solve(cs: list[smt.BoolExpr]) -> smt.Result:
            formula = smt.And(*cs)
            self.result.queries += 1
            start = time.perf_counter()
            result = smt.check([formula, *self.content_facts(formula)],
                               self.after_open(self.bitwise_limit(formula, PIN_RLIMIT)))
            self.result.solver_s += time.perf_counter() - start
            return result

        claim = smt.And(*constraints)
        sat, pins, _, whole = given_case.solve_with_given_contents(self, constraints, claim, solve)
        if isinstance(sat, smt.Unsat) and whole and pins and obligation is not None:
            self.result.proved_pinned.add(obligation)
        if not isinstance(sat, smt.Sat):
            return None
        smallest = self.canonical(a, b, sat, [*constraints, *pins])
        if smallest is not sat and given_case.evaluate(self, claim, smallest) is True:
            sat = smallest  # the canonical witness, still in the given contents
        if self.confirm is not None and b is not None and not self.confirm(
                self.witness(a, b, sat), self.contents(sat, constraints)):
            return None
        return sat
