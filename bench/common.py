"""What the benchmarks share: timing by the median of repeated runs, and (re-exported
from where they were first written) the rater loop's pieces that `bench/hostile.py`
replays beside its attacks.

The scratch-database helpers stay in `bench.export_scores`, the rater loop's HTTP
client, percentiles and answers in `bench.rating_loop`; other benches import them
from here.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

from bench.rating_loop import (  # noqa: F401 (re-exported for the benches)
    API,
    HttpClient,
    answer_of,
    free_port,
    percentile,
    saved_ok,
)


def median_time(fn: Callable[[], object], repeat: int) -> tuple[float, list[float]]:
    """`fn` run `repeat` times: the median wall time in seconds, and every time."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), times
