"""The one timing helper of the benchmarks and the GPU check: the median wall time of a call."""
from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def median_seconds(fn: Callable[[], object], repeat: int) -> float:
    """Median over ``repeat`` calls of ``fn``'s wall time, in seconds (the median resists the
    noise of a shared machine better than the mean)."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)
