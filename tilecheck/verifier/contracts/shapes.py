"""Launch contracts over the shapes (issue 20, DESIGN §4): the relations between the grid and the
arguments under which a kernel is race-free and in bounds for every shape.

A contract is a conjunction of ``Rule``s over the launch's symbols: the grid extents
(``grid[0]``), array dimensions and strides (``x.shape[1]``, ``x.strides[0]``) and integer scalar
arguments (``n``). Candidates come from the forms host code uses (``grid[k] == cdiv(dim, TILE)``,
``dim // TILE``, products of two such terms, an unread axis of extent 1, a scalar that is an array's
dimension or stride, two arrays sharing a dimension), kept only when every observed launch
satisfies them. The search is counterexample-guided: the kernel is checked at the all-shapes level
under the rules chosen so far; a defect found there is a launch (its grid, shapes, strides and
scalars) and the most relevant candidate that launch breaks joins the contract; the search ends
with a proof, or with a defect no candidate excludes (the contract's breaking witness).

Integer width is part of the same model: the kernel's Tile IR is compiled for 32-bit indices when
every dimension and the largest linear offset of an array fit in int32 (cuTile's specialisation,
``tilecheck.ir.cutile.index_bits``), so the all-shapes level may assume exactly that. Under it, and
the rules, no address computation may leave its integer type (the overflow obligation at this level).

Evaluating a contract on a launch is plain integer arithmetic (``Contract.admits``): no solver.
"""
from __future__ import annotations

import dataclasses
import functools
import itertools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tilecheck.verifier.contracts.launch_check import admission, evaluate
from tilecheck.verifier.solver import smt

INT32_MAX = (1 << 31) - 1
# the solver work (Z3 rlimit units) a search may spend before it stops trying more tiers: a launch
# whose contract is that hard is verified at its given case instead (deterministic, as every budget)
SEARCH_WORK = 12_000_000
# the first pass over the overflow claims one by one, after their disjunction was undecided
FIRST_PASS_RLIMIT = 100_000
# product forms tried per grid axis (two terms each)
MAX_PRODUCTS = 24


# ---- terms over the launch's symbols --------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Term:
    """``name`` (a launch symbol) or an integer, optionally divided by ``tile`` (rounded up when
    ``ceil``) and multiplied by another term."""

    name: str | None = None
    value: int = 0
    tile: int = 1
    ceil: bool = True
    times: Term | None = None

    def eval(self, env: Mapping[str, int]) -> int | None:
        if self.name is None:
            base: int | None = self.value
        else:
            base = env.get(self.name)
            if base is None:
                return None
        if self.tile > 1:
            base = -(-base // self.tile) if self.ceil else base // self.tile
        if self.times is not None:
            other = self.times.eval(env)
            return None if other is None else base * other
        return base

    def smt(self, symbols: Mapping[str, Any]) -> Any:
        base = smt.IntVal(self.value) if self.name is None else symbols[self.name]
        if self.tile > 1:  # non-negative sizes: Z3's division rounds down there
            base = (base + (self.tile - 1)) / self.tile if self.ceil else base / self.tile
        return base * self.times.smt(symbols) if self.times is not None else base

    def names(self) -> set[str]:
        own = {self.name} if self.name is not None else set()
        return own | (self.times.names() if self.times is not None else set())

    def __str__(self) -> str:
        text = str(self.value) if self.name is None else self.name
        if self.tile > 1:
            text = f"cdiv({text}, {self.tile})" if self.ceil else f"{text} // {self.tile}"
        return f"{text} * {self.times}" if self.times is not None else text


@dataclasses.dataclass(frozen=True)
class Rule:
    """``left == right``, ``left <= right`` or (relation ``%``) ``left % right == 0``; ``kind``
    says what it relates."""

    left: Term
    relation: str
    right: Term
    kind: str  # "grid", "unread", "scalar", "shape", "stride", "divisible", "fixed", "literal"

    def holds(self, env: Mapping[str, int]) -> bool | None:
        a, b = self.left.eval(env), self.right.eval(env)
        if a is None or b is None:
            return None
        return a == b if self.relation == "==" else a <= b if self.relation == "<=" else a % b == 0

    def smt(self, symbols: Mapping[str, Any]) -> Any:
        a, b = self.left.smt(symbols), self.right.smt(symbols)
        return a == b if self.relation == "==" else a <= b if self.relation == "<=" else a % b == 0

    def names(self) -> set[str]:
        return self.left.names() | self.right.names()

    def __str__(self) -> str:
        if self.relation == "%":
            return f"{self.left} % {self.right} == 0"
        return f"{self.left} {self.relation} {self.right}"


def _sym(name: str) -> Term:
    return Term(name)


# ---- the contract ---------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class ShapeContract:
    """What an every-shape proof assumed of a launch: its rules, and the index widths of its arrays
    (the compile specialisation: ``index32`` names the arrays whose dimensions and largest linear
    offset fit in int32). ``proved``: the kernel is race-free and in bounds for every launch that
    satisfies both. Otherwise ``breaking`` is a defect at a launch the rules allow."""

    rules: tuple[Rule, ...]
    index32: tuple[str, ...] = ()
    proved: bool = False
    breaking: Any = None  # a Finding
    reason: str | None = None  # why no proof (an unknown, or the search's end)
    # the kernel's own assume facts (``fact_trees``): the proof assumed them too
    facts: tuple[Any, ...] = ()
    # preconditions on index arrays' contents the proof needed (the launch's data satisfied them)
    contents: tuple[Any, ...] = ()
    # what the launch protocol of a recognised lock needs of its array at launch (it holds only the
    # free and taken values): assumed by a proof in any mode, so evaluated at every launch decided
    protocol: tuple[Any, ...] = ()
    # the facts as Python closures, made at the first launch checked (``compiled``)
    _facts_at: Any = dataclasses.field(default=None, init=False, repr=False, compare=False)

    def admits(self, env: Mapping[str, int], widths: Mapping[str, int],
               arrays: Mapping[str, Any] | None = None) -> bool:
        """Does a launch (its symbols' values, each array's index width in bits, and the host
        contents of its integer arrays where the contract is about contents) satisfy the contract
        and the kernel's assume facts? Integer arithmetic only, and a scan of those arrays."""
        if self._facts_at is None:
            object.__setattr__(self, "_facts_at", admission(self))
        return (self._facts_at(env, widths)
                and all(arrays is not None and pre.array in arrays and pre.violation(arrays[pre.array]) is None
                        for pre in (*self.contents, *self.protocol)))

    def admits_walked(self, env: Mapping[str, int], widths: Mapping[str, int]) -> bool:
        """``admits``' test of the index widths, rules and facts, the trees walked: what ``admission``
        generates code for (the property in tests/verifier/test_shape_contract.py compares them)."""
        return (all(widths.get(name) == 32 for name in self.index32)
                and all(rule.holds(env) is True for rule in self.rules)
                and all(evaluate(fact, env) is True for fact in self.facts))

    def __str__(self) -> str:
        # a literal held at its compiled value is the kernel as compiled (``pinned``): not said
        parts = [str(r) for r in self.rules if r.kind != "literal"]
        if self.index32:
            parts.append(f"{_names(self.index32)} indexed below 2**31")
        parts += [pre.describe().removesuffix(" (precondition)") for pre in (*self.contents, *self.protocol)]
        return " and ".join(parts) if parts else "any launch"


def _names(names: Sequence[str]) -> str:
    quoted = [f"'{n}'" for n in names]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]


# ---- symbols and launches -------------------------------------------------------------------------
def symbols(fp: Any) -> dict[str, Any]:
    """The launch's symbols the model uses, by the name rules give them (constant dimensions the
    compiler fixed are not symbols)."""
    from tilecheck.verifier.model.engine import GRID

    out: dict[str, Any] = {f"grid[{k}]": g for k, g in enumerate(GRID)}
    for info in fp.arrays.values():
        for what, terms in (("shape", info.shape), ("strides", info.strides)):
            for d, sym in enumerate(terms):
                if smt.is_const(sym) and smt.const_value(sym) is None:
                    out[f"{info.name}.{what}[{d}]"] = sym
    for i, sym in fp.scalars.items():
        out[fp.scalar_name(i)] = sym
    return out


def launch_of(params: Sequence[Any], grid: tuple[int, int, int]) -> tuple[dict[str, int], dict[str, int]]:
    """What a contract reads of a launch of a cuTile kernel, in one pass over its parameters (the
    launcher asks this at every launch it decides): its symbols' values (the grid, each array's shape
    and strides in elements, the integer scalars by their parameter names, as ``symbols`` names
    them), and per array the index width ``width_facts`` stands for: 32 when its dimensions, strides
    and largest linear offset fit in int32 and its strides are not negative, else 64."""
    from tilecheck.ir.cutile import index_bits

    env = {"grid[0]": int(grid[0]), "grid[1]": int(grid[1]), "grid[2]": int(grid[2])}
    widths = {}
    for p in params:
        if p.kind == "array":
            shape, strides = p.shape, p.strides
            shape_names, stride_names = _symbol_names(p.name, len(shape), len(strides))
            env.update(zip(shape_names, map(int, shape)))
            env.update(zip(stride_names, map(int, strides)))
            widths[p.name] = 32 if index_bits(shape, strides) == 32 and all(0 <= s <= INT32_MAX for s in strides) else 64
        elif p.kind == "scalar" and isinstance(p.value, int) and not isinstance(p.value, bool):
            env[p.name] = int(p.value)
    return env, widths


@functools.lru_cache(maxsize=4096)
def _symbol_names(array: str, rank: int, strides: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """An array's shape and stride symbols, as ``symbols`` names them (made once, not per launch)."""
    return (tuple(f"{array}.shape[{d}]" for d in range(rank)),
            tuple(f"{array}.strides[{d}]" for d in range(strides)))


def width_facts(fp: Any, index32: Sequence[str]) -> list[Any]:
    """What 32-bit indexing of the arrays ``index32`` says of every launch compiled that way: each
    dimension and stride, and the largest linear offset ``sum((shape[d] - 1) * strides[d])``, is at
    most 2**31 - 1 (``launch_of`` holds a launch to the strides too: a dimension of extent 1
    leaves its stride out of the compiler's test). Also each integer scalar lies in its type's range."""
    out = []
    for info in fp.arrays.values():
        if info.name not in index32:
            continue
        out += [s <= INT32_MAX for s in (*info.shape, *info.strides)]
        out += [s >= 0 for s in info.strides]
        extent = smt.IntVal(0)
        for n, s in zip(info.shape, info.strides):
            extent = extent + (n - 1) * s
        out.append(smt.Implies(smt.And(*(n >= 1 for n in info.shape)), extent <= INT32_MAX))
    for i, sym in fp.scalars.items():
        bits = _scalar_bits(fp, i)
        if bits is not None:
            out.append(smt.And(sym >= -(1 << (bits - 1)), sym < (1 << (bits - 1))))
    return out


def _scalar_bits(fp: Any, index: int) -> int | None:
    from tilecheck.ir import types as T

    t = fp.function.args[index].type
    element = t.element if isinstance(t, T.TileType) else t
    return getattr(element, "bitwidth", None) if isinstance(element, T.ScalarType) else None


# ---- candidates -----------------------------------------------------------------------------------
def implied_forms(fp: Any) -> dict[int, list[Term]]:
    """Per grid axis, the forms the kernel's indexing implies: an access whose coordinate in some
    dimension of its array moves with that axis's block id alone tiles that dimension, so the axis
    usually spans ``cdiv(dim, tile)``; two dimensions of one array moving with one axis (a
    swizzled 2-D tiling) give the product of both."""
    from tilecheck.verifier.model.engine import data_shape

    out: dict[int, list[Term]] = {}
    for x in fp.accesses:
        if x.coords is None or x.array not in fp.arrays:
            continue
        info = fp.arrays[x.array]
        tile = data_shape(x.op)
        per_axis: dict[int, list[Term]] = {}
        for d, coord in enumerate(x.coords):
            if d >= len(info.shape) or smt.is_int_value(info.shape[d]):
                continue
            axes = [k for k in range(3) if f"bid{k}" in smt.free_constants(coord)]
            if len(axes) == 1:
                t = tile[d] if len(tile) == len(x.coords) else 1
                per_axis.setdefault(axes[0], []).append(Term(f"{info.name}.shape[{d}]", tile=t))
        for k, terms in per_axis.items():
            forms = terms if len(terms) == 1 else [dataclasses.replace(terms[0], times=terms[1])]
            out.setdefault(k, [])
            out[k] += [f for f in forms if f not in out[k]]
    return out


def candidates(fp: Any, launches: Sequence[Mapping[str, int]], reads: tuple[bool, bool, bool],
               tiles: set[int], literals: frozenset[str] = frozenset()) -> list[Rule]:
    """The candidate rules every observed launch satisfies, most usual first. ``kind`` orders the
    search's tiers: what the kernel's indexing implies and the relations between arguments
    (``implied``, ``scalar``, ``shape``, ``stride``, ``unread``) first, then the other forms that fit
    the launches (``grid``, ``divisible``), then the values seen (``fixed``). ``literals``: the
    scalars that are lifted literals (``ir.lifting``), whose values seen are bounds (``_seen``)."""
    syms = symbols(fp)
    if not launches:
        return []

    def everywhere(rule: Rule) -> bool:
        return all(rule.holds(env) is True for env in launches)

    written = {fp.arrays[a.array].name for a in fp.accesses if a.writes and a.array in fp.arrays}
    # the written arrays' dimensions first: the grid usually tiles the output
    sizes = sorted((name for name in syms if ".shape[" in name), key=lambda n: n.split(".")[0] not in written)
    sizes += [fp.scalar_name(i) for i in fp.scalars]
    sizes = [s for s in sizes if all(env.get(s) is not None for env in launches)]
    implied = implied_forms(fp)
    out: list[Rule] = []
    for k in range(3):
        unread = Rule(_sym(f"grid[{k}]"), "==", Term(value=1), "unread")
        if not reads[k] and everywhere(unread):
            out.append(unread)
    for k in range(3):
        if not reads[k]:
            continue
        grid = _sym(f"grid[{k}]")
        fits = [f for f in implied.get(k, []) if f.names() <= set(syms)
                and all(f.eval(env) == env[f"grid[{k}]"] for env in launches)]
        out += [Rule(grid, relation, f, "implied") for relation in ("<=", "==") for f in fits]
        forms = [Term(s, tile=t, ceil=ceil) for ceil in (True, False) for s in sizes for t in sorted(tiles)
                 if ceil or t > 1]
        singles = [f for f in forms if f not in fits and all(f.eval(env) == env[f"grid[{k}]"] for env in launches)]
        products = []
        if not singles and not fits:  # two dimensions on one axis (B * H), or a swizzled 2-D tiling
            for f, g in itertools.combinations([f for f in forms if f.tile == 1 or f.ceil], 2):
                if f.name != g.name and all((f.eval(env) or 0) * (g.eval(env) or 0) == env[f"grid[{k}]"]
                                            and (f.eval(env) or 0) > 1 and (g.eval(env) or 0) > 1
                                            for env in launches):
                    products.append(dataclasses.replace(f, times=g))
                    if len(products) >= MAX_PRODUCTS:
                        break
        out += [Rule(grid, relation, f, "grid") for relation in ("<=", "==") for f in [*singles, *products]]
        top = max(env[f"grid[{k}]"] for env in launches)
        out.append(Rule(grid, "<=", Term(value=top), "fixed"))  # the last resort: the extents seen
    shapes = [name for name in sizes if ".shape[" in name]
    strides = [name for name in syms if ".strides[" in name]
    for i in fp.scalars:  # a scalar standing for a dimension or a stride
        s = fp.scalar_name(i)
        for other in [*shapes, *strides]:
            for rule in (Rule(_sym(s), "<=", _sym(other), "scalar"), Rule(_sym(s), "==", _sym(other), "scalar")):
                if everywhere(rule):
                    out.append(rule)
    for i in fp.scalars:  # the last resort for a scalar: the value seen (a lifted literal's bounds)
        s = fp.scalar_name(i)
        values = {env.get(s) for env in launches}
        if None in values:
            continue
        if s in literals:
            out += _seen(s, values)
        elif len(values) == 1:
            out.append(Rule(_sym(s), "==", Term(value=values.pop()), "fixed"))
    for a, b in itertools.permutations(shapes, 2):  # arrays that share a dimension
        if a.split(".")[0] != b.split(".")[0] and a < b:
            rule = Rule(_sym(a), "==", _sym(b), "shape")
            if everywhere(rule):
                out.append(rule)
    for name in shapes:  # a dimension the kernel needs whole tiles of, or one value of
        values = {env[name] for env in launches}
        for t in sorted(tiles, reverse=True):
            if t > 1 and all(v % t == 0 for v in values):
                out.append(Rule(_sym(name), "%", Term(value=t), "divisible"))
        for t in sorted(tiles, reverse=True):  # at least one whole tile
            if t > 1 and all(v >= t for v in values):
                out.append(Rule(Term(value=t), "<=", _sym(name), "divisible"))
        if len(values) == 1:
            out.append(Rule(_sym(name), "==", Term(value=values.pop()), "fixed"))
    for info in fp.arrays.values():  # row-major contiguity
        for d in range(info.rank):
            name = f"{info.name}.strides[{d}]"
            if name not in syms:
                continue
            inner = f"{info.name}.strides[{d + 1}]"
            right = Term(value=1) if d == info.rank - 1 else Term(f"{info.name}.shape[{d + 1}]", times=_sym(inner))
            rule = Rule(_sym(name), "==", right, "stride")
            if everywhere(rule) and right.names() <= set(syms):
                out.append(rule)
    return out


def _seen(name: str, values: set[int]) -> list[Rule]:
    """The values seen of a lifted literal (``ir.lifting``), as two bounds: at least the least, at
    most the greatest. A proof that needs the constant large enough (or small enough) keeps one of
    them, the range of values the contract admits; one that needs both keeps the value
    (``_simplest``). (As bounds, not as an equality: a proof over the literal that needs its value
    is no better than the proof of the kernel as compiled. Sizes and other scalars keep their
    equality, which the solver substitutes: as two bounds, the GEMMs' last tiers ran out of work.)"""
    return [Rule(Term(value=min(values)), "<=", _sym(name), "fixed"),
            Rule(_sym(name), "<=", Term(value=max(values)), "fixed")]


# ---- the search -----------------------------------------------------------------------------------
@dataclasses.dataclass
class Search:
    """The outcome of ``search``: the contract, and the last checker result (a proof when
    ``contract.proved``)."""

    contract: ShapeContract
    result: Any
    # where a search with ``stop_on_data`` stopped: the tier to resume at, and what the tiers so far
    # proved and needed (``search``'s ``resume``)
    stopped: tuple[int, frozenset[Any], frozenset[Rule]] | None = None


def search(check: Callable[[tuple[Rule, ...], set[Any], bool], Any], pool: list[Rule], index32: tuple[str, ...],
           stop_on_data: bool = False, resume: tuple[int, frozenset[Any], frozenset[Rule]] | None = None
           ) -> Search:
    """``check(rules, proved, last)`` runs the all-shapes level assuming every rule, each tracked,
    skipping the obligations in ``proved`` (``last``: the last tier; the caller may give the tiers
    before it a smaller budget per query): its ``LevelResult.cores`` names the rules its proofs used
    (``rule!<index>``). The tiers add candidates in order of how usual they are (what the indexing
    implies and how arguments relate, then other fitting forms, then the values seen); each tier
    keeps what the ones before it proved (more rules keep a proof a proof). The cores of a tier's
    proofs, over all tiers, are the contract; a defect under every candidate is a launch the
    whole pool allows, the contract's breaking witness. With ``stop_on_data``, a defect that needs
    array contents ends the search at once (the caller searches again under contents' facts, from
    where it stopped: ``resume``, the ``Search.stopped`` of the same pool).

    Resuming skips the tiers whose defect read no array contents: facts about contents (the
    preconditions the caller adds) constrain only the contents functions, which such a defect's
    query does not mention, so its model is still one; what the tiers proved stays proved under
    more preconditions, and the rules their proofs needed stay in the contract."""
    tiers: list[list[Rule]] = []
    for excluded in (("grid", "divisible", "fixed"), ("fixed",), ()):
        tier = [r for r in pool if r.kind not in excluded]
        if not tiers or len(tier) > len(tiers[-1]):
            tiers.append(tier)
    result = None
    begin, proved, needed = (0, set(), set()) if resume is None else (resume[0], set(resume[1]), set(resume[2]))
    resume_at, stopped = begin, None
    start = smt.work_spent() or 0
    for n, rules in enumerate(tiers):
        if n < begin:
            continue
        if n > begin and (smt.work_spent() or 0) - start > SEARCH_WORK:
            break
        if n > begin and n < len(tiers) - 1 and result.unknowns:
            continue  # a query the solver could not decide: the values seen (last tier) usually do
        result = check(tuple(rules), proved, n == len(tiers) - 1)
        proved |= result.proved
        needed |= {r for i, r in enumerate(rules) if f"rule!{i}" in result.cores}
        defects = [f for f in result.findings if f.is_defect or f.kind == "overflow"]
        if defects and not result.reads_data and resume_at == n:
            resume_at = n + 1  # contents' facts leave this tier's defect a defect
        if defects and result.reads_data and stop_on_data:
            # a defect that needs array contents: no relation between shapes excludes it
            stopped = (resume_at, frozenset(proved), frozenset(needed))
            break
        if not defects and not result.unknowns:
            # the cores as the solver found them. Asking every obligation again under the cores
            # alone (a "shrink") gave smaller contracts, but not one more of TileGym's 853 captured
            # launches decided by the proof cache, for 12% of the sweep's solver work: not done
            chosen = tuple(r for r in pool if r in needed)
            return Search(ShapeContract(_simplest(chosen), index32, proved=True), result)
    defects = [f for f in result.findings if f.is_defect or f.kind == "overflow"]
    if defects:
        return Search(ShapeContract(tuple(pool), index32, breaking=defects[0], reason=defects[0].message), result,
                      stopped)
    return Search(ShapeContract(tuple(pool), index32, reason=result.unknowns[0]), result)


def pinned(contract: ShapeContract, literals: Sequence[tuple[str, int]]) -> ShapeContract:
    """``contract`` proved for the kernel as compiled, as a contract about its lifted program
    (``ir.lifting``): each lifted literal held at the value it was compiled with."""
    pins = tuple(Rule(_sym(name), "==", Term(value=value), "literal") for name, value in literals)
    return dataclasses.replace(contract, rules=(*contract.rules, *pins))


def held_literals(contract: ShapeContract) -> bool:
    """Does ``contract`` hold lifted literals at their compiled values (``pinned``)?"""
    return any(r.kind == "literal" for r in contract.rules)


def unpinned(contract: ShapeContract) -> ShapeContract:
    """``contract`` less its literals' pins: what a proof over the literals might give."""
    return dataclasses.replace(contract, rules=tuple(r for r in contract.rules if r.kind != "literal"))


def _simplest(rules: tuple[Rule, ...]) -> tuple[Rule, ...]:
    """The rules less those another one implies (a bound its equality tightens), two bounds that
    meet as one equality (``v <= n`` and ``n <= v`` as ``n == v``)."""
    below = {(r.left, r.right) for r in rules if r.relation == "<="}
    met = {r for r in rules if r.relation == "<=" and (r.right, r.left) in below
           and (r.left.name is None or r.right.name is None)}
    equalities = tuple(Rule(r.right, "==", r.left, r.kind) for r in rules if r in met and r.left.name is None)
    rules = tuple(r for r in rules if r not in met) + equalities
    equal = {(r.left, r.right) for r in rules if r.relation == "=="}
    return tuple(r for r in rules if not (r.relation == "<=" and (r.left, r.right) in equal))


# ---- the overflow obligation at the all-shapes level ----------------------------------------------
def check_overflow(ch: Any) -> bool:
    """No address computation leaves its integer type, for any launch the level's rules and integer
    widths (``Level.widths``) allow. Asked as one disjunction first: its model, when it has one, is
    a launch where an operation wraps, an ``overflow`` finding whose witness is the launch (the
    search needs a defect, not the least one). When it is undecided, each operation on its own.
    True when one was found."""
    from tilecheck.ir.summary import decision_slice
    from tilecheck.report import Finding
    from tilecheck.verifier.model.footprints import block_vars, rename_blocks

    feeding = decision_slice(ch.fp.function)
    claims: dict[tuple[Any, ...], Any] = {}
    ops = {}
    # those interval arithmetic proves (``Checker.never_wraps``) are asked nothing when all are, and
    # are not asked one by one; they stay in the disjunction, and count as proved only where the
    # one-by-one pass would have proved them: leaving them out of later queries changed the
    # solver's search, which cost more work on TileGym's kernels than it saved
    bounded: set[tuple[Any, ...]] = set()
    wraps = ch.memo.setdefault("never_wraps", {})  # the same answer under any rules: once a search
    for n, (op, term, lo, hi, live) in enumerate(ch.fp.overflows):
        key = ("overflow", n)
        if op not in feeding or key in ch.known_proved:
            continue
        value, live = rename_blocks(term, "b1"), rename_blocks(live, "b1")
        if key not in wraps:
            wraps[key] = ch.never_wraps(value, lo, hi, live)
        if wraps[key]:
            bounded.add(key)
        claims[key] = smt.And(live, smt.Or(value < lo, value > hi))
        ops[key] = (op, value, lo, hi)
    if len(bounded) == len(claims):
        ch.result.proved |= bounded
        return False
    base = [*ch.base(("b1",)), *ch.level.widths]
    found = None
    if len(claims) > 1:
        result = ch.solve([*base, smt.Or(*claims.values())], "integer overflow",
                          tuple(op.loc for op, *_ in ops.values()), tentative=True)
        if isinstance(result, smt.Unsat):
            ch.result.prove(claims)
            return False
        if isinstance(result, smt.Sat):  # its model is a launch where an operation wraps: that one
            found = next(((key, result) for key, claim in claims.items() if result.eval(claim) is True), None)
    if found is None:
        # one by one: first each with a small limit (most are proved in a few thousand units; the
        # disjunction is as hard as its hardest), then the rest with the level's
        hard = []
        for key, claim in claims.items():
            if key in bounded:
                ch.result.proved.add(key)
                continue
            if ch.bitwise_limit(smt.And(*base, claim), ch.rlimit) <= FIRST_PASS_RLIMIT:
                hard.append(key)  # no smaller first try (a bit-vector claim's budget): asked once
                continue
            result = ch.solve([*base, claim], "integer overflow", (ops[key][0].loc,), key, tentative=True,
                              limit=FIRST_PASS_RLIMIT)
            if isinstance(result, smt.Sat):
                found = (key, result)
                break
            if isinstance(result, smt.Unknown):
                hard.append(key)
    if found is None:
        results = ((key, ch.solve([*base, claims[key]], "integer overflow", (ops[key][0].loc,), key))
                   for key in hard)
        found = next(((key, result) for key, result in results if isinstance(result, smt.Sat)), None)
    if found is None:
        return False
    key, result = found
    op, value, lo, hi = ops[key]
    block = tuple(result.eval(b) for b in block_vars("b1"))
    # the claim reads array contents, which facts about them may constrain: not a loop-carried or
    # padding value alone, which is any value at a level with symbolic shapes whatever the contents
    ch.result.reads_data |= any(name in ch.memory_names for name in smt.applications_by_name(claims[key]))
    ch.result.findings.append(Finding(
        "overflow", f"{op.name} computes {result.eval(value)} in block {block}, outside the "
        f"{op.results[0].type} range [{lo}, {hi}]: it wraps around, and what is accessed depends on it (an address, a mask, a branch or a loop bound)",
        op.loc, (), ch.launch_witness(result, op, block), ch.level.number))
    return True


# ---- at a launch ----------------------------------------------------------------------------------
def fact_trees(fp: Any) -> list[Any] | None:
    """The kernel's assume facts as trees over launch symbol names (``evaluate`` reads them, and
    they keep in JSON: the proof cache stores them with a contract); None when one mentions what a
    launch does not give (a block id, a loaded value)."""
    names = {str(sym): name for name, sym in symbols(fp).items()}
    out = []
    for fact in fp.facts:
        root, nodes = smt.dag(fact)
        tree = _tree(root, nodes, names)
        if tree is None:
            return None
        out.append(tree)
    return out


def _tree(i: int, nodes: Mapping[int, Any], names: Mapping[str, str]) -> Any:
    node = nodes[i]
    if node.kind == "literal":
        return ["lit", node.value]
    if node.kind == "symbol":
        return ["sym", names[node.value]] if not node.args and node.value in names else None
    if node.kind in ("other", "uninterpreted") or node.width or node.kind == "bvliteral":
        return None  # bit-vector arithmetic: not a fact the launch check evaluates
    args = [_tree(a, nodes, names) for a in node.args]
    return None if any(a is None for a in args) else [node.kind, *args]
