"""Active time on task follows one rule on the rating page and on the pairwise page.

The same scripted rater (mouse only, then nothing, then another tab, then keys) must
send the same `active_seconds` from both pages: a second counts while the tab is
visible and the rater did something in the last 60 s; the pointer counts, a hidden
tab does not. Playwright's clock drives the page's time, so the figures are exact and
nothing waits on the wall clock.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest
from django.urls import reverse

from annotation.models import Assignment
from tests.browser.conftest import login, sky_pairwise_campaign, sky_rating_campaign
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

IDLE_AFTER_S = 60  # rater.js IDLE_AFTER_MS


@dataclass(frozen=True)
class RaterPage:
    make_campaign: Callable  # (raters=[...]) -> the campaign
    url_name: str
    panel: str
    row: str
    answer_keys: tuple[str, ...]  # one value for every row of the form
    submit_url_name: str


PAGES = {
    "rating": RaterPage(
        sky_rating_campaign,
        "annotation:rate-next",
        "#rating-panel",
        "[data-skill-row]",
        ("3", "4", "n"),
        "annotation:assignment-submit",
    ),
    "pairwise": RaterPage(
        sky_pairwise_campaign,
        "annotation:pairwise-next",
        "#pairwise-panel",
        "[data-label-row]",
        ("a", "t"),
        "annotation:pairwise-submit",
    ),
}


def set_tab_hidden(page, hidden: bool) -> None:
    """What the page sees when the rater switches to another tab and back.

    Headless Chromium keeps every page visible (bringing another page to the front or
    minimising the window leaves `visibilityState` at "visible"), so the document's
    visibility is set here and the browser's `visibilitychange` event dispatched.
    """
    page.evaluate(
        """hidden => {
            Object.defineProperty(document, "visibilityState",
                {configurable: true, get: () => hidden ? "hidden" : "visible"});
            Object.defineProperty(document, "hidden",
                {configurable: true, get: () => hidden});
            document.dispatchEvent(new Event("visibilitychange"));
        }""",
        hidden,
    )


def shown_active_seconds(page) -> int:
    return int(page.input_value("[data-active-seconds]"))


@pytest.mark.parametrize("kind", sorted(PAGES))
def test_active_seconds_count_the_mouse_and_not_a_hidden_tab_on_both_pages(
    page, live_server, transactional_db, kind
):
    rater_page = PAGES[kind]
    rater = UserFactory(role="rater")
    campaign = rater_page.make_campaign(raters=[rater])
    page.clock.install()
    login(page, live_server, rater)
    page.goto(live_server.url + reverse(rater_page.url_name, args=[campaign.pk]))
    page.wait_for_function(
        "row => !!document.activeElement.closest(row)", arg=rater_page.row
    )
    assignment_id = int(
        page.locator(rater_page.panel).get_attribute("data-assignment-id")
    )
    # From here on the page's time moves only when the test moves it. Whatever was
    # counted while the page loaded is then left to go idle.
    page.clock.pause_at(page.evaluate("Date.now()") / 1000 + 1)
    page.clock.run_for((IDLE_AFTER_S + 5) * 1000)
    expected = shown_active_seconds(page)

    # Reading with the mouse only: every second counts.
    for second in range(20):
        page.mouse.move(300 + 20 * (second % 2), 400)
        page.clock.run_for(1000)
    expected += 20
    assert shown_active_seconds(page) == expected

    # No input at all: the seconds up to 60 s after the last move count, no more
    # (the last second above was the first one after it).
    page.clock.run_for(90_000)
    expected += IDLE_AFTER_S - 1
    assert shown_active_seconds(page) == expected

    # Another tab for 30 s, just after a move: none of it counts; coming back does.
    page.mouse.move(500, 400)
    set_tab_hidden(page, True)
    page.clock.run_for(30_000)
    assert shown_active_seconds(page) == expected
    set_tab_hidden(page, False)
    page.clock.run_for(5000)
    expected += 5
    assert shown_active_seconds(page) == expected

    # Keys: moving between the rows, 5 s apart; then the answers and Enter at once.
    for key in ("j", "k"):
        page.keyboard.press(key)
        page.clock.run_for(5000)
    expected += 10
    submit_url = reverse(rater_page.submit_url_name, args=[assignment_id])
    with page.expect_response(
        lambda r: r.request.method == "POST" and r.url.endswith(submit_url)
    ) as answer:
        for key in rater_page.answer_keys:
            page.keyboard.press(key)
        page.keyboard.press("Enter")
    assert answer.value.ok

    assignment = Assignment.objects.get(pk=assignment_id)
    assert assignment.status == Assignment.Status.SUBMITTED
    assert assignment.active_seconds == expected
