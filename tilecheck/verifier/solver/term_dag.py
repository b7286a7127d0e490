"""A Z3 term as a DAG of plain ``Node``s, read in one walk of Z3's C API (``dag``): for evaluating
a term in Python (interval bounds, enumeration, a contract's facts) without a wrapper object per
node. ``smt`` re-exports ``dag``, ``Node`` and ``decl_kind``."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import z3

from tilecheck.verifier.solver import z3walk
from tilecheck.verifier.solver.z3walk import C as _C

Expr = z3.ExprRef

_KINDS = {z3.Z3_OP_ADD: "add", z3.Z3_OP_SUB: "sub", z3.Z3_OP_MUL: "mul", z3.Z3_OP_UMINUS: "uminus",
          z3.Z3_OP_IDIV: "div", z3.Z3_OP_MOD: "mod", z3.Z3_OP_ITE: "ite", z3.Z3_OP_LE: "le", z3.Z3_OP_LT: "lt",
          z3.Z3_OP_GE: "ge", z3.Z3_OP_GT: "gt", z3.Z3_OP_EQ: "eq", z3.Z3_OP_DISTINCT: "distinct",
          z3.Z3_OP_AND: "and", z3.Z3_OP_OR: "or", z3.Z3_OP_NOT: "not", z3.Z3_OP_XOR: "xor",
          z3.Z3_OP_IMPLIES: "implies", z3.Z3_OP_UNINTERPRETED: "uninterpreted"}


@dataclass(frozen=True)
class Node:
    """One node of a term's DAG: ``kind`` as ``decl_kind`` names it, or "literal" (``value`` its
    Python bool or int), "symbol" (``value`` the uninterpreted function's or constant's name) or
    "other"; ``args`` the ids of its arguments. A bit-vector node (``_BV_KINDS``, and "bvliteral"
    with its unsigned value) has ``width``, its bit width, and ``value`` its parameters: the bits of
    an ``int2bv``, (high, low) of an ``extract``, the argument widths of a ``concat``."""
    kind: str
    value: Any
    args: tuple[int, ...]
    width: int = 0


def dag(term: Expr) -> tuple[int, dict[int, Node]]:
    """``term`` as (root id, id -> ``Node``), read in one walk of Z3's C API: for evaluating a term
    in Python without a wrapper object per node. The walk runs in C when it can (``z3walk``): node
    by node through ctypes it took six to ten foreign calls a node, the largest Python cost of the
    interval bounds and enumeration on TileGym's kernels; the nodes are the same, in the same order."""
    found = z3walk.dag_records(term)
    if found is not None:
        return _from_records(term, *found)
    return _python_dag(term)


def _from_records(term: Expr, records: list[int], asts: list[int], args: list[int]) -> tuple[int, dict[int, Node]]:
    """``dag``'s nodes from the C walk's records (``z3walk.dag_records``): a numeral, a symbol or a
    bit-vector operation reads what it needs of its AST here; the others are their kind and
    arguments alone."""
    c, core = term.ctx.ref(), z3.z3core
    nodes: dict[int, Node] = {}
    names: dict[int, str] = {}  # declaration id -> symbol name, for this walk
    at = 0
    for n in range(len(asts)):
        i, ast_kind, op, count = records[4 * n:4 * n + 4]
        ids = tuple(args[at:at + count])
        at += count
        if ast_kind == z3.Z3_APP_AST:
            if op in _KINDS and op != z3.Z3_OP_UNINTERPRETED:
                nodes[i] = Node(_KINDS[op], None, ids)
            elif op in (z3.Z3_OP_TRUE, z3.Z3_OP_FALSE):
                nodes[i] = Node("literal", op == z3.Z3_OP_TRUE, ())
            elif op == z3.Z3_OP_UNINTERPRETED:
                decl = _C.Z3_get_app_decl(c, z3walk.ast_of(asts[n]))
                key = _C.Z3_get_ast_id(c, decl)
                if key not in names:
                    names[key] = core.Z3_get_symbol_string(c, core.Z3_get_decl_name(c, decl))
                nodes[i] = Node("symbol", names[key], ids)
            elif op in _BV_KINDS:
                a = z3walk.ast_of(asts[n])
                nodes[i] = _bv_node(c, _C.Z3_get_app_decl(c, a), op, a,
                                    [_C.Z3_get_app_arg(c, a, k) for k in range(count)])
            else:
                nodes[i] = Node("other", None, ids)
        elif ast_kind == z3.Z3_NUMERAL_AST:
            nodes[i] = _numeral(c, z3walk.ast_of(asts[n]))
        else:
            nodes[i] = Node("other", None, ())
    return records[0], nodes


def _numeral(c: Any, a: Any) -> Node:
    sort = _C.Z3_get_sort_kind(c, _C.Z3_get_sort(c, a))
    if sort == z3.Z3_INT_SORT:
        return Node("literal", int(z3.z3core.Z3_get_numeral_string(c, a)), ())
    if sort == z3.Z3_BV_SORT:
        return Node("bvliteral", int(z3.z3core.Z3_get_numeral_string(c, a)), (), _bv_width(c, a))
    return Node("other", None, ())


def _python_dag(term: Expr) -> tuple[int, dict[int, Node]]:
    """``dag`` through ctypes, node by node (no C library)."""
    ctx = term.ctx
    c, core = ctx.ref(), z3.z3core
    nodes: dict[int, Node] = {}
    root = _C.Z3_get_ast_id(c, term.as_ast())
    todo = [term.as_ast()]
    while todo:
        a = todo.pop()
        i = _C.Z3_get_ast_id(c, a)
        if i in nodes:
            continue
        ast_kind = _C.Z3_get_ast_kind(c, a)
        if ast_kind == z3.Z3_NUMERAL_AST:
            nodes[i] = _numeral(c, a)
            continue
        if ast_kind != z3.Z3_APP_AST:
            nodes[i] = Node("other", None, ())
            continue
        decl = _C.Z3_get_app_decl(c, a)
        op = _C.Z3_get_decl_kind(c, decl)
        n = _C.Z3_get_app_num_args(c, a)
        args = [_C.Z3_get_app_arg(c, a, k) for k in range(n)]
        if op in (z3.Z3_OP_TRUE, z3.Z3_OP_FALSE):
            nodes[i] = Node("literal", op == z3.Z3_OP_TRUE, ())
        elif op == z3.Z3_OP_UNINTERPRETED:
            name = core.Z3_get_symbol_string(c, core.Z3_get_decl_name(c, decl))
            nodes[i] = Node("symbol", name, tuple(_C.Z3_get_ast_id(c, x) for x in args))
        elif op in _BV_KINDS:
            nodes[i] = _bv_node(c, decl, op, a, args)
        else:
            nodes[i] = Node(_KINDS.get(op, "other"), None, tuple(_C.Z3_get_ast_id(c, x) for x in args))
        todo.extend(args)
    return root, nodes


# bit-vector operations the symbolic engine's exact bitwise and/or/xor (``_bitvector``) and Z3's
# simplification of them with a constant operand produce
_BV_KINDS = {z3.Z3_OP_INT2BV: "int2bv", z3.Z3_OP_BV2INT: "bv2int",
             z3.Z3_OP_BXOR: "bvxor", z3.Z3_OP_BAND: "bvand", z3.Z3_OP_BOR: "bvor", z3.Z3_OP_BNOT: "bvnot",
             z3.Z3_OP_EXTRACT: "extract", z3.Z3_OP_CONCAT: "concat", z3.Z3_OP_BADD: "bvadd",
             z3.Z3_OP_BSUB: "bvsub", z3.Z3_OP_SLT: "bvslt", z3.Z3_OP_SLEQ: "bvsle", z3.Z3_OP_SGT: "bvsgt",
             z3.Z3_OP_SGEQ: "bvsge", z3.Z3_OP_ULT: "bvult", z3.Z3_OP_ULEQ: "bvule", z3.Z3_OP_UGT: "bvugt",
             z3.Z3_OP_UGEQ: "bvuge"}
if hasattr(z3, "Z3_OP_SBV2INT"):  # Z3 4.15 on; before it, a signed BV2Int is an ite over bv2int
    _BV_KINDS[z3.Z3_OP_SBV2INT] = "sbv2int"


def bitwise(term: Expr) -> bool:
    """``term`` holds bit-vector arithmetic (the engine's exact bitwise and/or/xor, shifts):
    one walk of its DAG that stops at the first such node."""
    return bool(applications_of_kinds(term, _BV_KINDS, first=True))


def applications_of_kinds(term: Expr, kinds: Any, first: bool = False) -> list[Any]:
    """The distinct applications inside ``term`` (raw ASTs) whose declaration's kind is in
    ``kinds``, not looking inside them, read through Z3's C getters (``first``: the walk stops at
    the first one)."""
    c = term.ctx.ref()
    seen: set[int] = set()
    found = []
    todo = [term.as_ast()]
    while todo:
        a = todo.pop()
        i = _C.Z3_get_ast_id(c, a)
        if i in seen or _C.Z3_get_ast_kind(c, a) != z3.Z3_APP_AST:
            continue
        seen.add(i)
        if _C.Z3_get_decl_kind(c, _C.Z3_get_app_decl(c, a)) in kinds:
            found.append(a)
            if first:
                break
            continue
        todo.extend(_C.Z3_get_app_arg(c, a, k) for k in range(_C.Z3_get_app_num_args(c, a)))
    return found


def _bv_width(c: Any, a: Any) -> int:
    sort = _C.Z3_get_sort(c, a)
    return _C.Z3_get_bv_sort_size(c, sort) if _C.Z3_get_sort_kind(c, sort) == z3.Z3_BV_SORT else 0


def _bv_node(c: Any, decl: Any, op: int, a: Any, args: list[Any]) -> Node:
    """A bit-vector application as a ``Node``: its width (of its arguments, for a comparison or a
    conversion to an integer) and its parameters."""
    ids = tuple(_C.Z3_get_ast_id(c, x) for x in args)
    kind = _BV_KINDS[op]
    if kind == "int2bv":
        return Node(kind, _C.Z3_get_decl_int_parameter(c, decl, 0), ids, _bv_width(c, a))
    if kind == "extract":
        return Node(kind, (_C.Z3_get_decl_int_parameter(c, decl, 0), _C.Z3_get_decl_int_parameter(c, decl, 1)),
                    ids, _bv_width(c, a))
    if kind == "concat":
        return Node(kind, tuple(_bv_width(c, x) for x in args), ids, _bv_width(c, a))
    width = _bv_width(c, a) or (_bv_width(c, args[0]) if args else 0)
    return Node(kind, None, ids, width)


def decl_kind(term: Expr) -> str:
    """What an application applies, by name ("add", "div", "ite", "and", "uninterpreted", ...;
    "other" for the rest): for code that walks terms without importing z3."""
    return _KINDS.get(term.decl().kind(), "other")
