"""Issue 37, "feedback on every wait", in Chromium: a slice switch of the agreement
dashboard that takes long shows "Working…" and marks the old figures busy (dimmed)
until the new ones arrive; a background report's page polls its progress bar until
the job is done and then says so, with the download.

The slow request is made slow deterministically: the test holds the browser's request
(Playwright's route) until it has seen the indicator, then lets it through. Nothing
in the product sleeps, and no timing is assumed."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from analysis.models import Job
from analysis.services.jobs import job_execute
from tests.analysis.agreement_data import make_agreement_setup
from tests.analysis.test_views_agreement import MODELS, N_INSTR, score_tables
from tests.browser.conftest import htmx_idle, login, shot
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def researcher(transactional_db):
    return UserFactory(username="browser-researcher", role="researcher")


@pytest.fixture
def setup(researcher):
    """The agreement dashboard's browser data (test_agreement_dashboard.py's)."""
    human, judge_a, judge_b = score_tables()
    return make_agreement_setup(
        researcher,
        human=human,
        judges=[judge_a, judge_b],
        n_instructions=N_INSTR,
        models=MODELS,
        name="browser-waits",
        difficulty=[1, 1, 2, 2, 3, 3, 4, 4, 5, None],
        is_hard=[True, False] * 5,
    )


def test_a_slow_slice_switch_shows_work_and_dims_the_old_figures(
    page, live_server, researcher, setup
):
    login(page, live_server, researcher)
    page.goto(f"{live_server.url}/agreement/{setup.dataset.pk}/")
    page.wait_for_load_state("load")
    results = page.locator("#agreement-results")
    expect(page.locator(".headline").first).to_be_visible()
    working = page.locator("#agreement-working")
    expect(working).to_be_hidden()
    htmx_idle(page)

    held = []

    def hold_slice_switches(route):
        request = route.request
        if "slice=" in request.url and request.headers.get("hx-request"):
            held.append(route)  # answered below, once the wait has been seen
        else:
            route.continue_()

    page.route("**/agreement/**", hold_slice_switches)
    link = page.locator("nav.slice-nav a[data-slice]").first
    key = link.get_attribute("data-slice")
    link.click()
    expect(working).to_be_visible()
    expect(working).to_have_text("Computing the agreement…")
    expect(working).to_have_attribute("role", "status")
    expect(results).to_have_attribute("aria-busy", "true")
    assert float(results.evaluate("e => getComputedStyle(e).opacity")) < 1
    shot(page, "waits-slice-switch-working")
    page.set_viewport_size({"width": 800, "height": 900})
    expect(working).to_be_visible()  # fixed in the corner at any width
    shot(page, "waits-slice-switch-working-800")
    assert len(held) == 1
    held[0].continue_()

    expect(page.locator(f'nav.slice-nav a[data-slice="{key}"]')).to_have_attribute(
        "aria-current", "true"
    )
    expect(working).to_be_hidden()
    expect(page.locator("#agreement-results")).not_to_have_attribute(
        "aria-busy", "true"
    )
    page.unroute("**/agreement/**")


def test_a_report_s_progress_bar_reaches_done(
    page, live_server, researcher, setup, browser_media
):
    job = Job.objects.create(
        kind="report",
        owner=researcher,
        dataset=setup.dataset,
        workspace=setup.dataset.workspace,
        params={"n_boot": 20, "seed": 0},
    )
    login(page, live_server, researcher)
    page.goto(f"{live_server.url}/jobs/{job.pk}/")
    box = page.locator("#job-progress")
    expect(box).to_contain_text("Queued")
    expect(box.locator("progress")).to_have_attribute("value", "0")
    expect(page.locator("#job-done")).to_have_count(0)

    job_execute(job_id=job.pk)  # what the worker does, while the page polls

    expect(page.locator("#job-done")).to_contain_text(
        "the result is below", timeout=15_000
    )
    expect(box.locator("progress")).to_have_attribute("value", "100")
    # Every step done, however many the report job has (`step N of N`).
    expect(box).to_contain_text(re.compile(r"step (\d+) of \1\b"))
    expect(box.get_by_role("link", name="Download")).to_be_visible()
    shot(page, "waits-report-done")


def test_an_owner_sets_a_webhook_and_reads_the_delivery_log(page, live_server):
    from flaskapp.models import NotificationSettings
    from tests.flaskapp.people_lab import make_lab

    lab = make_lab()
    login(page, live_server, lab.owner)
    page.goto(f"{live_server.url}/workspaces/{lab.a.pk}/settings/")
    page.get_by_role("link", name="Notifications").click()
    expect(page.locator("#delivery-log-empty")).to_be_visible()
    page.get_by_label("E-mail addresses").fill("lab@a.example.org")
    page.get_by_label("Webhook URL").fill("ftp://hooks.example.org/flask")
    page.get_by_role("button", name="Save").click()
    problems = page.locator("#notification-problems")
    expect(problems).to_contain_text("Webhook URL: must be an http(s) URL")
    expect(problems).to_contain_text("Signing secret: is needed")
    shot(page, "waits-notifications-refused")
    page.set_viewport_size({"width": 800, "height": 900})
    shot(page, "waits-notifications-refused-800")
    assert not NotificationSettings.objects.exists()
