"""The obligations a launch's concrete arguments discharge (DESIGN §4): no written array aliases
another argument or itself (obligation 6), the user's preconditions hold for the given contents,
and the given contents of integer arrays (what the data step and the contracts read)."""
from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from typing import Any

from tilecheck.errors import TilecheckError
from tilecheck.ir import Module
from tilecheck.ir.opdefs import Effect
from tilecheck.memo import Memo
from tilecheck.report import Finding, Side, Witness
from tilecheck.verifier.contracts.preconditions import Precondition


def given_integer_arrays(params: tuple[Any, ...], args: Sequence[Any]) -> dict[str, Any]:
    """The host contents of the integer array arguments, by name (device arrays are left out)."""
    from tilecheck.arrays import flat_arguments
    from tilecheck.interp.memory import as_host_array

    out = {}
    for p, a in zip(params, flat_arguments(tuple(args))):
        if p.kind != "array":
            continue
        try:
            values = as_host_array(p.name, a)
        except TilecheckError:
            continue
        if values.dtype.kind in "iu":
            out[p.name] = values
    return out



def broken_preconditions(module: Module | None, params: tuple[Any, ...], args: Sequence[Any] | None,
                          assume: Sequence[Precondition]) -> list[tuple[Precondition, Finding]]:
    """The user's preconditions the given arguments break (DESIGN §4: a proof under a precondition
    the case does not meet would be vacuous). Each is a finding naming the argument; the proof goes
    on without it."""
    if args is None or not params:
        return []
    from tilecheck.arrays import flat_arguments
    from tilecheck.interp.memory import as_host_array

    values = {p.name: a for p, a in zip(params, flat_arguments(tuple(args)))}
    out = []
    for pre in assume:
        if pre.array not in values:
            continue
        try:
            problem = pre.violation(as_host_array(pre.array, values[pre.array]))
        except TilecheckError:  # a device array: its contents are not read here
            continue
        if problem:
            out.append((pre, Finding("assumption-violated", f"the given '{pre.array}' breaks its "
                                     f"precondition ({pre.describe()}): {problem}; verified without it",
                                     _entry_loc(module), (), None, 3)))
    return out


def aliasing_findings(module: Module, args: Sequence[Any]) -> list[Finding]:
    """Obligation 6 on concrete arguments (see ``_aliasing_findings``), for the launcher."""
    return aliasing_in(module, written_arrays(module), module.params, args)


def written_arrays(module: Module) -> set[str]:
    """The arrays a module writes, once per Tile IR (a module bound to another launch shares it)."""
    found = _WRITTEN.get(id(module.functions))
    if found is None or found[0] is not module.functions:
        from tilecheck.ir.summary import memory_ops

        found = _WRITTEN[id(module.functions)] = (module.functions, {
            m.array for m in memory_ops(module) if m.effect in (Effect.WRITE, Effect.ATOMIC)})
    return found[1]


_WRITTEN: dict[int, tuple[Any, set[str]]] = Memo(1024)


def _entry_loc(module: Module | None) -> Any:
    from tilecheck.ir.loc import Loc

    return module.entry.loc if module is not None else Loc.unknown()


def aliasing_in(module: Module | None, written: set[str], params: tuple[Any, ...], args: Sequence[Any] | None
                       ) -> list[Finding]:
    """Obligation 6 on concrete arguments: a written array must not overlap another argument or
    itself (stride 0, overlapping strides). One finding per overlapping pair (two written arrays
    that overlap are one finding, not two), naming both arguments and the bytes they share."""
    if args is None or not params:
        return []
    from tilecheck.arrays import flat_arguments, layout_of, layouts_overlap

    flat = flat_arguments(args)
    if _apart(params, flat, written):
        return []
    arrays = [(p, layout) for p, a in zip(params, flat) if p.kind == "array" and (layout := layout_of(a)) is not None]
    for p, a in zip(params, flat):  # each array of a list argument, as one argument
        if p.kind == "list" and isinstance(a, (list, tuple)):
            for k, ((shape, strides), item) in enumerate(zip(p.items, a)):
                if (layout := layout_of(item)) is not None:
                    arrays.append((_ListItem(f"{p.name}[{k}]", shape, strides), layout))
                    if "?" in written:  # a write the IR does not trace to an argument may be through the list
                        written = written | {f"{p.name}[{k}]"}
    out: list[Finding] = []
    loc = _entry_loc(module)
    side = Side("argument", loc, (), {}, (), "write")
    for i, (p, a) in enumerate(arrays):
        if p.name not in written:
            continue
        for j, (q, b) in enumerate(arrays):
            if j == i or (q.name in written and j < i):  # a written pair is reported from its first array
                continue
            if not layouts_overlap(a, b):
                continue
            mine, theirs = _shared_bytes(a, b)
            ranges = (f"bytes [{mine[0]}, {mine[1]}) of '{p.name}' are bytes [{theirs[0]}, {theirs[1]}) "
                      f"of '{q.name}'")
            also = " (also written)" if q.name in written else ""
            out.append(Finding("aliasing", f"'{p.name}' is written and overlaps argument '{q.name}'{also} "
                               f"in memory: {ranges}", loc, (),
                               Witness(p.name, None, None, side, Side("argument", loc, (), {}, (),
                                                                      "write" if also else "read"),
                                       (), {p.name: p.shape, q.name: q.shape}, other=q.name,
                                       overlap={p.name: mine, q.name: theirs}), 3))
        dup = _self_overlap(tuple(p.shape), tuple(p.strides))
        if dup is not None:
            offset = sum(i * s for i, s in zip(dup[0], p.strides)) * a.itemsize
            out.append(Finding("aliasing", f"'{p.name}' is written but elements {dup[0]} and {dup[1]} "
                               f"share one address (strides {p.strides})", loc, (),
                               Witness(p.name, dup[0], None, side, None, (), {p.name: p.shape},
                                       other=p.name, other_element=dup[1],
                                       overlap={p.name: (offset, offset + a.itemsize)}), 3))
    return out


def _apart(params: tuple[Any, ...], args: Sequence[Any], written: set[str]) -> bool | None:
    """Whether the arguments are numpy arrays (and scalars) whose byte ranges are pairwise apart and
    whose written ones are laid out one element per address: then no aliasing finding is possible
    (the launcher asks this at every launch; an argument of another kind: None, the exact check)."""
    import numpy as np

    spans = []
    for p, a in zip(params, args):
        if p.kind in ("constant", "scalar"):
            continue
        if p.kind != "array" or type(a) is not np.ndarray or a.size == 0:
            return None
        lo = a.ctypes.data
        if a.flags.c_contiguous:
            spans.append((lo, lo + a.nbytes))
            continue
        strides = a.strides
        if any(s < 0 for s in strides):
            return None
        spans.append((lo, lo + a.itemsize + sum((n - 1) * s for n, s in zip(a.shape, strides))))
        if p.name in written and _self_overlap(tuple(p.shape), tuple(p.strides)) is not None:
            return None
    spans.sort()
    return all(spans[k][1] <= spans[k + 1][0] for k in range(len(spans) - 1))


@dataclasses.dataclass(frozen=True)
class _ListItem:
    """One array of a list argument, named ``As[k]``, for the aliasing check."""

    name: str
    shape: tuple[int, ...]
    strides: tuple[int, ...]


def _shared_bytes(a: Any, b: Any) -> tuple[tuple[int, int], tuple[int, int]]:
    """The byte range where two overlapping layouts' address ranges meet, as [start, end) offsets
    from each array's element 0 (negative where a negative stride reaches below it)."""
    start = max(a.lowest, b.lowest)
    end = min(a.lowest + a.extent, b.lowest + b.extent)
    return (start - a.ptr, end - a.ptr), (start - b.ptr, end - b.ptr)


@functools.lru_cache(maxsize=1024)
def _self_overlap(shape: tuple[int, ...],
                  strides: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """Two distinct in-bounds indices with one address, if any (None when the layout is injective)."""
    dims = sorted((abs(s), n, d) for d, (n, s) in enumerate(zip(shape, strides)) if n > 1)
    extent = 1
    injective = True
    for stride, n, _ in dims:
        if stride < extent:
            injective = False
            break
        extent = stride * (n - 1) + extent
    if injective:
        return None
    import numpy as np

    if np.prod(shape) > 2_000_000:
        return (tuple(0 for _ in shape), tuple(0 for _ in shape))
    grids = np.indices(shape).reshape(len(shape), -1)
    offsets = (grids * np.array(strides).reshape(-1, 1)).sum(axis=0)
    order = np.argsort(offsets, kind="stable")
    sorted_off = offsets[order]
    hits = np.nonzero(sorted_off[1:] == sorted_off[:-1])[0]
    if not len(hits):
        return None
    i, j = order[hits[0]], order[hits[0] + 1]
    return tuple(int(v) for v in grids[:, i]), tuple(int(v) for v in grids[:, j])
