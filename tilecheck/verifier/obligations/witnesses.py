"""Witness building for the checker's obligations: a model made canonical (least blocks, then
iterations, then lanes), confirmed on the interpreter, its array contents read, and turned into
a ``Witness``. A mixin of ``obligations.Checker``, whose state (level, confirmation channel, result)
it uses."""
from __future__ import annotations

import time
from typing import Any

from tilecheck.report import Side, Witness
from tilecheck.verifier.model.engine import GRID
from tilecheck.verifier.model.footprints import Instance
from tilecheck.verifier.solver import smt

# Races are confirmed on the interpreter when the case has arguments; a model that does not
# reproduce is excluded and the solver asked again, at most this many times in a whole level (not
# per obligation: a model that does not reproduce comes from a value the model over-approximates,
# which the next obligation's model usually shares; TileGym's fmha LPT kernels spent 64 runs and 10 s
# on eight bounds obligations whose every model failed), before answering unknown.
CONFIRM_ROUNDS = 8
# ... and at a level whose undecided content questions verify's data step decides (``data_rlimit``
# set), for a model that reads array contents: the step runs the launch's own data anyway, so a
# second model is rarely worth its query and run (TileGym's ragged GEMMs: 1-2 s a round)
DATA_CONFIRM_ROUNDS = 2
_CONFIRMED_KINDS = ("write-write", "read-write", "unordered-in-block", "out-of-bounds")


class WitnessBuilding:
    """``Checker``'s witness methods (see the module docstring); they use its ``level``,
    ``confirm``, ``result``, ``fp``, ``names``, ``solve`` and ``content_facts``."""

    level: Any
    confirm: Any
    given_contents: Any
    confirm_exact: bool
    rlimit: int
    data_rlimit: int | None
    _read_memory: bool
    asked: Any
    leave_open: Any
    about_contents: bool
    ask_pinned: Any
    in_integers: Any
    result: Any
    fp: Any
    names: dict[int, str]

    def canonical(self, a: Instance, b: Instance | None, sat: smt.Sat,
                  constraints: list[smt.BoolExpr]) -> smt.Sat:
        # a contract search wants the smallest launch that breaks: the grid first
        grid = list(GRID) if self.level.grid is None and self.level.grid_max is not None else []
        order = [*grid, *a.block, *(b.block if b else ()), *a.loop_vars, *(b.loop_vars if b else ()), *a.lanes,
                 *(b.lanes if b else ())]
        start = time.perf_counter()
        # a contract's box is drawn from the least breaking grid: that search gets the level's
        # budget; a witness's blocks are polish, with minimisation's own small one. Bit-vector
        # arithmetic the level makes constant is minimised in integers (TileBench's bitonic race:
        # 0.5 s a witness on bit-vectors)
        formula = self.in_integers(smt.And(*constraints))
        sat = smt.minimize([formula, *self.content_facts(formula)], order, sat,
                           rlimit=self.rlimit if grid else smt.MINIMIZE_RLIMIT)
        self.result.solver_s += time.perf_counter() - start
        return sat

    def confirmed(self, kind: str, a: Instance, b: Instance | None, sat: smt.Sat,
                  constraints: list[smt.BoolExpr]) -> smt.Sat | None:
        """The canonical model, once the interpreter reproduces it (DESIGN §4, trust rules): a model
        whose blocks do not both touch the element comes from an over-approximation; it is excluded
        and the solver asked again. None (and an unknown) when no model reproduces."""
        if (self.confirm is None or kind not in _CONFIRMED_KINDS or b is None and kind != "out-of-bounds"
                or not self.confirm_exact and not smt.reads_data(smt.And(*constraints))):
            return self.canonical(a, b, sat, constraints)
        constraints = list(constraints)
        key = self.asked  # the obligation's (``Checker.solve``): its exclusion queries have none
        ask_pinned = self.about_contents and key is not None  # (a proof pinned before: answered at once)
        while True:
            # confirm the solver's model first, minimise only one that reproduces (minimising costs
            # far more than a run of two blocks); keep the canonical one if it reproduces as well
            contents = self.contents(sat, constraints)
            if self.confirm(self.witness(a, b, sat), contents):
                if self.left_to_data(contents):
                    return sat
                canonical = self.canonical(a, b, sat, constraints)
                if canonical is sat or self.confirm(self.witness(a, b, canonical),
                                                    self.contents(canonical, constraints)):
                    return canonical
                return sat
            self.result.unconfirmed += 1
            data_step = self.data_rlimit is not None and self._read_memory
            if ask_pinned:  # once, before any model is excluded
                ask_pinned = False
                # the data step decides this launch on its contents: when they settle the question,
                # other models are not looked for (each a query and a run), the obligation stays open
                formula = smt.And(*constraints)
                if isinstance(self.ask_pinned([formula, *self.content_facts(formula)], key, self.data_rlimit),
                              smt.Unsat):
                    break
            if self.result.unconfirmed > (DATA_CONFIRM_ROUNDS if data_step else CONFIRM_ROUNDS):
                break
            same = [p == sat.eval(p) for p in (*a.block, *(b.block if b is not None else ()))]
            if a.coords is not None:
                same += [c == sat.eval(c) for c in a.coords]
            constraints.append(smt.Not(smt.And(*same)))
            result = self.solve(constraints, f"{kind} (after excluding a witness that did not reproduce)",
                                tuple(x.access.op.loc for x in (a, b) if x is not None))
            if not isinstance(result, smt.Sat):
                break
            sat = result
        where = " and ".join(dict.fromkeys(f"{x.access.op.name} ({x.access.op.loc.outermost().short()})"
                                           for x in (a, b) if x is not None))
        where = f"between {where}" if b is not None else f"of {where}"
        self.leave_open(f"{kind} {where}: the solver's witnesses did not reproduce on the interpreter "
                        "with the given arguments; a value the model over-approximates reaches the address", key)
        return None

    def left_to_data(self, contents: dict[str, dict[tuple[int, ...], int]]) -> bool:
        """A confirmed witness that needs contents other than the given ones, at a level whose
        such defects verify's data step decides (``data_rlimit`` set): its blocks are not made least.
        The step replaces it (a verdict on the launch's data, or the detector's own witness) and
        keeps only its contents for a note; minimising is polish, a query and a run more."""
        return self.data_rlimit is not None and self.given_contents is not None and \
            bool(self.given_contents(contents))

    def contents(self, sat: smt.Sat,
                 constraints: list[smt.BoolExpr]) -> dict[str, dict[tuple[int, ...], int]]:
        """The model's values of the read-only array elements the constraints read, by array name."""
        formula = smt.And(*constraints)
        out: dict[str, dict[tuple[int, ...], int]] = {}
        by_name = smt.applications_by_name(smt.And(formula, *self.carried_facts(formula)))
        for index, func in self.fp.memory.items():
            for app in by_name.get(func.name(), []):
                coords = tuple(sat.eval(c) for c in app.children())
                value = sat.eval(app)
                if all(isinstance(v, int) for v in (*coords, value)):
                    out.setdefault(self.names.get(index, str(index)), {})[coords] = value
        return out

    def launch_witness(self, sat: smt.Sat, op: Any, block: tuple[int, ...]) -> Witness:
        """A witness that is a launch only (an op's result at some block, e.g. an overflow)."""
        side = Side(op.name, op.loc, block, {}, (), "compute")
        return Witness("", None, None, side, None, **self._launch(sat))

    def _launch(self, sat: smt.Sat) -> dict[str, Any]:
        """The model's launch, as a witness names it: grid, shapes, scalars, and the strides where the
        level leaves them symbolic."""
        arrays = [info for info in self.fp.arrays.values() if info.rank]
        return {"grid": tuple(sat.eval(g) for g in GRID),
                "shapes": {info.name: tuple(sat.eval(s) for s in info.shape) for info in arrays},
                "scalars": {self.fp.scalar_name(i): sat.eval(v) for i, v in self.fp.scalars.items()},
                "strides": {} if self.level.strides is not None else {
                    info.name: tuple(sat.eval(s) for s in info.strides) for info in arrays}}

    def witness(self, a: Instance, b: Instance | None, sat: smt.Sat) -> Witness:
        def side(inst: Instance) -> Side:
            loops = {}
            for lv, var in zip(inst.access.loops, inst.loop_vars):
                loops[f"{'loop' if lv.op.name == 'loop' else 'for'}"
                      f"@line{lv.op.loc.outermost().line}"] = sat.eval(var)
            return Side(inst.access.op.name, inst.access.op.loc, tuple(sat.eval(v) for v in inst.block),
                        loops, tuple(sat.eval(v) for v in inst.lanes), inst.access.effect.value)

        element = tuple(sat.eval(c) for c in a.coords) if a.coords is not None else None
        return Witness(self.names.get(a.access.array, str(a.access.array)), element,
                       None if element is not None else sat.eval(a.linear), side(a),
                       side(b) if b is not None else None, **self._launch(sat))
