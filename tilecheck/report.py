"""Verdicts, findings and witnesses, printed like compiler diagnostics."""
from __future__ import annotations

import json
import linecache
import weakref
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from tilecheck.ir.loc import Loc

KINDS = ("write-write", "read-write", "unordered-in-block", "out-of-bounds", "order-dependent-atomic",
         "aliasing", "assumption-violated", "overflow")
RACE_KINDS = ("write-write", "read-write", "unordered-in-block", "aliasing")
# Report.status: verified | race (a data race) | out-of-bounds (no race, but an access may leave its
# array: undefined behaviour too, and it fails CI the same way) | unknown
DEFECT_STATUSES = ("race", "out-of-bounds")
LEVELS = {1: "all grids and shapes", 2: "the given shapes", 3: "the given shapes and grid"}


# the drawer of ``Report.save_picture``: it runs the launch, a floor above this module, so
# ``tilecheck.runtime.picture`` registers it here
PICTURES: dict[str, Any] = {}


class WeakLaunch:
    """A launch (kernel, arguments, grid) whose arrays are held by weak reference: ``get()`` gives
    it back while they are alive, else None. (Made at every ``verify`` and ``detect``: kept cheap.)"""

    __slots__ = ("kernel", "grid", "keys", "held")

    def __init__(self, kernel: Any, args: Any, grid: Any) -> None:
        self.kernel, self.grid = kernel, grid
        self.keys = tuple(args) if isinstance(args, dict) else None
        self.held = None if args is None else tuple(
            _hold(v) for v in (args.values() if isinstance(args, dict) else args))

    def get(self) -> tuple[Any, Any, Any] | None:
        if self.held is None:
            return self.kernel, None, self.grid
        values = [_release(h) for h in self.held]
        if any(v is _GONE for v in values):
            return None
        return self.kernel, dict(zip(self.keys, values)) if self.keys is not None else tuple(values), self.grid


_GONE = object()


def _hold(value: Any) -> Any:
    """``value`` as a launch keeps it: a weak reference where it takes one (``("weak", ref)``), a
    list or tuple item by item (``("items", type, holds)``), else itself (a scalar)."""
    if isinstance(value, (list, tuple)):
        return ("items", type(value), tuple(_hold(v) for v in value))
    try:
        return ("weak", weakref.ref(value))
    except TypeError:
        return ("value", value)


def _release(held: Any) -> Any:
    kind, *rest = held
    if kind == "weak":
        value = rest[0]()
        return _GONE if value is None else value
    if kind == "items":
        items = [_release(h) for h in rest[1]]
        return _GONE if any(v is _GONE for v in items) else rest[0](items)
    return rest[0]


@dataclass(frozen=True)
class Side:
    """One of the two accesses of a witness."""

    op: str
    loc: Loc
    block: tuple[int, ...]
    loops: dict[str, int]  # loop name (source line) -> iteration value
    lane: tuple[int, ...]
    effect: str


@dataclass(frozen=True)
class Witness:
    array: str
    element: tuple[int, ...] | None  # coordinates; None when only a linear offset is known
    offset: int | None
    first: Side
    second: Side | None
    grid: tuple[int, ...]
    shapes: dict[str, tuple[int, ...]]
    scalars: dict[str, int] = field(default_factory=dict)
    # per array its strides in elements, where the model chose them (a level with symbolic strides)
    strides: dict[str, tuple[int, ...]] = field(default_factory=dict)
    # index-array contents the race needs that differ from the given arguments: name -> {coords: value}
    contents: dict[str, dict[tuple[int, ...], int]] = field(default_factory=dict)
    # aliasing (two arguments, or one written array with itself): the other argument, the other
    # element (self-overlap), and per array the [start, end) byte offsets, from its element 0, it shares
    other: str | None = None
    other_element: tuple[int, ...] | None = None
    overlap: dict[str, tuple[int, int]] = field(default_factory=dict)

    def element_text(self) -> str:
        if self.element is not None:
            return f"{self.array}[{', '.join(map(str, self.element))}]"
        return f"{self.array} at element offset {self.offset}"


@dataclass(frozen=True)
class Finding:
    kind: str
    message: str
    loc: Loc
    related_locs: tuple[Loc, ...] = ()
    witness: Witness | None = None
    level: int = 3
    # (kernel, args, grid) that ``tilecheck.replay`` runs the witness on, or a ``WeakLaunch`` of it in
    # a report a memo keeps (``Report.held_weakly``); not part of the finding's value
    case: Any = field(default=None, compare=False, repr=False)

    def launch_case(self) -> tuple[Any, Any, Any] | None:
        """``case`` as (kernel, args, grid); None when there is none or its arrays were freed."""
        return self.case.get() if isinstance(self.case, WeakLaunch) else self.case

    def held_weakly(self) -> Finding:
        """This finding with its launch's arrays held by weak reference."""
        if self.case is None or isinstance(self.case, WeakLaunch):
            return self
        return replace(self, case=WeakLaunch(*self.case))

    def relaunched(self, args: Any) -> Finding:
        """A kept finding made about an equal launch (same kernel, shapes, strides, scalars, grid):
        its witness replays on ``args``, held strongly again."""
        if not isinstance(self.case, WeakLaunch):
            return self
        return replace(self, case=(self.case.kernel, args, self.case.grid))

    @property
    def is_race(self) -> bool:
        return self.kind in RACE_KINDS

    @property
    def is_defect(self) -> bool:
        """A race or an out-of-bounds access: what makes a verdict fail."""
        return self.is_race or self.kind == "out-of-bounds"

    def __str__(self) -> str:
        severity = "error" if self.is_defect or self.kind in ("assumption-violated", "overflow") else "warning"
        lines = [f"{_where(self.loc)}: {severity}: {self.kind}: {self.message}"]
        lines += _snippet(self.loc)
        for other in self.related_locs:
            if other != self.loc:
                lines.append(f"{_where(other)}: note: the other access")
                lines += _snippet(other)
        if self.witness is not None:
            lines.append("  witness: " + describe(self.witness))
        return "\n".join(lines)


@dataclass(frozen=True)
class Contract:
    """The launch contract of a kernel at the given shapes (``verify``): the grids, a box of
    per-axis extents, under which it is race-free and in bounds, and the first launch outside it
    that is not (DESIGN §4; docs/semantics/levels-and-contracts.md, "Grid contracts")."""

    extents: tuple[int | None, int | None, int | None]  # largest race-free extent per axis (None: any)
    reads: tuple[bool, bool, bool]  # the kernel reads the axis (its block id or grid size)
    breaking: Finding | None = None  # a defect at the smallest launch outside the box
    undecided: str | None = None  # why the box could not be widened further (solver budget)
    proved: bool = True  # False: not even the first query was decided, so no box is claimed
    # the box's extents as bounds over the shapes, proved for every shape (``grid[0] <= cdiv(n, 16)``)
    symbolic: str | None = None

    @property
    def empty(self) -> bool:
        return any(e == 0 for e in self.extents)

    def grids(self) -> str:
        """``(<=16, 1, any)``"""
        return "(" + ", ".join("any" if e is None else str(e) if e <= 1 else f"<={e}"
                               for e in self.extents) + ")"

    def __str__(self) -> str:
        if not self.proved:
            return f"not decided: {self.undecided}"
        text = "no grid is race-free" if self.empty else f"race-free for grids {self.grids()}"
        unread = [str(k) for k in range(3) if not self.reads[k]]
        if unread and not self.empty:
            text += (f" (the kernel does not read axis {unread[0]})" if len(unread) == 1 else
                     f" (the kernel does not read axes {', '.join(unread[:-1])} and {unread[-1]})")
        if self.breaking is not None and self.breaking.witness is not None:
            w = self.breaking.witness
            text += f"; grid {_tuple(w.grid)} {_breaks(self.breaking)}"
        if self.undecided:
            text += f"; larger grids not decided: {self.undecided}"
        if self.symbolic:
            text += f"; for every shape: race-free when {self.symbolic}"
        return text


@dataclass
class Report:
    kernel: str
    status: str  # verified | race | out-of-bounds | unknown
    findings: list[Finding] = field(default_factory=list)
    assumptions: list[str] = field(default_factory=list)
    level: str | None = None
    reasons: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)
    contract: Contract | None = None
    # the launch's contract over the shapes (``verifier.shape_contract.ShapeContract``): proved, the
    # verdict holds for every launch it admits
    launch_contract: Any = None
    # the launch the report is about (``WeakLaunch``: a report kept by the launcher's memo must not
    # keep the user's arrays alive), for ``save_picture``; None without one
    launch: Any = field(default=None, repr=False, compare=False)

    def held_weakly(self) -> Report:
        """A copy for a memo to keep: its findings hold their launch's arrays by weak reference (the
        launcher keeps thousands of verdicts; each kept a test's tensors alive: 1.7 GB by the end of
        FlagGems' suite)."""
        contract = self.contract
        if contract is not None and contract.breaking is not None:
            contract = replace(contract, breaking=contract.breaking.held_weakly())
        return replace(self, findings=[f.held_weakly() for f in self.findings], contract=contract)

    def relaunched(self, args: Any) -> Report:
        """A kept report (``held_weakly``) given to an equal launch: its findings replay on ``args``."""
        if not any(isinstance(f.case, WeakLaunch) for f in self.findings):
            return self
        return replace(self, findings=[f.relaunched(args) for f in self.findings])

    def save_picture(self, path: Any, *, max_cells: int | None = None) -> Any:
        """Draw the launch this report is about (``tilecheck.picture``): each written array's elements
        coloured by the block that writes them, the elements two blocks race on hatched, the first
        race's witness outlined. SVG, or PNG for a ``.png`` path. Returns the path written."""
        draw = PICTURES.get("report")
        if draw is None:  # registered by tilecheck.runtime.picture, which ``import tilecheck`` loads
            raise RuntimeError("tilecheck.runtime.picture is not loaded")
        return draw(self, path) if max_cells is None else draw(self, path, max_cells)

    @property
    def verified(self) -> bool:
        return self.status == "verified"

    @property
    def races(self) -> list[Finding]:
        return [f for f in self.findings if f.is_race]

    @property
    def failed(self) -> bool:
        """A defect was found: a race or an out-of-bounds access."""
        return self.status in DEFECT_STATUSES

    def __str__(self) -> str:
        every = self.launch_contract is not None and self.launch_contract.proved and self.status == "verified"
        head = {"verified": f"verified: {self.kernel} is race-free for every shape when {self.launch_contract}"
                if every else f"verified: {self.kernel} is race-free for {self.level}",
                "race": f"race: {self.kernel} has {len(self.races)} data race(s)",
                "out-of-bounds": f"out-of-bounds: {self.kernel} may access memory outside its arrays "
                                 f"({sum(f.kind == 'out-of-bounds' for f in self.findings)} access(es); no data race)",
                "unknown": f"unknown: {self.kernel} could not be verified"}[self.status]
        lines = [head]
        for f in self.findings:
            lines.append("")
            lines.append(str(f))
        if self.reasons:
            lines.append("")
            lines += [f"reason: {r}" for r in self.reasons]
        if self.contract is not None:
            lines.append(f"contract: {self.contract}")
        if self.notes:
            lines += [f"note: {n}" for n in self.notes]
        if self.assumptions:
            lines.append("assumptions: " + "; ".join(self.assumptions))
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        def conv(obj: Any) -> Any:
            if isinstance(obj, Loc):
                return {"file": obj.file, "line": obj.line, "col": obj.col}
            if isinstance(obj, dict):
                return {k: conv(v) for k, v in obj.items()}
            if isinstance(obj, (list, tuple)):
                return [conv(v) for v in obj]
            return obj

        findings = []
        for f in self.findings:
            witness = asdict(f.witness) if f.witness is not None else None
            if witness is not None:  # {name: {coords: value}} -> a list (JSON keys are strings)
                witness["contents"] = [{"array": name, "index": list(coords), "value": value}
                                       for name, entries in witness["contents"].items()
                                       for coords, value in sorted(entries.items())]
            d = {"kind": f.kind, "message": f.message, "loc": f.loc, "related_locs": f.related_locs,
                 "witness": witness, "level": f.level}
            findings.append(conv(d))
        return {"kernel": self.kernel, "status": self.status, "level": self.level, "findings": findings,
                "assumptions": self.assumptions, "reasons": self.reasons, "notes": self.notes,
                "stats": self.stats, "contract": self._contract_dict(),
                "launch_contract": self._launch_contract_dict()}

    def _launch_contract_dict(self) -> dict[str, Any] | None:
        c = self.launch_contract
        if c is None:
            return None
        return {"text": str(c), "rules": [str(r) for r in c.rules], "index32": list(c.index32),
                "proved": c.proved, "reason": c.reason}

    def _contract_dict(self) -> dict[str, Any] | None:
        c = self.contract
        if c is None:
            return None
        return {"text": str(c), "extents": list(c.extents), "reads": list(c.reads),
                "breaking_grid": list(c.breaking.witness.grid) if c.breaking and c.breaking.witness else None,
                "undecided": c.undecided, "proved": c.proved, "symbolic": c.symbolic}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, default=str)


def describe(w: Witness) -> str:
    if w.other is not None:
        return _describe_overlap(w)
    first = w.first
    text = f"block {_tuple(first.block)}{_loops(first)} {_verb(first.effect)} {w.element_text()}"
    if w.second is not None:
        s = w.second
        text += f", and block {_tuple(s.block)}{_loops(s)} {_verb(s.effect)} it too"
        if s.block == first.block:
            text += " (same block, no token orders the two)"
    text += f"; grid {_tuple(w.grid)}"
    if w.shapes:
        text += ", " + ", ".join(f"{k} {_tuple(v)}" for k, v in w.shapes.items())
    if w.scalars:
        text += ", " + ", ".join(f"{k}={v}" for k, v in w.scalars.items())
    if w.contents:
        values = contents_items(w.contents)
        text += "; when " + ", ".join(values[:6]) + (f" (and {len(values) - 6} more)" if len(values) > 6 else "")
    return text


def _breaks(f: Finding) -> str:
    """``races: blocks (0, 0, 0) and (16, 0, 0) both write y[0]``, in a contract's one line."""
    w = f.witness
    assert w is not None
    if f.kind == "out-of-bounds":
        return f"goes out of bounds: block {_tuple(w.first.block)} {_verb(w.first.effect)} {w.element_text()}"
    if w.second is None:
        return f"{f.kind}: block {_tuple(w.first.block)} {_verb(w.first.effect)} {w.element_text()}"
    a, b = w.first, w.second
    if a.effect == b.effect:
        return (f"races: blocks {_tuple(a.block)} and {_tuple(b.block)} both {_verb(a.effect).rstrip('s')} "
                f"{w.element_text()}")
    return (f"races: block {_tuple(a.block)} {_verb(a.effect)} {w.element_text()}, and block {_tuple(b.block)} "
            f"{_verb(b.effect)} it")


def contents_items(contents: dict[str, dict[tuple[int, ...], int]]) -> list[str]:
    """``idx[1] = 3`` for each array element of a witness's contents (arrays in the given order)."""
    return [f"{name}[{', '.join(map(str, c))}] = {v}" for name, entries in contents.items()
            for c, v in sorted(entries.items())]


def _describe_overlap(w: Witness) -> str:
    """An aliasing witness: a property of the arguments, so no blocks and no grid."""
    shapes = ", ".join(f"{k} {_tuple(v)}" for k, v in w.shapes.items())
    if w.other == w.array:
        start, end = w.overlap.get(w.array, (None, None))
        other = w.other_element if w.other_element is not None else "another element"
        return (f"{w.element_text()} and {w.array}[{', '.join(map(str, other))}] are the same bytes "
                f"[{start}, {end}) of '{w.array}'; {shapes}")
    mine, theirs = w.overlap[w.array], w.overlap[w.other]
    return (f"bytes [{mine[0]}, {mine[1]}) of '{w.array}' are bytes [{theirs[0]}, {theirs[1]}) of '{w.other}' "
            f"({mine[1] - mine[0]} bytes); {shapes}")


def _verb(effect: str) -> str:
    return {"read": "reads", "write": "writes", "atomic": "atomically updates"}.get(effect, effect)


def _loops(side: Side) -> str:
    if not side.loops:
        return ""
    return " (" + ", ".join(f"{k}={v}" for k, v in side.loops.items()) + ")"


def _tuple(t: tuple[int, ...]) -> str:
    return "(" + ", ".join(map(str, t)) + ")"


def _where(loc: Loc) -> str:
    if not loc.is_known():
        return "<unknown location>"
    return f"{loc.file}:{loc.line}:{loc.col}" if loc.col else f"{loc.file}:{loc.line}"


def _snippet(loc: Loc) -> list[str]:
    if not loc.is_known() or not loc.file:
        return []
    text = linecache.getline(loc.file, loc.line).rstrip()
    if not text:
        return []
    out = [f"    {text}"]
    if loc.col:
        out.append("    " + " " * loc.col + "^")
    return out
