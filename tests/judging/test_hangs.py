"""Hung calls (`judging.deadlines`): cut at an adaptive deadline and retried, while a
slow but healthy answer still gets through. Against the real local fake server, whose
``timeout`` outcome holds a request without ever answering."""

from __future__ import annotations

import asyncio
import logging

import pytest

from judging.deadlines import HangDeadline
from judging.llm import ChatRequest, JudgeClient, TransientJudgeError
from tests.judging import FakeJudge

REQUEST = ChatRequest(
    messages=[{"role": "user", "content": "Task type: pointwise\nSay hello."}],
    model="judge-model",
    temperature=0.0,
    max_tokens=64,
)


def test_no_deadline_before_enough_answers_then_factor_times_the_quantile():
    hang = HangDeadline(timeout=120, quantile=0.5, factor=4, floor=0.1, min_samples=3)
    assert hang.deadline() == 120  # nothing learnt yet: only the call timeout
    for seconds in (1.0, 2.0):
        hang.observe(seconds)
    assert hang.typical() is None and hang.deadline() == 120
    hang.observe(3.0)
    assert hang.typical() == 2.0  # the median of 1, 2, 3
    assert hang.deadline() == 8.0
    assert hang.deadline(retries_cut=1) == 16.0  # doubled for a call already cut
    assert hang.deadline(retries_cut=5) == 120  # never past the timeout
    assert "4 x this run's p50 latency 2.00s" in hang.describe()


def test_the_floor_and_the_window_bound_the_deadline():
    hang = HangDeadline(timeout=60, factor=4, floor=2.0, min_samples=2, window=3)
    for seconds in (0.01, 0.01):
        hang.observe(seconds)
    assert hang.deadline() == 2.0  # 4 x 10 ms is below the floor
    for seconds in (5.0, 5.0, 5.0):  # the window keeps only the last three
        hang.observe(seconds)
    assert hang.typical() == 5.0 and hang.deadline() == 20.0


@pytest.mark.parametrize(
    "kwargs",
    [{"quantile": 0}, {"factor": 0.5}, {"floor": 0}, {"min_samples": 10, "window": 5}],
)
def test_nonsense_settings_are_refused(kwargs):
    with pytest.raises(ValueError):
        HangDeadline(timeout=10, **kwargs)


def _calls(base_url: str, n: int, hang: HangDeadline, **client_kwargs):
    async def main():
        async with JudgeClient(
            base_url=base_url,
            api_key=None,
            timeout=client_kwargs.pop("timeout", 30.0),
            backoff_base=0.01,
            backoff_max=0.02,
            hang_deadline=hang,
            **client_kwargs,
        ) as client:
            results = []
            for _ in range(n):
                try:
                    results.append(await client.complete(REQUEST))
                except TransientJudgeError as exc:
                    results.append(exc)
            return results

    return asyncio.run(main())


def test_a_hung_request_is_cut_at_the_learnt_deadline_and_retried(fake_server, caplog):
    judge = FakeJudge(fake_server(latency_ms=20))
    hang = HangDeadline(timeout=30, factor=4, floor=0.2, min_samples=5)
    # Six answers to learn from, then one request that is never answered.
    judge.script("ok", "ok", "ok", "ok", "ok", "ok", "timeout", "ok")
    with caplog.at_level(logging.WARNING, logger="judging.llm"):
        results = _calls(judge.base_url, 7, hang, max_retries=2)
    last = results[-1]
    assert not isinstance(last, Exception), last
    assert last.attempts == 2  # the hung attempt, then the answer
    assert "taken for hung and retried" in caplog.text
    assert "4 x this run's p99 latency" in caplog.text
    # Far below the 30 s timeout: the server still holds the first attempt (or it
    # was just cancelled), so it saw exactly one request more than answers given.
    assert judge.stats()["by_outcome"]["timeout"] == 1


def test_a_slow_but_healthy_answer_gets_through_on_a_longer_deadline(fake_server):
    judge = FakeJudge(fake_server(latency_ms=600))
    hang = HangDeadline(timeout=30, factor=4, floor=0.2, min_samples=5)
    # Six quick answers learnt (as observed latencies, not timed here: on a loaded
    # machine real ones come back slower and would lift the deadline over 0.6 s).
    for _ in range(6):
        hang.observe(0.02)
    assert hang.deadline() == 0.2
    # Now one long generation: 0.6 s, far over the learnt 0.2 s deadline.
    [result] = _calls(judge.base_url, 1, hang, max_retries=5)
    assert not isinstance(result, Exception), result
    # Cut at 0.2 s and 0.4 s, answered within the doubled 0.8 s.
    assert result.attempts == 3


def test_a_request_that_always_hangs_ends_as_a_timeout_failure(fake_server):
    judge = FakeJudge(fake_server(latency_ms=10))
    hang = HangDeadline(timeout=1.5, factor=4, floor=0.1, min_samples=3)
    _calls(judge.base_url, 3, hang)
    judge.script("timeout", "timeout", "timeout")
    [error] = _calls(judge.base_url, 1, hang, timeout=1.5, max_retries=2)
    assert isinstance(error, TransientJudgeError)
    assert (error.kind, error.attempts) == ("timeout", 3)
    assert "taken for hung" in str(error)
