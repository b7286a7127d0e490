"""Z3 terms evaluated as numpy arrays over rows of variable values: the enumeration's arithmetic
(``enumeration.py``). Shape, stride, scalar and grid symbols take the case's values; reads of
given arrays take their elements; loop-carried values (``carried.Carried``) are computed iteration
by iteration, for every row at once; bit-vectors are held as their unsigned values. Anything it
cannot evaluate exactly (a read of other contents, a carried value whose loop does not proceed to
the iteration asked or runs past ``carried.EVALUATED_ITERATIONS``, a division by zero, a sum or product
past int64's exact range, a bit-vector wider than ``BV_BITS``) raises ``Unsupported``: the caller
leaves the question to the solver."""
from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from tilecheck.verifier.model.carried import EVALUATED_ITERATIONS, MAX_ITERATIONS, Carried
from tilecheck.verifier.solver import smt

# values past this are out of the arithmetic the kernel can do in int64 without wrapping around
LIMIT = 1 << 62


class Unsupported(Exception):
    """A term the rows cannot evaluate exactly."""


class Evaluator:
    """Z3 integer and boolean terms as numpy arrays over the rows of ``env`` (variable name ->
    values); shape, stride, scalar and grid symbols take the case's values (``concrete``); an
    application of a function in ``memory`` (by name) takes its value: an array's element (the
    contents given), or a loop-carried value (a ``Carried``, computed from its defining facts)."""

    def __init__(self, env: dict[str, np.ndarray], concrete: list[tuple[smt.Expr, smt.Expr]],
                 memory: dict[str, np.ndarray | Carried] | None = None, dags: dict[Any, Any] | None = None) -> None:
        self.env = env
        self.concrete = concrete
        self.memory = memory or {}
        # each term's DAG with the case's values, by the term's id (``dags``: shared with evaluators
        # of other rows of the same case, which evaluate the same terms), and the carried values
        # computed so far (``_carried``)
        self._dags: dict[Any, Any] = {} if dags is None else dags
        # values by node id, shared by the terms evaluated over the same rows (an access's active
        # lanes, bounds and offset compute one partner index ``i ^ j``)
        self._memo: dict[int, Any] = {}
        self._magnitudes: dict[int, int] = {}

    def rows_changed(self) -> None:
        """``env`` now has other rows: what was computed over the old ones no longer applies."""
        self._memo.clear()
        self._magnitudes.clear()

    def ints(self, term: smt.Expr, rows: int) -> np.ndarray:
        root, nodes = self._dag(term)
        value = self._eval(root, nodes, self._memo)
        return np.broadcast_to(np.asarray(value, np.int64), (rows,))

    def truth(self, term: smt.BoolExpr, rows: int) -> np.ndarray:
        """Where ``term`` holds, exactly (``Unsupported`` when any part cannot be evaluated)."""
        root, nodes = self._dag(term)
        return self.holds(root, nodes, rows)

    def condition(self, term: smt.BoolExpr, rows: int) -> np.ndarray:
        """Where ``term`` may hold: its conjuncts that can be evaluated (the others: anywhere)."""
        mask = np.ones(rows, bool)
        root, nodes = self._dag(term)
        for part in _conjuncts(root, nodes):
            try:
                value = self._eval(part, nodes, self._memo)
            except Unsupported:
                continue
            mask &= np.broadcast_to(np.asarray(value, bool), (rows,))
        return mask

    def conjuncts(self, term: smt.BoolExpr) -> tuple[list[int], dict[int, smt.Node]]:
        """``term``'s top-level conjuncts, as keys of its DAG's nodes (the case's values in it), and
        those nodes: for ``holds``, here or in an evaluator of other rows of the same case."""
        root, nodes = self._dag(term)
        return _conjuncts(root, nodes), nodes

    def holds(self, key: int, nodes: dict[int, smt.Node], rows: int) -> np.ndarray:
        """Where the node ``key`` of ``nodes`` (from ``conjuncts``) holds, exactly (``Unsupported``
        when it cannot be evaluated)."""
        return np.broadcast_to(np.asarray(self._eval(key, nodes, self._memo), bool), (rows,))

    def _dag(self, term: smt.Expr) -> tuple[int, dict[int, smt.Node]]:
        key = smt.term_id(term)
        if key not in self._dags:  # the term and its substitution kept alive, so that ids name them
            fixed = smt.substituted(term, self.concrete)
            self._dags[key] = (term, fixed, *smt.dag(fixed))
        return self._dags[key][2:]

    def _eval(self, key: int, nodes: dict[int, smt.Node], memo: dict[int, Any]) -> Any:
        if key in memo:
            return memo[key]
        value = self._compute(nodes[key], nodes, memo)
        memo[key] = value
        return value

    def _compute(self, node: smt.Node, nodes: dict[int, smt.Node], memo: dict[int, Any]) -> Any:
        if node.kind == "literal":
            return node.value
        if node.kind == "symbol":
            name = node.value
            if node.args and name in self.memory:
                known, args = self.memory[name], [self._eval(a, nodes, memo) for a in node.args]
                return self._carried(known, args) if isinstance(known, Carried) else self._read(known, args)
            if node.args or name not in self.env:
                raise Unsupported  # other contents, a loop-carried value, a lane, a free symbol
            return self.env[name]
        if node.kind == "ite":  # a branch only where it is taken: the other may not evaluate
            taken = np.asarray(self._eval(node.args[0], nodes, memo), bool)
            if taken.all():
                return self._eval(node.args[1], nodes, memo)
            if not taken.any():
                return self._eval(node.args[2], nodes, memo)
        values = [self._eval(a, nodes, memo) for a in node.args]
        if node.width or node.kind == "bvliteral":
            return _bitvector(node, values)
        if node.kind in _GROWING:  # only sums and products grow past their operands: bounded first
            bounds = [self._magnitude(a, v) for a, v in zip(node.args, values)]
            if (math.prod(bounds) if node.kind == "mul" else sum(bounds)) >= LIMIT:
                raise Unsupported  # past the arithmetic int64 does without wrapping around
        return _apply(node.kind, values)

    def _magnitude(self, key: int, value: Any) -> int:
        """The largest absolute value of a node's value (each node's once, over the same rows)."""
        if key not in self._magnitudes:
            array = np.asarray(value)
            self._magnitudes[key] = max(abs(int(array.max())), abs(int(array.min()))) if array.size else 0
        return self._magnitudes[key]

    def _carried(self, loop: Carried, args: list[Any]) -> np.ndarray:
        """A loop-carried value at each row's arguments (the block, enclosing iterations and, for a
        carried value, its iteration; a loop's exit iteration takes no iteration argument)."""
        columns = [np.asarray(a, np.int64).reshape(-1) for a in args]
        rows = np.broadcast_shapes(*(c.shape for c in columns))[0] if columns else 1
        table = np.stack([np.broadcast_to(c, (rows,)) for c in columns]) if columns else np.zeros((0, 1), np.int64)
        # each run of equal argument rows once: the lanes of one instance share theirs (listed one
        # after the other: ``enumeration._elements``), and computing a grouped GEMM's scatter lane
        # by lane took seconds
        if rows > 1:
            starts = np.flatnonzero(np.concatenate([[True], (table[:, 1:] != table[:, :-1]).any(axis=0)]))
            if len(starts) < rows:
                runs = np.diff(np.append(starts, rows))
                return np.repeat(self._carried(loop, list(table[:, starts])), runs)
        columns = list(table)
        # computed once per case and arguments: a loop's values are asked again by the loops they
        # lead to (a ``for``'s cursor at iteration k, by the ``while`` exits of every iteration after)
        key = ("carried", loop.func.name(), *(c.tobytes() for c in columns))
        if key not in self._dags:
            # None while under way (a value its own computation asks for is not defined), and for
            # good once it cannot be computed (asked again, it fails again)
            self._dags[key] = None
            outer = {v.decl().name(): c for v, c in zip(loop.outer, columns)}
            self._dags[key] = self._exit(loop, outer, rows) if loop.init is None else \
                self._iterated(loop, outer, columns[len(loop.outer)], rows)
        if self._dags[key] is None:
            raise Unsupported
        return self._dags[key]

    def _rows_of(self, outer: dict[str, np.ndarray], which: np.ndarray, **more: Any) -> Evaluator:
        """An evaluator over the rows ``which`` of ``outer`` (with ``more`` variables), sharing this
        one's case, memory and DAGs."""
        return Evaluator({**{n: c[which] for n, c in outer.items()}, **more}, self.concrete, self.memory,
                         self._dags)

    def _iterated(self, loop: Carried, outer: dict[str, np.ndarray], target: np.ndarray, rows: int) -> np.ndarray:
        """``loop``'s carried value at iteration ``target`` of each row, read off the trajectories
        of its loop (``_trajectories``) over the distinct contexts of the rows."""
        names = list(outer)
        table = np.stack([np.broadcast_to(np.asarray(outer[n], np.int64), (rows,)) for n in names])
        contexts, inverse = distinct_columns(table)
        distinct = {n: contexts[i] for i, n in enumerate(names)}
        start = self._rows_of(distinct, np.arange(contexts.shape[1]))
        first, step = start.ints(loop.first, contexts.shape[1]), start.ints(loop.step, contexts.shape[1])
        first, step = first[inverse], step[inverse]
        if (step <= 0).any() or ((target - first) % step).any() or (target < first).any():
            raise Unsupported  # not an iteration of the loop
        needed = (target - first) // step
        if not _within_work(int(needed.max(initial=0)), contexts.shape[1]):
            raise Unsupported
        most = np.zeros(contexts.shape[1], np.int64)
        np.maximum.at(most, inverse, needed)
        values, reached = self._trajectories(loop, distinct, most)
        name = loop.func.name()
        if name not in reached or (needed > reached[name][inverse]).any():
            raise Unsupported  # the loop stops before the iteration asked, or a value cannot be computed
        return values[name][needed, inverse]

    def _trajectories(self, loop: Carried, outer: dict[str, np.ndarray], needed: np.ndarray
                      ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        """Every carried value of ``loop``'s loop (its siblings: one ``for``'s block arguments), at
        each iteration up to ``needed`` of each context (one column of ``outer``), computed
        together: an iteration's ``following`` reads its siblings at the same iteration, and a
        value computed alone asked each sibling from the first iteration again (TileGym's expert
        walk: six values over 128 experts, 40 s). Per value: an array of its values by iteration
        and context, and the iterations reached per context (a value whose step cannot be
        evaluated stops there; only rows that need an iteration compute it, since past its last
        one a row's loop may stop and its terms not evaluate). Each context once per case, as far as
        asked (the listings of a level ask the same blocks and slots again, each for other rows)."""
        store = self._dags.setdefault(("trajectories", loop.var.decl().name()), _Trajectories())
        columns = {n: np.broadcast_to(c, needed.shape) for n, c in outer.items()}
        keys = list(zip(*(c.tolist() for c in columns.values())))
        missing = np.array([not store.covers(k, n) for k, n in zip(keys, needed.tolist())], bool)
        if not missing.any():
            return store.gather(keys, int(needed.max(initial=0)) + 1)
        which = np.flatnonzero(missing)
        computed = self._computed_trajectories(loop, {n: c[which] for n, c in columns.items()}, needed[which])
        store.add([keys[i] for i in which], *computed)
        if missing.all():  # (the usual first ask: the batch itself, kept or not)
            return computed[0], computed[1]
        if not all(store.covers(keys[i], n) for i, n in zip(which.tolist(), needed[which].tolist())):
            # some of them stopped short: computed again with the others, as one batch
            return self._computed_trajectories(loop, columns, needed)[:2]
        return store.gather(keys, int(needed.max(initial=0)) + 1)

    def _computed_trajectories(self, loop: Carried, outer: dict[str, np.ndarray], needed: np.ndarray
                               ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], np.ndarray]:
        """``_trajectories`` for contexts no earlier call computed far enough, and how far each was
        asked (``needed``)."""
        contexts = len(needed)
        siblings, proceeds = self._joint(loop)
        everyone = np.arange(contexts)
        start = self._rows_of(outer, everyone)
        first, step = start.ints(loop.first, contexts), start.ints(loop.step, contexts)
        length = int(needed.max(initial=0)) + 1
        values: dict[str, np.ndarray] = {}
        reached: dict[str, np.ndarray] = {}
        for name, (sibling, _, _) in siblings.items():
            try:
                init = np.broadcast_to(start._value(sibling.init, contexts), (contexts,))
            except Unsupported:
                continue
            values[name] = np.zeros((length, contexts), init.dtype)
            values[name][0] = init
            reached[name] = np.zeros(contexts, np.int64)
        var = loop.var.decl().name()

        def at(k: int, which: np.ndarray, alive: list[str]) -> Evaluator:
            # the rows ``which`` at iteration k, with their siblings' values there
            return self._rows_of(outer, which, **{var: first[which] + k * step[which]},
                                 **{siblings[n][2]: values[n][k, which] for n in alive})

        for k in range(length - 1):
            which = np.flatnonzero(needed > k)
            alive = [n for n in values if (reached[n][which] >= k).all()]
            try:
                going = at(k, which, alive).truth(proceeds, len(which))
            except Unsupported:
                break
            which = which[going]
            ev = at(k, which, alive)
            for name in alive:
                try:
                    values[name][k + 1, which] = ev._value(siblings[name][1], len(which))
                except Unsupported:
                    continue
                reached[name][which] = k + 1
        return values, reached, needed

    def _exit(self, loop: Carried, outer: dict[str, np.ndarray], rows: int) -> np.ndarray:
        """A ``loop``'s exit iteration for each row: the first iteration that breaks, each before it
        proceeding."""
        everyone = np.arange(rows)
        if not self._rows_of(outer, everyone).truth(loop.reached, rows).all():
            raise Unsupported  # the loop is not reached: no facts define its exit
        exit_at = np.full(rows, -1, np.int64)
        pending = everyone
        for j in range(EVALUATED_ITERATIONS):
            if not _within_work(j, rows):
                break  # past the work a listing may spend on one loop
            ev = self._rows_of(outer, pending, **{loop.var.decl().name(): np.int64(j)})
            broke = ev.truth(loop.broke, len(pending))
            exit_at[pending[broke]] = j
            if not broke.all() and not ev.truth(loop.proceeds, len(pending))[~broke].all():
                raise Unsupported  # neither breaks nor proceeds: no iteration is defined past it
            pending = pending[~broke]
            if not len(pending):
                return exit_at
        raise Unsupported

    def _joint(self, loop: Carried) -> tuple[dict[str, tuple[Carried, smt.Expr, str]], smt.BoolExpr]:
        """The carried values of ``loop``'s loop in this evaluator's memory (by function name: the
        value, its ``following`` with every sibling's application at the iteration as a variable,
        that variable's name), and ``proceeds`` likewise: once per loop and case."""
        key = ("joint", loop.var.decl().name())
        if key not in self._dags:
            members = [c for c in self.memory.values() if isinstance(c, Carried) and c.init is not None
                       and c.var.eq(loop.var) and len(c.outer) == len(loop.outer)
                       and all(a.eq(b) for a, b in zip(c.outer, loop.outer))]
            own = []
            for c in members:
                name = f"{c.func.name()}!this"
                this = smt.Int(name) if c.func.range() == smt.IntSort() else smt.Bool(name)
                own.append((c.func(*c.outer, c.var), this))
            self._dags[key] = ({c.func.name(): (c, smt.substitute(c.following, *own), this.decl().name())
                                for c, (_, this) in zip(members, own)},
                               smt.substitute(loop.proceeds, *own))
        return self._dags[key]

    def _value(self, term: smt.Expr, rows: int) -> np.ndarray:
        """``term``'s value at every row, integer or boolean, exactly."""
        return self.truth(term, rows) if smt.is_bool(term) else self.ints(term, rows)

    @staticmethod
    def _read(contents: np.ndarray, coords: list[Any]) -> np.ndarray:
        """The elements at ``coords`` (one array per dimension); a read outside the array is not
        evaluated (the model's value there is any value)."""
        if len(coords) != contents.ndim:
            raise Unsupported
        arrays = np.broadcast_arrays(*[np.asarray(c, np.int64) for c in coords])
        for c, n in zip(arrays, contents.shape):
            if c.size and (c.min() < 0 or c.max() >= n):
                raise Unsupported
        return contents[tuple(arrays)].astype(np.int64)


class _Trajectories:
    """One loop's carried values computed so far, per context (a tuple of the block ids and the
    enclosing iterations): the batch that computed it and its column there, and how far it was
    asked; each batch's values by sibling (iteration x column) and the iterations each reached."""

    def __init__(self) -> None:
        self.where: dict[tuple[int, ...], tuple[int, int, int]] = {}
        self.batches: list[tuple[dict[str, np.ndarray], dict[str, np.ndarray]]] = []

    def covers(self, key: tuple[int, ...], needed: int) -> bool:
        found = self.where.get(key)
        return found is not None and found[2] >= needed

    def add(self, keys: list[tuple[int, ...]], values: dict[str, np.ndarray], reached: dict[str, np.ndarray],
            needed: np.ndarray) -> None:
        batch = len(self.batches)
        self.batches.append((values, reached))
        # a context some value stopped short in is not kept: computed with other contexts (another
        # listing's rows), a branch taken by all of them may evaluate where a mixed one did not
        whole = np.logical_and.reduce([hit >= needed for hit in reached.values()]) if reached else \
            np.zeros(len(keys), bool)
        self.where.update({k: (batch, column, n) for column, (k, n, done) in
                           enumerate(zip(keys, needed.tolist(), np.broadcast_to(whole, (len(keys),)).tolist()))
                           if done})

    def gather(self, keys: list[tuple[int, ...]], length: int) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        """The values (iteration x context, the first ``length`` iterations) and iterations reached
        of ``keys``' contexts, each from the batch that computed it; a value a batch could not
        start is unreached there (-1)."""
        found = [self.where[k] for k in keys]
        batches = np.array([b for b, _, _ in found], np.int64)
        columns = np.array([c for _, c, _ in found], np.int64)
        kinds: dict[str, np.dtype] = {}  # a value's dtype (a boolean's stays boolean)
        for stored, _ in self.batches:
            for n, table in stored.items():
                kinds[n] = np.result_type(kinds.get(n, table.dtype), table.dtype)
        values = {n: np.zeros((length, len(keys)), kind) for n, kind in kinds.items()}
        reached = {n: np.full(len(keys), -1, np.int64) for n in kinds}
        for b in np.unique(batches).tolist():
            mine = np.flatnonzero(batches == b)
            stored, hit = self.batches[b]
            for n, table in stored.items():
                rows = min(length, table.shape[0])
                values[n][:rows, mine] = table[:rows, columns[mine]]
                reached[n][mine] = hit[n][columns[mine]]
        return values, reached


# a loop's iterations times the rows computed at each, past the first MAX_ITERATIONS (which any
# number of rows may take, as before iterations were followed further): 16M row-steps, a second
# or so of numpy; a spinning ``while`` over a million contexts would take minutes
ITERATION_WORK = 1 << 24


def _within_work(iterations: int, rows: int) -> bool:
    return iterations <= MAX_ITERATIONS or (iterations <= EVALUATED_ITERATIONS and iterations * rows <= ITERATION_WORK)


def distinct_columns(table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct columns of ``table`` and, per column, the index of its distinct one: through
    one integer key per column where the values' spans allow (a sort of a structured array was
    most of a 128-expert walk's listing)."""
    low, high = table.min(axis=1, initial=0), table.max(axis=1, initial=0)
    spans = (high - low + 1).tolist()
    if math.prod(spans) < LIMIT:
        key = np.zeros(table.shape[1], np.int64)
        for row, lo, span in zip(table, low, spans):
            key = key * span + (row - lo)
        _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
        return table[:, first], inverse.reshape(-1)
    contexts, inverse = np.unique(table, axis=1, return_inverse=True)
    return contexts, inverse.reshape(-1)


def _apply(kind: str, v: list[Any]) -> Any:
    if kind == "add":
        return sum(v[1:], np.int64(0) + v[0])
    if kind == "sub":
        out = v[0]
        for x in v[1:]:
            out = out - x
        return out
    if kind == "mul":
        out = v[0]
        for x in v[1:]:
            out = out * x
        return out
    if kind == "uminus":
        return -v[0]
    if kind in ("div", "mod"):
        x, y = np.asarray(v[0], np.int64), np.asarray(v[1], np.int64)
        if (y == 0).any():
            raise Unsupported
        q = np.floor_divide(x, np.abs(y)) * np.sign(y)  # SMT-LIB: 0 <= x mod y < |y|
        return q if kind == "div" else x - y * q
    if kind == "ite":
        return np.where(v[0], v[1], v[2])
    if kind in _COMPARE:
        return _COMPARE[kind](v[0], v[1])
    if kind == "distinct" and len(v) == 2:
        return v[0] != v[1]
    if kind == "and":
        # pairwise: the operands broadcast against one another (a block's value and a lane tile)
        return functools.reduce(np.logical_and, v, np.True_)
    if kind == "or":
        return functools.reduce(np.logical_or, v, np.False_)
    if kind == "not":
        return np.logical_not(v[0])
    if kind == "xor":
        return np.logical_xor(v[0], v[1])
    if kind == "implies":
        return np.logical_or(np.logical_not(v[0]), v[1])
    raise Unsupported  # bit-vector ops and anything else: the solver's


# bit-vectors as their unsigned values in int64: widths up to this many bits (int32 patterns)
BV_BITS = 32


def _bitvector(node: Any, v: list[Any]) -> Any:
    """A bit-vector node's value (``smt.Node``: ``width`` and parameters), each bit-vector held as
    its unsigned value; wider than ``BV_BITS`` bits, or an operation not listed, is the solver's."""
    width, kind = node.width, node.kind
    if width > BV_BITS or kind == "concat" and sum(node.value) > BV_BITS:
        raise Unsupported
    mask = (1 << width) - 1
    if kind == "bvliteral":
        return np.int64(node.value)
    if kind == "int2bv":
        return np.bitwise_and(np.asarray(v[0], np.int64), mask)  # two's complement, mod 2^width
    if kind == "bv2int":
        return v[0]
    if kind == "sbv2int":
        return _signed(v[0], width)
    if kind in ("bvxor", "bvand", "bvor"):
        fn = {"bvxor": np.bitwise_xor, "bvand": np.bitwise_and, "bvor": np.bitwise_or}[kind]
        return functools.reduce(fn, v[1:], np.asarray(v[0], np.int64))
    if kind == "bvnot":
        return np.bitwise_xor(v[0], mask)
    if kind in ("bvadd", "bvsub"):
        out = v[0] + sum(v[1:]) if kind == "bvadd" else v[0] - v[1]
        return np.bitwise_and(np.asarray(out, np.int64), mask)
    if kind == "extract":
        high, low = node.value
        return np.bitwise_and(np.right_shift(v[0], low), (1 << (high - low + 1)) - 1)
    if kind == "concat":
        out = np.asarray(v[0], np.int64)
        for value, bits in zip(v[1:], node.value[1:]):
            out = np.bitwise_or(np.left_shift(out, bits), value)
        return out
    if kind in _BV_COMPARE:
        signed, relation = _BV_COMPARE[kind]
        a, b = (_signed(v[0], width), _signed(v[1], width)) if signed else (v[0], v[1])
        return _COMPARE[relation](a, b)
    raise Unsupported


_BV_COMPARE = {"bvslt": (True, "lt"), "bvsle": (True, "le"), "bvsgt": (True, "gt"), "bvsge": (True, "ge"),
               "bvult": (False, "lt"), "bvule": (False, "le"), "bvugt": (False, "gt"), "bvuge": (False, "ge")}


def _signed(value: Any, width: int) -> Any:
    """A ``width``-bit pattern's two's-complement value."""
    value = np.asarray(value, np.int64)
    return np.where(value >= 1 << (width - 1), value - (1 << width), value)


_GROWING = frozenset({"add", "sub", "mul", "uminus"})
_COMPARE = {"le": np.less_equal, "lt": np.less, "ge": np.greater_equal, "gt": np.greater, "eq": np.equal}


def _conjuncts(root: int, nodes: dict[int, smt.Node]) -> list[int]:
    out, todo = [], [root]
    while todo:
        key = todo.pop()
        if nodes[key].kind == "and":
            todo.extend(nodes[key].args)
        else:
            out.append(key)
    return out
