"""The oracle grammar's synchronisation idioms (issue 22): message passing through release/acquire
flags, a "last ticket" counter whose holder reads every block's partial, and their wrong variants.
A mixin of ``oracle_kernels._Builder`` (its ``pick``, ``fresh``, ``value`` and ``features``).

Message passing is a prologue of the kernel, before any statement that may return early: block b
waits for block b - 1's flag, so every block must raise its own (a waiter would spin forever)."""
from __future__ import annotations

from typing import Any

# variants of message passing: right, and each way of breaking it
PUBLISH = ("ok", "ok", "ok", "flag-first", "own-flag", "relaxed-release", "relaxed-acquire", "no-wait")
# variants of the last-ticket reduction
LAST_TICKET = ("ok", "ok", "relaxed", "first")


class SyncStatements:
    features: set[str]
    n_locks: int

    def pick(self, options: list[Any]) -> Any: ...
    def fresh(self, prefix: str) -> str: ...
    def value(self, scope: Any, dtype: str) -> str: ...

    def message_passing(self, scope: Any, indent: int) -> list[str]:
        """Block b stores its tile of y and raises flag b (release); block b > 0 waits for flag b - 1
        (acquire) and reads that tile, which later statements may use."""
        variant = self.pick(list(PUBLISH))
        self.features.add(f"publish-{variant}")
        pad = " " * indent
        release = "RELAXED" if variant == "relaxed-release" else "RELEASE"
        acquire = "RELAXED" if variant == "relaxed-acquire" else "ACQUIRE"
        waited = "b" if variant == "own-flag" else "b - 1"
        store = pad + f"ct.store(y, index=(b,), tile={self.value(scope, 'f')})"
        flag = pad + f"ct.atomic_xchg(fl, b, 1, memory_order={release})"
        name = self.fresh("t")
        lines = [flag, store] if variant == "flag-first" else [store, flag]
        lines += [pad + "if b > 0:"]
        if variant != "no-wait":
            lines += [pad + f"    while ct.atomic_cas(fl, {waited}, 1, 1, memory_order={acquire}) == 0:",
                      pad + "        pass"]
        lines += [pad + f"    {name} = ct.load(y, index=(b - 1,), shape=(T,), padding_mode=ZERO)",
                  pad + "else:", pad + f"    {name} = ct.full((T,), 0.0, dtype=ct.float32)"]
        scope.tiles += ((name, "f"),)
        return lines

    def _last_ticket(self, scope: Any, indent: int) -> list[str]:
        """Each execution stores a partial in y's tile b, then draws a ticket from cnt[1]; the one
        that draws the ticket nb - 1 sums every block's partial into acc's spare tile."""
        variant = self.pick(list(LAST_TICKET))
        self.features.add(f"last-ticket-{variant}")
        pad = " " * indent
        order = ", memory_order=RELAXED" if variant == "relaxed" else ""
        last = "0" if variant == "first" else "nb - 1"
        q, s, k = self.fresh("q"), self.fresh("s"), self.fresh("k")
        return [pad + f"ct.store(y, index=(b,), tile={self.value(scope, 'f')})",
                pad + f"{q} = ct.atomic_add(cnt, 1, 1{order})",
                pad + f"if {q} == {last}:",
                pad + f"    {s} = ct.full((T,), 0.0, dtype=ct.float32)",
                pad + f"    for {k} in range(nb):",
                pad + f"        {s} = {s} + ct.load(y, index=({k},), shape=(T,), padding_mode=ZERO)",
                pad + f"    ct.store(acc, index=({self.n_locks},), tile={s})"]
