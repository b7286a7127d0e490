"""The Triton frontend's lowering of structured control flow: ``scf.for``, ``scf.if`` and
``scf.while``, each carrying the token of the program's memory ops through its regions."""
from __future__ import annotations

import re

from tilecheck.ir import types as T
from tilecheck.ir.core import Block, Region, Value
from tilecheck.ir.triton.builder import Lowering
from tilecheck.ir.triton.ops import pointer_plus
from tilecheck.ir.triton.registry import (
    Unsupported,
    handles,
    operands_of,
    scalar_of,
    signature,
    tile_of,
    touches_memory,
    types_of,
)
from tilecheck.ir.triton.ttir import TOp, split_top, value_refs
from tilecheck.ir.triton.types import tile_type


@handles("scf.for")
def for_(L: Lowering, top: TOp) -> None:
    head, type_text = signature(top)
    m = re.match(r"\s*(%[\w$.\-]+)\s*=\s*(%\S+)\s+to\s+(%\S+)\s+step\s+(%[\w$.\-#]+)(.*)$", head)
    if m is None:
        raise Unsupported("scf.for of an unexpected form")
    iv_name, lb, ub, step, tail = m.groups()
    lb_v, ub_v, step_v = L.value(lb), L.value(ub), L.value(step)
    if "iter_args" not in tail:
        tail = ""
    iter_names, init_names = _iter_args(L, tail)
    _pass_origins(L, init_names, iter_names, top.results)
    steps = _inductions(top, iv_name, iter_names)
    kept = [j for j in range(len(iter_names)) if j not in steps]
    inits = [L.value(init_names[j]) for j in kept]
    carry = touches_memory(top.regions[0])
    init_values = inits + ([L.token] if carry else [])
    iv = Value(tile_of(lb_v))
    args = (iv, *(Value(v.type) for v in init_values))

    def closed_forms() -> None:  # an induction value at this iteration: init + ((iv - lb) / step) * c
        if steps:
            L.run_ops(_hoisted(top.regions[0], {c for _, c in steps.values()}), terminator=None)
            count = _iterations(L, L.emit("subi", {"lhs": [iv], "rhs": [lb_v]}, [iv.type]).result, step_v)
            for j, (how, c) in steps.items():
                L.env[iter_names[j]] = _advanced(L, how, init_names[j], count, L.value(c))

    body = _loop_body(L, top.regions[0], [iv_name, *(iter_names[j] for j in kept)], args, carry, "continue",
                      prologue=closed_forms, dropped=set(steps))
    op = L.emit("for", {"lowerBound": [lb_v], "upperBound": [ub_v], "step": [step_v], "initValues": init_values},
                [v.type for v in init_values], {}, [Region((body,))])
    results = iter(op.results[:len(inits)])
    values = []
    trips = None
    used = {r for op in L.all_ops() for r in value_refs(op.rest)}
    for j in range(len(iter_names)):
        if j not in steps:
            values.append(next(results))
            continue
        if j >= len(top.results) or top.results[j] not in used:
            values.append(L.value(init_names[j]))  # never read: any value of its type
            continue
        if trips is None:  # the value after the loop: advanced once per iteration run
            L.run_ops(_hoisted(top.regions[0], {c for _, c in steps.values()}), terminator=None)
            span = L.emit("subi", {"lhs": [ub_v], "rhs": [lb_v]}, [iv.type]).result
            ceil = L.emit("divi", {"lhs": [span], "rhs": [step_v]}, [iv.type],
                          {"signedness": "signed", "rounding": "positive_inf"}).result
            trips = L.emit("maxi", {"lhs": [ceil], "rhs": [L.constant(0, tile_of(iv))]}, [iv.type],
                           {"signedness": "signed"}).result
        how, c = steps[j]
        values.append(_advanced(L, how, init_names[j], trips, L.value(c)))
    L.bind(top, values)
    if carry:
        L.token = op.results[-1]


def _inductions(top: TOp, iv_name: str, iter_names: list[str]) -> dict[int, tuple[str, str]]:
    """The iteration arguments a loop advances by a loop-invariant amount (``p += c`` on a pointer,
    ``x += c`` on an integer), by position: ``(op name, c)``. They are lowered in closed form
    (``init + k * c`` at iteration ``k``) instead of being carried, so a pointer walking a K loop stays
    a function of the iteration the checkers can reason about."""
    body = top.regions[0]
    if body.blocks or not body.ops or body.ops[-1].name != "scf.yield":
        return {}
    yielded = value_refs(signature(body.ops[-1])[0])
    invariant = _invariant(body, iv_name, iter_names)
    by_result = {op.results[0]: op for op in body.ops if len(op.results) == 1}
    out = {}
    for j, (arg, y) in enumerate(zip(iter_names, yielded)):
        op = by_result.get(y)
        if op is None or op.name not in ("tt.addptr", "arith.addi"):
            continue
        refs = value_refs(signature(op)[0])
        if len(refs) == 2 and refs[0] == arg and refs[1] in invariant:
            out[j] = (op.name, refs[1])
    return out


_PURE = ("arith.", "tt.splat", "tt.broadcast", "tt.expand_dims", "tt.make_range")


def _invariant(body, iv_name: str, iter_names: list[str]) -> set[str]:
    """The names whose value is the same at every iteration: defined outside the body, or by a pure
    op of the body's top level whose operands are (``BK * N`` computed and splat inside the loop)."""
    inside = {name for op in _walk(body) for name in op.results} | {iv_name, *iter_names}
    out: set[str] = set()
    for op in body.ops:
        if op.regions or not op.name.startswith(_PURE):
            continue
        if all(r not in inside or r in out for r in value_refs(signature(op)[0])):
            out.update(op.results)
    return out | {r for op in _walk(body) for r in value_refs(op.rest) if r not in inside}


def _hoisted(body, names: set[str]) -> list[TOp]:
    """The body's top-level ops that compute ``names`` (invariant, so they may run before the body)."""
    need, out = set(names), []
    for op in reversed(body.ops):
        if any(r in need for r in op.results):
            out.append(op)
            need |= set(value_refs(signature(op)[0]))
    return list(reversed(out))


def _walk(region):
    for op in region.ops:
        yield op
        for inner in op.regions:
            yield from _walk(inner)


def _iterations(L: Lowering, distance: Value, step: Value) -> Value:
    """``distance / step``: the iteration's index from the loop's first (an exact division)."""
    return L.emit("divi", {"lhs": [distance], "rhs": [step]}, [distance.type], {"signedness": "signed"}).result


def _advanced(L: Lowering, how: str, init_name: str, count: Value, c: Value) -> Value:
    """``init + count * c`` for an induction ``init`` advanced by ``c`` per iteration (``how``: its op)."""
    ct = tile_of(c)
    k = count
    kt = tile_of(k)
    if scalar_of(kt) != scalar_of(ct):
        bits_k, bits_c = scalar_of(kt).bitwidth, scalar_of(ct).bitwidth
        k = L.emit("exti" if bits_k < bits_c else "trunci", {"source": [k]}, [T.TileType((), scalar_of(ct))],
                   {"signedness": "signed"} if bits_k < bits_c else {}).result
    delta = L.emit("muli", {"lhs": [L.broadcast_to(k, ct.shape)], "rhs": [c]}, [ct]).result
    init = L.value(init_name)
    if how == "tt.addptr":
        array = L.origin.get(init_name)
        if array is None:
            raise Unsupported("a loop advances a pointer whose array is not known")
        return pointer_plus(L, init, array, delta)
    return L.emit("addi", {"lhs": [init], "rhs": [L.broadcast_to(delta, tile_of(init).shape)]}, [init.type]).result


def _iter_args(L: Lowering, tail: str) -> tuple[list[str], list[str]]:
    """``iter_args(%a = %x, ...)`` (or a while's ``(%a = %x, ...)``): argument and init names."""
    m = re.search(r"\((.*?)\)\s*(->|$)", tail)
    if m is None or not m.group(1).strip():
        return [], []
    names, inits = [], []
    for item in split_top(m.group(1), ","):
        name, _, init = item.partition("=")
        names.append(name.strip())
        inits.append(init.strip())
    return names, inits


def _pass_origins(L: Lowering, inits: list[str], *targets: list[str]) -> None:
    """A pointer carried by a loop keeps the array of its initial value (a loop that moved a pointer
    to another array would be caught by the verifier: the yielded pointer names a different array)."""
    for k, init in enumerate(inits):
        if init in L.origin:
            for names in targets:
                if k < len(names):
                    L.origin[names[k]] = L.origin[init]


def _loop_body(L: Lowering, region, names: list[str], args: tuple[Value, ...], carry: bool,
               terminator: str, prologue=None, dropped: frozenset[int] | set[int] = frozenset()) -> Block:
    saved_ops, saved_token = L.ops, L.token
    L.ops = []
    for name, v in zip(names, args):
        L.env[name] = v
    if carry:
        L.token = args[-1]
    if prologue is not None:
        prologue()

    def finish(y: TOp) -> None:
        values = [v for j, v in enumerate(operands_of(L, signature(y)[0])) if j not in dropped]
        L.emit(terminator, {"operands": values + ([L.token] if carry else [])}, [])

    L.region(region, terminator=finish)
    if not L.ops or L.ops[-1].name != terminator:
        finish(TOp("scf.yield", [], "", 0))
    body = Block(args, L.ops)
    L.ops, L.token = saved_ops, saved_token
    return body


@handles("scf.if")
def if_(L: Lowering, top: TOp) -> None:
    head, _ = signature(top)
    cond_name = value_refs(head)[0]
    cond = L.value(cond_name)
    result_types = [tile_type(t) for t in types_of(head.split("->", 1)[1])] if "->" in head else []
    carry = any(touches_memory(r) for r in top.regions)
    token_in = L.token
    regions = []
    for k in range(2):
        region = top.regions[k] if k < len(top.regions) else None
        saved_ops = L.ops
        L.ops = []
        L.token = token_in

        def finish(y: TOp) -> None:
            values = operands_of(L, signature(y)[0])
            L.emit("yield", {"operands": values + ([L.token] if carry else [])}, [])

        if region is not None:
            L.region(region, terminator=finish)
        if not L.ops or L.ops[-1].name != "yield":
            finish(TOp("scf.yield", [], "", 0))
        regions.append(Region((Block((), L.ops),)))
        L.ops = saved_ops
    L.token = token_in
    types = result_types + ([T.TOKEN] if carry else [])
    op = L.emit("if", {"condition": [cond]}, types, {}, regions)
    L.bind(top, op.results[:len(result_types)])
    if carry:
        L.token = op.results[-1]


@handles("scf.while")
def while_(L: Lowering, top: TOp) -> None:
    """``scf.while``: a Tile IR ``loop`` whose body runs the condition region, breaks when the
    condition is false (with the values the condition forwards), then runs the body region."""
    head, type_text = signature(top)
    names, init_names = _iter_args(L, head)
    inits = [L.value(n) for n in init_names]
    _pass_origins(L, init_names, names)
    types = types_of(type_text)
    n_results = len(top.results)
    result_types: list[T.Type] = [tile_type(t) for t in types[len(types) - n_results:]] if n_results else []
    before, after = top.regions[0], top.regions[1]
    carry = touches_memory(before) or touches_memory(after)
    init_values = inits + ([L.token] if carry else [])
    args = tuple(Value(v.type) for v in init_values)
    saved_ops, saved_token = L.ops, L.token
    L.ops = []
    for name, v in zip(names, args):
        L.env[name] = v
    if carry:
        L.token = args[-1]
    forwarded: list[Value] = []
    forwarded_names: list[str] = []

    def condition(c: TOp) -> None:
        text = signature(c)[0]
        refs = value_refs(text)
        cond = L.value(refs[0])
        forwarded_names[:] = refs[1:]
        forwarded[:] = [L.value(r) for r in refs[1:]]
        exit_ops, L.ops = L.ops, []
        L.emit("break", {"operands": forwarded + ([L.token] if carry else [])}, [])
        on_false = Region((Block((), L.ops),))
        L.ops = []
        L.emit("yield", {"operands": []}, [])
        on_true = Region((Block((), L.ops),))
        L.ops = exit_ops
        L.emit("if", {"condition": [cond]}, [], {}, [on_true, on_false])

    L.region(before, terminator=condition)
    _pass_origins(L, forwarded_names, [name for name, _ in after.args], top.results)
    for (name, _), v in zip(after.args, forwarded):
        L.env[name] = v

    def finish(y: TOp) -> None:
        values = operands_of(L, signature(y)[0])
        L.emit("continue", {"operands": values + ([L.token] if carry else [])}, [])

    L.region(after, terminator=finish)
    if not L.ops or L.ops[-1].name != "continue":
        finish(TOp("scf.yield", [], "", 0))
    body = Block(args, L.ops)
    L.ops, L.token = saved_ops, saved_token
    loop_types = result_types + ([T.TOKEN] if carry else [])
    op = L.emit("loop", {"initValues": init_values}, loop_types, {}, [Region((body,))])
    L.bind(top, op.results[:n_results])
    if carry:
        L.token = op.results[-1]


# ---- unstructured branches (an early return) ---------------------------------------------------------
_LABEL = re.compile(r"(\^bb\d+)(\s*\([^)]*\))?")


def _target(L: Lowering, label: str, args: str | None):
    if args:
        raise Unsupported("a branch that passes values to its target block")
    block = L.cfg[-1].get(label) if L.cfg else None
    if block is None:
        raise Unsupported(f"a branch to {label}, which is not a block of its region")
    return block


@handles("cf.cond_br")
def cond_br(L: Lowering, top: TOp) -> None:
    """``cf.cond_br %c, ^a, ^b`` (Triton's early return): an ``if`` whose branches run the target
    blocks to their own ends (a return, or a branch on), so nothing follows it."""
    head = signature(top)[0]
    cond = L.value(value_refs(head)[0])
    targets = _LABEL.findall(head)
    if len(targets) != 2:
        raise Unsupported("cf.cond_br of an unexpected form")
    blocks = [_target(L, label, args) for label, args in targets]
    token_in = L.token
    regions = []
    for block in blocks:
        saved, L.ops, L.token = L.ops, [], token_in
        L.run_ops(block.ops, terminator=None)
        if not L.ops or L.ops[-1].name != "return":
            L.emit("return", {"operands": []}, [])
        regions.append(Region((Block((), L.ops),)))
        L.ops = saved
    L.token = token_in
    L.emit("if", {"condition": [cond]}, [], {}, regions)
    L.emit("return", {"operands": []}, [])  # both branches returned


@handles("cf.br")
def br(L: Lowering, top: TOp) -> None:
    """``cf.br ^a``: the target block, lowered in place (its blocks reach here from one branch each)."""
    targets = _LABEL.findall(signature(top)[0])
    if len(targets) != 1:
        raise Unsupported("cf.br of an unexpected form")
    L.run_ops(_target(L, *targets[0]).ops, terminator=None)
