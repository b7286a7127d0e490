"""Errors raised while reading Tile IR (text, bytecode) or compiling a cuTile kernel."""
from __future__ import annotations

from tilecheck.errors import TilecheckError
from tilecheck.ir.loc import Loc


class TileIRError(TilecheckError):
    """Malformed or unsupported Tile IR."""


class TileIRParseError(TileIRError):
    """Malformed Tile IR text; ``line``/``col`` are 1-based and the message shows a caret."""

    def __init__(self, message: str, snippet: str, line: int, col: int, filename: str = "<text>") -> None:
        """``snippet``: the text of line ``line``, shown with a caret under column ``col``."""
        self.line, self.col, self.filename = line, col, filename
        caret = " " * max(col - 1, 0) + "^"
        super().__init__(f"{filename}:{line}:{col}: error: {message}\n  {snippet}\n  {caret}",
                         Loc(filename, line, col))

    def __str__(self) -> str:
        return self.message


class BytecodeError(TileIRError):
    """Malformed or unsupported Tile IR bytecode; names the section and byte offset."""

    def __init__(self, message: str, section: str, offset: int) -> None:
        self.section, self.offset = section, offset
        super().__init__(f"bytecode {section} section, byte {offset}: {message}")


class FrontendError(TilecheckError):
    """A cuTile kernel could not be compiled to Tile IR, or its arguments are wrong."""
