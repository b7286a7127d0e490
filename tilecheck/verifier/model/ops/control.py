"""Control flow: ``for`` and ``loop`` bind a variable per iteration (carried scalars without a closed
form are functions of it, defined by facts: ``verifier/model/carried.py``); ``if`` splits the path."""
from __future__ import annotations

from tilecheck.ir import Op
from tilecheck.ir import types as T
from tilecheck.ir.summary import exits as loop_exits
from tilecheck.verifier.model.bounds import NON_NEGATIVE, UNKNOWN, add, join, mul, sub
from tilecheck.verifier.model.carried import Carried
from tilecheck.verifier.model.ops.shape import reshaped, shape_of
from tilecheck.verifier.model.registry import symbolic
from tilecheck.verifier.model.values import (
    LANES,
    BoolTile,
    IntTile,
    LoopVar,
    Pointer,
    Pointers,
    SymValue,
    choose,
    decided,
    in_range,
)
from tilecheck.verifier.solver import smt


@symbolic("for")
def for_(state, op: Op, lb: SymValue, ub: SymValue, step: SymValue, *inits: SymValue):
    body = op.regions[0].block
    var = smt.fresh_int("loop")
    exact = True
    if isinstance(lb, IntTile) and isinstance(ub, IntTile):
        domain = smt.And(var >= lb.term, var < ub.term)
        step_value = smt.const_value(step.term) if isinstance(step, IntTile) else None
        if step_value is not None and step_value > 1:
            domain = smt.And(domain, (var - lb.term) % step_value == 0)
        elif step_value is None and isinstance(step, IntTile):
            # a symbolic step (e.g. a persistent kernel's num_blocks): nonlinear in general, linear
            # once the case fixes the grid
            domain = smt.And(domain, step.term > 0, (var - lb.term) % step.term == 0)
        elif step_value is None:
            exact = False  # an unknown step: every value in [lb, ub) is considered
    else:
        domain, exact = smt.BoolVal(True), False
    first = lb.term if isinstance(lb, IntTile) and not lb.shape else None
    stride = step.term if isinstance(step, IntTile) and not step.shape else None
    iterates = exact and first is not None and stride is not None
    outer = state.context_args()
    bounds = (lb.term, ub.term, step.term) if (exact and isinstance(step, IntTile) and not step.shape
                                              and not lb.shape and not ub.shape) else None  # type: ignore[union-attr]
    loop = LoopVar(op, var, domain, exact, bounds=bounds)
    counter = UNKNOWN
    if isinstance(lb, IntTile) and isinstance(ub, IntTile):  # lb <= var < ub, as the domain says
        counter = (lb.bounds[0], None if ub.bounds[1] is None else ub.bounds[1] - 1)
    with state.in_region(domain, loop):
        state.env[body.args[0]] = IntTile(var, bounds=counter)
        slots = _bind_carried(state, op, body.args[1:], inits, var, first, stride, iterates)
        exits = _run_body(state, body)
    if not iterates:
        return tuple(state.havoc(r.type, "for") for r in op.results)
    bound = ub.term if isinstance(ub, IntTile) and not ub.shape else None
    _record_carried(state, outer, var, first, stride, bound, slots, inits, exits)
    s = smt.const_value(stride)
    if bound is None or s is None or s <= 0 or any(name == "break" for name, _, _ in exits):
        return tuple(state.havoc(r.type, "for") for r in op.results)
    # the results are the carried values at the first value past the last iteration
    end = smt.If(bound > first, first + ((bound - first + (s - 1)) / s) * s, first)
    return tuple(_at(state, r, slot, outer, var, end) for r, slot in zip(op.results, slots))


def _bind_carried(state, op: Op, args, inits: tuple[SymValue, ...], var, first, stride,
                  iterates: bool) -> list[SymValue | smt.FuncDecl | None]:
    """Bind the carried block arguments: a closed form for ``x += c`` with c loop-invariant, else
    a function of the iteration (scalars, defined by ``_record_carried``), else any value. Returns,
    per slot, the closed form (a value), the function, or None."""
    slots: list[SymValue | smt.FuncDecl | None] = []
    for k, arg in enumerate(args):
        value = _induction(state, op, arg, k, var, first, stride, inits[k]) if iterates else None
        slot: SymValue | smt.FuncDecl | None = value
        if value is None and iterates and _scalar(arg.type) is not None:
            func = smt.fresh_function("carried", len(state.context_args()), _scalar(arg.type))
            slot = func
            value = _applied(func, state.context_args(), arg.type)
        state.env[arg] = value if value is not None else state.havoc(arg.type, "iter")
        slots.append(slot)
    return slots


def _scalar(type_) -> object | None:
    """The Z3 sort of a 0-d integer or i1 tile (what a carried function returns), else None."""
    if not isinstance(type_, T.TileType) or type_.shape or not isinstance(type_.element, T.ScalarType):
        return None
    if type_.element == T.I1:
        return smt.BoolSort()
    return smt.IntSort() if type_.element.is_integer else None


def _applied(func: smt.FuncDecl, args, type_) -> SymValue:
    app = func(*args)
    return BoolTile(app) if type_.element == T.I1 else IntTile(in_range(app, type_.element))


def _run_body(state, body) -> list[tuple[str, smt.BoolExpr, tuple[SymValue, ...]]]:
    """Run a loop body; returns the breaks and continues taken in it (name, condition, values)."""
    state.exits.append([])
    try:
        state.run_block(body)
    finally:
        exits = state.exits.pop()
    return exits


def _term(value: SymValue) -> smt.Expr | None:
    return value.term if isinstance(value, (IntTile, BoolTile)) and not value.shape else None


def _first_of(taken: list[tuple[smt.BoolExpr, smt.Expr]]) -> smt.Expr:
    """The value of the first exit taken: exits are exclusive (each runs only where none before did)."""
    out = taken[-1][1]
    for cond, term in reversed(taken[:-1]):
        out = smt.If(cond, term, out)
    return out


def _record_carried(state, outer, var, first, step, bound, slots, inits, exits) -> None:
    """The defining facts of each carried function (``verifier/model/carried.py``): its value at the first
    iteration, and the value the iteration's continue passes on to the next."""
    continues = [(cond, values) for name, cond, values in exits if name == "continue"]
    if not continues:
        return
    proceeds = smt.Or(*[cond for cond, _ in continues])
    for k, slot in enumerate(slots):
        if not isinstance(slot, smt.FuncDecl):
            continue
        init = _term(inits[k])
        nexts = [_term(values[k]) if k < len(values) else None for _, values in continues]
        if init is None or any(n is None for n in nexts):
            continue
        following = _first_of([(cond, n) for (cond, _), n in zip(continues, nexts)])
        state.carried[slot.name()] = Carried(slot, tuple(outer), var, first, step, bound, proceeds,
                                             init=init, following=following)


def _at(state, result, slot, outer, var, end) -> SymValue:
    """A loop result: slot's value at iteration ``end``."""
    if isinstance(slot, smt.FuncDecl):
        return _applied(slot, (*outer, end), result.type)
    if isinstance(slot, IntTile):
        return IntTile(smt.substitute(slot.term, (var, end)))
    return state.havoc(result.type, "for")


def _induction(state, op: Op, arg, k: int, var, first, step, init: SymValue) -> IntTile | None:
    """``init + n * c`` for carried slot k when the body yields ``arg + c`` (or ``- c``) with c defined
    outside the loop, where n = (iv - first) / step counts the iterations before this one."""
    body = op.regions[0].block
    term = body.ops[-1] if body.ops else None
    if term is None or term.name != "continue" or not isinstance(init, IntTile) or init.shape:
        return None
    if k >= len(term.operands) or any(len(c.operands) <= k or c.operands[k] is not term.operands[k]
                                      for c in _continues(body.ops)):
        return None  # an early `continue` passes on another value: the closed form would be wrong
    update = term.operands[k].owner
    if not isinstance(update, Op) or update.name not in ("addi", "subi") or update.operands[0] is not arg:
        return None
    inside = set(op.walk())
    other = update.operands[1]
    if (isinstance(other.owner, Op) and other.owner in inside) or other.owner is body:
        return None  # the increment changes inside the loop
    c = state.env.get(other)
    if not isinstance(c, IntTile) or c.shape:
        return None
    n = var if op.name == "loop" else (var - first) / step
    delta = n * c.term
    # n counts iterations: never negative
    change = mul(NON_NEGATIVE, c.bounds)
    if update.name == "addi":
        return IntTile(init.term + delta, bounds=add(init.bounds, change))
    return IntTile(init.term - delta, bounds=sub(init.bounds, change))


@symbolic("loop")
def loop_(state, op: Op, *inits: SymValue):
    body = op.regions[0].block
    var = smt.fresh_int("loop")
    if single_trip(op):
        # every iteration ends in `break`: one iteration, entered with the initial values (how
        # cuTile lowers an early `return` inside an inlined helper)
        # (its bounds say so too: a concrete case lists its one iteration, as a for's)
        loop = LoopVar(op, var, var == 0, True, bounds=(smt.IntVal(0), smt.IntVal(1), smt.IntVal(1)))
        with state.in_region(var == 0, loop):
            for arg, init in zip(body.args, inits):
                state.env[arg] = init
            _run_body(state, body)  # its breaks are its own, not an enclosing loop's
        return tuple(state.havoc(r.type, "loop") for r in op.results)
    outer, reached = state.context_args(), state.live()
    zero, one = smt.IntVal(0), smt.IntVal(1)
    # a loop that can break runs up to the iteration where it stops (a break, or a return that ends
    # the block), no further; a block whose loop never stops would not finish: its iterations are
    # not modelled
    exit_ = smt.fresh_function("exit", len(outer)) if loop_exits(body.ops, "break") else None
    loop = LoopVar(op, var, var >= 0, True, var <= exit_(*outer) if exit_ is not None else None)
    with state.in_region(var >= 0, loop):
        slots = _bind_carried(state, op, body.args, inits, var, zero, one, True)
        exits = _run_body(state, body)
    _record_carried(state, outer, var, zero, one, None, slots, inits, exits)
    return _loop_results(state, op, outer, reached, var, exits, exit_)


def _loop_results(state, op: Op, outer, reached, var, exits, exit_) -> tuple[SymValue, ...]:
    """A ``loop``'s results: the values its break passes on, at the iteration ``exit(outer)`` where
    it stops (a break, or a return, after which nothing reads them), with the facts that it stops
    there and continued before (``Carried``)."""
    breaks = [(cond, values) for name, cond, values in exits if name == "break"]
    if exit_ is None or not breaks or any(name == "return-nested" for name, _, _ in exits):
        # no break ran, or a nested loop's return may stop this one at an iteration of its own: the
        # exit iteration stays any value, with no facts
        return tuple(state.havoc(r.type, "loop") for r in op.results)
    at = exit_(*outer)
    # where the loop stops: a break, or a return from its own body (the block ends there)
    broke = smt.Or(*[cond for name, cond, _ in exits if name in ("break", "return")])
    proceeds = smt.Or(*[cond for name, cond, _ in exits if name == "continue"])
    state.carried[exit_.name()] = Carried(exit_, tuple(outer), var, smt.IntVal(0), smt.IntVal(1), None,
                                          proceeds, broke=broke, reached=reached)
    results = []
    for k, r in enumerate(op.results):
        terms = [_term(values[k]) if k < len(values) else None for _, values in breaks]
        if any(t is None for t in terms):
            results.append(state.havoc(r.type, "loop"))
            continue
        term = smt.substitute(_first_of([(cond, t) for (cond, _), t in zip(breaks, terms)]), (var, at))
        results.append(BoolTile(term) if smt.is_bool(term) else IntTile(term))
    return tuple(results)


def single_trip(loop: Op) -> bool:
    """The body ends in ``break`` and no ``continue`` returns to its top: it runs at most once."""
    body = loop.regions[0].block
    return bool(body.ops) and body.ops[-1].name == "break" and not _continues(body.ops)


def _continues(ops) -> list[Op]:
    """The ``continue`` ops of the loop whose body holds ``ops``: in nested ifs, not nested loops."""
    return loop_exits(ops, "continue")


def _merge(state, cond: smt.BoolExpr, result, a: SymValue, b: SymValue) -> SymValue:
    if (branch := decided(cond, a, b)) is not None:
        return branch
    if isinstance(a, IntTile) and isinstance(b, IntTile):
        return IntTile(smt.If(cond, a.term, b.term), a.shape, bounds=join(a.bounds, b.bounds))
    if isinstance(a, BoolTile) and isinstance(b, BoolTile):
        return BoolTile(smt.If(cond, a.term, b.term), a.shape)
    if isinstance(a, Pointer) and isinstance(b, Pointer) and a.array == b.array:
        coords = None
        if a.coords is not None and b.coords is not None and len(a.coords) == len(b.coords):
            coords = tuple(smt.If(cond, x, y) for x, y in zip(a.coords, b.coords))
        return Pointer(a.array, coords, smt.If(cond, a.linear, b.linear), a.shape)
    if isinstance(a, (Pointer, Pointers)) and isinstance(b, (Pointer, Pointers)):
        return choose(cond, a, b, a.shape)  # into different arrays: a branch choosing the array
    return state.havoc(result.type, "if")


@symbolic("if")
def if_(state, op: Op, cond: SymValue):
    c = cond.term if isinstance(cond, BoolTile) else smt.fresh_bool("cond")
    with state.in_region(c):
        then_values = state.run_block(op.regions[0].block)
        then_exits = state.block_exited
    with state.in_region(smt.Not(c)):
        else_values = state.run_block(op.regions[1].block)
        else_exits = state.block_exited
    state.block_exited = False
    # a branch that left early yields nothing: the results come from the other one
    if then_exits != else_exits:
        values = else_values if then_exits else then_values
        if len(values) == len(op.results):
            return values
    if then_exits or len(then_values) != len(op.results) or len(else_values) != len(op.results):
        return tuple(state.havoc(r.type, "if") for r in op.results)
    return tuple(_merge(state, c, r, a, b) for r, a, b in zip(op.results, then_values, else_values))


# the longest dimension an integer reduction or scan is unrolled along (terms grow with it)
MAX_FOLD = 64


@symbolic("reduce", "scan")
def reduction(state, op: Op, *operands: SymValue):
    # An integer add/max/min reduction or scan of one tile along a dimension of concrete length (at
    # most MAX_FOLD) is exact: a sum (or max/min chain) of the tile at each position along it
    # (``ct.sum`` of a tile of offsets, ``ct.cumsum`` of group sizes). Any other result is an
    # unknown (custom or float combiners rarely matter for addresses).
    src = shape_of(op.operands[0])
    dim = op.attrs.get("dim")
    if len(operands) != 1 or not isinstance(dim, int) or not 0 <= dim < len(src):
        return tuple(state.havoc(r.type, op.name) for r in op.results)
    if op.name == "reduce" and src[dim] == 1 and isinstance(operands[0], (IntTile, BoolTile)) \
            and _neutral_combiner(op):  # one element reduces to itself
        return (reshaped(operands[0], src, shape_of(op.results[0])),)
    combiner = _combiner(op)
    if isinstance(operands[0], IntTile) and combiner is not None and src[dim] <= MAX_FOLD:
        folded = _fold(operands[0], src, dim, combiner, op.name == "scan", bool(op.attrs.get("reverse")))
        if combiner.name == "addi":
            state.may_overflow(op, folded.term)
        return (reshaped(folded, folded.shape, shape_of(op.results[0])),)
    return tuple(state.havoc(r.type, op.name) for r in op.results)


def _combiner(op: Op) -> Op | None:
    """The body's op when it is ``yield(f(a, b))`` for a signed integer add, max or min."""
    if not _neutral_combiner(op):
        return None
    inner = op.regions[0].block.ops[0]
    if inner.name not in ("addi", "maxi", "mini") or inner.attrs.get("signedness") == "unsigned":
        return None
    return inner


def _fold(x: IntTile, src: tuple[int, ...], dim: int, combiner: Op, scan: bool, reverse: bool) -> IntTile:
    """``x`` folded along ``dim`` with ``combiner``: the whole dimension (reduce, whose lanes after
    ``dim`` move down one), or up to each lane (scan, from the end when ``reverse``)."""
    lane = LANES[dim]
    if scan:
        at = [smt.substitute(x.term, (lane, smt.IntVal(k))) for k in range(src[dim])]
    else:
        moved = [(LANES[j], LANES[j - 1]) for j in range(dim + 1, len(src))]
        at = [smt.substitute(x.term, (lane, smt.IntVal(k)), *moved) for k in range(src[dim])]
    order = list(range(src[dim]))[::-1] if reverse else list(range(src[dim]))
    acc = at[order[0]]
    for k in order[1:]:
        term = at[k]
        if combiner.name == "addi":
            step = acc + term
        else:
            step = smt.If(term > acc if combiner.name == "maxi" else term < acc, term, acc)
        # a scan takes position k only for the lanes at or past it (before it, when reversed)
        acc = smt.If(lane >= k if not reverse else lane <= k, step, acc) if scan else step
    shape = src if scan else src[:dim] + src[dim + 1:]
    return IntTile(acc, shape)


_NEUTRAL = {"addi", "muli", "maxi", "mini", "andi", "ori", "xori"}  # identity op x == x for their identities


def _neutral_combiner(op: Op) -> bool:
    """The body is ``yield(f(a, b))`` for a standard integer combiner, whose identity is neutral (a
    custom combiner's "identity" need not be, so one element would not reduce to itself)."""
    block = op.regions[0].block
    return (len(block.ops) == 2 and block.ops[1].name == "yield" and block.ops[0].name in _NEUTRAL
            and set(block.ops[0].operands) == set(block.args[:2]))
