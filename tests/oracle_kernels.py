"""A grammar of small cuTile Python kernels for the oracle test (``tests/test_oracle.py``) and its
long-run script (``scripts/oracle_long.py``): ``tilecheck.verify`` against ``tilecheck.detect``.

``cases()`` is a hypothesis strategy of ``OracleCase``: the whole text of a Python module holding one
kernel (``k``), the plain helper functions it calls (cuTile inlines them), ``make_args()`` (random
data, index arrays included), ``GRID`` and ``ASSUME`` (preconditions passed to both checkers). The
module is self-contained, so a disagreement is saved as one runnable file.

The grammar (issue 11): ``for`` and ``while`` loops (constant or data-dependent trip counts) with
early ``continue`` / ``break``, early ``return`` from the kernel and from helpers (cuTile turns the
latter into a single-trip loop ending in ``break``), loop-carried counters advanced differently on
some paths, stores guarded by block-id parity or by loaded values, spin locks right and wrong
(released early, released twice, another block's element released, lock and data mismatched,
relaxed or block-scoped orders, a CAS release, a write-back under a condition, test-and-set locks
of exchanges), message passing through release/acquire flags and a "last ticket" counter, right and
wrong (``tests/oracle_sync.py``), atomic add / max / xchg / cas (relaxed or block-scoped too, their
returned values kept and used), tickets from an atomic counter used as tile indices, view
loads and stores with ``check_bounds=False`` or relaxed orders, tiled views (overlapping or not),
slices (overlapping or not), 1-D strided and 2-D transposed or strided arrays with 2-D tiles, two
arguments sharing one buffer, gather / scatter with masks, scans and index arrays (permutations,
duplicates, out-of-range entries, ``check_bounds=False``), xor / shift / and index arithmetic,
preconditions on the index array (kept or broken by the data), and 1-3-D grids whose axes the
kernel may ignore. Tile index expressions are drawn from a block-injective family or a deliberately
wrong one, so racy and race-free kernels are both common.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from tests.oracle_relation import OracleCase
from tests.oracle_sync import SyncStatements

MAX_BLOCKS = 16
PARAMS = "x, y, c, acc, idx, lk, m, cnt, fl, T: ConstInt"
HELPER_PARAMS = "x, y, c, acc, idx, lk, m, cnt, fl, b, nb, j, T: ConstInt"
CALL_ARGS = "x, y, c, acc, idx, lk, m, cnt, fl"
M_TILE = 4  # 2-D tiles of m are M_TILE x M_TILE
WRAPS = 2**30  # b * WRAPS overflows i32 for b >= 2 and wraps to 0 for b = 4

HEADER = '''\
import cuda.tile as ct
import numpy as np

import tilecheck

ConstInt = ct.Constant[int]
ZERO = ct.PaddingMode.ZERO
ACQUIRE = ct.MemoryOrder.ACQUIRE
RELEASE = ct.MemoryOrder.RELEASE
RELAXED = ct.MemoryOrder.RELAXED
BLOCK = ct.MemoryScope.BLOCK
DEVICE = ct.MemoryScope.DEVICE
'''


# ---- generation -----------------------------------------------------------------------------------
@dataclass
class _Scope:
    """What a statement may use: loop variables (name, trips), tiles (name, 'f' | 'i' for 1-D float or
    int, 'm' for 2-D float), scalar tile indices (counters, tickets), whether ``continue``/``break``
    (inside a loop) and ``return`` (inside a helper, or the kernel below its top level) are legal."""

    loops: tuple[tuple[str, int], ...] = ()
    tiles: tuple[tuple[str, str], ...] = ()
    counters: tuple[str, ...] = ()
    in_loop: bool = False
    in_helper: bool = False
    depth: int = 0

    def child(self, **changes: Any) -> _Scope:
        values = {"loops": self.loops, "tiles": self.tiles, "counters": self.counters,
                  "in_loop": self.in_loop, "in_helper": self.in_helper, "depth": self.depth + 1}
        values.update(changes)
        return _Scope(**values)


@dataclass
class _Builder(SyncStatements):
    """Draws one kernel's statements (``block``) and the helpers they call; ``features`` names the
    grammar constructs used (the long run's classes and statistics)."""

    draw: Any
    n_locks: int
    axes: tuple[int, ...]  # the grid axes the kernel's linear block id uses
    views: dict[str, str]  # name -> kind: 'array' (ct.load/store/gather/scatter) or 'tiled'
    writable: tuple[str, ...]
    budget: int
    features: set[str] = field(default_factory=set)
    helpers: list[str] = field(default_factory=list)
    names: int = 0
    strided: set[str] = field(default_factory=set)  # the variables of grid-stride loops

    def fresh(self, prefix: str) -> str:
        self.names += 1
        return f"{prefix}{self.names}"

    def pick(self, options: list[Any]) -> Any:
        return self.draw(st.sampled_from(options))

    def chance(self, p: float) -> bool:
        return _chance(self.draw, p)

    # ---- expressions ----------------------------------------------------------------------------
    def slot(self, scope: _Scope) -> str:
        """A tile index: block-injective (over blocks and the innermost loop) or deliberately not."""
        good = ["b", "b", "nb - 1 - b", "b + 1", "b ^ 1"]
        bad = ["b // 2", "b % 2", "0", "(b + 1) % nb", "b >> 1", "b & 1"]
        if len(self.axes) > 1 and not scope.in_helper:
            bad.append(f"b{self.axes[0]}")
        if not scope.in_helper:  # from y's shape: injective or not depending on the given sizes
            good += ["b % nt", "nt - 1 - b"]
            bad += ["nt // 2 + b"]
        if scope.loops:
            j, k = scope.loops[-1]
            good += [f"b * {k} + {j}", f"b * {k} + {j}", f"{j} * nb + b"]
            bad += [f"b + {j}", j]
            if j in self.strided:  # injective over blocks and trips when the loop strides the only axis
                good += [j, j, f"{j} % nt"]
                bad += [f"{j} // 2"]
        if scope.counters:
            good += list(scope.counters)
        if self.chance(0.02):  # an i32 product that wraps around for b >= 4 (Tile IR muli wraps)
            self.features.add("index-overflow")
            return f"b * {WRAPS}"
        chosen = self.pick(good) if self.chance(0.7) else self.pick(bad)
        if chosen in bad:
            self.features.add("bad-index")
        if any(op in chosen for op in ("^", ">>", "&")):
            self.features.add("bits")
        return chosen

    def elements(self, scope: _Scope) -> str:
        """A tile of element indices (shape (T,))."""
        kind = self.pick(["direct", "direct", "idx", "idx", "shifted", "cumsum"])
        base = f"({self.slot(scope)}) * T + ct.arange(T, dtype=ct.int32)"
        if kind == "cumsum":  # the same lanes as arange, through a scan
            self.features.add("cumsum")
            return f"({self.slot(scope)}) * T + ct.cumsum(ct.full((T,), 1, dtype=ct.int32), axis=0) - 1"
        if kind == "idx":
            self.features.add("index-array")
            return f"ct.gather(idx, {base})"
        if kind == "shifted":
            self.features.add("off-by-one")
            return f"({self.slot(scope)}) * (T - 1) + ct.arange(T, dtype=ct.int32)"
        return base

    def value(self, scope: _Scope, dtype: str) -> str:
        tiles = [t for t, d in scope.tiles if d == dtype]
        if dtype == "f":
            options = ["ct.full((T,), 1.0, dtype=ct.float32) * b", "ct.full((T,), 2.0, dtype=ct.float32)"]
            options += [f"{t} + 1.0" for t in tiles] + [f"{t} * 2.0" for t in tiles]
        else:
            options = ["ct.arange(T, dtype=ct.int32) + b", "ct.full((T,), 1, dtype=ct.int32)"]
            options += [f"{t} + 1" for t in tiles]
        return self.pick(options)

    def condition(self, scope: _Scope) -> str:
        options = ["b % 2 == 0", "b % 2 == 1", "b < nb // 2", "ct.load(idx, b, shape=()) % 2 == 0",
                   "ct.load(x, b, shape=()) > 0.0"]
        if not scope.in_helper:
            options += [f"b{a} % 2 == 0" for a in self.axes]
        options += [f"ct.sum({t}) > 0.0" for t, d in scope.tiles if d == "f"]
        options += [f"ct.sum({t}) % 2 == 0" for t, d in scope.tiles if d == "i"]
        options += [f"ct.sum({t}) > 1.0" for t, d in scope.tiles if d == "m"]
        if scope.loops:
            j, _ = scope.loops[-1]
            options += [f"{j} == 1", f"{j} % 2 == 0", f"{j} + b == 2"]
        cond = self.pick(options)
        self.features.add("if-data" if "load" in cond or "sum" in cond else "if-bid")
        return cond

    def array(self, scope: _Scope, writing: bool, dtype: str | None = None) -> str:
        names = [a for a in (self.writable if writing else self.views) if self.views[a] == "array"]
        if scope.in_helper:  # helpers see the kernel's parameters only
            names = [a for a in names if a in ("x", "y", "c")]
        if dtype is not None:
            names = [a for a in names if _dtype_of(a) == dtype]
        return self.pick(names)

    # ---- statements -----------------------------------------------------------------------------
    def block(self, scope: _Scope, indent: int, min_len: int = 1) -> list[str]:
        """A statement list: each statement may add tiles to the scope of the ones after it."""
        lines = [line for statement in self.statements(scope, indent, min_len) for line in statement]
        return lines or [" " * indent + "pass"]

    def statements(self, scope: _Scope, indent: int, min_len: int = 1) -> list[list[str]]:
        out = []
        count = self.draw(st.integers(min_len, 4 if scope.depth < 2 else 2))
        for _ in range(count):
            if self.budget <= 0:
                break
            self.budget -= 1
            out.append(self.statement(scope, indent))
        return out

    def statement(self, scope: _Scope, indent: int) -> list[str]:
        kinds = ["load", "load", "store", "store", "store", "gather", "scatter", "atomic", "lock", "tile2d",
                 "ticket", "last_ticket"]
        if "vy" in self.views and not scope.in_helper:
            kinds += ["view"]
        if scope.depth < 2:
            kinds += ["if", "if", "for", "for", "while", "helper"]
        if scope.in_loop:
            kinds += ["continue", "break"]
        if scope.in_helper or scope.depth > 0:
            kinds += ["return"]
        kind = self.pick(kinds)
        return getattr(self, f"_{kind}")(scope, indent)

    def _load(self, scope: _Scope, indent: int) -> list[str]:
        name = self.fresh("t")
        array = self.array(scope, writing=False)
        dtype = _dtype_of(array)
        index = self.slot(scope)
        text = f"{name} = ct.load({array}, index=({index},), shape=(T,), padding_mode=ZERO{self.options()})"
        scope.tiles += ((name, dtype),)
        return [" " * indent + text]

    def _store(self, scope: _Scope, indent: int) -> list[str]:
        array = self.array(scope, writing=True)
        value = self.value(scope, _dtype_of(array))
        index = self.slot(scope)
        return [" " * indent + f"ct.store({array}, index=({index},), tile={value}{self.options()})"]

    def options(self) -> str:
        """Keyword options of a view load/store: mostly none; unchecked bounds, or a memory order."""
        kind = self.pick(["", "", "", "", "", "", "unchecked", "relaxed", "relaxed-block"])
        if kind:
            self.features.add(f"view-{kind}")
        return {"": "", "unchecked": ", check_bounds=False",
                "relaxed": ", memory_order=RELAXED, memory_scope=DEVICE",
                "relaxed-block": ", memory_order=RELAXED, memory_scope=BLOCK"}[kind]

    def _ticket(self, scope: _Scope, indent: int) -> list[str]:
        """A ticket from an atomic counter: each execution gets its own number, usable as a slot."""
        self.features.add("ticket")
        name = self.fresh("q")
        scope.counters += (name,)
        return [" " * indent + f"{name} = ct.atomic_add(cnt, 0, 1)"]

    def _view(self, scope: _Scope, indent: int) -> list[str]:
        self.features.add("tiled-view")
        if "vy" in self.writable and self.chance(0.6):
            return [" " * indent + f"vy.store(({self.slot(scope)},), {self.value(scope, 'f')})"]
        name = self.fresh("t")
        scope.tiles += ((name, "f"),)
        return [" " * indent + f"{name} = vy.load(({self.slot(scope)},))"]

    def _tile2d(self, scope: _Scope, indent: int) -> list[str]:
        """A 2-D tile of the 2-D array ``m`` at (row, column) tile indices from the block ids."""
        self.features.add("tile2d")
        rows = ["b", "b // 2", "0"] + ([] if scope.in_helper else [f"b{a}" for a in self.axes])
        cols = ["0", "b % 2", "nb - 1 - b"] + ([] if scope.in_helper else [f"b{a}" for a in self.axes])
        if scope.loops:
            rows.append(scope.loops[-1][0])
            cols.append(scope.loops[-1][0])
        index = f"({self.pick(rows)}, {self.pick(cols)})"
        shape = f"({M_TILE}, {M_TILE})"
        tiles = [t for t, d in scope.tiles if d == "m"]
        extra = self.pick(["", "", "", "", ", order=(1, 0)", ", check_bounds=False"])
        if extra:
            self.features.add("tile2d-order" if "order" in extra else "view-unchecked")
        if self.chance(0.5):
            name = self.fresh("t")
            scope.tiles += ((name, "m"),)
            return [" " * indent
                    + f"{name} = ct.load(m, index={index}, shape={shape}, padding_mode=ZERO{extra})"]
        value = self.pick([f"ct.full({shape}, 1.0, dtype=ct.float32) * b"] + [f"{t} + 1.0" for t in tiles]
                          + [f"ct.transpose({t})" for t in tiles])
        return [" " * indent + f"ct.store(m, index={index}, tile={value}{extra})"]

    def _gather(self, scope: _Scope, indent: int) -> list[str]:
        name = self.fresh("t")
        array = self.array(scope, writing=False)
        dtype = _dtype_of(array)
        unchecked = ", check_bounds=False" if self.chance(0.15) else ""
        if unchecked:
            self.features.add("unchecked")
        text = f"{name} = ct.gather({array}, {self.elements(scope)}{self.mask(scope)}{unchecked})"
        scope.tiles += ((name, dtype),)
        return [" " * indent + text]

    def mask(self, scope: _Scope) -> str:
        """A gather/scatter mask: mostly none; a lane prefix or a test of loaded data."""
        options = ["", "", "", "ct.arange(T, dtype=ct.int32) < 2"]
        options += [f"{t} > 0.0" for t, d in scope.tiles if d == "f"]
        mask = self.pick(options)
        if mask:
            self.features.add("mask")
        return f", mask={mask}" if mask else ""

    def _scatter(self, scope: _Scope, indent: int) -> list[str]:
        array = self.array(scope, writing=True)
        unchecked = ", check_bounds=False" if self.chance(0.15) else ""
        if unchecked:
            self.features.add("unchecked")
        value = self.value(scope, _dtype_of(array))
        where = self.elements(scope)
        return [" " * indent + f"ct.scatter({array}, {where}, {value}{self.mask(scope)}{unchecked})"]

    def _atomic(self, scope: _Scope, indent: int) -> list[str]:
        op = self.pick(["add", "add", "xchg", "cas", "max"])
        self.features.add(f"atomic-{op}")
        order = self.pick(["", "", ", memory_order=RELAXED", ", memory_scope=BLOCK"])
        if "BLOCK" in order:
            self.features.add("atomic-block-scope")
        if op == "add":
            array = self.pick(["c", "c", "y", "acc"])
        else:
            array = "c"
        where = self.elements(scope)
        if array == "acc":
            where = f"(b % {self.n_locks}) * T + ct.arange(T, dtype=ct.int32)"
        value = self.value(scope, _dtype_of(array))
        if op == "cas":
            name = self.fresh("i")
            scope.tiles += ((name, "i"),)
            return [" " * indent + f"{name} = ct.atomic_cas(c, {where}, ct.full((T,), 0, dtype=ct.int32), "
                                   f"{value}{order})"]
        if self.chance(0.3):  # the returned value kept: later statements may store it or index with it
            self.features.add("atomic-result")
            name = self.fresh("r")
            scope.tiles += ((name, _dtype_of(array)),)
            return [" " * indent + f"{name} = ct.atomic_{op}({array}, {where}, {value}{order})"]
        return [" " * indent + f"ct.atomic_{op}({array}, {where}, {value}{order})"]

    def _lock(self, scope: _Scope, indent: int) -> list[str]:
        """A CAS spin lock around a read-modify-write of ``acc``; the variants are the wrong ones of
        issue 12 (release early / twice / someone else's lock, data under another lock, relaxed)."""
        variant = self.pick(["ok", "ok", "ok", "early", "twice", "other", "mismatch", "relaxed-acquire",
                             "relaxed-release", "cas-release", "block-scope", "conditional"])
        self.features.add(f"lock-{variant}")
        lock = self.pick([f"b % {self.n_locks}", "0", f"(b // 2) % {self.n_locks}"])
        slot = lock if variant != "mismatch" else self.pick([f"b % {self.n_locks + 1}", "b", "(b + 1) % nb"])
        acquire_order = "RELAXED" if variant == "relaxed-acquire" else "ACQUIRE"
        release_order = "RELAXED" if variant == "relaxed-release" else "RELEASE"
        pad = " " * indent
        t = self.fresh("a")
        scope_ = ", memory_scope=BLOCK" if variant == "block-scope" else ""
        taking = f"ct.atomic_cas(lk, {lock}, 0, 1, memory_order={acquire_order}{scope_})"
        if self.chance(0.3):  # a test-and-set lock: an exchange that finds the lock free takes it
            self.features.add("lock-xchg")
            taking = f"ct.atomic_xchg(lk, {lock}, 1, memory_order={acquire_order}{scope_})"
        acquire = [pad + f"while {taking} == 1:", pad + "    pass"]
        release = pad + f"ct.atomic_xchg(lk, {lock}, 0, memory_order={release_order}{scope_})"
        if variant == "cas-release":
            release = pad + f"ct.atomic_cas(lk, {lock}, 1, 0, memory_order={release_order})"
        rmw = [pad + f"{t} = ct.load(acc, index=({slot},), shape=(T,), padding_mode=ZERO)"]
        store = pad + f"ct.store(acc, index=({slot},), tile={t} + 1.0)"
        if variant == "conditional":  # the write-back only on some paths, still inside the section
            scope.tiles += ((t, "f"),)
            rmw.append(pad + f"if {self.condition(scope)}:")
            scope.tiles = scope.tiles[:-1]
            store = "    " + store
        if variant == "early":
            return acquire + rmw + [release, store]
        if variant == "twice":
            return acquire + rmw + [release, store, release]
        if variant == "other":
            other = f"({lock} + 1) % {self.n_locks}"
            also = pad + f"ct.atomic_xchg(lk, {other}, 0, memory_order=RELEASE)"
            return acquire + rmw + [store, release, also]
        return acquire + rmw + [store, release]

    def _if(self, scope: _Scope, indent: int) -> list[str]:
        pad = " " * indent
        lines = [pad + f"if {self.condition(scope)}:"]
        lines += self.block(scope.child(), indent + 4)
        if self.chance(0.3):
            lines += [pad + "else:"] + self.block(scope.child(), indent + 4)
        return lines

    def _for(self, scope: _Scope, indent: int) -> list[str]:
        trips = self.draw(st.integers(1, 3))
        j = self.fresh("j")
        self.features.add("for")
        # the trip count: constant, or at most ``trips`` from the block id or from loaded data
        bound = self.pick([str(trips), str(trips), str(trips), f"b % {trips} + 1",
                           f"ct.load(idx, b, shape=()) % {trips}"])
        if bound != str(trips):
            self.features.add("for-dynamic")
        if not scope.in_helper and self.chance(0.2):
            # a grid-stride loop (a persistent kernel's): j = b_a, b_a + nb_a, ... below trips * nb_a
            a = self.pick(list(self.axes))
            self.features.add("for-grid-stride")
            self.strided.add(j)
            return self._loop(scope, indent, j, trips, [f"for {j} in range(b{a}, {trips} * ct.num_blocks({a}), "
                                                        f"ct.num_blocks({a})):"])
        return self._loop(scope, indent, j, trips, [f"for {j} in range({bound}):"])

    def _while(self, scope: _Scope, indent: int) -> list[str]:
        trips = self.draw(st.integers(1, 3))
        w, j = self.fresh("w"), self.fresh("j")
        self.features.add("while")
        return self._loop(scope, indent, j, trips, [f"{w} = 0", f"while {w} < {trips}:", f"    {j} = {w}",
                                                    f"    {w} += 1"])

    def _loop(self, scope: _Scope, indent: int, j: str, trips: int, head: list[str]) -> list[str]:
        """A loop, maybe with a loop-carried counter ``p`` used as a tile index: advanced at the end of
        the body, and perhaps differently on an early ``continue`` path or under a condition (a
        closed form ``p = start + step * j`` is then wrong)."""
        pad = " " * indent
        lines = []
        counters: tuple[str, ...] = ()
        if self.chance(0.5):
            self.features.add("counter")
            p = self.fresh("p")
            lines.append(pad + f"{p} = {self.pick(['b', f'b * {trips}', 'nb - 1 - b'])}")
            counters = (p,)
        inner = scope.child(loops=scope.loops + ((j, trips),), counters=scope.counters + counters,
                            in_loop=True)
        lines += [pad + line for line in head]
        lines += self.block(inner, indent + 4)
        if counters:
            p = counters[0]
            # the last: a prefix sum of loaded data (ragged offsets), carried iteration by iteration
            step = self.pick(["nb", "nb", "1", str(trips), f"ct.load(idx, {j}, shape=()) % 2 + 1"])
            if step.startswith("ct.load"):
                self.features.add("counter-data")
            early = self.pick(["", "", "continue", "conditional", "break"])
            if early:
                self.features.add(f"counter-{early}")
            if early == "continue":
                lines += [pad + f"    if {self.condition(inner)}:", pad + f"        {p} += 1",
                          pad + "        continue"]
            elif early == "conditional":
                cond = self.condition(inner)
                lines += [pad + f"    if {cond}:", pad + f"        {p} += {self.pick(['1', 'nb'])}"]
            elif early == "break":
                lines += [pad + f"    if {self.condition(inner)}:", pad + "        break"]
            if self.chance(0.3):
                lines += self.block(inner, indent + 4, min_len=0)
            lines.append(pad + f"    {p} += {step}")
        return lines

    def _continue(self, scope: _Scope, indent: int) -> list[str]:
        self.features.add("continue")
        return [" " * indent + f"if {self.condition(scope)}:", " " * indent + "    continue"]

    def _break(self, scope: _Scope, indent: int) -> list[str]:
        self.features.add("break")
        return [" " * indent + f"if {self.condition(scope)}:", " " * indent + "    break"]

    def _return(self, scope: _Scope, indent: int) -> list[str]:
        self.features.add("return-helper" if scope.in_helper else "return-kernel")
        return [" " * indent + f"if {self.condition(scope)}:", " " * indent + "    return"]

    def _helper(self, scope: _Scope, indent: int) -> list[str]:
        """A plain function the kernel calls (cuTile inlines it) with an early return somewhere."""
        self.features.add("helper")
        name = self.fresh("h")
        j, trips = scope.loops[-1] if scope.loops else ("0", 1)
        inner = _Scope(loops=(("j", trips),) if scope.loops else (), in_helper=True, depth=scope.depth + 1)
        # an early return between two statement lists (never inside a lock's critical section)
        body = self.statements(inner, 4, min_len=0)
        body += [self._return(inner, 4)] + self.statements(inner, 4, min_len=0)
        lines = [line for statement in body for line in statement]
        self.helpers.append("\n".join([f"def {name}({HELPER_PARAMS}):", *lines]))
        return [" " * indent + f"{name}({CALL_ARGS}, b, nb, {j}, T)"]


def _chance(draw: Any, p: float) -> bool:
    """True with probability about ``p``; hypothesis leans to False (its simplest value)."""
    return draw(st.integers(0, 99)) >= 100 - round(100 * p)


def _dtype_of(array: str) -> str:
    return "i" if array in ("c", "idx") else "f"


@st.composite
def grids(draw: Any) -> tuple[int, int, int]:
    shape = [draw(st.integers(1, 4)), draw(st.sampled_from([1, 1, 2, 3])),
             draw(st.sampled_from([1, 1, 1, 2]))]
    while shape[0] * shape[1] * shape[2] > MAX_BLOCKS:
        shape[shape.index(max(shape))] -= 1
    return tuple(shape)


@st.composite
def cases(draw: Any, budget: int = 6) -> OracleCase:
    grid = draw(grids())
    # used axes: an axis of extent > 1 left out makes blocks that do the same work (racy if they write)
    axes = tuple(a for a in range(3) if draw(st.integers(0, 9)) < (9 if grid[a] > 1 else 3)) or (0,)
    tile = draw(st.sampled_from([4, 8, 16]))
    blocks = 1
    for a in axes:
        blocks *= grid[a]
    n_locks = draw(st.sampled_from([1, 2, 4]))
    slots = draw(st.sampled_from([4 * blocks, 4 * blocks, 3 * blocks + 1, max(blocks, 2)]))
    n = max(slots * tile + draw(st.sampled_from([0, 0, tile // 2])), 2 * MAX_BLOCKS)
    views = {"x": "array", "y": "array", "c": "array"}
    writable = ["y", "y", "c"]
    prologue = []
    features: set[str] = set()
    if draw(st.booleans()):
        step = draw(st.sampled_from(["T", "T", "T // 2"]))
        prologue.append(f"vy = y.tiled_view((T,), padding_mode=ZERO, traversal_steps=({step},))")
        views["vy"] = "tiled"
        writable.append("vy")
        features.add("tiled-view-overlap" if step != "T" else "tiled-view")
    if draw(st.booleans()):
        half = (n // 2) // tile * tile
        lo = draw(st.sampled_from([half, half, half - tile, max(half - 1, 0)]))
        prologue += [f"ya = y.slice(0, 0, {half})", f"yb = y.slice(0, {lo}, {n})"]
        views.update(ya="array", yb="array")
        writable += ["ya", "yb"]
        features.add("slice" if lo == half else "slice-overlap")
    if _chance(draw, 0.1):
        writable.append("x")  # in place
        features.add("in-place")
    builder = _Builder(draw, n_locks, axes, views, tuple(writable), budget, features)
    scope = _Scope()
    # message passing first: every block must raise its flag before anything may return early
    publish = builder.message_passing(scope, 4) if _chance(draw, 0.15) else []
    body = publish + builder.block(scope, 4, min_len=1)
    names = " + ".join(_linear(axes))
    counts = " * ".join(f"ct.num_blocks({a})" for a in axes)
    head = [f"    b{a} = ct.bid({a})" for a in axes] + [f"    b = {names}", f"    nb = {counts}",
                                                      "    nt = ct.num_tiles(y, axis=0, shape=(T,))"]
    head += ["    " + line for line in prologue]
    if any(grid[a] > 1 and a not in axes for a in range(3)):
        builder.features.add("unused-axis")
    kernel = "\n".join(["@ct.kernel", f"def k({PARAMS}):", *head, *body])
    args, assume = draw(arguments(n, tile, n_locks, builder.features))
    source = "\n\n\n".join([HEADER.rstrip("\n"), *builder.helpers, kernel, args,
                            f"GRID = {grid}\nASSUME = [{', '.join(assume)}]"]) + "\n"
    return OracleCase(source, frozenset(builder.features))


def _linear(axes: tuple[int, ...]) -> list[str]:
    terms = []
    for i, a in enumerate(axes):
        scale = " * ".join(f"ct.num_blocks({p})" for p in axes[:i])
        terms.append(f"b{a} * {scale}" if scale else f"b{a}")
    return terms


@st.composite
def arguments(draw: Any, n: int, tile: int, n_locks: int, features: set[str]) -> tuple[str, list[str]]:
    """``make_args()`` source: random data, an index array of one of several kinds, locks free."""
    seed = draw(st.integers(0, 2**31 - 1))
    idx_kind = draw(st.sampled_from(["permutation", "permutation", "duplicates", "out-of-range", "identity"]))
    features.add(f"idx-{idx_kind}")
    idx = {"permutation": f"rng.permutation({n}).astype(np.int32)",
           "identity": f"np.arange({n}, dtype=np.int32)",
           "duplicates": f"rng.integers(0, {n}, {n}).astype(np.int32)",
           "out-of-range": f"np.where(rng.random({n}) < 0.1, rng.choice([-1, {n}, {n + 7}], {n}), "
                           f"rng.permutation({n})).astype(np.int32)"}[idx_kind]
    layout_y = draw(st.sampled_from(["plain"] * 6 + ["strided"] * 3 + ["aliases-x"]))
    layout_x = draw(st.sampled_from(["plain"] * 4 + ["strided"])) if layout_y != "aliases-x" else "plain"
    features.add(f"y-{layout_y}")
    features.add(f"x-{layout_x}")
    x = f"rng.standard_normal({n}).astype(np.float32)"
    if layout_x == "strided":
        x = f"rng.standard_normal({2 * n}).astype(np.float32)[::2]"
    y = f"np.zeros({n}, np.float32)" if layout_y == "plain" else f"np.zeros({2 * n}, np.float32)[::2]"
    if layout_y == "aliases-x":  # one buffer: y is x itself, or x shifted by a tile
        shift = draw(st.sampled_from([0, tile]))
        x = f"rng.standard_normal({n + tile}).astype(np.float32)"
        y = f"x[{shift}:{shift + n}]"
    rows = M_TILE * draw(st.integers(2, 5))
    cols = M_TILE * draw(st.integers(1, 4)) + draw(st.sampled_from([0, 0, 2]))
    layout_m = draw(st.sampled_from(["plain", "plain", "transposed", "strided"]))
    features.add(f"m-{layout_m}")
    m = {"plain": f"rng.standard_normal(({rows}, {cols})).astype(np.float32)",
         "transposed": f"rng.standard_normal(({cols}, {rows})).astype(np.float32).T",
         "strided": f"rng.standard_normal(({rows}, {2 * cols})).astype(np.float32)[:, ::2]"}[layout_m]
    lines = ["def make_args():", f"    rng = np.random.default_rng({seed})", f"    x = {x}", f"    y = {y}"]
    if layout_y == "aliases-x":
        lines.append(f"    x = x[:{n}]")
    lines += [f"    c = rng.integers(0, 4, {n}).astype(np.int32)",
              f"    acc = np.zeros({n_locks + 1} * {tile}, np.float32)", f"    idx = {idx}",
              f"    lk = np.zeros({n_locks}, np.int32)", f"    m = {m}", "    cnt = np.zeros(2, np.int32)",
              f"    fl = np.zeros({MAX_BLOCKS}, np.int32)", f"    return (x, y, c, acc, idx, lk, m, cnt, fl, {tile})"]
    assume = []
    if _chance(draw, 0.25):
        assume.append('tilecheck.distinct("idx")')
        features.add("assume-distinct")
    if _chance(draw, 0.25):
        assume.append(f'tilecheck.bounded("idx", 0, {n - 1})')
        features.add("assume-bounded")
    return "\n".join(lines), assume
