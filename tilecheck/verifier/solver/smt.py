"""The Z3 boundary's face: the rest of tilecheck reaches Z3 through this module (only the solver
package imports z3; ``tests/test_layers.py`` holds the line).

Term constructors are re-exported from here; solvers are built in one place with a fixed seed, a
timeout and an ``rlimit`` work budget so results repeat across machines; a check returns
``Sat(model) | Unsat | Unknown(reason)``. ``z3.Z3Exception`` becomes ``SolverError``.
An ``Unknown`` is never read as safe by callers.

Threads: each thread has its own Z3 context (z3's "main context", which every constructor called
without ``ctx=`` uses, is made per thread here) and its own fresh-name counter, so verifications
in several threads never share solver state. Z3 contexts are not thread-safe, so a term must also
be freed in the thread that made it: terms are freed by reference counting when a verification's
structures go, never by the cycle collector (which runs in whichever thread triggers it), because
nothing here puts a term in a reference cycle (tests/verifier/test_threads.py checks it). Z3's
concurrent ``dec_ref`` mode would lift that rule, but it changes the order Z3 reuses term ids in,
and with it models and witnesses: verdicts must not depend on what ran before.
"""
from __future__ import annotations

import contextlib
import itertools
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import z3

from tilecheck.errors import TilecheckError
from tilecheck.verifier.solver import limits, memory, term_dag, z3walk

Expr = z3.ExprRef
IntExpr = z3.ArithRef
BoolExpr = z3.BoolRef
FuncDecl = z3.FuncDeclRef

IntSort, BoolSort = z3.IntSort, z3.BoolSort
Bool, IntVal, BoolVal = z3.Bool, z3.IntVal, z3.BoolVal
Not, If, Implies, Distinct, Xor = z3.Not, z3.If, z3.Implies, z3.Distinct, z3.Xor
Function, simplify = z3.Function, z3.simplify
Int2BV, BV2Int, LShR = z3.Int2BV, z3.BV2Int, z3.LShR
K, Store, Select = z3.K, z3.Store, z3.Select
is_int_value, is_true, is_false = z3.is_int_value, z3.is_true, z3.is_false
is_app, is_const, is_bool = z3.is_app, z3.is_const, z3.is_bool
# a verification's limits (limits.py), offered here with the solver they bound
work_budget, work_spent, work_reason = limits.work_budget, limits.work_spent, limits.work_reason
backstop = limits.backstop
WORK_REASON, BACKSTOP_REASON = limits.WORK_REASON, limits.BACKSTOP_REASON


def _connective(make: Any, general: Any) -> Any:
    """``z3.And`` / ``z3.Or`` with a direct path for Boolean terms: the wrappers coerce every
    argument through fresh sort objects, a large share of a typical verify's time."""
    def build(*args: Any) -> BoolExpr:
        if len(args) == 1 and not isinstance(args[0], (z3.ExprRef, bool)):
            args = tuple(args[0])  # one list or generator of terms
        if not args or not all(type(a) is z3.BoolRef for a in args):
            return general(*args)
        n, ctx = len(args), args[0].ctx
        terms = (z3.Ast * n)()
        for i, a in enumerate(args):
            terms[i] = a.as_ast()
        return z3.BoolRef(make(ctx.ref(), n, terms), ctx)
    build.__doc__ = general.__doc__
    return build


And = _connective(z3.z3core.Z3_mk_and, z3.And)
Or = _connective(z3.z3core.Z3_mk_or, z3.Or)


_C = z3walk.C  # Z3's C getters themselves (``z3walk.C``)
# a term as a DAG of plain nodes, and what an application applies, by name (``term_dag``)
Node, dag, decl_kind, bitwise = term_dag.Node, term_dag.dag, term_dag.decl_kind, term_dag.bitwise

_local = threading.local()  # per thread: ``ctx`` (the Z3 context) and ``fresh`` (the name counter)


def _thread_context() -> z3.Context:
    ctx = getattr(_local, "ctx", None)
    if ctx is None:
        ctx = _local.ctx = memory.new_context()
    return ctx


# z3's constructors look ``main_ctx`` up in their module each time they need a context: this makes
# it the calling thread's (``z3.main_ctx()`` is process-wide otherwise)
z3.z3.main_ctx = _thread_context


def _next_name() -> int:
    counter = getattr(_local, "fresh", None)
    if counter is None:
        counter = _local.fresh = itertools.count()
    return next(counter)

# a work budget that stops runaway queries deterministically (timeouts alone depend on the machine)
DEFAULT_RLIMIT = 20_000_000
# each query of a general level (all shapes, all grids): about a second of this machine's solving; a
# harder query falls back to the more specific level
GENERAL_LEVEL_RLIMIT = 4_000_000
# each query of a witness's minimisation: polish, so small (a query past it keeps the model in hand)
MINIMIZE_RLIMIT = 1_000_000


class SolverError(TilecheckError):
    """Z3 failed (not 'unknown': an exception inside the solver)."""


memory.cap_memory()
# what a verification may raise from inside Z3 (out of memory, an exception); ``verify`` makes each
# an ``unknown`` verdict with ``failure_reason``'s words
FAILURES = (SolverError, *memory.FAILURES)
failure_reason, out_of_memory = memory.failure_reason, memory.out_of_memory


@dataclass(frozen=True)
class Sat:
    model: Any

    def eval(self, term: Expr) -> Any:
        value = self.model.eval(term, model_completion=True)
        if z3.is_int_value(value):
            return value.as_long()
        if z3.is_true(value):
            return True
        if z3.is_false(value):
            return False
        return value


@dataclass(frozen=True)
class Unsat:
    # with assumptions (``check(..., assumptions=)``): the names of those the proof used
    core: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Unknown:
    reason: str


Result = Sat | Unsat | Unknown


def Int(name: str) -> IntExpr:
    """The integer constant ``name`` of the current context. Made once per context and name: the
    verifier names block ids, grid extents and lanes in every query, and ``z3.Int`` builds a symbol,
    a sort and a wrapper each time (Z3 shares the term itself, so this changes no formula)."""
    ctx = _thread_context()
    owner, made = getattr(_local, "ints", None) or (None, None)
    if owner is not ctx:  # kept beside the context, not on it: terms refer to their context, and
        made = {}  # a cycle through it would be freed by the cycle collector, in any thread
        _local.ints = (ctx, made)
    term = made.get(name)
    if term is None:
        term = made[name] = z3.Int(name, ctx)
    return term


def reset_names() -> None:
    """Restart fresh-name numbering, so one kernel gives the same formulas whatever ran before."""
    _local.fresh = itertools.count()


def fresh_context() -> None:
    """Start a new Z3 context (and fresh names): Z3's search depends on the order its terms were
    made, so a context shared with earlier verifications could change this one's answers and
    models. Terms made before belong to the old context and must not be used again."""
    ctx = _local.ctx = memory.new_context()
    limits.counted()[id(ctx)] = 0  # Z3 counts work per context, from zero (an id may be a dead context's)
    reset_names()


@contextlib.contextmanager
def own_context() -> Iterator[None]:
    """A fresh context (``fresh_context``) for the block, and the caller's back after it, names
    counter included: a verification run inside another (a data-contract search) leaves the outer
    one's terms valid."""
    outer = (getattr(_local, "ctx", None), getattr(_local, "fresh", None), getattr(_local, "ints", None))
    fresh_context()
    try:
        yield
    finally:
        # deleting a context allocates: at Z3's cap (a query that ran out) that throws inside a
        # destructor, and Z3 aborts the process (FlagGems' top-k): room first, then let it go
        memory.headroom()
        _local.ctx, _local.fresh, _local.ints = outer


class Vars(tuple):
    """Named integer variables of the current context (``GRID``, ``LANES``, ...): a tuple whose items
    are made in whichever context is current when they are read, so module-level names stay valid
    across ``fresh_context``."""

    def __new__(cls, names: Iterable[str]) -> Vars:
        return super().__new__(cls, tuple(names))

    def __getitem__(self, i: Any) -> Any:
        names = tuple.__getitem__(self, i)
        return tuple(Int(n) for n in names) if isinstance(i, slice) else Int(names)

    def __iter__(self) -> Iterator[IntExpr]:
        return (Int(n) for n in tuple.__iter__(self))

    def __add__(self, other: Any) -> tuple[Any, ...]:  # type: ignore[override]
        return tuple(self) + tuple(other)


def minimize(constraints: list[BoolExpr], variables: list[IntExpr], first: Sat, budget: int = 48,
             rlimit: int = MINIMIZE_RLIMIT) -> Sat:
    """The lexicographically smallest model over ``variables`` (one incremental solver), so that a
    witness does not depend on the solver's search history; stops after ``budget`` queries, at the
    first query that runs out of its ``rlimit``, or when the verification's work budget or backstop
    runs out: minimising is polish, the model in hand is a witness already."""
    solver = _solver(rlimit)
    try:
        solver.add(*constraints)
        best = first
        for var in variables:
            value = best.eval(var)
            infeasible = None  # every value <= this one is impossible (a binary search between them)
            while budget > 0 and isinstance(value, int) and (infeasible is None or infeasible < value - 1):
                if limits.expired() or limits.overspent():
                    return best
                budget -= 1
                if infeasible is not None:
                    target = (infeasible + value) // 2
                else:  # no lower bound yet: halve, or gallop down below zero
                    target = value // 2 if value > 0 else value - 1 - abs(value)
                solver.push()
                solver.add(var <= target)
                solver.set("rlimit", limits.within_budget(rlimit))
                answer = solver.check()
                _charge(solver)
                if answer == z3.sat:
                    best = Sat(solver.model())
                    value = best.eval(var)
                elif answer == z3.unsat:
                    infeasible = target
                else:
                    _raise_if_interrupted(solver)
                    return best  # out of work: a smaller model may exist, this one is a witness
                solver.pop()
            if not isinstance(value, int):
                break
            solver.add(var == value)
        return best
    except z3.Z3Exception as exc:
        raise SolverError(f"z3 failed: {memory.message(exc)}") from None


def _charge(solver: z3.Solver) -> None:
    """Charge the work of the check just made to this thread's account (``limits``)."""
    if not limits.charged():
        return
    try:
        spent = int(solver.statistics().get_key_value("rlimit count"))
    except (z3.Z3Exception, KeyError, ValueError):
        return
    limits.charge(id(solver.ctx), spent)


# a query asked once (``check``) goes through Z3's preprocessing before its SMT core: equalities
# solved and substituted (a contract's rules pin symbols to each other and to values). Z3's default
# solver skips that whenever assumptions are passed, which is how a contract search tracked its
# rules: on TileGym's slower queries this took 40% less time, and decided some its 1M units did not
# (a persistent GEMM's read-write query: 0.5M units where 20M were not enough). Not
# "propagate-values" too: with it, one fused-MoE query ran 38 s within 0.5M units in the process
# (0.3 s on its own), a cost the work limit does not see
_ONE_SHOT = ("simplify", "solve-eqs", "smt")


def _assert_tracking(solver: z3.Solver, constraints: Iterable[BoolExpr], assumptions: Sequence[BoolExpr]) -> None:
    """Assert ``constraints`` (nested conjunctions flattened), each ``Implies(a, rule)`` of an
    assumption ``a`` as ``rule`` tracked by ``a`` (an unsat core names the assumptions it used;
    preprocessing keeps what each conjunct depends on only for tracked assertions). Walked and
    asserted through the C API: with a wrapper object per conjunct this was most of a contract
    search's Python time (a tier's queries each hold a few hundred conjuncts)."""
    if not assumptions:
        solver.add(*constraints)
        return
    solver.set("unsat_core", True)
    c, s = solver.ctx.ref(), solver.solver
    flags = {_C.Z3_get_ast_id(c, a.as_ast()): a.as_ast() for a in assumptions}
    constraints = list(constraints)
    used = z3walk.assert_tracking(solver, constraints, flags)  # in C, when it is there
    if used is None:
        used = _assert_tracking_python(solver, constraints, flags)
    for key, flag in flags.items():  # an assumption no implication names still holds
        if key not in used:
            z3.z3core.Z3_solver_assert_and_track(c, s, flag, flag)


def _assert_tracking_python(solver: z3.Solver, constraints: list[BoolExpr], flags: dict[int, Any]) -> set[int]:
    """``z3walk.assert_tracking``'s walk through the C API from Python: the ids of the flags used."""
    c, s, core = solver.ctx.ref(), solver.solver, z3.z3core
    used: set[int] = set()
    todo = [t.as_ast() for t in reversed(constraints)]
    while todo:
        a = todo.pop()
        parts = _raw_and_arguments(c, a)
        if parts is not None:
            todo.extend(reversed(parts))
            continue
        if _C.Z3_get_ast_kind(c, a) == z3.Z3_APP_AST and \
                _C.Z3_get_decl_kind(c, _C.Z3_get_app_decl(c, a)) == z3.Z3_OP_IMPLIES and \
                (flag := _C.Z3_get_ast_id(c, first := _C.Z3_get_app_arg(c, a, 0))) in flags:
            core.Z3_solver_assert_and_track(c, s, _C.Z3_get_app_arg(c, a, 1), first)
            used.add(flag)
            continue
        core.Z3_solver_assert(c, s, a)
    return used


def _solver(rlimit: int, tactics: tuple[str, ...] = ()) -> z3.Solver:
    """A solver bounded by ``rlimit`` (deterministic work); with ``tactics``, a one-shot solver
    that applies them in turn. Z3's own wall-clock ``timeout`` is set
    only to what is left of the backstop: its timers can cancel a query after the one that armed
    them when the machine is loaded (a verdict that changed with load), so a cancel may only ever
    come once the backstop has run out, when every query answers unknown anyway."""
    solver = z3.Then(*tactics).solver() if tactics else z3.Solver()
    solver.set("random_seed", 0)
    # Groebner-basis reasoning spends seconds of non-linear work per rlimit unit on the div/mod
    # arithmetic of tile indices, and decided none of our corpus's or TileGym's queries alone
    solver.set("smt.arith.nl.grobner", False)
    left = limits.remaining()
    if left is not None:
        solver.set("timeout", max(1, int(left * 1000)))
    solver.set("rlimit", limits.within_budget(rlimit))
    return solver


def fresh_int(prefix: str) -> IntExpr:
    return z3.Int(f"{prefix}!{_next_name()}")


def fresh_bool(prefix: str) -> BoolExpr:
    return z3.Bool(f"{prefix}!{_next_name()}")


def fresh_function(prefix: str, arity: int, result: Any = None) -> FuncDecl:
    sorts = [z3.IntSort()] * arity + [result if result is not None else z3.IntSort()]
    return z3.Function(f"{prefix}!{_next_name()}", *sorts)


def const_value(term: Expr) -> int | None:
    """The Python int of a literal (after cheap simplification), else None."""
    if z3.is_int_value(term):
        return term.as_long()
    simplified = z3.simplify(term)
    return simplified.as_long() if z3.is_int_value(simplified) else None


def z3_version() -> str:
    return z3.get_version_string()


def check(constraints: Iterable[BoolExpr], rlimit: int = DEFAULT_RLIMIT,
          assumptions: Sequence[BoolExpr] = ()) -> Result:
    """Decide the conjunction of ``constraints`` within ``rlimit`` (and the backstop, if any).
    ``assumptions`` (Boolean constants) hold too; an ``Unsat`` names those its proof used."""
    if limits.expired():
        return Unknown(BACKSTOP_REASON)
    if (spent := work_reason()) is not None:
        return Unknown(spent)
    solver = _solver(rlimit, _ONE_SHOT)
    try:
        _assert_tracking(solver, constraints, assumptions)
        answer = solver.check()
    except z3.Z3Exception as exc:
        raise SolverError(f"z3 failed: {memory.message(exc)}") from None
    _charge(solver)
    if answer == z3.sat:
        return Sat(solver.model())
    if answer == z3.unsat:
        return Unsat(frozenset(str(a) for a in solver.unsat_core()) if assumptions else frozenset())
    _raise_if_interrupted(solver)
    if limits.expired():  # Z3's timer, set to the backstop's deadline, stopped it
        return Unknown(BACKSTOP_REASON)
    if (spent := work_reason()) is not None:
        return Unknown(spent)
    reason = solver.reason_unknown() or "unknown"
    if reason == "canceled":  # what Z3 says when a query's rlimit runs out
        reason = f"its work limit of {rlimit} units ran out"
    return Unknown(reason)


def _raise_if_interrupted(solver: z3.Solver) -> None:
    """z3 catches Ctrl-C during a check and answers ``unknown``: give it back to Python, so that an
    interrupt stops the run rather than becoming an ``unknown`` verdict."""
    if "interrupted from keyboard" in solver.reason_unknown():
        raise KeyboardInterrupt


def _uninterpreted(terms: list[Expr], seen: z3walk.Seen | None = None,
                   applied: bool = False) -> Iterator[tuple[Expr, int]]:
    """Every distinct application of an uninterpreted symbol inside ``terms`` (constants too, unless
    ``applied``), with its arity; subterms in ``seen`` (ids, updated) are skipped. One walk of Z3's C API, in C when
    it can be (``z3walk``): node by node through ctypes these walks were most of a query's time on
    big formulas."""
    return z3walk.uninterpreted(terms, seen, applied)


def uninterpreted_applications(term: Expr) -> Iterator[Expr]:
    """Every application of an uninterpreted function (memory contents, untracked values) in ``term``."""
    return (t for t, _ in _uninterpreted([term], applied=True))


def reads_data(term: Expr) -> bool:
    """``term`` applies an uninterpreted function: it depends on memory contents or on a value the
    model does not track, not only on block ids, loop variables, lanes, shapes and scalars."""
    return any(True for _ in uninterpreted_applications(term))


def applications(term: Expr, decls: set[str]) -> Iterator[Expr]:
    """Every application of a function named in ``decls`` inside ``term`` (each once)."""
    for name, apps in applications_by_name(term).items():
        if name in decls:
            yield from apps


def applications_by_name(term: Expr) -> dict[str, list[Expr]]:
    """Every application of an uninterpreted function inside ``term``, by function name, in one
    walk (callers ask for several functions of one formula)."""
    out: dict[str, list[Expr]] = {}
    for t in uninterpreted_applications(term):
        out.setdefault(t.decl().name(), []).append(t)
    return out


def applications_of(terms: list[Expr], cache: dict[int, tuple[Expr, dict[str, list[Expr]], z3walk.Seen]],
                    shared: set[int], names: set[str] | frozenset[str] | None = None) -> dict[str, list[Expr]]:
    """``applications_by_name`` over the conjunction of ``terms``, each application once. The
    conjuncts whose ids are in ``shared`` (the constraints every query of a level repeats: grid,
    shapes, the kernel's facts) are walked once per ``cache`` (term id -> the term, kept alive, its
    applications and the ids of its subterms), the rest in one walk that skips what those hold.
    ``names``: only the functions so named (the rest's walk then wraps no other application)."""
    flat = _conjuncts(terms, shared)
    out: dict[str, list[Expr]] = {}
    seen = z3walk.Seen()
    rest = []
    for t, key in flat:
        if key not in shared:
            rest.append(_expr(t, terms))
            continue
        hit = cache.get(key)
        if hit is None:
            t = _expr(t, terms)
            nodes = z3walk.Seen()
            found: dict[str, list[Expr]] = {}
            for app, _ in _uninterpreted([t], nodes, applied=True):
                found.setdefault(app.decl().name(), []).append(app)
            hit = cache[key] = (t, found, nodes)
        seen.update(hit[2])
        for name, apps in hit[1].items():
            if names is None or name in names:
                out.setdefault(name, []).extend(apps)
    listed = {app.get_id() for apps in out.values() for app in apps}
    if len(listed) < sum(len(apps) for apps in out.values()):  # two shared conjuncts read one element
        out = {name: list({app.get_id(): app for app in apps}.values()) for name, apps in out.items()}
    for name, apps in new_applications(rest, seen, names).items():
        out.setdefault(name, []).extend(apps)
    return out


def _conjuncts(terms: list[Expr], shared: set[int]) -> list[tuple[Any, int]]:
    """``applications_of``'s conjuncts of ``terms``, each with its id: nested conjunctions
    flattened in order, one whose id is in ``shared`` kept whole. In C (raw pointers, no Python
    object per conjunct: a level's queries repeat a few hundred base conjuncts each), else here."""
    found = z3walk.conjuncts(terms, sorted(shared))
    return found if found is not None else _python_conjuncts(terms, shared)


def _python_conjuncts(terms: list[Expr], shared: set[int]) -> list[tuple[Any, int]]:
    flat = []
    todo = list(reversed(terms))
    while todo:
        t = todo.pop()
        key = t.get_id()
        parts = _and_arguments(t) if key not in shared else None
        if parts is None:
            flat.append((t, key))
        else:
            todo.extend(reversed(parts))
    return flat


def _expr(t: Any, terms: list[Expr]) -> Expr:
    """A conjunct from ``_conjuncts`` as a term (a raw pointer from the C walk is wrapped)."""
    return z3.z3._to_expr_ref(z3walk.ast_of(t), terms[0].ctx) if isinstance(t, int) else t


def _and_arguments(term: Expr) -> list[BoolExpr] | None:
    """The conjuncts of an ``and`` application (None for any other term), read through the C API."""
    ctx = term.ctx
    parts = _raw_and_arguments(ctx.ref(), term.as_ast())
    return None if parts is None else [z3.BoolRef(a, ctx) for a in parts]


def conjuncts(term: BoolExpr) -> list[BoolExpr]:
    """``term``'s conjuncts, nested ``and``s flattened (``[term]`` for any other term)."""
    out, todo = [], [term]
    while todo:
        t = todo.pop()
        parts = _and_arguments(t)
        if parts is None:
            out.append(t)
        else:
            todo.extend(reversed(parts))
    return out


def _raw_and_arguments(c: Any, a: Any) -> list[Any] | None:
    """``_and_arguments`` on a raw AST of context ``c``: the raw ASTs of its conjuncts."""
    if _C.Z3_get_ast_kind(c, a) != z3.Z3_APP_AST or \
            _C.Z3_get_decl_kind(c, _C.Z3_get_app_decl(c, a)) != z3.Z3_OP_AND:
        return None
    return [_C.Z3_get_app_arg(c, a, k) for k in range(_C.Z3_get_app_num_args(c, a))]


def constants(term: Expr) -> list[Expr]:
    """The uninterpreted constants in ``term`` (block ids, loop variables, lanes, symbols)."""
    return [t for t, n in _uninterpreted([term]) if n == 0]


def new_applications(terms: list[Expr], seen: z3walk.Seen | None = None,
                     names: set[str] | frozenset[str] | None = None) -> dict[str, list[Expr]]:
    """``applications_by_name`` over ``terms``, skipping the subterms in ``seen`` (updated): for
    walking a growing set of formulas once. ``names``: only the functions so named."""
    out: dict[str, list[Expr]] = {}
    if names is not None:
        for name, t in z3walk.named_applications(terms, names, seen):
            out.setdefault(name, []).append(t)
        return out
    for t, _ in _uninterpreted(terms, seen, applied=True):
        out.setdefault(t.decl().name(), []).append(t)
    return out


def substitute(term: Expr, *pairs: tuple[Expr, Expr]) -> Expr:
    """``term`` with each pair's first term replaced by its second. Calls Z3's C API directly: the
    Python wrapper checks every pair's sorts through fresh wrapper objects, which made substitution
    the larger part of a typical kernel's verify (Z3 itself rejects a pair of different sorts)."""
    if not pairs:
        return term
    return z3.z3._to_expr_ref(_substitute_raw(term, pairs), term.ctx)


def substituted(term: Expr, pairs: Sequence[tuple[Expr, Expr]]) -> Expr:
    """``term`` with each pair's first term replaced by its second, simplified. The substituted term
    goes to Z3's simplifier as it comes (Z3 keeps an API call's last result alive until the next
    one's): wrapping it in a Python object, and ``z3.simplify``'s own checks, were two thirds of
    the time of unrolling loop-carried values (``carried``)."""
    ctx = term.ctx
    raw = _substitute_raw(term, pairs) if pairs else term.as_ast()
    return z3.z3._to_expr_ref(z3.z3core.Z3_simplify(ctx.ref(), raw), ctx)


def _substitute_raw(term: Expr, pairs: Sequence[tuple[Expr, Expr]]) -> Any:
    n = len(pairs)
    old, new = (z3.Ast * n)(), (z3.Ast * n)()
    for i, (a, b) in enumerate(pairs):
        old[i], new[i] = a.as_ast(), b.as_ast()
    return z3.z3core.Z3_substitute(term.ctx.ref(), term.as_ast(), n, old, new)


def argument_ids(app: Expr, n: int) -> tuple[int, ...]:
    """The term ids (``term_id``) of the first ``n`` arguments of application ``app``, read through
    Z3's C getters (``_C``): ``app.arg(i)`` wraps each argument in a Python object, sort checks
    included, which was most of the time spent keying loop-carried values (``carried._key``:
    thousands per verify)."""
    c, a = app.ctx.ref(), app.as_ast()
    return tuple(_C.Z3_get_ast_id(c, _C.Z3_get_app_arg(c, a, i)) for i in range(n))


def term_id(term: Expr) -> int:
    """An id equal for structurally equal terms of one context (Z3 shares them)."""
    return term.get_id()


def value_of(value: bool | int) -> Expr:
    """The Z3 literal of a Python bool or int."""
    return z3.BoolVal(value) if isinstance(value, bool) else z3.IntVal(value)


def literal(term: Expr) -> bool | int | None:
    """The Python value of a literal term, else None."""
    if z3.is_int_value(term):
        return term.as_long()
    if z3.is_true(term) or z3.is_false(term):
        return z3.is_true(term)
    return None


def free_constants(term: Expr) -> set[str]:
    """Names of the uninterpreted constants in ``term``."""
    return {t.decl().name() for t in constants(term)}
