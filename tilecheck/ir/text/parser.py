"""Parse the Tile IR text form (what ``tileirdisasm`` prints, and ``Module.to_text``) into a Module."""
from __future__ import annotations

import re
from typing import Any

from tilecheck.ir import types as T
from tilecheck.ir.core import Block, Function, Module, Op, Region, Value
from tilecheck.ir.errors import TileIRParseError
from tilecheck.ir.loc import Loc
from tilecheck.ir.opdefs import ENUMS, OPS, OpDef
from tilecheck.ir.text.attrparse import (
    parse_boolean,
    parse_dense,
    parse_hints,
    parse_predicate,
    parse_typed_array,
)
from tilecheck.ir.text.format import Directive, compile_format
from tilecheck.ir.text.lexer import Scanner
from tilecheck.ir.text.typeparse import parse_bracket_dims, parse_type, parse_type_list, parse_type_list_flat

_ALIAS_DEF = re.compile(r"^(#[A-Za-z0-9_$.\-]+)\s*=\s*(.*)$", re.MULTILINE)

_REGION_OPEN = re.compile(r"[ \t]*(\n|\Z)")  # "{" ending its line opens a region


def parse(text: str, filename: str = "<text>") -> Module:
    """Parse Tile IR text. Raises ``TileIRParseError`` with line:col and a caret snippet."""
    return _Parser(text, filename).module()


class _Parser:
    def __init__(self, text: str, filename: str) -> None:
        self.s = Scanner(text, filename)
        self.aliases = {m.group(1): m.group(2).strip() for m in _ALIAS_DEF.finditer(text)}
        self.alias_locs: dict[str, Loc] = {}
        self.scopes: list[dict[str, Value]] = []

    # ---- module and functions ------------------------------------------------------------------
    def module(self) -> Module:
        s = self.s
        functions: list[Function] = []
        name = "kernels"
        wrapped = False
        if s.accept("cuda_tile.module") or s.accept("module"):
            name, wrapped = s.symbol(), True
            s.expect("{")
        while not s.at_end():
            if s.peek("#"):
                end = s.text.find("\n", s.pos)
                s.pos = len(s.text) if end < 0 else end
            elif wrapped and s.accept("}"):
                wrapped = False
                self.optional_loc()
            elif s.peek("entry") or s.peek("func") or s.peek("cuda_tile.entry"):
                functions.append(self.function())
            else:
                raise s.error(f"expected 'entry' or 'func', found {s.found()}")
        if wrapped:
            raise s.error("missing '}' closing the module")
        if not functions:
            raise s.error("no entry or function found")
        return Module(tuple(functions), name)

    def function(self) -> Function:
        s = self.s
        keyword = s.ident()
        is_entry = keyword.endswith("entry")
        name = s.symbol()
        s.expect("(")
        self.scopes = [{}]
        args: list[Value] = []
        while not s.accept(")"):
            if args:
                s.expect(",")
            args.append(self.define_arg())
        results: tuple[T.Type, ...] = ()
        if s.accept("->"):
            results = tuple(parse_type_list(self.s))
        attrs: dict[str, Any] = {}
        if s.accept("optimization_hints"):
            s.expect("=")
            attrs["optimization_hints"] = parse_hints(self.s)
        block = Block(tuple(args))
        self.region_body(block)
        loc = self.optional_loc()
        ftype = T.FunctionType(tuple(a.type for a in args), results)
        return Function(name, ftype, block, is_entry, loc, attrs)

    def define_arg(self) -> Value:
        start = self.s.mark()
        name = self.s.value_name()
        if name is None:
            raise self.s.error(f"expected an argument (%name), found {self.s.found()}")
        self.s.expect(":")
        value = Value(parse_type(self.s), name[1:])
        self.define(name, value, start)
        return value

    def define(self, name: str, value: Value, pos: int) -> None:
        if name in self.scopes[-1]:
            raise self.s.error(f"value {name} is defined twice", pos)
        self.scopes[-1][name] = value

    def region_body(self, block: Block) -> None:
        self.s.expect("{")
        while not self.s.accept("}"):
            if self.s.at_end():
                raise self.s.error("missing '}' at the end of a region")
            block.ops.append(self.op())

    def region(self, args: list[tuple[str, Value, int]], implicit: str | None = None) -> Region:
        self.scopes.append({})
        for name, value, pos in args:
            self.define(name, value, pos)
        block = Block(tuple(v for _, v, _ in args))
        self.region_body(block)
        self.scopes.pop()
        last = block.ops[-1].opdef if block.ops else None
        if implicit is not None and (last is None or not last.terminator):
            # MLIR elides a terminator without operands (``for``/``if`` bodies); restore it.
            block.ops.append(Op(implicit, (), (), {}, (), Loc.unknown(), (("operands", 0),)))
        return Region((block,))

    # ---- values --------------------------------------------------------------------------------
    def use(self) -> Value:
        s = self.s
        start = s.mark()
        name = s.value_name()
        if name is None:
            raise s.error(f"expected a value (%name), found {s.found()}")
        if s.text.startswith("#", s.pos):
            s.pos += 1
            name += "#" + str(s.integer("a result number"))
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        raise s.error(f"use of undefined value {name}", start)

    def uses(self) -> list[Value]:
        values: list[Value] = []
        if not self.s.peek("%"):
            return values
        values.append(self.use())
        while self.s.peek(","):
            save = self.s.pos
            self.s.accept(",")
            if not self.s.peek("%"):
                self.s.pos = save
                break
            values.append(self.use())
        return values

    # ---- ops -----------------------------------------------------------------------------------
    def op(self) -> Op:
        s = self.s
        result_names: list[tuple[str, int]] = []
        if s.peek("%"):
            while True:
                pos = s.mark()
                name = s.value_name()
                if name is None:
                    raise s.error(f"expected a result name, found {s.found()}")
                count = 1
                if s.text.startswith(":", s.pos) and s.text[s.pos + 1:s.pos + 2].isdigit():
                    s.pos += 1
                    count = s.integer()
                result_names.extend((name if count == 1 else f"{name}#{i}", pos) for i in range(count))
                if not s.accept(","):
                    break
            s.expect("=")
        name_pos = s.mark()
        name = s.ident("an op name")
        name = name.removeprefix("cuda_tile.")
        opdef = OPS.get(name)
        n_results = len(result_names)
        if opdef is not None and opdef.results not in ("v",) and int(opdef.results) != n_results:
            raise s.error(f"'{name}' has {opdef.results} results, {n_results} named", name_pos)
        if opdef is None:
            op = self.unknown_op(name, n_results)
        else:
            op = self.known_op(opdef, n_results)
        for (rname, pos), value in zip(result_names, op.results):
            value.name = rname[1:].split("#")[0]
            self.define(rname, value, pos)
        return op

    def known_op(self, opdef: OpDef, n_results: int) -> Op:
        fmt = compile_format(opdef)
        b = _OpBuilder(opdef)
        if fmt.body and fmt.body[0].kind == "custom":
            return getattr(self, "custom_" + fmt.body[0].name)(b, n_results)
        self.directives(b, fmt.body)
        result_types = self.type_section(n_results) if n_results or fmt.types else []
        loc = self.optional_loc()
        return b.build(result_types, loc)

    def unknown_op(self, name: str, n_results: int) -> Op:
        """An op the model does not know: keep its text and operands; the verifier rejects it."""
        s = self.s
        start = s.mark()
        operands: list[Value] = []
        depth = 0
        while s.pos < len(s.text):
            ch = s.text[s.pos]
            if ch == "\n" and depth == 0:
                break
            if ch == "%":
                operands.append(self.use())
                continue
            if ch == "{" and depth == 0 and _REGION_OPEN.match(s.text, s.pos + 1):
                break  # a region; "{k = v}" on the same line is an attribute dictionary
            if s.text.startswith("loc(", s.pos) and depth == 0:
                break
            depth += ch in "([<{"
            depth -= ch in ")]>}"
            s.pos += 1
        raw = s.text[start:s.pos].strip()
        types: list[T.Type] = []
        if " : " in f" {raw} " or raw.startswith(":"):
            tail = raw[raw.rfind(":") + 1:]
            sub = _Parser(tail, s.filename)
            try:
                types = parse_type_list_flat(sub.s)
            except TileIRParseError:
                types = []
        results = tuple(Value(types[-n_results + i] if len(types) >= n_results and n_results else T.TOKEN)
                        for i in range(n_results))
        regions = []
        while s.peek("{"):
            regions.append(self.region([]))
        loc = self.optional_loc()
        attrs = {"__text__": raw}
        return Op(name, tuple(operands), results, attrs, tuple(regions), loc, (("operands", len(operands)),))

    def directives(self, b: _OpBuilder, items: tuple[Directive, ...]) -> None:
        s = self.s
        for d in items:
            if d.kind == "lit":
                s.expect(d.name, f"in '{b.opdef.name}'")
            elif d.kind == "operand":
                kind = b.operand_kind(d.name)
                b.operands[d.name] = [self.use()] if kind in ("single", "optional") else self.uses()
            elif d.kind == "attr":
                b.attrs[d.name] = self.attr(b.opdef, d.name)
            elif d.kind == "flag":
                s.expect(d.name)
                b.attrs[d.name] = True
            elif d.kind == "opt":
                save = s.pos
                saved_attrs, saved_operands = dict(b.attrs), dict(b.operands)
                try:
                    self.directives(b, d.items)
                except TileIRParseError:
                    s.pos = save
                    b.attrs, b.operands = saved_attrs, saved_operands

    def type_section(self, n_results: int) -> list[T.Type]:
        s = self.s
        if not s.accept(":"):
            if n_results:
                raise s.error(f"expected ':' and the result types, found {s.found()}")
            return []
        before: list[T.Type] = []
        if not s.peek("->"):
            before = parse_type_list(self.s)
        after = parse_type_list(self.s) if s.accept("->") else None
        types = after if after is not None else before
        if n_results == 0:
            return []
        if len(types) == n_results:
            return types
        if len(types) == 1:
            return types * n_results
        if len(types) > n_results:
            return types[-n_results:]
        raise s.error(f"expected {n_results} result types, found {len(types)}")


    # ---- attributes ----------------------------------------------------------------------------
    def attr(self, opdef: OpDef, name: str) -> Any:
        s = self.s
        adef = opdef.attr(name)
        kind = adef.kind if adef else "int"
        start = s.mark()
        if kind in ENUMS:
            word = s.ident(f"a {kind} value")
            if word not in ENUMS[kind]:
                raise s.error(f"'{word}' is not a {kind} (one of: {', '.join(ENUMS[kind])})", start)
            return word
        if kind == "int":
            return s.integer()
        if kind == "str":
            return s.string()
        if kind == "i32s":
            return tuple(int(d or 0) for d in parse_bracket_dims(self.s))
        if kind == "bools":
            s.expect("[")
            out = []
            while not s.accept("]"):
                if out:
                    s.expect(",")
                out.append(parse_boolean(self.s))
            return tuple(out)
        if kind == "dense":
            return parse_dense(self.s)
        if kind == "tagged":
            return parse_predicate(self.s)
        if kind == "hints":
            return parse_hints(self.s)
        if kind == "array":
            return parse_typed_array(self.s)
        if kind == "type":
            return parse_type(self.s)
        if kind == "bool":
            return parse_boolean(self.s)
        raise s.error(f"cannot parse attribute kind {kind}", start)


    # ---- locations -----------------------------------------------------------------------------
    def optional_loc(self) -> Loc:
        if not self.s.accept("loc"):
            return Loc.unknown()
        self.s.expect("(")
        loc = self.loc_body()
        self.s.expect(")")
        return loc

    def loc_body(self) -> Loc:
        s = self.s
        alias = s.alias()
        if alias is not None:
            return self.resolve_alias(alias)
        if s.accept("unknown"):
            return Loc.unknown()
        if s.accept("callsite"):
            s.expect("(")
            callee = self.loc_body()
            s.expect("at")
            caller = self.loc_body()
            s.expect(")")
            return Loc(callee.file, callee.line, callee.col, caller if caller.is_known() else None)
        if s.accept("fused"):
            s.expect("[")
            first = self.loc_body()
            while s.accept(","):
                self.loc_body()
            s.expect("]")
            return first
        filename = s.string()
        s.expect(":")
        line = s.integer()
        col = s.integer() if s.accept(":") else 0
        return Loc(filename, line, col)

    def resolve_alias(self, alias: str) -> Loc:
        if alias in self.alias_locs:
            return self.alias_locs[alias]
        self.alias_locs[alias] = Loc.unknown()  # guards against cycles
        raw = self.aliases.get(alias)
        loc = Loc.unknown()
        if raw is not None:
            sub = _Parser(raw, self.s.filename)
            sub.aliases, sub.alias_locs = self.aliases, self.alias_locs
            try:
                if raw.startswith("loc("):
                    loc = sub.optional_loc()
                elif raw.startswith("#cuda_tile.di_loc<"):
                    inner = sub.s.text[len("#cuda_tile.di_loc<"):].split(" in ")[0].strip()
                    loc = self.resolve_alias(inner)
            except TileIRParseError:
                loc = Loc.unknown()
        self.alias_locs[alias] = loc
        return loc

    # ---- custom directives (region ops) --------------------------------------------------------
    def iter_values(self) -> list[tuple[str, Value, int]]:
        """``iter_values(%a = %init, ...)``: returns (arg name, init value, pos); types come later."""
        s = self.s
        out: list[tuple[str, Value, int]] = []
        s.expect("(")
        while not s.accept(")"):
            if out:
                s.expect(",")
            pos = s.mark()
            name = s.value_name()
            if name is None:
                raise s.error(f"expected an iteration argument, found {s.found()}")
            s.expect("=")
            out.append((name, self.use(), pos))
        return out

    def custom_for(self, b: _OpBuilder, n_results: int) -> Op:
        s = self.s
        pos = s.mark()
        iv_name = s.value_name()
        if iv_name is None:
            raise s.error(f"expected the induction variable, found {s.found()}")
        s.expect("in")
        s.expect("(")
        b.operands["lowerBound"] = [self.use()]
        s.expect("to")
        b.operands["upperBound"] = [self.use()]
        s.expect(",")
        s.expect("step")
        b.operands["step"] = [self.use()]
        s.expect(")")
        b.attrs["unsignedCmp"] = s.accept("unsigned")
        s.expect(":")
        iv = Value(parse_type(self.s), iv_name[1:])
        inits: list[tuple[str, Value, int]] = []
        result_types: list[T.Type] = []
        if s.accept("iter_values"):
            inits = self.iter_values()
            s.expect("->")
            result_types = parse_type_list(self.s)
        b.operands["initValues"] = [v for _, v, _ in inits]
        args = [(iv_name, iv, pos)] + [(n, Value(v.type, n[1:]), p) for n, v, p in inits]
        _check_count(s, "for", n_results, len(result_types))
        b.regions.append(self.region(args, implicit="continue"))
        return b.build(result_types, self.optional_loc())

    def custom_loop(self, b: _OpBuilder, n_results: int) -> Op:
        s = self.s
        inits = self.iter_values() if s.accept("iter_values") else []
        arg_types: list[T.Type] = [v.type for _, v, _ in inits]
        result_types: list[T.Type] = []
        if s.accept(":"):
            if not s.peek("->"):
                arg_types = parse_type_list(self.s)
            s.expect("->")
            if not s.peek("{"):
                result_types = parse_type_list(self.s)
        elif s.accept("->"):
            result_types = parse_type_list(self.s)
        if len(arg_types) != len(inits):
            raise s.error(f"loop has {len(inits)} iteration values but {len(arg_types)} types")
        b.operands["initValues"] = [v for _, v, _ in inits]
        _check_count(s, "loop", n_results, len(result_types))
        b.regions.append(self.region([(n, Value(t, n[1:]), p) for (n, _, p), t in zip(inits, arg_types)]))
        return b.build(result_types, self.optional_loc())

    def custom_if(self, b: _OpBuilder, n_results: int) -> Op:
        s = self.s
        b.operands["condition"] = [self.use()]
        result_types = parse_type_list(self.s) if s.accept("->") else []
        _check_count(s, "if", n_results, len(result_types))
        b.regions.append(self.region([], implicit="yield"))
        if s.accept("else"):
            b.regions.append(self.region([], implicit="yield"))
        else:
            b.regions.append(Region((Block([], [Op("yield", (), (), {}, (), Loc.unknown(),
                                                   (("operands", 0),))]),)))
        return b.build(result_types, self.optional_loc())

    def custom_reduce(self, b: _OpBuilder, n_results: int) -> Op:
        return self._reduction(b, n_results, scan=False)

    def custom_scan(self, b: _OpBuilder, n_results: int) -> Op:
        return self._reduction(b, n_results, scan=True)

    def _reduction(self, b: _OpBuilder, n_results: int, scan: bool) -> Op:
        s = self.s
        b.operands["operands"] = self.uses()
        s.expect("dim")
        s.expect("=")
        b.attrs["dim"] = s.integer()
        if scan:
            s.expect("reverse")
            s.expect("=")
            b.attrs["reverse"] = parse_boolean(self.s)
        s.expect("identities")
        s.expect("=")
        b.attrs["identities"] = parse_typed_array(self.s)
        s.expect(":")
        parse_type_list(self.s)
        s.expect("->")
        result_types = parse_type_list(self.s)
        _check_count(s, b.opdef.name, n_results, len(result_types))
        s.expect("(")
        args: list[tuple[str, Value, int]] = []
        while not s.accept(")"):
            if args:
                s.expect(",")
            pos = s.mark()
            name = s.value_name()
            if name is None:
                raise s.error(f"expected a region argument, found {s.found()}")
            s.expect(":")
            args.append((name, Value(parse_type(self.s), name[1:]), pos))
        b.regions.append(self.region(args))
        return b.build(result_types, self.optional_loc())


def _check_count(s: Scanner, name: str, named: int, typed: int) -> None:
    if named != typed:
        raise s.error(f"'{name}' names {named} results but declares {typed} result types")


class _OpBuilder:
    def __init__(self, opdef: OpDef) -> None:
        self.opdef = opdef
        self.operands: dict[str, list[Value]] = {}
        self.attrs: dict[str, Any] = {}
        self.regions: list[Region] = []

    def operand_kind(self, name: str) -> str:
        for o in self.opdef.operands:
            if o.name == name:
                return o.kind
        return "single"

    def build(self, result_types: list[T.Type], loc: Loc) -> Op:
        _fix_mask_padding(self)
        operands: list[Value] = []
        segments: list[tuple[str, int]] = []
        for o in self.opdef.operands:
            group = self.operands.get(o.name, [])
            operands.extend(group)
            segments.append((o.name, len(group)))
        attrs = dict(self.attrs)
        for a in self.opdef.attrs:
            if a.name not in attrs and a.default is not None:
                attrs[a.name] = a.default
        results = tuple(Value(t) for t in result_types)
        return Op(self.opdef.name, tuple(operands), results, attrs, tuple(self.regions), loc, tuple(segments))


def _fix_mask_padding(b: _OpBuilder) -> None:
    """``load_ptr_tko %p, %x``: a lone optional operand is the mask only if it is an i1 tile."""
    mask = b.operands.get("mask")
    if mask and "paddingValue" in {o.name for o in b.opdef.operands} and not b.operands.get("paddingValue"):
        t = mask[0].type
        if not (isinstance(t, T.TileType) and t.element == T.I1):
            b.operands["paddingValue"], b.operands["mask"] = mask, []
