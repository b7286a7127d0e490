"""How many blocks a CPU run may hold at once, so that its memory is bounded by the arrays plus one
wave, not by the grid; a run that cannot fit even so is refused before it allocates anything.

The interpreter runs blocks in waves, each value carrying one row per block of its wave, and keeps
every value of a wave until the wave ends. So a run needs about (blocks alive at once) x (bytes of
all the tile values one block computes), plus what does not depend on the schedule: the block-id
tables of the whole grid and, under the exact detector, its per-element summaries of every array.
``blocks_alive`` caps the blocks alive at once (every wave, and the waves an interleaving schedule
has started and not finished, together) at ``WAVE_BYTES`` of tile values, and at what memory is
left: a grid of 31,072 blocks with 4096-element rows runs in waves of a few hundred blocks. A grid
of 2**31 blocks needs tens of GiB of block ids alone: refusing it with a clear error beats a
``MemoryError`` (or the OOM killer) later.
"""
from __future__ import annotations

import functools
import math
from pathlib import Path

from tilecheck.errors import TilecheckError
from tilecheck.ir import Function
from tilecheck.ir import types as T

GRID_BYTES_PER_BLOCK = 80  # block ids (int64 x 3) built, transposed and copied, plus a permutation
# tile values of the blocks alive at once: large enough that lockstep waves keep numpy busy, small
# enough that three runs side by side fit on a laptop
WAVE_BYTES = 256 << 20


class MemoryBudgetError(TilecheckError):
    """A CPU run that would not fit in the memory available."""


@functools.lru_cache(maxsize=128)
def value_bytes_per_block(function: Function) -> int:
    """Bytes of every tile value one block of ``function`` computes (its entry args included): once
    per kernel (every confirmation run's budget asks it)."""
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


def estimate_bytes(function: Function, blocks: int, alive: int, fixed: int = 0) -> int:
    """About how much a run of ``blocks`` blocks, ``alive`` of them at once, needs (``fixed``: what
    it allocates whatever the schedule, such as the detector's summaries)."""
    return GRID_BYTES_PER_BLOCK * blocks + alive * value_bytes_per_block(function) + fixed


def available_bytes() -> int | None:
    """Memory this process may still use: the least of the system's available memory, a cgroup
    (container) limit less its usage, and the process's address-space limit (``ulimit -v``,
    ``RLIMIT_AS``) less what it has mapped; None when none can be read."""
    limits = []
    address_space = _address_space_left()
    if address_space is not None:
        limits.append(address_space)
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


def _address_space_left() -> int | None:
    """``RLIMIT_AS``'s soft limit less the process's mapped size (``VmSize``), when a limit is set."""
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    except (ImportError, OSError, ValueError):
        return None
    if soft == resource.RLIM_INFINITY or soft < 0:
        return None
    mapped = 0
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmSize:"):
                mapped = int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return max(soft - mapped, 0)


def blocks_alive(function: Function, grid: tuple[int, int, int], kernel: str, fixed: int = 0) -> int:
    """The most blocks a run of ``grid`` may hold at once (at least one), within ``WAVE_BYTES`` of tile
    values and the memory available; ``MemoryBudgetError`` when even one block at a time does not fit.
    ``fixed``: bytes the run allocates whatever the schedule (the detector's per-element summaries)."""
    blocks = math.prod(grid)
    per_block = max(value_bytes_per_block(function), 1)
    alive = max(1, min(blocks, WAVE_BYTES // per_block))
    have = available_bytes()
    if have is None:
        return alive
    left = have - GRID_BYTES_PER_BLOCK * blocks - fixed
    if left < per_block:
        need = estimate_bytes(function, blocks, 1, fixed)
        raise MemoryBudgetError(
            f"refusing to run {kernel} on the CPU: grid {grid} ({blocks} blocks) needs about {_size(need)} of "
            f"memory even one block at a time, and {_size(have)} is available; use a smaller grid")
    return max(1, min(alive, left // per_block))


def _size(n: int) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"  # pragma: no cover
