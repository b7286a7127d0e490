"""Assembly formats: the small language in ``OpDef.fmt`` that drives both printer and parser.

    $name        an operand group or an attribute (by OpDef); variadic groups are comma lists
    !name        a bool attribute printed as the bare keyword ``name`` when true
    ?{ ... }     an optional group, present when its first $/! item is present (non-default)
    : ...        the type section: type(x) / types(x) / type(result) / type(results), and ->
    @name        a custom directive (for, loop, if, reduce, scan) implemented in Python
    anything else is a literal token.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from tilecheck.ir.opdefs import OpDef


@dataclass(frozen=True)
class Directive:
    kind: str  # lit | operand | attr | flag | opt | custom
    name: str = ""
    items: tuple[Directive, ...] = ()


@dataclass(frozen=True)
class Format:
    body: tuple[Directive, ...]
    types: tuple[str, ...]  # the type section, e.g. ("type(view)", "type(index)", "->", "type(results)")


@cache
def compile_format(opdef: OpDef) -> Format:
    words = opdef.fmt.split()
    types: tuple[str, ...] = ()
    if ":" in words:
        cut = words.index(":")
        words, types = words[:cut], tuple(w for w in words[cut + 1:] if w != ",")
    body, rest = _parse(words, 0, opdef)
    if rest != len(words):
        raise ValueError(f"format of {opdef.name}: unbalanced '}}'")
    return Format(tuple(body), types)


def _parse(words: list[str], i: int, opdef: OpDef) -> tuple[list[Directive], int]:
    out: list[Directive] = []
    operand_names = {o.name for o in opdef.operands}
    while i < len(words):
        w = words[i]
        if w == "}":
            return out, i
        if w == "?{":
            items, i = _parse(words, i + 1, opdef)
            out.append(Directive("opt", items=tuple(items)))
        elif w.startswith("$"):
            name = w[1:]
            out.append(Directive("operand" if name in operand_names else "attr", name))
        elif w.startswith("!"):
            out.append(Directive("flag", w[1:]))
        elif w.startswith("@"):
            out.append(Directive("custom", w[1:]))
        else:
            out.append(Directive("lit", w))
        i += 1
    return out, i


def anchor(group: Directive) -> Directive | None:
    """The first operand/attr/flag of an optional group: its presence decides the group's."""
    for item in group.items:
        if item.kind in ("operand", "attr", "flag"):
            return item
    return None
