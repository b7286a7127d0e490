"""Reading Triton's TTIR text (``triton.compile(...).asm["ttir"]``, MLIR's pretty form) into a light
tree of ops the lowering walks.

TTIR is printed one op per line; a region opens at the end of its op's line (``{`` or, for ops
printed in generic form such as ``tt.reduce``, ``({``) and closes on a line of its own that carries
the op's location (``} loc(#loc4)``) or, for generic ops, its type signature (``}) : (...) -> ...``).
This reader splits the text along those lines and keeps each op's operand text as written: the
lowering parses what each op needs (``split_top``, ``value_refs``, ``parse_type``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from tilecheck.ir.errors import FrontendError
from tilecheck.ir.loc import Loc

_OP_LINE = re.compile(r'^(?:(?P<results>%[^=]+?)\s*=\s*)?(?P<name>"[\w.]+"|[a-z_][\w]*\.[\w.]+)(?P<rest>.*)$')
_BLOCK_LABEL = re.compile(r"^(?P<label>\^bb\d+)(?:\((?P<args>.*)\))?:$")
_ALIAS_DEF = re.compile(r"^(#loc\d*)\s*=\s*(loc\(.*\))\s*$")
_VALUE_REF = re.compile(r"%[\w$.\-]+(?:#\d+)?")
_FILE_LOC = re.compile(r'^"((?:[^"\\]|\\.)*)":(\d+):(\d+)$')


@dataclass
class TRegion:
    """One region: its entry block's arguments ``(name, type text)`` and its ops; a region of
    several blocks (unstructured branches, ``cf.cond_br``) keeps the others by label in ``blocks``."""

    args: list[tuple[str, str]] = field(default_factory=list)
    ops: list[TOp] = field(default_factory=list)
    blocks: dict[str, TRegion] = field(default_factory=dict)


@dataclass
class TOp:
    """One TTIR op as written: results (``%name`` or ``%name#i``), the op name, the text after the
    name (operands, attributes, types; a closing generic signature appended), regions, location."""

    name: str
    results: list[str]
    rest: str
    line: int
    regions: list[TRegion] = field(default_factory=list)
    loc_text: str | None = None


@dataclass
class TFunc:
    name: str
    args: list[tuple[str, str]]  # (name, type text) of the non-constexpr parameters, in order
    body: TRegion
    loc_text: str | None


class Locations:
    """``#locN`` aliases and their resolution to ``Loc`` (file, line, column, call site)."""

    def __init__(self, aliases: dict[str, str]) -> None:
        self.aliases = aliases
        self._memo: dict[str, Loc] = {}

    def resolve(self, text: str | None) -> Loc:
        if not text:
            return Loc.unknown()
        text = text.strip()
        if text.startswith("loc(") and text.endswith(")"):
            text = text[4:-1].strip()
        return self._resolve(text, 0)

    def _resolve(self, text: str, depth: int) -> Loc:
        if depth > 64:
            return Loc.unknown()
        if text.startswith("#loc"):
            if text not in self._memo:
                self._memo[text] = Loc.unknown()  # guards against alias cycles
                raw = self.aliases.get(text)
                self._memo[text] = self.resolve(raw) if raw else Loc.unknown()
            return self._memo[text]
        m = _FILE_LOC.match(text)
        if m:
            return Loc(m.group(1), int(m.group(2)), int(m.group(3)))
        if text.startswith("callsite(") and text.endswith(")"):
            inner = text[len("callsite("):-1]
            parts = split_top(inner, " at ")
            if len(parts) == 2:
                callee = self._resolve(parts[0].strip(), depth + 1)
                caller = self._resolve(parts[1].strip(), depth + 1)
                if callee.is_known():
                    return Loc(callee.file, callee.line, callee.col, caller if caller.is_known() else None)
                return caller
        if text.startswith('"'):  # a named location: "name"(inner)
            end = _string_end(text, 0)
            tail = text[end:].strip()
            if tail.startswith("(") and tail.endswith(")"):
                return self._resolve(tail[1:-1].strip(), depth + 1)
        if text.startswith("fused[") or text.startswith("fused<"):
            start = text.find("[")
            items = split_top(text[start + 1:text.rfind("]")], ",") if start >= 0 else []
            for item in items:
                loc = self._resolve(item.strip(), depth + 1)
                if loc.is_known():
                    return loc
        return Loc.unknown()


def _string_end(text: str, start: int) -> int:
    """The index just past the string literal that starts at ``start``."""
    i = start + 1
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == '"':
            return i + 1
        i += 1
    return len(text)


_OPEN, _CLOSE = "<({[", ">)}]"


def split_top(text: str, sep: str) -> list[str]:
    """``text`` split at ``sep`` where it is outside brackets and strings (``->`` is not a bracket)."""
    parts, depth, start, i, n = [], 0, 0, 0, len(text)
    while i < n:
        ch = text[i]
        if ch == '"':
            i = _string_end(text, i)
            continue
        if ch == "-" and text.startswith("->", i):
            if depth == 0 and text.startswith(sep, i):
                parts.append(text[start:i])
                i += len(sep)
                start = i
                continue
            i += 2
            continue
        if ch in _OPEN:
            depth += 1
        elif ch in _CLOSE:
            depth -= 1
        elif depth == 0 and text.startswith(sep, i):
            parts.append(text[start:i])
            i += len(sep)
            start = i
            continue
        i += 1
    parts.append(text[start:])
    return parts


def strip_loc(text: str) -> tuple[str, str | None]:
    """``text`` without its trailing ``loc(...)``, and that location's text."""
    text = text.rstrip()
    if not text.endswith(")"):
        return text, None
    idx = text.rfind("loc(")
    while idx >= 0:
        candidate = text[idx:]
        if _balanced(candidate) and (idx == 0 or text[idx - 1] in " \t"):
            return text[:idx].rstrip(), candidate
        idx = text.rfind("loc(", 0, idx)
    return text, None


def _balanced(text: str) -> bool:
    depth, i = 0, 0
    while i < len(text):
        ch = text[i]
        if ch == '"':
            i = _string_end(text, i)
            continue
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0 and i != len(text) - 1:
                return False
        i += 1
    return depth == 0


def value_refs(text: str) -> list[str]:
    """The SSA value names used in ``text`` (``%x``, ``%r#1``), in order."""
    return _VALUE_REF.findall(text)


def _result_names(text: str | None) -> list[str]:
    if not text:
        return []
    names: list[str] = []
    for part in text.split(","):
        part = part.strip()
        if ":" in part:  # %r:2 -> %r#0, %r#1
            base, count = part.split(":", 1)
            names += [f"{base}#{i}" for i in range(int(count))]
        elif part:
            names.append(part)
    return names


def _block_args(text: str) -> list[tuple[str, str]]:
    out = []
    for item in split_top(text, ","):
        item, _ = strip_loc(item.strip())
        if not item:
            continue
        name, _, type_text = item.partition(":")
        out.append((name.strip(), type_text.strip()))
    return out


def parse_ttir(text: str, kernel: str) -> tuple[TFunc, Locations]:
    """The kernel function of a TTIR module, and its locations."""
    aliases: dict[str, str] = {}
    lines = text.splitlines()
    for line in lines:
        m = _ALIAS_DEF.match(line.strip())
        if m:
            aliases[m.group(1)] = m.group(2)
    funcs = [i for i, line in enumerate(lines) if line.lstrip().startswith("tt.func ")]
    if not funcs:
        raise FrontendError(f"kernel '{kernel}': the TTIR has no tt.func")
    if len(funcs) > 1:  # @triton.jit helpers are inlined; a noinline one stays a separate function
        names = ", ".join(lines[i].split("@", 1)[1].split("(", 1)[0] for i in funcs)
        raise FrontendError(f"kernel '{kernel}': the TTIR has several functions ({names}); calls to "
                            "noinline helpers are not supported (drop noinline=True)")
    start = funcs[0]
    header = lines[start].strip()
    hm = re.match(r"tt\.func\s+(?:public\s+|private\s+)?@([\w$.]+)\((.*)\)(?:\s+attributes\s+\{.*\})?\s*\{$", header)
    if hm is None:
        raise FrontendError(f"kernel '{kernel}': cannot read the TTIR function header: {header[:200]}")
    args = [(name, _arg_type(type_text)) for name, type_text in _block_args(hm.group(2))]
    body = TRegion()
    # (the op whose region is open, the block ops go to, that region's entry block)
    stack: list[tuple[TOp | None, TRegion, TRegion]] = [(None, body, body)]
    func_loc = None
    for number in range(start + 1, len(lines)):
        line = _without_comment(lines[number]).strip()
        if not line:
            continue
        op, region, entry = stack[-1]
        if line.startswith("}"):
            if op is None:  # the function's own closing brace
                func_loc = strip_loc(line)[1]
                break
            tail = line[1:].strip()
            if tail in ("else {", "do {"):
                region = TRegion()
                op.regions.append(region)
                stack[-1] = (op, region, region)
                continue
            if tail.startswith(")"):  # a generic op's closing: the type signature follows
                tail = tail[1:].strip()
            rest, loc_text = strip_loc(tail)
            op.rest = f"{op.rest} {rest}".strip() if rest else op.rest
            op.loc_text = loc_text
            stack.pop()
            continue
        label = _BLOCK_LABEL.match(line)
        if label:
            block_args = _block_args(label.group("args") or "")
            if region.ops or region is not entry:  # a later block of the region: its ops go there
                block = TRegion(block_args)
                entry.blocks[label.group("label")] = block
                stack[-1] = (op, block, entry)
            else:
                region.args = block_args
            continue
        m = _OP_LINE.match(line)
        if m is None:
            raise FrontendError(f"kernel '{kernel}': cannot read TTIR line {number + 1}: {line[:200]}")
        rest, loc_text = strip_loc(m.group("rest"))
        op = TOp(m.group("name").strip('"'), _result_names(m.group("results")), rest.strip(), number + 1,
                 loc_text=loc_text)
        region.ops.append(op)
        opens = rest.endswith("{")
        if opens:
            op.rest = rest[:-1].rstrip()
            if op.rest.endswith("("):  # generic form: ({ ... })
                op.rest = op.rest[:-1].rstrip()
            inner = TRegion()
            op.regions.append(inner)
            stack.append((op, inner, inner))
    else:
        raise FrontendError(f"kernel '{kernel}': the TTIR function is not closed")
    return TFunc(hm.group(1), args, body, func_loc), Locations(aliases)


def _without_comment(line: str) -> str:
    """``line`` without a trailing ``// ...`` comment (outside strings)."""
    if "//" not in line:
        return line
    i = 0
    while i < len(line):
        if line[i] == '"':
            i = _string_end(line, i)
            continue
        if line.startswith("//", i):
            return line[:i]
        i += 1
    return line


def _arg_type(type_text: str) -> str:
    """An argument's type without its attribute dictionary (``{tt.divisibility = 16 : i32}``)."""
    parts = split_top(type_text, " {")
    return parts[0].strip()
