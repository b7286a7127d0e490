"""Process-wide memos with a size bound.

A test session under the plugin meets thousands of kernels and shapes (FlagGems' quick suite:
1,700 tests); each memo (compiled Tile IR, Triton's TTIR, the launcher's verdicts) keeps what it
learnt for the next launch, and an unbounded one grows with the number of tests. ``Memo`` keeps at
most ``limit`` entries and drops the oldest first: a dropped entry is computed again when asked,
never answered wrongly (every memo here is a cache of a function of its key).
"""
from __future__ import annotations

from typing import Any


class Memo(dict):
    """A ``dict`` of at most ``limit`` entries: setting a new key past it drops the oldest one."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit

    def __setitem__(self, key: Any, value: Any) -> None:
        if len(self) >= self.limit and key not in self:
            try:
                del self[next(iter(self))]
            except (KeyError, RuntimeError, StopIteration):  # another thread changed it meanwhile
                pass
        super().__setitem__(key, value)

    def setdefault(self, key: Any, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            self[key] = default
            return default
