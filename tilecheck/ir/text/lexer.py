"""Character-level scanning for the Tile IR text form (MLIR syntax)."""
from __future__ import annotations

import bisect
import re

from tilecheck.ir.errors import TileIRParseError

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_$.]*")
_VALUE = re.compile(r"%[A-Za-z0-9_$.\-]+")
_NUMBER = re.compile(r"[-+]?(0x[0-9A-Fa-f]+|(\d+\.\d*|\d*\.\d+|\d+)([eE][-+]?\d+)?)")
_SYMBOL = re.compile(r"@[A-Za-z0-9_$.\-]+|@\"[^\"]*\"")
_ALIAS = re.compile(r"#[A-Za-z0-9_$.\-]+")
_WORD = re.compile(r"\S{1,20}")
_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')


class Scanner:
    """A cursor over the text; ``//`` comments and whitespace are skipped between tokens."""

    def __init__(self, text: str, filename: str = "<text>") -> None:
        self.text = text
        self.pos = 0
        self.filename = filename
        self._line_starts: list[int] | None = None

    def error(self, message: str, pos: int | None = None) -> TileIRParseError:
        """An error at ``pos``. The parser backtracks by catching these, so making one must not
        cost a pass over the text: lines are found in a table built once (parsing stays linear)."""
        pos = self.pos if pos is None else pos
        if self._line_starts is None:
            self._line_starts = [0, *(m.end() for m in re.finditer("\n", self.text))]
        line = bisect.bisect_right(self._line_starts, pos)
        start = self._line_starts[line - 1]
        end = self.text.find("\n", start)
        snippet = self.text[start:end if end >= 0 else len(self.text)].rstrip("\r")
        return TileIRParseError(message, snippet, line, pos - start + 1, self.filename)

    def skip(self) -> None:
        text, n = self.text, len(self.text)
        while self.pos < n:
            ch = text[self.pos]
            if ch in " \t\r\n":
                self.pos += 1
            elif text.startswith("//", self.pos):
                end = text.find("\n", self.pos)
                self.pos = n if end < 0 else end
            else:
                return

    def mark(self) -> int:
        """The position of the next token (for error messages that point at it)."""
        self.skip()
        return self.pos

    def at_end(self) -> bool:
        self.skip()
        return self.pos >= len(self.text)

    def peek(self, literal: str) -> bool:
        """Is ``literal`` next? Keywords must end at a word boundary."""
        self.skip()
        if not self.text.startswith(literal, self.pos):
            return False
        if literal[-1].isalnum() or literal[-1] == "_":
            end = self.pos + len(literal)
            return end >= len(self.text) or not (self.text[end].isalnum() or self.text[end] in "_$.")
        return True

    def accept(self, literal: str) -> bool:
        if self.peek(literal):
            self.pos += len(literal)
            return True
        return False

    def expect(self, literal: str, what: str | None = None) -> None:
        if not self.accept(literal):
            raise self.error(f"expected '{literal}'" + (f" {what}" if what else "") + f", found {self.found()}")

    def found(self) -> str:
        self.skip()
        if self.pos >= len(self.text):
            return "end of input"
        word = _WORD.match(self.text, self.pos)  # at pos: slicing the rest would copy the text
        return f"'{word.group(0)}'" if word else "whitespace"

    def match(self, pattern: re.Pattern[str]) -> str | None:
        self.skip()
        m = pattern.match(self.text, self.pos)
        if not m:
            return None
        self.pos = m.end()
        return m.group(0)

    def ident(self, what: str = "a keyword") -> str:
        word = self.match(_IDENT)
        if word is None:
            raise self.error(f"expected {what}, found {self.found()}")
        return word

    def value_name(self) -> str | None:
        return self.match(_VALUE)

    def number(self, what: str = "a number") -> str:
        num = self.match(_NUMBER)
        if num is None:
            raise self.error(f"expected {what}, found {self.found()}")
        return num

    def integer(self, what: str = "an integer") -> int:
        start = self.mark()
        text = self.number(what)
        try:
            return int(text, 0)
        except ValueError:
            raise self.error(f"expected {what}, found '{text}'", start) from None

    def string(self) -> str:
        s = self.match(_STRING)
        if s is None:
            raise self.error(f"expected a string, found {self.found()}")
        return bytes(s[1:-1], "utf-8").decode("unicode_escape")

    def symbol(self) -> str:
        s = self.match(_SYMBOL)
        if s is None:
            raise self.error(f"expected a symbol (@name), found {self.found()}")
        return s[1:].strip('"')

    def alias(self) -> str | None:
        return self.match(_ALIAS)
