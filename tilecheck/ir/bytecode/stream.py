"""Primitive decoding of Tile IR bytecode: bytes, varints, fixed-width integers (little endian)."""
from __future__ import annotations

from tilecheck.ir.errors import BytecodeError


class Stream:
    """A cursor over ``data[start:end]``; errors name the section and the absolute byte offset."""

    def __init__(self, data: bytes, start: int = 0, end: int | None = None, section: str = "header"):
        self.data = data
        self.pos = start
        self.end = len(data) if end is None else end
        self.section = section

    def error(self, message: str) -> BytecodeError:
        return BytecodeError(message, self.section, self.pos)

    def at_end(self) -> bool:
        return self.pos >= self.end

    def byte(self) -> int:
        if self.pos >= self.end:
            raise self.error("unexpected end of data")
        value = self.data[self.pos]
        self.pos += 1
        return value

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > self.end:
            raise self.error(f"needs {n} bytes, {self.end - self.pos} left")
        chunk = self.data[self.pos:self.pos + n]
        self.pos += n
        return chunk

    def varint(self) -> int:
        result = shift = 0
        while True:
            b = self.byte()
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result
            shift += 7
            if shift > 70:
                raise self.error("varint longer than 10 bytes")

    def signed_varint(self) -> int:
        raw = self.varint()
        return ~(raw >> 1) if raw & 1 else raw >> 1

    def fixed(self, width: int, signed: bool = False) -> int:
        return int.from_bytes(self.take(width), "little", signed=signed)

    def int_list(self, width: int) -> tuple[int, ...]:
        count = self.varint()
        return tuple(self.fixed(width, signed=True) for _ in range(count))

    def align(self, alignment: int) -> None:
        """Skip padding so that the absolute offset is a multiple of ``alignment``."""
        if alignment < 1:
            raise self.error(f"alignment {alignment} (expected a positive number of bytes)")
        self.pos += -self.pos % alignment
        if self.pos > self.end:
            raise self.error("padding runs past the end of the section")
