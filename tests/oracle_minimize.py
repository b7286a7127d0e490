"""Classifying and minimising an oracle disagreement (``scripts/oracle_long.py``): the grammar
constructs a module's text holds (``source_features``, the long run's class keys) and a statement-by-
statement reduction that keeps a predicate true (``minimize``)."""
from __future__ import annotations

from typing import Any


_SOURCE_FEATURES = {
    "lock": r"while ct\.atomic_cas\(lk", "lock-release-other": r"atomic_xchg\(lk, \(",
    "relaxed": r"order=RELAXED",
    "cas-release": r"atomic_cas\(lk, [^,]+, 1, 0", "helper": r"^\s+h\d+\(", "return": r"^\s+return$",
    "continue": r"^\s+continue$", "break": r"^\s+break$", "for": r"^\s+for j", "while": r"^\s+while w",
    "counter": r"^\s+p\d+ \+= ", "index-array": r"ct\.gather\(idx", "unchecked": r"check_bounds=False",
    "tiled-view": r"tiled_view", "slice": r"\.slice\(", "atomic-rmw": r"atomic_(add|max)\(",
    "atomic-xchg": r"atomic_xchg\(c", "atomic-cas": r"atomic_cas\(c", "scatter": r"ct\.scatter\(",
    "gather": r"ct\.gather\((x|y|c|ya|yb)", "tile2d": r"\(m, index=", "if-data": r"if .*(ct\.load|ct\.sum)",
    "if-bid": r"if b", "assume": r"ASSUME = \[.+\]", "ticket": r"atomic_add\(cnt", "cumsum": r"ct\.cumsum",
    "bits": r"b (\^|>>|&) 1",
    "view-order": r"memory_order=RELAXED, memory_scope", "scope-block": r"memory_scope=BLOCK",
    "publish": r"atomic_xchg\(fl", "last-ticket": r"atomic_add\(cnt, 1", "lock-xchg": r"while ct\.atomic_xchg\(lk",
    "atomic-result": r"= ct\.atomic_(add|max|xchg)\(", "grid-stride": r"range\(b\d, \d+ \* ct\.num_blocks",
}


def source_features(source: str) -> frozenset[str]:
    """The grammar constructs present in a module's text (a class key for a minimised case)."""
    import re

    return frozenset(name for name, pattern in _SOURCE_FEATURES.items()
                     if re.search(pattern, source, re.MULTILINE))


def _groups(lines: list[str], start: int, stop: int) -> list[tuple[int, int]]:
    """Statement groups of lines[start:stop] at their first line's indentation: (first, end) where
    end is past the indented lines that belong to it (an if/for/while body, an else branch)."""
    out = []
    i = start
    while i < stop:
        indent = len(lines[i]) - len(lines[i].lstrip())
        j = i + 1
        while j < stop and (len(lines[j]) - len(lines[j].lstrip()) > indent or
                            lines[j].strip() == "else:" and len(lines[j]) - len(lines[j].lstrip()) == indent):
            j += 1
        out.append((i, j))
        i = j
    return out


def _candidates(source: str) -> list[str]:
    """Smaller variants of a module: one statement of the kernel or a helper removed (an emptied
    body becomes ``pass``), an ``if`` replaced by its body, or one grid axis shrunk."""
    lines = source.split("\n")
    out = []
    protected = ("b = ", "nb = ", "nt = ", "b0 = ", "b1 = ", "b2 = ")
    bodies = []
    i = 0
    while i < len(lines):
        if lines[i].startswith("def h") or lines[i].startswith("def k("):
            j = i + 1
            while j < len(lines) and lines[j].startswith(" "):  # generated bodies have no blank lines
                j += 1
            bodies.append((i + 1, j))
            i = j
        else:
            i += 1

    def nested(first: int, end: int) -> list[tuple[int, int]]:
        found = []
        for a, b in _groups(lines, first, end):
            found.append((a, b))
            if b - a > 1:
                found += nested(a + 1, b)
        return found

    for first, end in bodies:
        name = lines[first - 1][len("def "):].split("(")[0]
        if name != "k" and not any(f"{name}(" in line for line in lines[:first - 1] + lines[end:]):
            out.append("\n".join(lines[:first - 1] + lines[end:]))  # a helper no one calls any more
            continue
        for a, b in sorted(nested(first, end), key=lambda g: g[0] - g[1]):
            if lines[a].strip().startswith(protected) or lines[a].strip() in ("pass", "else:"):
                continue
            indent = lines[a][:len(lines[a]) - len(lines[a].lstrip())]
            rest = lines[:a] + lines[b:]
            if rest[a - 1].rstrip().endswith(":") and (a >= len(rest) or not rest[a].startswith(indent)):
                rest.insert(a, indent + "pass")  # the removed statement was a body's only one
            out.append("\n".join(rest))
            if lines[a].lstrip().startswith("if ") and b - a > 1:
                body = [line[4:] for line in lines[a + 1:b] if line.strip() != "else:"]
                if not any(line.strip() in ("return", "continue", "break") for line in body):
                    out.append("\n".join(lines[:a] + body + lines[b:]))
    for n, line in enumerate(lines):
        if line.startswith("GRID = "):
            grid = [int(v) for v in line[len("GRID = "):].strip("()").split(",")]
            for axis in range(3):
                if grid[axis] > 1:
                    smaller = list(grid)
                    smaller[axis] -= 1
                    out.append("\n".join(lines[:n] + [f"GRID = {tuple(smaller)}"] + lines[n + 1:]))
    return out


def minimize(source: str, interesting: Any, budget: int = 300) -> str:
    """Greedy statement-level reduction: keep the first smaller variant that is still
    ``interesting(source)`` until none is (or ``budget`` tries are spent)."""
    tried = 0
    progress = True
    while progress and tried < budget:
        progress = False
        for candidate in _candidates(source):
            tried += 1
            if interesting(candidate):
                source = candidate
                progress = True
                break
            if tried >= budget:
                break
    return source
