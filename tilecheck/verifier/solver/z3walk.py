"""Walks of Z3 terms for their uninterpreted applications, in C when tilecheck was built with it.

A query's formula is walked for the array contents and carried values it reads
(``smt.applications_of``, ``carried.facts``); in Python through ctypes each node costs five foreign
calls, and on TileGym's slower kernels these walks were a fifth of a verification's time.
``z3walk.c`` does the same walk in one call. It is compiled when tilecheck is installed, as any C
extension is (``setup.py``: the module ``_z3walk``); where that build is not possible (no C
compiler) the install goes on without it, and with it missing, or with ``TILECHECK_NO_NATIVE=1``,
the walk is the Python one. Both give the same applications in the same order (tests compare them),
so no verdict and no solver query depends on which ran.

The C side calls only Z3's public C API (``Z3_get_ast_id``, ``Z3_solver_assert`` ...), the
functions of the libz3 that z3-solver loaded (``_open_libz3``), passed to it by address, so it
needs no Z3 header at build time and always calls the library the context belongs to.

``Seen`` is the set of node ids a walk skips and adds to: a bitmap in C, a Python set otherwise.
"""
from __future__ import annotations

import ctypes
import importlib.util
import os
import threading
import types
from collections.abc import Iterator, Sequence
from typing import Any

import z3

ENV_OFF = "TILECHECK_NO_NATIVE"
EXTENSION = "tilecheck.verifier.solver._z3walk"
_lock = threading.Lock()
_state: dict[str, Any] = {}  # "lib": the loaded library or None; "why": why there is none


def _libz3_path() -> str | None:
    """The file of the libz3 that z3-solver loaded into this process (on Linux read from
    ``/proc/self/maps``, so that ``Z3_LIBRARY_PATH`` is followed), else the one z3-solver ships."""
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                fields = line.split(maxsplit=5)
                if len(fields) == 6 and os.path.basename(fields[5].strip()).startswith("libz3."):
                    return fields[5].strip()
    except OSError:
        pass
    shipped = os.path.join(os.path.dirname(z3.__file__), "lib")
    names = sorted(n for n in os.listdir(shipped) if n.startswith("libz3.")) if os.path.isdir(shipped) else []
    return os.path.join(shipped, names[0]) if names else None


def _open_libz3() -> tuple[Any, str | None]:
    """That libz3 opened again (the same library: the loader hands out the loaded one), its
    getters typed as Z3's C API declares them; or None and why, when it is not the library whose
    version z3-solver reports (the walks then go through z3core's public wrappers)."""
    path = _libz3_path()
    if path is None:
        return None, "z3-solver's libz3 was not found"
    try:
        lib = ctypes.CDLL(path)
        lib.Z3_get_full_version.restype, lib.Z3_get_full_version.argtypes = ctypes.c_char_p, []
        version = lib.Z3_get_full_version().decode()
    except (OSError, AttributeError) as exc:
        return None, f"{path}: {exc}"
    if version != z3.get_full_version():
        return None, f"{path} is Z3 {version}, z3-solver runs {z3.get_full_version()}"
    types_ = z3.z3types
    context, ast, decl, sort, uint = types_.ContextObj, types_.Ast, types_.FuncDecl, types_.Sort, ctypes.c_uint
    for name, restype, argtypes in (
            ("Z3_get_ast_id", uint, [context, ast]), ("Z3_get_ast_kind", uint, [context, ast]),
            ("Z3_get_app_num_args", uint, [context, ast]), ("Z3_get_decl_kind", uint, [context, decl]),
            ("Z3_get_app_decl", decl, [context, ast]), ("Z3_get_app_arg", ast, [context, ast, uint]),
            ("Z3_get_sort_kind", uint, [context, sort]), ("Z3_get_sort", sort, [context, ast]),
            ("Z3_get_bv_sort_size", uint, [context, sort]),
            ("Z3_get_decl_int_parameter", ctypes.c_int, [context, decl, uint])):
        function = getattr(lib, name)
        function.restype, function.argtypes = restype, argtypes
    return lib, None


_LIBZ3, _WHY_NO_LIBZ3 = _open_libz3()


def raw(name: str) -> Any:
    """Z3's C function ``name`` itself: z3core's wrapper of each asks the context for an error code
    after the call, a second foreign call. Where the library cannot be opened, the wrapper (the same
    results, slower)."""
    return getattr(_LIBZ3, name) if _LIBZ3 is not None else getattr(z3.z3core, name)


# Z3's C functions themselves, for walking terms: z3core's wrapper of each asks the context for an
# error code after the call, a second foreign call per node, and half of a walk's time; these
# getters read terms Z3 made, which cannot fail (functions returning strings keep their wrappers)
C = types.SimpleNamespace(**{name: raw(name) for name in (
    "Z3_get_ast_id", "Z3_get_ast_kind", "Z3_get_app_num_args", "Z3_get_decl_kind", "Z3_get_app_decl",
    "Z3_get_app_arg", "Z3_get_sort_kind", "Z3_get_sort", "Z3_get_bv_sort_size", "Z3_get_decl_int_parameter")})

# the getters the C walk calls, in the order ``tc_init`` takes them
_Z3 = ("Z3_get_ast_id", "Z3_get_ast_kind", "Z3_get_app_num_args", "Z3_get_app_decl", "Z3_get_decl_kind",
       "Z3_get_app_arg")


def _library() -> str:
    """The path of the C walk built at install time (``OSError`` when it was not built)."""
    spec = importlib.util.find_spec(EXTENSION)
    if spec is None or not spec.origin:
        raise OSError("the C walk was not built when tilecheck was installed (no C compiler then?); "
                      "reinstalling with one builds it")
    return spec.origin


def _load() -> Any:
    """The C library, initialised with Z3's functions; None (and ``why``) when it cannot be had."""
    with _lock:
        if "lib" in _state:
            return _state["lib"]
        lib = None
        try:
            if os.environ.get(ENV_OFF):
                raise OSError(f"${ENV_OFF} is set")
            if _LIBZ3 is None:
                raise OSError(_WHY_NO_LIBZ3)
            lib = ctypes.CDLL(_library())
            lib.tc_init.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int, ctypes.c_int]
            lib.tc_set_new.restype = ctypes.c_void_p
            lib.tc_set_free.argtypes = [ctypes.c_void_p]
            lib.tc_set_union.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
            lib.tc_set_has.argtypes = [ctypes.c_void_p, ctypes.c_uint]
            lib.tc_walk.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_uint,
                                    ctypes.c_void_p, ctypes.POINTER(ctypes.POINTER(ctypes.c_void_p)),
                                    ctypes.POINTER(ctypes.POINTER(ctypes.c_uint))]
            lib.tc_walk.restype = ctypes.c_long
            lib.tc_free.argtypes = [ctypes.c_void_p]
            lib.tc_dag.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.POINTER(ctypes.c_uint)),
                                   ctypes.POINTER(ctypes.POINTER(ctypes.c_void_p)),
                                   ctypes.POINTER(ctypes.POINTER(ctypes.c_uint)), ctypes.POINTER(ctypes.c_size_t)]
            lib.tc_dag.restype = ctypes.c_long
            lib.tc_flatten.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_uint,
                                       ctypes.POINTER(ctypes.c_uint), ctypes.c_uint,
                                       ctypes.POINTER(ctypes.POINTER(ctypes.c_void_p)),
                                       ctypes.POINTER(ctypes.POINTER(ctypes.c_uint))]
            lib.tc_flatten.restype = ctypes.c_long
            lib.tc_init_assert.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int, ctypes.c_int]
            lib.tc_assert.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_uint,
                                      ctypes.POINTER(ctypes.c_uint), ctypes.c_uint, ctypes.c_char_p]
            lib.tc_assert.restype = ctypes.c_int
            functions = (ctypes.c_void_p * len(_Z3))(*[ctypes.cast(getattr(C, n), ctypes.c_void_p) for n in _Z3])
            lib.tc_init(functions, z3.Z3_APP_AST, z3.Z3_OP_UNINTERPRETED)
            asserts = (ctypes.c_void_p * 3)(*[ctypes.cast(raw(n), ctypes.c_void_p) for n in (
                "Z3_solver_assert", "Z3_solver_assert_and_track", "Z3_get_error_code")])
            lib.tc_init_assert(asserts, z3.Z3_OP_AND, z3.Z3_OP_IMPLIES)
        except (OSError, AttributeError) as exc:
            lib = None
            _state["why"] = str(exc)
        _state["lib"] = lib
        return lib


def native() -> bool:
    """The walks run in C."""
    return _load() is not None


def why_not_native() -> str | None:
    """Why the walks run in Python (None when they run in C)."""
    _load()
    return _state.get("why")


class Seen:
    """Node ids a walk skips (and adds to)."""

    __slots__ = ("ids", "handle", "lib")

    def __init__(self) -> None:
        self.lib = _load()
        self.handle = self.lib.tc_set_new() if self.lib is not None else None
        self.ids: set[int] | None = set() if self.lib is None else None
        if self.lib is not None and not self.handle:
            raise MemoryError("tilecheck: no memory for a term walk")

    def __del__(self) -> None:
        if getattr(self, "handle", None):
            self.lib.tc_set_free(self.handle)
            self.handle = None

    def __contains__(self, node: int) -> bool:
        if self.ids is not None:
            return node in self.ids
        return bool(self.lib.tc_set_has(self.handle, node))

    def update(self, other: "Seen") -> None:
        if self.ids is not None:
            self.ids |= other.ids  # type: ignore[operator]
        elif not self.lib.tc_set_union(self.handle, other.handle):
            raise MemoryError("tilecheck: no memory for a term walk")


def uninterpreted(terms: list[Any], seen: Seen | None = None, applied: bool = False) -> Iterator[tuple[Any, int]]:
    """Every distinct application of an uninterpreted symbol inside ``terms`` (constants too, unless
    ``applied``), with its arity, in depth-first order; subterms in ``seen`` (updated) are skipped.
    (Wrapping each constant found in a Python object was most of a walk's cost on formulas that
    read no memory: a contract's rules.)"""
    if not terms:
        return iter(())
    seen = Seen() if seen is None else seen
    if seen.ids is not None:
        walk = _python_walk(terms, seen.ids)
        return (found for found in walk if found[1] > 0) if applied else walk
    ctx = terms[0].ctx
    return iter([(z3.z3._to_expr_ref(ast_of(app), ctx), arity) for app, arity in _c_walk(terms, seen)
                 if not applied or arity > 0])


def named_applications(terms: list[Any], names: set[str] | frozenset[str], seen: Seen | None = None
                       ) -> list[tuple[str, Any]]:
    """The distinct applications inside ``terms`` of the uninterpreted functions ``names``, each
    with its function's name, in ``uninterpreted``'s order. Only those are wrapped in Python objects,
    and each function's name is read once per walk (by its declaration's id), not once per
    application: a walk of a loop's unrolled facts finds hundreds of applications of other functions."""
    if not terms:
        return []
    seen = Seen() if seen is None else seen
    if seen.ids is not None:  # no C library: the Python walk, filtered after it
        return [(name, t) for t, _ in uninterpreted(terms, seen, applied=True) if (name := t.decl().name()) in names]
    ctx = terms[0].ctx
    c = ctx.ref()
    known: dict[int, str] = {}  # declaration id -> name, for this walk
    out = []
    for pointer, arity in _c_walk(terms, seen):
        if arity == 0:
            continue
        app = ast_of(pointer)  # a bare int would be passed as a C int (``ast_of``)
        decl = C.Z3_get_app_decl(c, app)
        key = C.Z3_get_ast_id(c, decl)
        if key not in known:
            known[key] = z3.z3core.Z3_get_symbol_string(c, z3.z3core.Z3_get_decl_name(c, decl))
        if known[key] in names:
            out.append((known[key], z3.z3._to_expr_ref(app, ctx)))
    return out


def _c_walk(terms: list[Any], seen: Seen) -> list[tuple[int, int]]:
    """The C walk (``tc_walk``) over ``terms``: each uninterpreted symbol's application found, as a
    raw pointer, with its arity, in depth-first order, skipping the subterms in ``seen`` (updated)."""
    n = len(terms)
    roots = (ctypes.c_void_p * n)(*[t.as_ast() for t in terms])
    apps = ctypes.POINTER(ctypes.c_void_p)()
    arities = ctypes.POINTER(ctypes.c_uint)()
    found = seen.lib.tc_walk(terms[0].ctx.ref(), roots, n, seen.handle, ctypes.byref(apps), ctypes.byref(arities))
    if found < 0:
        raise MemoryError("tilecheck: no memory for a term walk")
    try:
        return [(apps[i], arities[i]) for i in range(found)]
    finally:
        seen.lib.tc_free(ctypes.cast(apps, ctypes.c_void_p))
        seen.lib.tc_free(ctypes.cast(arities, ctypes.c_void_p))


def dag_records(term: Any) -> tuple[list[int], list[int], list[int]] | None:
    """The C walk of ``term``'s DAG (``tc_dag``): per node, in the order ``term_dag.dag`` visits
    them, four values in the first list (id, AST kind, declaration kind or 2**32 - 1, number of
    arguments), its raw AST pointer in the second, and the arguments' ids, node after node, in the
    third. None when the C library is not there."""
    lib = _load()
    if lib is None:
        return None
    records = ctypes.POINTER(ctypes.c_uint)()
    asts = ctypes.POINTER(ctypes.c_void_p)()
    args = ctypes.POINTER(ctypes.c_uint)()
    nargs = ctypes.c_size_t()
    n = lib.tc_dag(term.ctx.ref(), term.as_ast(), ctypes.byref(records), ctypes.byref(asts), ctypes.byref(args),
                   ctypes.byref(nargs))
    if n < 0:
        raise MemoryError("tilecheck: no memory for a term walk")
    try:
        return (_items(records, ctypes.c_uint, 4 * n), _items(asts, ctypes.c_size_t, n),
                _items(args, ctypes.c_uint, nargs.value))
    finally:
        for pointer in (records, asts, args):
            lib.tc_free(ctypes.cast(pointer, ctypes.c_void_p))


def conjuncts(terms: list[Any], shared: Sequence[int]) -> list[tuple[int, int]] | None:
    """The conjuncts of ``terms`` (``tc_flatten``): nested conjunctions flattened in order, except
    one whose id is in ``shared`` (sorted), which is a conjunct itself; each as (raw AST pointer,
    id), without a Python object per conjunct. None when the C library is not there."""
    lib = _load()
    if lib is None or not terms:
        return None if lib is None else []
    roots = (ctypes.c_void_p * len(terms))(*[t.as_ast() for t in terms])
    keys = (ctypes.c_uint * len(shared))(*shared)
    out = ctypes.POINTER(ctypes.c_void_p)()
    ids = ctypes.POINTER(ctypes.c_uint)()
    n = lib.tc_flatten(terms[0].ctx.ref(), roots, len(terms), keys, len(shared), ctypes.byref(out), ctypes.byref(ids))
    if n < 0:
        raise MemoryError("tilecheck: no memory for a term walk")
    try:
        return list(zip(_items(out, ctypes.c_size_t, n), _items(ids, ctypes.c_uint, n)))
    finally:
        lib.tc_free(ctypes.cast(out, ctypes.c_void_p))
        lib.tc_free(ctypes.cast(ids, ctypes.c_void_p))


def _items(pointer: Any, kind: Any, n: int) -> list[int]:
    """The ``n`` values of C type ``kind`` at ``pointer``, as a list (one slice, no call per item)."""
    return ctypes.cast(pointer, ctypes.POINTER(kind * n)).contents[:] if n else []


def ast_of(pointer: int) -> Any:
    """A ``z3.Ast`` holding ``pointer``: ``z3.Ast(pointer)`` keeps it only as ``_as_parameter_``,
    which ctypes then passes as a C int (a truncated pointer)."""
    ast = z3.Ast.__new__(z3.Ast)
    ast.value = pointer
    return ast


def _python_walk(terms: list[Any], seen: set[int]) -> Iterator[tuple[Any, int]]:
    if not terms:
        return
    ctx = terms[0].ctx
    c = ctx.ref()
    get_id, kind, num_args = C.Z3_get_ast_id, C.Z3_get_ast_kind, C.Z3_get_app_num_args
    decl, decl_kind, arg = C.Z3_get_app_decl, C.Z3_get_decl_kind, C.Z3_get_app_arg
    todo = [t.as_ast() for t in terms]
    while todo:
        a = todo.pop()
        i = get_id(c, a)
        if i in seen or kind(c, a) != z3.Z3_APP_AST:
            seen.add(i)
            continue
        seen.add(i)
        n = num_args(c, a)
        if decl_kind(c, decl(c, a)) == z3.Z3_OP_UNINTERPRETED:
            yield z3.z3._to_expr_ref(a, ctx), n
        todo.extend(arg(c, a, k) for k in range(n))


def assert_tracking(solver: Any, constraints: list[Any], flags: dict[int, Any]) -> set[int] | None:
    """``smt._assert_tracking`` in one foreign call: ``constraints`` asserted into ``solver``
    (conjunctions flattened, in the same order), each ``Implies(f, rule)`` of a flag ``f`` (by term
    id in ``flags``) as ``rule`` tracked by ``f``. The ids of the flags some implication named; None
    when the C library is not there (the caller walks in Python)."""
    lib = _load()
    if lib is None:
        return None
    ctx = solver.ctx
    c = ctx.ref()
    ids = sorted(flags)
    n, k = len(constraints), len(ids)
    roots = (ctypes.c_void_p * n)(*[t.as_ast() for t in constraints])
    keys = (ctypes.c_uint * k)(*ids)
    used = ctypes.create_string_buffer(k)
    done = lib.tc_assert(c, solver.solver, roots, n, keys, k, used)
    if done == -1:
        raise MemoryError("tilecheck: no memory to assert a query")
    if done == -2:
        raise z3.Z3Exception(z3.z3core.Z3_get_error_msg(c, z3.z3core.Z3_get_error_code(c)))
    return {ids[i] for i in range(k) if used.raw[i]}
