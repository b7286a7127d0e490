"""Print a Module in the MLIR text form that ``tileirdisasm`` prints (and ``parse`` reads)."""
from __future__ import annotations

import re
from typing import Any

from tilecheck.ir.attrs import Dictionary, attr_text
from tilecheck.ir.core import Block, Function, Module, Op, Value
from tilecheck.ir.loc import Loc
from tilecheck.ir.opdefs import ENUMS, OpDef
from tilecheck.ir.text.format import Directive, anchor, compile_format

_NAME_OK = re.compile(r"[^A-Za-z0-9_$.]")


def print_module(module: Module) -> str:
    return "".join(_Printer().function(f) for f in module.functions)


def attr_present(opdef: OpDef, attrs: dict[str, Any], name: str) -> bool:
    """Whether an optional attribute is worth printing (present and not its default)."""
    if name not in attrs:
        return False
    value = attrs[name]
    adef = opdef.attr(name)
    if adef is not None and adef.default is not None and value == adef.default:
        return False
    if adef is not None and adef.kind == "bools":
        return any(value)
    return value is not None and value is not False


def format_attr(kind: str, value: Any) -> str:
    if kind in ENUMS or kind == "int":
        return str(value)
    if kind == "str":
        return attr_text(str(value))
    if kind == "i32s":
        return "[" + ", ".join(map(str, value)) + "]"
    if kind == "bools":
        return "[" + ", ".join("true" if v else "false" for v in value) + "]"
    if kind == "array":
        return "[" + ", ".join(map(str, value)) + "]"
    if kind == "hints" and isinstance(value, Dictionary):
        return "<" + ", ".join(f"{k} = {v}" for k, v in value.items) + ">"
    return str(value)


class _Printer:
    def __init__(self) -> None:
        self.names: dict[Value, str] = {}
        self.used: set[str] = set()
        self.counter = 0

    def name(self, value: Value) -> str:
        if value not in self.names:
            base = _NAME_OK.sub("_", value.name) if value.name else ""
            if base and base[0].isdigit():
                base = ""
            if not base:
                while str(self.counter) in self.used:
                    self.counter += 1
                candidate = str(self.counter)
            else:
                candidate, n = base, 0
                while candidate in self.used:
                    candidate = f"{base}_{n}"
                    n += 1
            self.used.add(candidate)
            self.names[value] = candidate
        return "%" + self.names[value]

    def names_of(self, values: tuple[Value, ...]) -> str:
        return ", ".join(self.name(v) for v in values)

    def function(self, f: Function) -> str:
        args = ", ".join(f"{self.name(a)}: {a.type}" for a in f.args)
        head = f"entry @{f.name}({args})" if f.is_entry else f"func @{f.name}({args})"
        if not f.is_entry and f.type.results:
            head += " -> (" + ", ".join(map(str, f.type.results)) + ")"
        hints = f.attrs.get("optimization_hints")
        if isinstance(hints, Dictionary):
            head += " optimization_hints=" + format_attr("hints", hints)
        return head + " {\n" + self.block_body(f.body, 1) + "}" + _loc_suffix(f.loc) + "\n"

    def block_body(self, block: Block, depth: int) -> str:
        return "".join(self.op(op, depth) for op in block.ops)

    def op(self, op: Op, depth: int) -> str:
        pad = "  " * depth
        lhs = f"{self.names_of(op.results)} = " if op.results else ""
        opdef = op.opdef
        if opdef is None:
            body = op.attrs.get("__text__", "")
            text = f"{op.name} {body}".rstrip()
            for region in op.regions:
                text += " {\n" + self.block_body(region.block, depth + 1) + pad + "}"
        else:
            fmt = compile_format(opdef)
            if fmt.body and fmt.body[0].kind == "custom":
                text = op.name + " " + getattr(self, "custom_" + fmt.body[0].name)(op, depth)
            else:
                parts = [op.name] + self.directives(op, opdef, fmt.body)
                types = self.type_section(op, fmt.types)
                text = " ".join(p for p in parts if p)
                if types:
                    text += " : " + types
        return pad + lhs + text + _loc_suffix(op.loc) + "\n"

    def directives(self, op: Op, opdef: OpDef, items: tuple[Directive, ...]) -> list[str]:
        out: list[str] = []
        for d in items:
            if d.kind == "lit":
                out.append(d.name)
            elif d.kind == "operand":
                out.append(self.names_of(op.operand_group(d.name)))
            elif d.kind == "attr":
                adef = opdef.attr(d.name)
                if d.name in op.attrs and adef is not None:
                    out.append(format_attr(adef.kind, op.attrs[d.name]))
            elif d.kind == "flag":
                if op.attrs.get(d.name):
                    out.append(d.name)
            elif d.kind == "opt":
                first = anchor(d)
                if first is not None and _present(op, opdef, first):
                    out.extend(self.directives(op, opdef, d.items))
        # glue punctuation the way MLIR prints it: "%a, %b", "%v[%i]", "<x>"
        text = " ".join(p for p in out if p)
        text = re.sub(r" ,", ",", text)
        text = re.sub(r" \[ ?", "[", text).replace(" ]", "]")
        text = re.sub(r"(\w) < (\S+) >", r"\1<\2>", text)
        text = text.replace("shape =[", "shape = [").replace("strides =[", "strides = [")
        text = text.replace(",[", ", [")
        return [text]

    def type_section(self, op: Op, spec: tuple[str, ...]) -> str:
        before: list[str] = []
        after: list[str] = []
        target = before
        for item in spec:
            if item == "->":
                target = after
                continue
            what = item[item.index("(") + 1:-1]
            if what == "result":
                target.append(str(op.results[0].type))
            elif what == "results":
                rtypes = [str(v.type) for v in op.results]
                if rtypes and len(set(rtypes)) == 1 and item.startswith("type("):
                    rtypes = rtypes[:1]
                target.extend(rtypes)
            else:
                group = op.operand_group(what)
                if group:
                    target.extend([str(group[0].type)] if item.startswith("type(") else
                                  [str(v.type) for v in group])
        if not before and not after:
            return ""
        text = ", ".join(before)
        if after:
            text += (" -> " if text else "-> ") + ", ".join(after)
        return text

    # ---- custom directives -----------------------------------------------------------------
    def region(self, block: Block, depth: int, elide: bool = False) -> str:
        ops = block.ops
        if elide and ops and ops[-1].opdef is not None and ops[-1].opdef.terminator and not ops[-1].operands:
            ops = ops[:-1]  # MLIR's implicit terminator: the parser adds it back
        return "{\n" + "".join(self.op(op, depth + 1) for op in ops) + "  " * depth + "}"

    def iter_values(self, args: tuple[Value, ...], inits: tuple[Value, ...]) -> str:
        pairs = ", ".join(f"{self.name(a)} = {self.name(v)}" for a, v in zip(args, inits))
        return f"iter_values({pairs})"

    def custom_for(self, op: Op, depth: int) -> str:
        body = op.regions[0].block
        iv, iter_args = body.args[0], body.args[1:]
        lb, ub, step = (self.name(op.operand(n)) for n in ("lowerBound", "upperBound", "step"))  # type: ignore[arg-type]
        text = f"{self.name(iv)} in ({lb} to {ub}, step {step})"
        if op.attrs.get("unsignedCmp"):
            text += " unsigned"
        text += f" : {iv.type}"
        if iter_args:
            text += " " + self.iter_values(iter_args, op.operand_group("initValues"))
            text += " -> (" + ", ".join(str(v.type) for v in op.results) + ")"
        return text + " " + self.region(body, depth, elide=True)

    def custom_loop(self, op: Op, depth: int) -> str:
        body = op.regions[0].block
        text = ""
        if body.args:
            text = self.iter_values(body.args, op.operand_group("initValues")) + " "
        arg_types = ", ".join(str(a.type) for a in body.args)
        result_types = ", ".join(str(v.type) for v in op.results)
        if arg_types or result_types:
            text += f": {arg_types} -> {result_types} ".replace(":  ->", ": ->")
        return text + self.region(body, depth)

    def custom_if(self, op: Op, depth: int) -> str:
        text = self.name(op.operand("condition"))  # type: ignore[arg-type]
        if op.results:
            text += " -> (" + ", ".join(str(v.type) for v in op.results) + ")"
        text += " " + self.region(op.regions[0].block, depth, elide=True)
        else_ops = op.regions[1].block.ops
        if len(else_ops) > 1 or (else_ops and else_ops[0].operands):
            text += " else " + self.region(op.regions[1].block, depth, elide=True)
        return text

    def _reduction(self, op: Op, depth: int, extra: str) -> str:
        body = op.regions[0].block
        identities = format_attr("array", op.attrs.get("identities", ()))
        operands = op.operand_group("operands")
        text = f"{self.names_of(operands)} dim={op.attrs.get('dim', 0)}{extra} identities={identities}"
        text += " : " + ", ".join(str(v.type) for v in operands)
        text += " -> " + ", ".join(str(v.type) for v in op.results)
        args = ", ".join(f"{self.name(a)}: {a.type}" for a in body.args)
        return text + f"\n{'  ' * depth}({args}) " + self.region(body, depth)

    def custom_reduce(self, op: Op, depth: int) -> str:
        return self._reduction(op, depth, "")

    def custom_scan(self, op: Op, depth: int) -> str:
        reverse = "true" if op.attrs.get("reverse") else "false"
        return self._reduction(op, depth, f" reverse={reverse}")


def _present(op: Op, opdef: OpDef, item: Directive) -> bool:
    if item.kind == "operand":
        return bool(op.operand_group(item.name))
    if item.kind == "flag":
        return bool(op.attrs.get(item.name))
    return attr_present(opdef, dict(op.attrs), item.name)


def _loc_suffix(loc: Loc) -> str:
    return f" loc({_loc_text(loc)})" if loc.is_known() else ""


def _loc_text(loc: Loc) -> str:
    text = f'"{loc.file}":{loc.line}:{loc.col}'
    if loc.caller is not None and loc.caller.is_known():
        return f"callsite({text} at {_loc_text(loc.caller)})"
    return text

