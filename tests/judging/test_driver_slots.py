"""The run driver's rule for how many calls it may start: `concurrency` bounds the
requests in flight, so calls sleeping before a retry do not hold a slot."""

from __future__ import annotations

import pytest

from judging.services.execution.driver import calls_to_start


@pytest.mark.parametrize(
    ("open_", "backing_off", "expected"),
    [
        (0, 0, 32),  # nothing open: a full set
        (32, 0, 0),  # every slot busy
        (32, 5, 5),  # five calls wait out a Retry-After: five more may start
        (37, 5, 0),  # ... and once started, no more
        (64, 40, 0),  # at most a second full set, whatever throttles
        (40, 40, 24),
    ],
)
def test_calls_sleeping_before_a_retry_free_their_slot(open_, backing_off, expected):
    assert (
        calls_to_start(concurrency=32, calls_open=open_, calls_backing_off=backing_off)
        == expected
    )
