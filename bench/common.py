"""What the benchmarks share: timing by the median of repeated runs.

The scratch-database helpers stay in `bench.export_scores`, where they were first
written, and are imported from there.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def median_time(fn: Callable[[], object], repeat: int) -> tuple[float, list[float]]:
    """`fn` run `repeat` times: the median wall time in seconds, and every time."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), times
