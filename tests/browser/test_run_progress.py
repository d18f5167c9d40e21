"""A researcher watches a judge run in Chromium: when it ends, the live block updates
its whole status (badge, status sentence) and the finished time, without a reload."""

from __future__ import annotations

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from judging.models import JudgeCall, JudgeRun
from tests.browser.conftest import login
from tests.factories import UserFactory
from tests.judging.data import add_calls, make_dataset, make_run

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_status_sentence_and_finished_time_follow_the_run_to_its_end(
    page, live_server
):
    researcher = UserFactory(username="run-researcher", role="researcher")
    run = make_run(dataset=make_dataset(), name="watched run")
    S, P = JudgeCall.Status.SUCCEEDED, JudgeCall.Status.PENDING
    add_calls(run, [S, P, P])
    login(page, live_server, researcher)
    page.goto(f"{live_server.url}/runs/{run.pk}/")
    page.evaluate("window.__noFullReload = 'still here'")
    expect(page.locator("#run-status")).to_have_text("Running")
    expect(page.locator("#run-status-text")).to_have_text("The run is running.")
    expect(page.locator("#run-finished")).to_have_text("–")

    # The worker finishes the run (what `judging.services.execution` records).
    finished = timezone.now()
    JudgeCall.objects.filter(run=run).update(status=S)
    JudgeRun.objects.filter(pk=run.pk).update(
        status=JudgeRun.Status.COMPLETED, finished_at=finished
    )

    stamp = timezone.localtime(finished).strftime("%Y-%m-%d %H:%M:%S")
    expect(page.locator("#run-status")).to_have_text("Completed", timeout=8000)
    expect(page.locator("#run-status-text")).to_have_text(
        f"The run is complete: finished {stamp}."
    )
    expect(page.locator("#run-finished")).to_have_text(stamp)
    assert page.evaluate("window.__noFullReload") == "still here"
    assert "The run is running." not in page.inner_text("body")
