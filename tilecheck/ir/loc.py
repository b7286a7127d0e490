"""Source locations: where an op came from in the user's Python (or .tileir) source."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Loc:
    """A file:line:col position; ``caller`` is the call site when the op was inlined from a helper."""

    file: str | None
    line: int = 0
    col: int = 0
    caller: Loc | None = None

    @staticmethod
    def unknown() -> Loc:
        return _UNKNOWN

    def is_known(self) -> bool:
        return self.file is not None

    def short(self, unknown: str = "<unknown>") -> str:
        """``file.py:line`` (the file's base name), for one-line messages."""
        if not self.is_known():
            return unknown
        return f"{(self.file or '?').rsplit('/', 1)[-1]}:{self.line}"

    def outermost(self) -> Loc:
        """The location in the kernel body itself (the last call site of an inlined helper)."""
        loc = self
        while loc.caller is not None and loc.caller.is_known():
            loc = loc.caller
        return loc

    def __str__(self) -> str:
        if not self.is_known():
            return "<unknown>"
        text = f"{self.file}:{self.line}"
        if self.col:
            text += f":{self.col}"
        if self.caller is not None and self.caller.is_known():
            text += f" (inlined at {self.caller})"
        return text


_UNKNOWN = Loc(None)
