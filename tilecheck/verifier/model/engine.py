"""Symbolic execution of a Tile IR entry function into access footprints.

The function is walked once with block ids, loop variables and lanes as free variables, so
one run describes every block of every grid. Each memory op yields an ``Access``; ops without
semantics for addresses give opaque (havoc) values; an op the model does not know makes the
result ``unsupported`` (the verifier then answers unknown, never verified).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tilecheck.errors import TilecheckError
from tilecheck.ir import Block, Function, Module, Op, TileIRError, Value
from tilecheck.ir import types as T
from tilecheck.ir.opdefs import Effect
from tilecheck.ir.summary import lane_accesses, written_arguments
from tilecheck.verifier.model.bounds import NON_NEGATIVE
from tilecheck.verifier.model.carried import Carried
from tilecheck.verifier.model.footprints import BLOCK_IDS, Access
from tilecheck.verifier.model.registry import RULES
from tilecheck.verifier.model.values import (
    GRID,
    LANES,
    MAX_RANK,
    BoolTile,
    Context,
    IntTile,
    LoopVar,
    Opaque,
    Pointer,
    StrideForm,
    SymValue,
    in_range,
    type_range,
)
from tilecheck.verifier.solver import smt

# GRID (the grid-size symbols) and in_range live in ``values``, where the op rules, which this module
# imports to register them, take them from; they are re-exported here for the verifier's other modules
__all__ = ["GRID", "ArrayInfo", "Footprints", "State", "Unsupported", "data_shape", "execute", "in_range"]


@dataclass(frozen=True)
class ArrayInfo:
    """An array argument: its name, rank, element type and its shape/stride symbols."""

    index: int
    name: str
    rank: int
    element: T.Type | None
    shape: tuple[smt.IntExpr, ...]
    strides: tuple[smt.IntExpr, ...]
    shape_args: tuple[int, ...]
    stride_args: tuple[int, ...]


@dataclass(frozen=True)
class Unsupported:
    op: Op
    reason: str


@dataclass
class Footprints:
    """What symbolic execution found."""

    function: Function
    arrays: dict[int, ArrayInfo]
    accesses: list[Access]
    facts: list[smt.BoolExpr]  # constraints every execution satisfies (assume ops on arguments)
    scalars: dict[int, smt.IntExpr]  # integer scalar arguments
    unsupported: list[Unsupported]
    read_only: set[int]
    memory: dict[int, smt.FuncDecl]  # contents of read-only arrays, by coordinates
    # entry-arg index -> the Python parameter's name, for scalars of kernels from cuTile Python
    scalar_names: dict[int, str] = field(default_factory=dict)
    fact_ops: list[Op | None] = field(default_factory=list)  # the assume op behind each fact (None: a modelling fact)
    # integer results that may leave their type's range: (op, term, lo, hi, condition under which it runs)
    overflows: list[tuple[Op, smt.IntExpr, int, int, smt.BoolExpr]] = field(default_factory=list)
    # loop-carried scalars without a closed form, by function name: their defining facts
    carried: dict[str, Carried] = field(default_factory=dict)
    # the loops around each of ``overflows`` (outermost first): what a concrete case enumerates
    overflow_loops: list[tuple[LoopVar, ...]] = field(default_factory=list)
    # some integer term holds bit-vector arithmetic (exact bitwise and/or/xor, variable shifts)
    bitwise: bool = False

    def scalar_name(self, index: int) -> str:
        """What witnesses call a scalar argument: its parameter name, else ``arg<index>``."""
        return self.scalar_names.get(index, f"arg{index}")


@dataclass
class State:
    module: Module
    function: Function
    arrays: dict[int, ArrayInfo]
    read_only: set[int]
    env: dict[Value, SymValue] = field(default_factory=dict)
    ctx: Context = field(default_factory=lambda: Context(smt.BoolVal(True)))
    accesses: list[Access] = field(default_factory=list)
    facts: list[smt.BoolExpr] = field(default_factory=list)
    fact_ops: list[Op | None] = field(default_factory=list)
    overflows: list[tuple[Op, smt.IntExpr, int, int, smt.BoolExpr]] = field(default_factory=list)
    overflow_loops: list[tuple[LoopVar, ...]] = field(default_factory=list)
    unsupported: list[Unsupported] = field(default_factory=list)
    memory: dict[int, smt.FuncDecl] = field(default_factory=dict)
    scalars: dict[int, smt.IntExpr] = field(default_factory=dict)
    # Paths that left early: through a `return` (the rest of the kernel does not run on them), or a
    # `break`/`continue` (the rest of the current iteration does not). Ops after such an exit run
    # only where no exit was taken: an early `return` in an `if` does not pair with what follows.
    bitwise: bool = False  # a term with bit-vector arithmetic was made (``Footprints.bitwise``)
    returned: smt.BoolExpr = field(default_factory=lambda: smt.BoolVal(False))
    skipped: smt.BoolExpr = field(default_factory=lambda: smt.BoolVal(False))
    block_exited: bool = False  # the last block run ended in return/break/continue
    # per enclosing loop, innermost last: each break/continue taken (name, condition, values), and
    # each return inside it (which stops it as well)
    exits: list[list[tuple[str, smt.BoolExpr, tuple[SymValue, ...]]]] = field(default_factory=list)
    carried: dict[str, Carried] = field(default_factory=dict)

    # ---- helpers for rules -------------------------------------------------------------------
    def context_args(self) -> tuple[smt.IntExpr, ...]:
        return (*BLOCK_IDS, *(lv.var for lv in self.ctx.loops))

    def havoc(self, type_: T.Type, name: str = "v") -> SymValue:
        """An unconstrained value of ``type_``, a function of the block, iteration and lane."""
        if not isinstance(type_, T.TileType):
            return Opaque()
        shape = type_.shape
        element = type_.element
        args = (*self.context_args(), *LANES[:len(shape)])
        if element == T.I1:
            return BoolTile(smt.fresh_function(name, len(args), smt.BoolSort())(*args), shape)
        if isinstance(element, T.ScalarType) and element.is_integer:
            return IntTile(in_range(smt.fresh_function(name, len(args))(*args), element), shape,
                           bounds=type_range(element))
        return Opaque(shape)

    def live(self) -> smt.BoolExpr:
        """The condition under which the op being executed runs: the path, minus early exits."""
        exits = [e for e in (self.returned, self.skipped) if not smt.is_false(e)]
        return smt.And(self.ctx.path, *(smt.Not(e) for e in exits)) if exits else self.ctx.path

    def limits(self) -> list[smt.BoolExpr]:
        """The enclosing loops' iteration limits (up to a ``loop``'s exit iteration)."""
        return [lv.limit for lv in self.ctx.loops if lv.limit is not None]

    def fact(self, term: smt.BoolExpr, op: Op | None = None) -> None:
        """Record a constraint every execution satisfies (from ``assume``). Facts about values
        that vary by loop iteration or lane are dropped (sound: fewer facts, more behaviours)."""
        names = smt.free_constants(term)
        if any(n.startswith(("lane", "loop", "iter", "load", "v!", "old")) for n in names):
            return
        live = self.live()
        if not (smt.is_true(live) or not self.ctx.loops):
            return
        self.facts.append(term if smt.is_true(live) else smt.Implies(live, term))
        self.fact_ops.append(op)

    def may_overflow(self, op: Op, term: smt.IntExpr) -> None:
        """Note an integer result the model computes without wrap-around: at a concrete case the
        checker asks whether it leaves its type's range (Tile IR integers wrap)."""
        t = op.results[0].type
        element = t.element if isinstance(t, T.TileType) else t
        bits = getattr(element, "bitwidth", None)
        if not isinstance(element, T.ScalarType) or not element.is_integer or bits is None or bits < 8:
            return
        if smt.const_value(term) is not None:
            return
        shape = t.shape if isinstance(t, T.TileType) else ()
        lanes = [smt.And(LANES[d] >= 0, LANES[d] < n) for d, n in enumerate(shape)]
        self.overflows.append((op, term, -(1 << (bits - 1)), (1 << (bits - 1)) - 1,
                               smt.And(self.live(), *lanes, *self.limits())))
        self.overflow_loops.append(tuple(self.ctx.loops))

    def unsupported_op(self, op: Op, reason: str) -> None:
        self.unsupported.append(Unsupported(op, reason))

    def memory_of(self, array: int, rank: int) -> smt.FuncDecl:
        if array not in self.memory:
            self.memory[array] = smt.Function(f"mem_{self.arrays[array].name}",
                                              *([smt.IntSort()] * (rank + 1)))
        return self.memory[array]

    def record(self, op: Op, effect: Effect, array: int, coords: tuple[smt.IntExpr, ...] | None,
               linear: smt.IntExpr, active: smt.BoolExpr, in_bounds: smt.BoolExpr | None, checks_bounds: bool,
               rank: int, element: T.Type | None, tiles: tuple[Any, ...] | None = None) -> None:
        lane_ranges = []
        tile = data_shape(op)
        for d in range(rank):
            lane_ranges.append(smt.And(LANES[d] >= 0, LANES[d] < tile[d]))
        full_active = smt.And(self.live(), *lane_ranges, active, *self.limits())
        approximate = any(not lv.exact for lv in self.ctx.loops)
        if in_bounds is None:  # unknown coordinates: bounds cannot be stated (checked as unknown)
            in_bounds, coords = smt.BoolVal(True), None
        self.accesses.append(Access(
            op, len(self.accesses), effect, array, coords, linear, full_active, in_bounds, checks_bounds,
            rank, self.ctx.loops, element if isinstance(element, T.ScalarType) else None,
            op.attrs.get("mode", "cas" if op.name == "atomic_cas_tko" else None),
            str(op.attrs.get("memory_ordering_semantics", "weak")), approximate,
            tiles if coords is not None else None))

    # ---- execution ---------------------------------------------------------------------------
    def run_block(self, block: Block) -> tuple[SymValue, ...]:
        """Execute a block's ops; returns the terminator's operand values (``block_exited`` says
        whether it left early: return, break, continue)."""
        self.block_exited = False
        for op in block.ops:
            if op.opdef is not None and op.opdef.terminator:
                values = tuple(self.value(v) for v in op.operands)
                if op.name == "return":
                    for depth, loop_exits in enumerate(self.exits):  # a return stops every enclosing loop
                        nested = depth < len(self.exits) - 1  # from inside a loop nested in that one
                        loop_exits.append(("return-nested" if nested else "return", self.live(), ()))
                    self.returned = smt.Or(self.returned, self.live())
                elif op.name in ("break", "continue"):
                    if self.exits:
                        self.exits[-1].append((op.name, self.live(), values))
                    self.skipped = smt.Or(self.skipped, self.live())
                self.block_exited = op.name in ("return", "break", "continue")
                return values
            self.run_op(op)
        return ()

    def value(self, v: Value) -> SymValue:
        try:
            return self.env[v]
        except KeyError:
            raise TilecheckError(f"value used before definition: {v}") from None

    def run_op(self, op: Op) -> None:
        rule = RULES.get(op.name)
        if op.opdef is None:  # (a frontend that keeps an op it cannot map says why)
            why = op.attrs.get("reason")
            self.unsupported_op(op, f"unknown op '{op.name}'" + (f" ({why})" if why else ""))
            results: tuple[SymValue, ...] = tuple(self.havoc(r.type) for r in op.results)
        elif rule is None:
            if op.opdef.effect is not Effect.NONE:
                self.unsupported_op(op, f"memory op '{op.name}' has no symbolic semantics")
            results = tuple(self.havoc(r.type) for r in op.results)
        elif op.tile_rank > MAX_RANK:  # e.g. Triton's tl.sort: a 512-element tile as a 2x2x...x2 hypercube
            self.unsupported_op(op, f"a tile of rank {op.tile_rank} (the symbolic model has lanes for {MAX_RANK})")
            results = tuple(Opaque(r.type.shape) if isinstance(r.type, T.TileType) else Opaque() for r in op.results)
        else:
            operands = [self.value(v) for v in op.operands]
            try:
                results = rule(self, op, *operands)
            except (IndexError, KeyError, ValueError, TypeError, AttributeError) as exc:
                # the readers check syntax, not typing: an op whose operands do not fit it ends here
                raise TileIRError(f"cannot analyse {op.name} at {op.loc.outermost().short()}: {type(exc).__name__}: "
                                  f"{exc} (is the Tile IR well-typed? if it is, this is a tilecheck bug: rerun with "
                                  "--debug and report it)", op.loc) from exc
        if len(results) != len(op.results):
            raise TilecheckError(f"symbolic rule for {op.name} returned {len(results)} results, "
                                 f"expected {len(op.results)}", op.loc)
        for value, sym in zip(op.results, results):
            self.env[value] = sym

    def in_region(self, path: smt.BoolExpr, loop: LoopVar | None = None) -> _Scope:
        return _Scope(self, path, loop)


class _Scope:
    def __init__(self, state: State, path: smt.BoolExpr, loop: LoopVar | None) -> None:
        self.state, self.path, self.loop = state, path, loop

    def __enter__(self) -> State:
        self.saved, self.saved_skipped = self.state.ctx, self.state.skipped
        loops = self.saved.loops + ((self.loop,) if self.loop else ())
        outer = self.saved.path
        if self.loop:  # break/continue skip the rest of one iteration of this loop, no more: an
            # enclosing loop's iteration skipped before this loop began stays skipped in its body
            if not smt.is_false(self.saved_skipped):
                outer = smt.And(outer, smt.Not(self.saved_skipped))
            self.state.skipped = smt.BoolVal(False)
        self.state.ctx = Context(smt.And(outer, self.path), loops)
        return self.state

    def __exit__(self, *exc: object) -> None:
        self.state.ctx = self.saved
        if self.loop:
            self.state.skipped = self.saved_skipped


def data_shape(op: Op) -> tuple[int, ...]:
    """The shape of the data tile a memory op moves (its lanes)."""
    for v in (*op.results, op.operand("tile"), op.operand("value"), op.operand("source"),
              op.operand("destination"), op.operand("pointers")):
        if v is not None and isinstance(v.type, T.TileType) and not isinstance(v.type.element, T.TokenType):
            return v.type.shape
    return ()


# ---- entry ----------------------------------------------------------------------------------
def execute(module: Module, function: Function | None = None) -> Footprints:
    """Symbolically execute ``function`` (default: the module's entry)."""
    from tilecheck.verifier.model import ops as _ops  # noqa: F401  (registers the rules)

    function = function or module.entry
    arrays = _find_arrays(module, function)
    # a write of untraceable target is itself unsupported (the verdict is then unknown)
    state = State(module, function, arrays, read_only=set(arrays) - written_arguments(function))
    _bind_arguments(state)
    state.run_block(function.body)
    _guard_by_lanes(state)
    scalar_names = {p.first_arg: p.name for p in module.params if p.kind == "scalar"} \
        if function is module.entry else {}
    return Footprints(function, arrays, state.accesses, state.facts, state.scalars, state.unsupported,
                      state.read_only, state.memory, scalar_names, state.fact_ops, state.overflows, state.carried,
                      state.overflow_loops, state.bitwise)


def _guard_by_lanes(state: State) -> None:
    """An integer result that reaches memory only as the address of pointer ops, lane for lane
    (``lane_accesses``), decides nothing in a lane where none of them is active: its overflow
    obligation holds only where one is (their ``active``: mask, path and loop domain, over the same
    lanes). Every record of each op is taken, so the guard can only be wider than the truth."""
    targets = lane_accesses(state.function)
    if not targets:
        return
    records: dict[Op, list[Access]] = {}
    for access in state.accesses:
        records.setdefault(access.op, []).append(access)
    for n, (op, term, lo, hi, live) in enumerate(state.overflows):
        uses = targets.get(op)
        if uses is None or any(u not in records for u in uses):
            continue  # an address op the model did not record (unsupported): no guard
        loops = state.overflow_loops[n]
        actives = [a.active for u in uses for a in records[u]]
        if any(a.loops != loops for u in uses for a in records[u]):
            continue
        state.overflows[n] = (op, term, lo, hi, smt.And(live, smt.Or(*actives)))


def _trace_arg(value: Value, function: Function) -> int | None:
    """The entry argument a value passes through unchanged (via assume / exti / trunci)."""
    for _ in range(16):
        if value.owner is function.body:
            return value.index
        op = value.owner
        if not isinstance(op, Op) or op.name not in ("assume", "exti", "trunci", "reshape", "broadcast",
                                                       "ptr_to_ptr"):
            return None
        value = op.operands[0]
    return None


def _find_arrays(module: Module, function: Function) -> dict[int, ArrayInfo]:
    """Array arguments, from the cuTile parameter map or else from ``make_tensor_view`` ops."""
    names = {p.first_arg: p.name for p in module.params if p.kind == "array"}
    arrays: dict[int, ArrayInfo] = {}
    for p in module.params:
        if p.kind != "array" or function is not module.entry:
            continue
        base, rank = p.first_arg, p.ndim
        ptr_t = function.args[base].type
        element = ptr_t.element.pointee if isinstance(ptr_t, T.TileType) and isinstance(
            ptr_t.element, T.PointerType) else None
        arrays[base] = ArrayInfo(
            base, p.name, rank, element,
            tuple(smt.Int(f"{p.name}.shape{d}") for d in range(rank)),
            tuple(smt.Int(f"{p.name}.stride{d}") for d in range(rank)),
            tuple(base + 1 + d for d in range(rank)), tuple(base + 1 + rank + d for d in range(rank)))
    for op in function.walk():
        if op.name != "make_tensor_view":
            continue
        base = _trace_arg(op.operand("base"), function)
        if base is None or base in arrays:
            continue
        view_t = op.result.type
        rank = view_t.rank if isinstance(view_t, T.TensorViewType) else 0
        name = names.get(base, f"arg{base}")  # matches tilecheck.ir.summary.array_name
        dyn_shape = iter(op.operand_group("dynamicShape"))
        dyn_strides = iter(op.operand_group("dynamicStrides"))
        shape, strides, shape_args, stride_args = [], [], [], []
        for d in range(rank):
            static = view_t.shape[d]
            arg = None if static is not None else _trace_arg(next(dyn_shape), function)
            shape.append(smt.IntVal(static) if static is not None else smt.Int(f"{name}.shape{d}"))
            shape_args.append(-1 if arg is None else arg)
            static = view_t.strides[d]
            arg = None if static is not None else _trace_arg(next(dyn_strides), function)
            strides.append(smt.IntVal(static) if static is not None else smt.Int(f"{name}.stride{d}"))
            stride_args.append(-1 if arg is None else arg)
        element = view_t.element if isinstance(view_t, T.TensorViewType) else None
        arrays[base] = ArrayInfo(base, name, rank, element, tuple(shape), tuple(strides),
                                 tuple(shape_args), tuple(stride_args))
    return arrays


def _bind_arguments(state: State) -> None:
    roles: dict[int, tuple[str, int, int]] = {}
    for info in state.arrays.values():
        for d, arg in enumerate(info.shape_args):
            if arg >= 0:
                roles[arg] = ("shape", info.index, d)
        for d, arg in enumerate(info.stride_args):
            if arg >= 0:
                roles[arg] = ("stride", info.index, d)
    for i, arg in enumerate(state.function.args):
        t = arg.type
        element = t.element if isinstance(t, T.TileType) else None
        if i in state.arrays:
            info = state.arrays[i]
            zero = tuple(smt.IntVal(0) for _ in range(info.rank))
            state.env[arg] = Pointer(i, zero, smt.IntVal(0))
        elif isinstance(element, T.PointerType):
            state.env[arg] = Pointer(i, None, smt.IntVal(0))
            state.arrays[i] = ArrayInfo(i, f"arg{i}", 0, element.pointee, (), (), (), ())
        elif i in roles:
            role, array, d = roles[i]
            info = state.arrays[array]
            if role == "shape":
                state.env[arg] = IntTile(info.shape[d], bounds=NON_NEGATIVE)
            else:
                term = info.strides[d]
                state.env[arg] = IntTile(term, (), StrideForm((((array, d), smt.IntVal(1)),), smt.IntVal(0)))
        elif isinstance(element, T.ScalarType) and element.is_integer and element != T.I1:
            var = smt.Int(f"arg{i}")
            state.scalars[i] = var
            state.env[arg] = IntTile(var)
        else:
            state.env[arg] = state.havoc(t, f"arg{i}")

