"""Will a CPU run fit in memory? Checked before the interpreter runs a whole grid.

The interpreter runs blocks in waves, each value carrying one row per block of its wave, and keeps
every value of a wave until the wave ends; an interleaving schedule keeps all waves alive at once.
So a run needs about (blocks alive at once) x (bytes of all the tile values one block computes),
plus the block-id tables of the whole grid. A grid of 2**31 blocks needs tens of GiB before the
first op runs: refusing it with a clear error beats a ``MemoryError`` (or the OOM killer) later.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from tilecheck.errors import TilecheckError
from tilecheck.ir import Function
from tilecheck.ir import types as T

GRID_BYTES_PER_BLOCK = 80  # block ids (int64 x 3) built, transposed and copied, plus a permutation


class MemoryBudgetError(TilecheckError):
    """A CPU run that would not fit in the memory available."""


def value_bytes_per_block(function: Function) -> int:
    """Bytes of every tile value one block of ``function`` computes (its entry args included)."""
    total = 0
    for op in function.walk():
        for v in op.results:
            total += _tile_bytes(v.type)
    return total + sum(_tile_bytes(a.type) for a in function.args)


def _tile_bytes(t: T.Type) -> int:
    if not isinstance(t, T.TileType):
        return 0  # tokens and views carry no per-block data
    element = t.element
    if isinstance(element, T.PointerType):
        size = 8  # element offsets, int64
    elif isinstance(element, T.ScalarType):
        size = 1 if element.name == "i1" else max(4, (element.bitwidth + 7) // 8)  # bf16/fp8 carried in f32
    else:
        return 0
    return size * math.prod(d for d in t.shape if d is not None)


def estimate_bytes(function: Function, blocks: int, alive: int) -> int:
    """About how much a run of ``blocks`` blocks, ``alive`` of them at once, needs."""
    return GRID_BYTES_PER_BLOCK * blocks + alive * value_bytes_per_block(function)


def available_bytes() -> int | None:
    """Memory this process may still use: the least of the system's available memory and a cgroup
    (container) limit; None when neither can be read."""
    limits = []
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                limits.append(int(line.split()[1]) * 1024)
    except (OSError, ValueError, IndexError):
        pass
    for limit_file, usage_file in (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
                                   ("/sys/fs/cgroup/memory/memory.limit_in_bytes",
                                    "/sys/fs/cgroup/memory/memory.usage_in_bytes")):
        try:
            limit, usage = Path(limit_file).read_text().strip(), Path(usage_file).read_text().strip()
        except OSError:
            continue
        if limit.isdigit() and usage.isdigit() and int(limit) < 2**60:
            limits.append(max(int(limit) - int(usage), 0))
    return min(limits) if limits else None


def check_fits(function: Function, grid: tuple[int, int, int], schedule: Any, kernel: str) -> None:
    """Raise ``MemoryBudgetError`` when running the whole ``grid`` under ``schedule`` would not fit."""
    blocks = math.prod(grid)
    single = any(op.name == "loop" for op in function.walk())
    if schedule.adversarial and schedule.interleave:
        alive = blocks  # every wave is started before any ends
    else:
        alive = 1 if single else min(schedule.max_wave or blocks, blocks)
    need = estimate_bytes(function, blocks, alive)
    have = available_bytes()
    if have is None or need <= have:
        return
    fix = "use a smaller grid"
    if GRID_BYTES_PER_BLOCK * blocks <= have and alive > 1:
        fix += ", or a Schedule(max_wave=...) without interleaving, to hold fewer blocks at once"
    raise MemoryBudgetError(
        f"refusing to run {kernel} on the CPU: grid {grid} ({blocks} blocks) needs about {_size(need)} of memory "
        f"and {_size(have)} is available (the interpreter holds every block of a wave at once); {fix}")


def _size(n: int) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"  # pragma: no cover
