"""Layout defects of issue 37 in Chromium: at 800 px the one action of the raters'
history tables is on screen (defect 6), and at 1440x900 the submit bar does not cover
the pairwise choice buttons on first view (defect 28)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from playwright.sync_api import expect

from annotation.selectors import assignment_skills
from annotation.services.pairwise import pairwise_next, pairwise_submit
from annotation.services.rating import assignment_next, rating_submit
from tests.browser.conftest import login, sky_pairwise_campaign, sky_rating_campaign
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def viewport_shot(page, name: str) -> None:
    """The window as a person sees it (not the full page), in $FLASK_SCREENSHOTS."""
    folder = os.environ.get("FLASK_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(folder) / f"{name}.png"))


@pytest.fixture
def rater(transactional_db):
    return UserFactory(username="layout-rater", role="rater")


def on_screen(page, locator) -> bool:
    """The element is inside the window, and nothing covers its centre."""
    return page.evaluate(
        """el => {
            const r = el.getBoundingClientRect();
            if (r.width === 0 || r.left < 0 || r.top < 0) return false;
            if (r.right > window.innerWidth || r.bottom > window.innerHeight) return false;
            const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
            return !!hit && (hit === el || el.contains(hit));
        }""",
        locator.element_handle(),
    )


def no_sideways_scroll(page) -> bool:
    return page.evaluate(
        "() => document.documentElement.scrollWidth <= window.innerWidth"
    )


def test_at_800_px_the_history_actions_are_on_screen(page, live_server, rater):
    campaign = sky_rating_campaign(raters=[rater])
    for _ in range(2):
        a = assignment_next(campaign=campaign, rater=rater).assignment
        scores = {s.key: 3 for s in assignment_skills(assignment=a)}
        rating_submit(assignment_id=a.pk, rater=rater, scores=scores, active_seconds=9)
    pairs = sky_pairwise_campaign(raters=[rater])
    a = pairwise_next(campaign=pairs, rater=rater).assignment
    pairwise_submit(
        assignment_id=a.pk, rater=rater, label="A", skill_labels={"factuality": "A"}
    )
    page.set_viewport_size({"width": 800, "height": 900})
    login(page, live_server, rater)
    page.goto(f"{live_server.url}/rate/{campaign.pk}/mine/")
    page.wait_for_load_state("load")
    links = page.get_by_role("link", name="Review / amend")
    expect(links).to_have_count(2)
    links.first.scroll_into_view_if_needed()
    assert on_screen(page, links.first)
    assert no_sideways_scroll(page)
    viewport_shot(page, "my-ratings-800")
    page.goto(f"{live_server.url}/pairwise/compare/{pairs.pk}/mine/")
    page.wait_for_load_state("load")
    amend = page.locator("#pairwise-history a", has_text="Amend")
    expect(amend).to_have_count(1)
    amend.scroll_into_view_if_needed()
    assert on_screen(page, amend)
    when = page.locator('#pairwise-history td[data-label="When"]').first
    expect(when).to_be_visible()
    assert on_screen(page, when)
    assert no_sideways_scroll(page)
    viewport_shot(page, "my-comparisons-800")


def test_at_1440x900_the_submit_bar_leaves_the_choice_buttons_uncovered(
    page, live_server, rater
):
    campaign = sky_pairwise_campaign(raters=[rater])
    page.set_viewport_size({"width": 1440, "height": 900})
    login(page, live_server, rater)
    page.goto(f"{live_server.url}/pairwise/compare/{campaign.pk}/")
    page.wait_for_load_state("load")
    expect(page.locator("#pairwise-panel[data-assignment-id]")).to_be_visible()
    page.wait_for_function("() => !!document.activeElement.closest('[data-label-row]')")
    buttons = page.locator("[data-label-row]").first.locator(".seg-btn")
    expect(buttons).to_have_count(3)
    viewport_shot(page, "pairwise-1440x900")
    for i in range(3):
        assert on_screen(page, buttons.nth(i)), f"choice button {i} is covered"
    # Wherever the buttons are when the window ends just below them, no bar floats
    # over them (a sticky bar at the window's bottom edge did).
    page.set_viewport_size({"width": 1440, "height": 500})
    for i in range(3):
        page.evaluate(
            "el => { el.scrollIntoView({block: 'end'}); }",
            buttons.nth(i).element_handle(),
        )
        assert on_screen(page, buttons.nth(i)), f"choice button {i} is covered"
