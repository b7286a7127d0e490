"""Attribute values in the Tile IR text form: constants, assume predicates, hints, identities."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tilecheck.ir import types as T
from tilecheck.ir.attrs import Bounded, DenseElements, Dictionary, DivBy, TypedValue, float_to_bits
from tilecheck.ir.text.lexer import Scanner
from tilecheck.ir.text.typeparse import parse_type


def parse_boolean(s: Scanner) -> bool:
    word = s.ident("true or false")
    if word not in ("true", "false"):
        raise s.error(f"expected true or false, found '{word}'")
    return word == "true"


def parse_dense(s: Scanner) -> DenseElements:
    s.expect("<")
    start = s.mark()
    element = parse_type(s)
    if not isinstance(element, T.ScalarType):
        raise s.error("constant element type must be a scalar type", start)
    s.expect(":")
    values: list[int] = []
    if s.accept("["):
        while not s.accept("]"):
            if values:
                s.expect(",")
            values.append(parse_scalar_bits(s, element))
    else:
        values.append(parse_scalar_bits(s, element))
    s.expect(">")
    if len(values) > 1 and all(v == values[0] for v in values):
        values = values[:1]
    return DenseElements(element.name, tuple(values), element.is_float)


def parse_scalar_bits(s: Scanner, element: T.ScalarType) -> int:
    if element.name == "i1" and (s.peek("true") or s.peek("false")):
        return int(parse_boolean(s))
    start = s.mark()
    text = s.number(f"a {element.name} value")
    if element.is_float:
        if text.lower().startswith(("0x", "-0x", "+0x")):
            return int(text, 16)
        try:
            return float_to_bits(element.name, float(text))
        except (OverflowError, ValueError):
            raise s.error(f"'{text}' is not a valid {element.name}", start) from None
    try:
        return int(text, 0)
    except ValueError:
        raise s.error(f"'{text}' is not an integer", start) from None


def parse_typed_array(s: Scanner) -> tuple[TypedValue, ...]:
    s.expect("[")
    out: list[TypedValue] = []
    while not s.accept("]"):
        if out:
            s.expect(",")
        save = s.pos
        s.number()
        s.expect(":")
        type_ = parse_type(s)
        end = s.pos
        s.pos = save
        if not isinstance(type_, T.ScalarType):
            raise s.error("identity must have a scalar type")
        out.append(TypedValue(type_, parse_scalar_bits(s, type_)))
        s.pos = end
    return tuple(out)


def parse_predicate(s: Scanner) -> Any:
    start = s.mark()
    word = s.ident("an assume predicate")
    s.expect("<")
    if word == "bounded":
        lb = None if s.accept("?") else s.integer()
        s.expect(",")
        ub = None if s.accept("?") else s.integer()
        s.expect(">")
        return Bounded(lb, ub)
    if word == "div_by":
        divisor = s.integer()
        every = along = None
        if s.accept(","):
            s.expect("every")
            every = s.integer()
        if s.accept("along"):
            along = s.integer()
        s.expect(">")
        return DivBy(divisor, every, along)
    raise s.error(f"unsupported assume predicate '{word}'", start)


def parse_hints(s: Scanner) -> Dictionary:
    return _entries(s, "<", ">", "a target name", parse_dictionary)


def parse_dictionary(s: Scanner) -> Dictionary:
    return _entries(s, "{", "}", "a key", _dictionary_value)


def _entries(s: Scanner, open_: str, close: str, what: str, value: Callable[[Scanner], object]) -> Dictionary:
    """``open key = value, ... close`` as a Dictionary."""
    s.expect(open_)
    items: list[tuple[str, object]] = []
    while not s.accept(close):
        if items:
            s.expect(",")
        key = s.ident(what)
        s.expect("=")
        items.append((key, value(s)))
    return Dictionary(tuple(items))


def _dictionary_value(s: Scanner) -> object:
    if s.peek("true") or s.peek("false"):
        return parse_boolean(s)
    if s.peek('"'):
        return s.string()
    value = s.integer()
    if s.accept(":"):
        parse_type(s)
    return value
