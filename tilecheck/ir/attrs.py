"""Attribute values that are more than a plain int/str/bool: constants, assume predicates, hints."""
from __future__ import annotations

import math
import struct
from dataclasses import dataclass

from tilecheck.ir.types import ScalarType, Type

_FLOAT_FORMATS = {"f16": "<e", "f32": "<f", "f64": "<d"}
_BYTES = {"i1": 1, "i8": 1, "i16": 2, "i32": 4, "i64": 8, "f16": 2, "bf16": 2, "f32": 4, "tf32": 4,
          "f64": 8, "f8E4M3FN": 1, "f8E5M2": 1, "f8E8M0FNU": 1}


def element_bytes(name: str) -> int | None:
    return _BYTES.get(name)


def float_from_bits(name: str, bits: int) -> float | None:
    """The value of a float of type ``name`` with raw ``bits``; None for types without a host format."""
    if name in _FLOAT_FORMATS:
        fmt = _FLOAT_FORMATS[name]
        return struct.unpack(fmt, bits.to_bytes(struct.calcsize(fmt), "little"))[0]
    if name in ("bf16", "tf32"):
        shift = 16 if name == "bf16" else 0
        return struct.unpack("<f", (bits << shift).to_bytes(4, "little"))[0]
    if name in _FP8:
        return _fp8_value(bits, *_FP8[name])
    return None


# fp8 formats: (exponent bits, mantissa bits, bias, has infinities); e4m3fn has no infinity and a
# single NaN mantissa pattern (all ones) at the top exponent
_FP8 = {"f8E4M3FN": (4, 3, 7, False), "f8E5M2": (5, 2, 15, True)}


def _fp8_value(bits: int, ebits: int, mbits: int, bias: int, ieee: bool) -> float:
    sign = -1.0 if bits & 0x80 else 1.0
    exponent = (bits >> mbits) & ((1 << ebits) - 1)
    mantissa = bits & ((1 << mbits) - 1)
    top = (1 << ebits) - 1
    if ieee and exponent == top:
        return sign * math.inf if mantissa == 0 else math.nan
    if not ieee and exponent == top and mantissa == (1 << mbits) - 1:
        return math.nan
    if exponent == 0:
        return sign * mantissa * 2.0 ** (1 - bias - mbits)
    return sign * (1 + mantissa / (1 << mbits)) * 2.0 ** (exponent - bias)


def float_to_bits(name: str, value: float) -> int:
    if name in _FLOAT_FORMATS:
        return int.from_bytes(struct.pack(_FLOAT_FORMATS[name], value), "little")
    bits = int.from_bytes(struct.pack("<f", value), "little")
    return bits >> 16 if name == "bf16" else bits


def format_float(name: str, bits: int) -> str:
    """Decimal when it reads back exactly, else the raw bits in hex (as MLIR prints inf/nan)."""
    value = float_from_bits(name, bits)
    if value is None or not math.isfinite(value):
        return f"0x{bits:0{2 * (_BYTES.get(name, 4))}X}"
    return repr(value) if float_to_bits(name, value) == bits else f"0x{bits:X}"


@dataclass(frozen=True)
class DenseElements:
    """The value of a ``constant``: one value (a splat) or one per element, row-major.

    Integers are Python ints; floats are kept as raw bits so that nan/-0.0 survive exactly.
    """

    element: str
    values: tuple[int, ...]
    is_float: bool

    @property
    def is_splat(self) -> bool:
        return len(self.values) == 1

    def python_values(self) -> tuple[float | int, ...]:
        if not self.is_float:
            return self.values
        return tuple(float_from_bits(self.element, v) for v in self.values)  # type: ignore[misc]

    def __str__(self) -> str:
        if self.is_float:
            items = [format_float(self.element, v) for v in self.values]
        elif self.element == "i1":
            items = ["true" if v else "false" for v in self.values]
        else:
            items = [str(v) for v in self.values]
        body = items[0] if self.is_splat else f"[{', '.join(items)}]"
        return f"<{self.element}: {body}>"

    @staticmethod
    def from_bytes(element: ScalarType, data: bytes) -> DenseElements:
        width = element_bytes(element.name)
        if width is None or len(data) % width:
            raise ValueError(f"cannot decode a {element.name} constant of {len(data)} bytes")
        signed = element.is_integer and element.name != "i1"
        values = tuple(int.from_bytes(data[i:i + width], "little", signed=signed and not element.is_float)
                       for i in range(0, len(data), width))
        if len(values) > 1 and all(v == values[0] for v in values):
            values = values[:1]
        return DenseElements(element.name, values, element.is_float)


@dataclass(frozen=True)
class Bounded:
    """``assume bounded<lb, ub>``: the value lies in [lb, ub] (None = unbounded)."""

    lb: int | None
    ub: int | None

    def __str__(self) -> str:
        lo = "?" if self.lb is None else self.lb
        hi = "?" if self.ub is None else self.ub
        return f"bounded<{lo}, {hi}>"


@dataclass(frozen=True)
class DivBy:
    """``assume div_by<d>``: the value is a multiple of ``divisor`` (optionally every/along a dim)."""

    divisor: int
    every: int | None = None
    along: int | None = None

    def __str__(self) -> str:
        extra = ""
        if self.every is not None:
            extra += f", every {self.every}"
        if self.along is not None:
            extra += f" along {self.along}"
        return f"div_by<{self.divisor}{extra}>"


@dataclass(frozen=True)
class TypedValue:
    """An integer or float attribute with its type (reduce/scan identities)."""

    type: Type
    value: int  # raw bits for floats

    def __str__(self) -> str:
        name = str(self.type)
        if isinstance(self.type, ScalarType) and self.type.is_float:
            return f"{format_float(name, self.value)} : {name}"
        return f"{self.value} : {name}"


@dataclass(frozen=True)
class Dictionary:
    """A string-keyed attribute dictionary (optimization hints per target)."""

    items: tuple[tuple[str, object], ...]

    def __str__(self) -> str:
        return "{" + ", ".join(f"{k} = {_attr_text(v)}" for k, v in self.items) + "}"


def _attr_text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_attr_text(v) for v in value) + "]"
    return str(value)


def attr_text(value: object) -> str:
    """The text form of any attribute value (used for dictionaries and generic printing)."""
    return _attr_text(value)
