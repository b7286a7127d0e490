"""Where memory ops point: the kernel array behind a view or pointer tile, and a per-kernel summary."""
from __future__ import annotations

import functools
import weakref
from dataclasses import dataclass
from typing import Any

from tilecheck.ir.core import Function, Module, Op, Value
from tilecheck.ir.loc import Loc
from tilecheck.ir.opdefs import Effect
from tilecheck.ir.types import TileType, TokenType

# ops whose first operand is the view/pointer they derive from
_DERIVED = {"make_partition_view": "tensor_view", "make_strided_view": "tensor_view",
            "make_gather_scatter_view": "tensor_view", "make_tensor_view": "base", "offset": "ptr",
            "broadcast": "source", "reshape": "source", "ptr_to_ptr": "source", "permute": "source",
            "assume": "value"}
# the operand of each memory op that says where it reads or writes
_ADDRESS = {"load_view_tko": "view", "store_view_tko": "view", "atomic_red_view_tko": "view",
            "load_ptr_tko": "source", "store_ptr_tko": "destination", "atomic_rmw_tko": "pointers",
            "atomic_cas_tko": "pointers"}


@dataclass(frozen=True)
class MemoryOp:
    op: Op
    effect: Effect
    array: str  # kernel parameter name, or "argN" (entry argument N) when the module has no parameter map
    shape: tuple[int, ...]
    loc: Loc


def base_argument(value: Value, function: Function) -> int | None:
    """Index of the entry argument a view/pointer value is derived from (None if not traceable)."""
    root = _root(value, function)
    return root if isinstance(root, int) else None


def address_root(op: Op, function: Function) -> int | tuple[str, int | None] | None:
    """Where memory op ``op`` points: the index of the entry argument its view or pointer derives
    from; ``("list", i)`` for an array of the list argument whose table is entry argument ``i`` (a
    pointer read from that table: the arrays of different lists are distinct, as are they and the
    other arguments; ``("list", None)``: a list not traced to its table); None when it cannot be
    traced."""
    return _root(op.operand(_ADDRESS.get(op.name, "")), function)


def _root(value: Value | None, function: Function) -> int | tuple[str, int | None] | None:
    """The entry argument, or the list (``_list_of``), a view/pointer value derives from."""
    for _ in range(64):
        if value is None:
            return None
        owner = value.owner
        if owner is function.body:
            return value.index
        if not isinstance(owner, Op):
            return None
        if owner.name == "int_to_ptr":
            return _list_of(owner, function)
        if owner.name not in _DERIVED:
            return None
        value = owner.operand(_DERIVED[owner.name])
    return None


def may_share(a: Any, b: Any) -> bool:
    """Whether two ``address_root``s may be the same memory: an untraced one may be any, an array
    of a list is none of the entry arguments (cuTile refuses arguments that share memory, and the
    interpreter holds each array apart), and lists are distinct from one another."""
    if a is None or b is None:
        return True
    if isinstance(a, tuple) != isinstance(b, tuple):
        return False
    if isinstance(a, tuple):
        return a[1] is None or b[1] is None or a == b
    return a == b


# ops that hand a table word on unchanged in value (to ``int_to_ptr``)
_WORD = ("reshape", "extract", "trunci", "exti", "bitcast", "assume", "broadcast")


def _list_of(int_to_ptr: Op, function: Function) -> tuple[str, int | None]:
    """The list an ``int_to_ptr`` pointer belongs to: the entry argument of the table its word was
    loaded from."""
    value = int_to_ptr.operands[0]
    for _ in range(16):
        owner = value.owner
        if not isinstance(owner, Op) or not owner.operands:
            break
        if owner.name in ("load_view_tko", "load_ptr_tko"):
            root = address_root(owner, function)
            return ("list", root if isinstance(root, int) else None)
        if owner.name not in _WORD:
            break
        value = owner.operands[0]
    return ("list", None)


def written_arguments(function: Function) -> frozenset[int | None]:
    """Entry arguments that some op writes (stores, atomics). ``None`` in the set means a write
    whose target cannot be traced to an argument, or an op of unknown effect."""
    return _arguments_with(function, (Effect.WRITE, Effect.ATOMIC))


def read_arguments(function: Function) -> frozenset[int | None]:
    """Entry arguments that some op reads (loads, atomics: an atomic reads what it replaces).
    ``None`` in the set means a read whose source cannot be traced to an argument, or an op of
    unknown effect."""
    return _arguments_with(function, (Effect.READ, Effect.ATOMIC))


@functools.lru_cache(maxsize=128)
def _arguments_with(function: Function, effects: tuple[Effect, ...]) -> frozenset[int | None]:
    """Entry arguments that an op of one of ``effects`` addresses (None: an untraced address, or an
    op of unknown effect). Once per kernel: every confirmation run asks it again."""
    found: set[int | None] = set()
    for op in function.walk():
        opdef = op.opdef
        if opdef is None:
            found.add(None)
        elif opdef.effect in effects:
            address = op.operand(_ADDRESS.get(op.name, ""))
            found.add(base_argument(address, function) if address is not None else None)
    return frozenset(found)


def array_name(module: Module, function: Function, value: Value) -> str:
    index = base_argument(value, function)
    if index is None:
        return "?"
    for p in module.params:
        if p.kind == "array" and p.first_arg == index:
            return str(p.name)
    return f"arg{index}"


def memory_ops(module: Module, function: Function | None = None) -> list[MemoryOp]:
    """Every op that touches global memory, in program order, with the array it touches."""
    function = function or module.entry
    out = []
    for op in function.walk():
        opdef = op.opdef
        if opdef is None or opdef.effect is Effect.NONE:
            continue
        address = op.operand(_ADDRESS.get(op.name, ""))
        name = array_name(module, function, address) if address is not None else "?"
        data = op.results[0] if op.results and isinstance(op.results[0].type, TileType) else (
            op.operand("tile") or op.operand("value"))
        shape = data.type.shape if data is not None and isinstance(data.type, TileType) else ()
        out.append(MemoryOp(op, opdef.effect, name, shape, op.loc))
    return out


def summarize(module: Module) -> str:
    """A few lines per kernel: op counts, control flow, and every memory op with its source line."""
    lines = []
    for f in module.entries:
        ops = list(f.walk())
        unknown = sorted({op.name for op in ops if op.opdef is None})
        counts = {name: sum(1 for op in ops if op.name == name) for name in ("for", "loop", "if")}
        flow = ", ".join(f"{n} {k}" for k, n in counts.items() if n)
        tokens = sum(1 for op in ops if op.name in ("make_token", "join_tokens"))
        lines.append(f"{module.name}: {len(ops)} ops, {len(f.args)} entry args"
                     + (f", {flow}" if flow else "") + f", {tokens} token ops")
        if unknown:
            lines.append(f"  unknown ops (not modelled): {', '.join(unknown)}")
        for m in memory_ops(module, f):
            shape = "x".join(map(str, m.shape)) or "scalar"
            extra = ""
            if m.effect is Effect.ATOMIC:
                extra = f" {m.op.attrs.get('mode', 'cas')} {m.op.attrs.get('memory_ordering_semantics')}"
            where = m.loc.outermost()
            lines.append(f"  {m.effect.value:<6} {m.op.name:<15} {m.array:<10} {shape:<12}{extra:<16} "
                         f"{where.short('<no location>')}")
    return "\n".join(lines)


def decision_slice(function: Any) -> frozenset[Any]:
    """The ops whose results (transitively) decide what is accessed: view indices and pointer
    offsets (the address), the masks of memory ops, the conditions of ``if`` and the bounds and
    steps of ``for`` (which iterations, hence which accesses, run). An integer in this slice that
    wraps around changes the footprint, so the model's unbounded arithmetic must be proved not to
    wrap there (issue 49: ``if b * CHUNK < n`` wrapping to 0 let two blocks write one element).
    Once per function (every level and search tier asks it; the IR does not change)."""
    found = _DECISION_SLICES.get(function)
    if found is None:
        found = _DECISION_SLICES[function] = frozenset(_decision_slice(function))
    return found


_DECISION_SLICES: weakref.WeakKeyDictionary[Any, frozenset[Any]] = weakref.WeakKeyDictionary()


def _decision_slice(function: Any) -> set[Any]:
    work = []
    for op in function.walk():
        if op.name in ("load_view_tko", "store_view_tko", "atomic_red_view_tko"):
            work += list(op.operand_group("index"))
        elif op.name == "offset":
            work += list(op.operands)
        elif op.name == "make_tensor_view":  # a view's base, shape and strides (a slice's bounds)
            work += list(op.operands)
        elif op.name == "if":
            work += list(op.operand_group("condition"))
        elif op.name == "for":
            work += [*op.operand_group("lowerBound"), *op.operand_group("upperBound"), *op.operand_group("step")]
        work += list(op.operand_group("mask"))
    seen, ops = set(), set()
    while work:
        v = work.pop()
        if id(v) in seen or v.owner is None:
            continue
        seen.add(id(v))
        if hasattr(v.owner, "operands"):  # an op result
            ops.add(v.owner)
            work += list(v.owner.operands) + _results_from(v.owner, v.index)
            continue
        work += _flowing_into(function, v)
    return ops


# ops that compute lane i of their result from lane i of their operands (same shape in and out)
LANEWISE = frozenset({"addi", "subi", "muli", "divi", "remi", "shli", "shri", "andi", "ori", "xori", "maxi",
                       "mini", "negi", "absi", "mulhii", "exti", "trunci", "offset", "int_to_ptr",
                       "ptr_to_int", "ptr_to_ptr", "bitcast", "select"})


def lane_accesses(function: Any) -> dict[Any, frozenset[Any]]:
    """For each integer tile op whose result reaches memory only as the address of pointer ops, lane
    for lane (through same-shaped lanewise ops of its own block, never into a mask, a branch, a
    loop bound, a view, a stored value or another shape): those memory ops. Lane i of such a value
    decides nothing unless one of them is active at lane i, so a wrap-around there matters only
    where one is (cat's index arithmetic on an empty input leaves i32 in lanes every mask turns
    off). Ops missing from the map are used some other way. Once per function."""
    found = _LANE_ACCESSES.get(function)
    if found is None:
        found = _LANE_ACCESSES[function] = _lane_accesses(function)
    return found


_LANE_ACCESSES: weakref.WeakKeyDictionary[Any, dict[Any, frozenset[Any]]] = weakref.WeakKeyDictionary()


def _lane_accesses(function: Any) -> dict[Any, frozenset[Any]]:
    uses: dict[int, list[tuple[Any, int]]] = {}
    block_of: dict[int, Any] = {}

    def visit(block: Any) -> None:
        for op in block.ops:
            block_of[id(op)] = block
            for k, v in enumerate(op.operands):
                uses.setdefault(id(v), []).append((op, k))
            for region in op.regions:
                for inner in region.blocks:
                    visit(inner)

    visit(function.body)
    # users come after their value in program order (SSA; a use in another block gives up), so in
    # reverse order each op's users are decided before it: no recursion on long chains
    reach: dict[int, frozenset[Any] | None] = {}  # None: some use is not an address, lane for lane
    found = {}
    for op in reversed(list(function.walk())):
        if len(op.results) != 1 or not isinstance(op.results[0].type, TileType) or not op.results[0].type.shape \
                or isinstance(op.results[0].type.element, TokenType):
            continue
        value = op.results[0]
        out: set[Any] | None = set()
        for user, k in uses.get(id(value), ()):
            if block_of.get(id(user)) is not block_of.get(id(op)):
                out = None
            elif (address := _ADDRESS.get(user.name)) is not None and not user.name.endswith("view_tko"):
                if user.operand(address) is not value or sum(v is value for v in user.operands) != 1:
                    out = None  # also (or only) the mask, the stored value or the argument
                else:
                    out.add(user)
            elif user.name not in LANEWISE or user.name == "select" and k == 0 \
                    or reach.get(id(user)) is None or user.results[0].type.shape != value.type.shape:
                out = None  # (``reach`` holds only single-result tile ops)
            else:
                out |= reach[id(user)]
            if out is None:
                break
        reach[id(op)] = None if out is None else frozenset(out)
        if out:
            found[op] = reach[id(op)]
    return found


def exits(ops: list[Any], name: str) -> list[Any]:
    """The ``name`` ops (continue, break) of the loop whose body holds ``ops``: in nested ifs, not
    in nested loops (theirs)."""
    out = []
    for inner in ops:
        if inner.name == name:
            out.append(inner)
        elif inner.name not in ("for", "loop"):
            for region in inner.regions:
                out += exits(region.block.ops, name)
    return out


def _results_from(op: Any, k: int) -> list[Any]:
    """The values a region op's result ``k`` is made of, inside its regions: a ``for``'s last
    ``continue``, a ``loop``'s ``break``, an ``if``'s ``yield`` in either branch."""
    if op.name == "if":
        terminators = [t for region in op.regions for t in region.block.ops if t.name == "yield"]
    elif op.name in ("for", "loop") and op.regions:
        terminators = exits(op.regions[0].block.ops, "continue" if op.name == "for" else "break")
    else:
        return []
    return [t.operands[k] for t in terminators if k < len(t.operands)]


def _flowing_into(function: Any, arg: Any) -> list[Any]:
    """The values that flow into a block argument: a loop's induction variable from its bounds, a
    carried slot from its initial value and the continue operands of that slot."""
    for parent in function.walk():
        for region in parent.regions:
            if region.block is not arg.owner:
                continue
            if parent.name not in ("for", "loop"):
                return list(parent.operands)
            k = arg.index - (1 if parent.name == "for" else 0)
            if k < 0:  # a for's induction variable
                return [parent.operand(n) for n in ("lowerBound", "upperBound", "step") if parent.operand(n)]
            inits = parent.operand_group("initValues")
            out = [inits[k]] if k < len(inits) else []
            out += [t.operands[k] for t in exits(region.block.ops, "continue") if k < len(t.operands)]
            return out
    return []




# ---- the memory model's orders and scopes ------------------------------------------------------------
ACQUIRE_ORDERS = ("acquire", "acq_rel")
RELEASE_ORDERS = ("release", "acq_rel")
CROSS_BLOCK_SCOPES = ("device", "sys")  # a tile-block-scoped atomic orders nothing across blocks


# ---- values an op's results steer --------------------------------------------------------------------


def derived_values(function: Any, sources: list[Any]) -> set[int]:
    """Ids of the values computed from ``sources`` (transitively, through every op's operands to its
    results; a region's terminator carries them to the region op's results and to the arguments of
    its regions' blocks, e.g. a loop's carried values). Memory is not followed."""
    parents: dict[Any, Any] = {}
    for op in function.walk():
        for region in op.regions:
            for block in region.blocks:
                for inner in block.ops:
                    parents[inner] = op
    out = {id(v) for v in sources}
    changed = True
    while changed:
        changed = False
        for op in function.walk():
            if not any(id(v) in out for v in op.operands):
                continue
            targets = list(op.results)
            parent = parents.get(op)
            if op.opdef is not None and op.opdef.terminator and parent is not None:
                targets += list(parent.results)
                targets += [a for region in parent.regions for block in region.blocks for a in block.args]
            for value in targets:
                # tokens order memory ops; they carry no value (else every later op would depend)
                if id(value) not in out and not isinstance(value.type, TokenType):
                    out.add(id(value))
                    changed = True
    return out


@functools.lru_cache(maxsize=64)
def validated_loads(function: Any) -> frozenset[Any]:
    """The plain pointer loads whose value is only a guess of what a compare-and-swap on the same
    pointer will find: CUDA's retry loop (``old = *p; do { guess = old; old = atomicCAS(p, guess,
    f(guess)); } while (old != guess)``, a scatter-reduce by multiplication). A stale guess makes
    the CAS fail and the loop try again, so such a load racing with other blocks' atomics decides
    nothing: the models count it as strong (a relaxed read), never as a data race with an atomic
    (docs/semantics/synchronisation.md). The value, and everything computed from it, may reach only
    the CASes on that pointer (their compare and new values) and pure ops; a branch or a loop that depends on
    it may hold no memory op but those CASes and the load itself."""
    ops = list(function.walk())
    parents = {inner: op for op in ops for region in op.regions for block in region.blocks for inner in block.ops}
    swaps: dict[int, list[Any]] = {}
    for op in ops:
        if op.name == "atomic_cas_tko":
            swaps.setdefault(id(op.operand("pointers")), []).append(op)
    out = set()
    for load in ops:
        if load.name != "load_ptr_tko" or load.attrs.get("memory_ordering_semantics", "weak") != "weak" \
                or not load.results or id(load.operand("source")) not in swaps:
            continue
        cases = swaps[id(load.operand("source"))]
        derived = derived_values(function, [load.results[0]])
        allowed = {*cases, load}
        if all(_uses_only_in(op, derived, cases, allowed, parents) for op in ops):
            out.add(load)
    return frozenset(out)


def _uses_only_in(op: Any, derived: set[int], cases: list[Any], allowed: set[Any], parents: dict[Any, Any]) -> bool:
    """``op`` uses the values ``derived`` (a guess) at most as ``validated_loads`` allows."""
    if not any(id(v) in derived for v in op.operands):
        return True
    if op in cases:  # the compare and the new value, never where or whether it swaps
        return id(op.operand("pointers")) not in derived and (
            op.operand("mask") is None or id(op.operand("mask")) not in derived)
    if op.opdef is None or op.opdef.effect is not Effect.NONE:
        return False  # another memory op reads, writes or addresses with the guess
    if not op.regions:
        return True
    # a branch or a loop on the guess: only the retry's memory ops inside it, and in the loop it
    # leaves or continues early (how often that loop runs hangs on the guess)
    scopes = [op]
    if op.name == "if" and any(o.name in ("break", "continue") for region in op.regions for block in region.blocks
                               for o in block.ops):
        loop = parents.get(op)
        while loop is not None and loop.name not in ("loop", "for"):
            loop = parents.get(loop)
        scopes += [loop] if loop is not None else []
    return all(inner in allowed or inner.opdef is not None and inner.opdef.effect is Effect.NONE
               for scope in scopes for region in scope.regions for block in region.blocks
               for o in block.ops for inner in o.walk())


@functools.lru_cache(maxsize=64)
def steering_reads(function: Any) -> tuple[Any, ...]:
    """The atomics, and the loads with a memory order, whose returned value decides whether later
    work happens: a branch (a spin loop's exit, a ticket's test), or the mask of a memory access whose
    address does not depend on it (Triton's guarded access, ``tl.load(p, mask=old == 1)``: the mask
    is its branch). Their block may wait for, or depend on, what other blocks did first (the
    interpreter never runs such blocks one after the other to completion)."""
    out = []
    ops = list(function.walk())
    for op in ops:
        reads = op.name in ("atomic_rmw_tko", "atomic_cas_tko") or (
            op.name.startswith("load") and op.attrs.get("memory_ordering_semantics", "weak") != "weak")
        if not reads or not op.results:
            continue
        derived = derived_values(function, [op.results[0]])
        if any(o.name == "if" and id(o.operands[0]) in derived or _guards(o, derived) for o in ops if o.operands):
            out.append(op)
    return tuple(out)


def _guards(op: Any, derived: set[int]) -> bool:
    """The values ``derived`` decide whether ``op`` touches memory, not where: its mask is computed
    from them and its addresses are not (a bounds mask of an address computed from them is no guard:
    the access happens for most values)."""
    address = op.operand(_ADDRESS.get(op.name, ""))
    mask = op.operand("mask")
    return address is not None and mask is not None and id(mask) in derived and id(address) not in derived


def steering_acquires(function: Any) -> list[Any]:
    """The steering reads (``steering_reads``) that acquire at a scope spanning blocks. Only such
    an acquire is sure to have read the value it waits for, so only it orders what follows it in
    every execution."""
    return [op for op in steering_reads(function) if op.attrs.get("memory_ordering_semantics") in ACQUIRE_ORDERS
            and op.attrs.get("memory_scope") in CROSS_BLOCK_SCOPES]


_WRITES = {"store_view_tko": ("index", "tile"), "store_ptr_tko": ("destination", "value"),
           "atomic_rmw_tko": ("pointers", "arg"), "atomic_cas_tko": ("pointers", "val"),
           "atomic_red_view_tko": ("index", "tile")}


@functools.lru_cache(maxsize=64)
def steered_writes(function: Any) -> dict[Any, tuple[str, Any]]:
    """Atomics whose returned value steers what the kernel writes, each with how and the first
    write it steers: ``("address", op)`` or ``("value", op)`` when it flows into a write's address
    or stored value, ``("branch", op)`` when it decides a branch that writes. A write counts only
    when what it writes (address or value) also depends on which block runs it (its block id, or
    data read at addresses that depend on it): then the order in which blocks draw from the atomic
    decides the output (stream compaction, append buffers, an owner log). A ticket that picks which
    block does a block-independent job (the last block sums every partial), or a work queue whose
    items are processed the same way by any block, stays silent: any order gives the same bits.
    Once per kernel (cached; callers must not modify the result)."""
    atomics = [op for op in function.walk() if op.name in ("atomic_rmw_tko", "atomic_cas_tko") and op.results]
    if not atomics:
        return {}
    ids = [v for op in function.walk() if op.name == "get_tile_block_id" for v in op.results]
    by_block = derived_values(function, ids)
    out = {}
    for op in atomics:
        steered = derived_values(function, [op.results[0]])
        use = _first_steered(function, op, steered, by_block)
        if use is not None:
            out[op] = use
    return out


def _first_steered(function: Any, atomic: Any, steered: set[int], by_block: set[int]) -> tuple[str, Any] | None:
    for op in function.walk():
        if op.name == "if" and op.operands and id(op.operands[0]) in steered:
            inner = next((w for region in op.regions for block in region.blocks for top in block.ops
                          for w in top.walk() if w.name in _WRITES and _depends(w, by_block)), None)
            if inner is not None:
                return "branch", inner
        if op.name not in _WRITES or op is atomic or not _depends(op, by_block):
            continue
        address, value = (_operands(op, n) for n in _WRITES[op.name])
        if any(id(v) in steered for v in address):
            return "address", op
        if any(id(v) in steered for v in value):
            return "value", op
    return None


def _operands(op: Any, name: str) -> list[Any]:
    if name == "index":
        return list(op.operand_group("index"))
    value = op.operand(name)
    return [value] if value is not None else []


def _depends(op: Any, derived: set[int]) -> bool:
    """The write's address or value is among ``derived``."""
    return any(id(v) in derived for name in _WRITES[op.name] for v in _operands(op, name))


def steered_message(atomic: Any, how: str, use: Any, array: str) -> str:
    """The ``order-dependent-atomic`` message for an atomic whose value steers a write."""
    what = {"address": "an address of", "value": "the value written by",
            "branch": "a branch that writes, through"}[how]
    mode = atomic.attrs.get("mode", "cas")
    return (f"the value atomic {mode} on '{array}' returns decides {what} {use.name} "
            f"({use.loc.short()}): several blocks draw from one element in any order, so what is written "
            "where depends on their order")
