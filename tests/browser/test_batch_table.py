"""A Batch API run's batch table in Chromium at 1440 and 800 px (issue 36): four
columns, the provider's long ids and the notes wrapped, so the table never scrolls
sideways; each batch's cancel outcome shown. The batch rows are synthetic (written
directly, no provider), as a run with a dead worker would leave them."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from judging.models import JudgeBatch, JudgeRun
from judging.services.runs import judge_run_create
from tests.browser.conftest import login, shot
from tests.judging.test_execution import make_config, make_dataset

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LONG_ID = "batch_" + "7f3a9c" * 8  # as long as real providers' ids get


def test_the_batch_table_fits_800_px_and_shows_each_cancel_outcome(
    page, live_server, fake_server
):
    config, user = make_config(fake_server(latency_ms=0))
    run = judge_run_create(
        config=config, dataset=make_dataset(n_instructions=2), user=user, batch=True
    )
    JudgeRun.objects.filter(pk=run.pk).update(status=JudgeRun.Status.CANCELLED)
    rows = [
        ("submitted", "cancelled", 0, "", "cancelled at the provider"),
        (
            "submitted",
            "completed",
            1,
            "",
            "already completed at the provider: nothing to cancel",
        ),
        (
            "submitted",
            "in_progress",
            2,
            "",
            "the cancel failed: could not cancel the batch: HTTP 503 "
            "(synthetic: the provider was down)",
        ),
        (
            "failed",
            "failed",
            0,
            "the provider rejected the batch file: line 3: "
            + "a very long reason that goes on " * 6,
            "",
        ),
    ]
    for state, provider, round_, error, note in rows:
        JudgeBatch.objects.create(
            run=run,
            round=round_,
            state=state,
            provider_status=provider,
            batch_id=LONG_ID,
            input_file_id="file-" + "ab12" * 6,
            lines=49_999,
            completed_lines=48_000,
            failed_lines=1_999,
            error=error,
            cancel_note=note,
        )
    login(page, live_server, user)
    for width in (1440, 800):
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(f"{live_server.url}/runs/{run.pk}/")
        page.wait_for_load_state("load")
        table = page.locator("#run-batches")
        expect(table).to_be_visible()
        expect(table).to_contain_text("cancelled at the provider")
        expect(table).to_contain_text("already completed at the provider")
        expect(table).to_contain_text("the cancel failed: could not cancel the batch")
        expect(table.locator("thead th")).to_have_count(4)
        # The table is no wider than its box: nothing scrolls sideways.
        widths = table.evaluate(
            "t => [t.scrollWidth, t.parentElement.clientWidth,"
            " document.documentElement.scrollWidth]"
        )
        assert widths[0] <= widths[1], widths
        assert widths[2] <= width, widths
        table.scroll_into_view_if_needed()
        shot(page, f"batch-table-{width}")
