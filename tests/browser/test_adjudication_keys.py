"""Adjudication by keyboard in Chromium (issue 37, defect 26): the queue's "Start
settling" opens the first open dispute; the settle page lists its shortcuts and a
reviewer settles a criterion and moves on with the keys alone."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotation.models import Adjudication
from tests.browser.conftest import htmx_idle, login
from tests.browser.test_adjudication import disputed  # noqa: F401  (the fixture)
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_start_settling_then_settle_and_move_on_with_the_keys(
    page,
    live_server,
    disputed,  # noqa: F811
):
    campaign, responses, _ = disputed
    reviewer = UserFactory(username="keys-reviewer", role="reviewer")
    login(page, live_server, reviewer)
    page.goto(f"{live_server.url}/campaigns/{campaign.pk}/adjudication/")
    page.wait_for_load_state("load")
    page.get_by_role("link", name="Start settling").click()
    page.wait_for_load_state("load")
    expect(page.locator("h1")).to_have_text(f"Response {responses[0].pk}")
    keys = page.locator("#adjudication-keys")
    expect(keys).to_be_visible()
    expect(keys).to_contain_text("j / k")
    expect(keys).to_contain_text("next response to settle")
    # The first (disputed) criterion's value has the focus: 3 chooses its third value
    # and moves to the note; Enter settles.
    select = page.locator("#score-comprehension")
    expect(select).to_be_focused()
    page.keyboard.press("3")
    note = page.locator("#note-comprehension")
    expect(note).to_be_focused()
    expect(select).to_have_value("3")
    page.keyboard.type("the middle of the raters")
    page.keyboard.press("Enter")
    page.wait_for_load_state("load")
    expect(page.locator("#criterion-comprehension")).to_contain_text("settled: 3")
    assert Adjudication.objects.get().score == 3
    # j / k move between the criteria's forms (an undisputed one once its "settle
    # anyway" box is open); n opens the next dispute.
    page.locator("#criterion-factuality summary").click()
    page.evaluate("() => document.activeElement.blur()")
    page.keyboard.press("j")
    expect(page.locator("#score-comprehension")).to_be_focused()
    page.keyboard.press("j")
    expect(page.locator("#score-factuality")).to_be_focused()
    page.keyboard.press("k")
    expect(page.locator("#score-comprehension")).to_be_focused()
    page.keyboard.press("n")
    page.wait_for_load_state("load")
    expect(page.locator("h1")).to_have_text(f"Response {responses[1].pk}")
    htmx_idle(page)
