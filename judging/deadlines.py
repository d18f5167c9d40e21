"""How long a judge call may go without an answer before it is taken for hung.

A server that never answers one request in 200 holds a concurrency slot for the whole
call timeout (120 s by default) each time: at 32 in flight that is enough to cut a run's
throughput by five. The call timeout cannot simply be shortened, because a long
generation is legitimately slow. So `HangDeadline` learns, per client (one per driver,
so per run and worker process), how long healthy answers take, and gives every attempt
an adaptive deadline:

    deadline = clamp(factor x quantile(latencies of the last `window` answers),
                     floor, timeout)

It applies once `min_samples` answers were seen (before, only the timeout does). The
deadline of an attempt is looked at again while it waits, so a call that was already
waiting when enough answers arrived is cut as soon as it is over the new deadline. A
call cut this way is retried like any transient failure (kind ``timeout``, the reason
recorded), and each retry of the same call doubles its deadline (still at most the
timeout): an answer that is slow for a real reason, a long output, gets through on a
later attempt instead of being cut for ever. Defaults: the 99th percentile, a factor
of 4, a floor of 2 s (`JUDGE_HANG_*` settings).

Pure bookkeeping, no I/O: `judging.llm.JudgeClient` owns one and asks it.
"""

from __future__ import annotations

import math
from collections import deque


class HangDeadline:
    """Adaptive per-attempt deadlines from the latencies of answered calls."""

    def __init__(
        self,
        *,
        timeout: float,
        quantile: float = 0.99,
        factor: float = 4.0,
        floor: float = 2.0,
        min_samples: int = 20,
        window: int = 500,
    ) -> None:
        if not 0 < quantile <= 1:
            raise ValueError("quantile must be in (0, 1]")
        if factor < 1 or floor <= 0 or min_samples < 1 or window < min_samples:
            raise ValueError("factor >= 1, floor > 0, 1 <= min_samples <= window")
        self.timeout = timeout
        self.quantile = quantile
        self.factor = factor
        self.floor = floor
        self.min_samples = min_samples
        self._latencies: deque[float] = deque(maxlen=window)
        self._sorted: list[float] | None = None

    def observe(self, seconds: float) -> None:
        """Record the latency of an answered attempt."""
        self._latencies.append(seconds)
        self._sorted = None

    def typical(self) -> float | None:
        """The quantile of recent latencies, or None before `min_samples` answers."""
        if len(self._latencies) < self.min_samples:
            return None
        if self._sorted is None:
            self._sorted = sorted(self._latencies)
        index = min(
            len(self._sorted) - 1, math.ceil(self.quantile * len(self._sorted)) - 1
        )
        return self._sorted[max(0, index)]

    def deadline(self, retries_cut: int = 0) -> float:
        """Seconds an attempt may wait: adaptive once learnt, doubled for each earlier
        attempt of the same call that was cut, never more than the timeout."""
        typical = self.typical()
        if typical is None:
            return self.timeout
        adaptive = max(self.floor, self.factor * typical) * (2**retries_cut)
        return min(self.timeout, adaptive)

    def describe(self, retries_cut: int = 0) -> str:
        """Why the current deadline is what it is, for the recorded error."""
        typical = self.typical()
        if typical is None or self.deadline(retries_cut) >= self.timeout:
            return f"the call timeout {self.timeout:g}s"
        q = f"p{round(self.quantile * 100):d}"
        return (
            f"{self.deadline(retries_cut):.1f}s, {self.factor:g} x this run's {q} "
            f"latency {typical:.2f}s"
            + (f", doubled {retries_cut} time(s)" if retries_cut else "")
        )
