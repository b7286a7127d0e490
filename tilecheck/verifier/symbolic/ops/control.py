"""Control flow: ``for`` and ``loop`` bind a variable per iteration; ``if`` splits the path."""
from __future__ import annotations

from tilecheck.ir import Op
from tilecheck.verifier import smt
from tilecheck.verifier.symbolic.ops.shape import reshaped, shape_of
from tilecheck.verifier.symbolic.registry import symbolic
from tilecheck.verifier.symbolic.values import BoolTile, IntTile, LoopVar, Pointer, SymValue


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
    loop = LoopVar(op, var, domain, exact)
    with state.in_region(domain, loop):
        state.env[body.args[0]] = IntTile(var)
        for k, arg in enumerate(body.args[1:]):
            value = _induction(state, op, k, var, lb, step, inits[k])
            # loop-carried: a closed form for `x += c` with c loop-invariant, else any value
            state.env[arg] = value if value is not None else state.havoc(arg.type, "iter")
        state.run_block(body)
    return tuple(state.havoc(r.type, "for") for r in op.results)


def _induction(state, op: Op, k: int, var, lb: SymValue, step: SymValue, init: SymValue) -> IntTile | None:
    """``init + n * c`` for carried slot k when the body yields ``arg_k + c`` (or ``- c``) with c defined
    outside the loop, where n = (iv - lb) / step counts the iterations before this one."""
    body = op.regions[0].block
    term = body.ops[-1] if body.ops else None
    if term is None or term.name != "continue" or not isinstance(init, IntTile) or init.shape:
        return None
    if not isinstance(lb, IntTile) or not isinstance(step, IntTile):
        return None
    arg = body.args[k + 1]
    if k >= len(term.operands) or any(len(c.operands) <= k or c.operands[k] is not term.operands[k]
                                      for c in _continues(body.ops)):
        return None  # an early `continue` passes on another value: the closed form would be wrong
    update = term.operands[k].owner if k < len(term.operands) else None
    if not isinstance(update, Op) or update.name not in ("addi", "subi") or update.operands[0] is not arg:
        return None
    inside = set(op.walk())
    other = update.operands[1]
    if (isinstance(other.owner, Op) and other.owner in inside) or other.owner is body:
        return None  # the increment changes inside the loop
    c = state.env.get(other)
    if not isinstance(c, IntTile) or c.shape:
        return None
    n = (var - lb.term) / step.term
    delta = n * c.term
    return IntTile(init.term + delta if update.name == "addi" else init.term - delta)


@symbolic("loop")
def loop_(state, op: Op, *inits: SymValue):
    body = op.regions[0].block
    var = smt.fresh_int("loop")
    if single_trip(op):
        # every iteration ends in `break`: one iteration, entered with the initial values (how
        # cuTile lowers an early `return` inside an inlined helper)
        loop = LoopVar(op, var, var == 0, True)
        with state.in_region(var == 0, loop):
            for arg, init in zip(body.args, inits):
                state.env[arg] = init
            state.run_block(body)
        return tuple(state.havoc(r.type, "loop") for r in op.results)
    loop = LoopVar(op, var, var >= 0, True)
    with state.in_region(var >= 0, loop):
        for arg in body.args:
            state.env[arg] = state.havoc(arg.type, "iter")
        state.run_block(body)
    return tuple(state.havoc(r.type, "loop") for r in op.results)


def single_trip(loop: Op) -> bool:
    """The body ends in ``break`` and no ``continue`` returns to its top: it runs at most once."""
    body = loop.regions[0].block
    return bool(body.ops) and body.ops[-1].name == "break" and not _continues(body.ops)


def _continues(ops) -> list[Op]:
    """The ``continue`` ops of the loop whose body holds ``ops``: in nested ifs, not nested loops."""
    out = []
    for inner in ops:
        if inner.name == "continue":
            out.append(inner)
        elif inner.name not in ("for", "loop"):
            for region in inner.regions:
                out += _continues(region.block.ops)
    return out


def _merge(state, cond: smt.BoolExpr, result, a: SymValue, b: SymValue) -> SymValue:
    if isinstance(a, IntTile) and isinstance(b, IntTile):
        return IntTile(smt.If(cond, a.term, b.term), a.shape)
    if isinstance(a, BoolTile) and isinstance(b, BoolTile):
        return BoolTile(smt.If(cond, a.term, b.term), a.shape)
    if isinstance(a, Pointer) and isinstance(b, Pointer) and a.array == b.array:
        coords = None
        if a.coords is not None and b.coords is not None and len(a.coords) == len(b.coords):
            coords = tuple(smt.If(cond, x, y) for x, y in zip(a.coords, b.coords))
        return Pointer(a.array, coords, smt.If(cond, a.linear, b.linear), a.shape)
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


@symbolic("reduce", "scan")
def reduction(state, op: Op, *operands: SymValue):
    # A reduction along a dimension of size 1 is that one element (e.g. `ct.sum` of a 1-element
    # tile loaded as shape (1,)): exact, so a branch on it narrows paths. Any other result is an
    # unknown (the combiner bodies are not modelled; they rarely matter for addresses).
    src = shape_of(op.operands[0])
    dim = op.attrs.get("dim")
    if op.name == "reduce" and len(operands) == 1 and isinstance(dim, int) and 0 <= dim < len(src) \
            and src[dim] == 1 and isinstance(operands[0], (IntTile, BoolTile)) and _neutral_combiner(op):
        return (reshaped(operands[0], src, shape_of(op.results[0])),)
    return tuple(state.havoc(r.type, op.name) for r in op.results)


_NEUTRAL = {"addi", "muli", "maxi", "mini", "andi", "ori", "xori"}  # identity op x == x for their identities


def _neutral_combiner(op: Op) -> bool:
    """The body is ``yield(f(a, b))`` for a standard integer combiner, whose identity is neutral (a
    custom combiner's "identity" need not be, so one element would not reduce to itself)."""
    block = op.regions[0].block
    return (len(block.ops) == 2 and block.ops[1].name == "yield" and block.ops[0].name in _NEUTRAL
            and set(block.ops[0].operands) == set(block.args[:2]))
