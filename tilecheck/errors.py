"""The error hierarchy: every error tilecheck raises derives from ``TilecheckError``."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tilecheck.ir.loc import Loc


class TilecheckError(Exception):
    """Base of all tilecheck errors; carries a source location when one is known."""

    def __init__(self, message: str, loc: Loc | None = None) -> None:
        super().__init__(message)
        self.message = message
        if loc is None:
            from tilecheck.ir.loc import Loc  # the ir package itself imports this module

            loc = Loc.unknown()
        self.loc = loc

    def __str__(self) -> str:
        if self.loc.is_known():
            return f"{self.loc}: {self.message}"
        return self.message


def where_raised(exc: BaseException) -> str:
    """`` (file.py:LINE)`` of the innermost frame that raised ``exc`` (empty when unknown): enough to
    find a failing line of user code without a traceback."""
    import traceback
    from pathlib import Path

    own = str(Path(__file__).resolve().parent)  # tilecheck's frames are not where the user's code failed
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if not f.filename.startswith("<") and not str(Path(f.filename).resolve()).startswith(own)]
    if not frames:  # e.g. a SyntaxError, raised by the import machinery (its message has the line)
        return ""
    last = frames[-1]
    return f" ({Path(last.filename).name}:{last.lineno})"
