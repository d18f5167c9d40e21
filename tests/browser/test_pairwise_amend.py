"""A rater amends a pairwise vote in Chromium: from their history, the Amend link opens
the pair with the vote preselected; the compare page's keys change it, Enter saves it
without a full reload, and the stored vote is in the original numbering."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotation.models import Assignment, HumanPreference
from annotation.services.pairwise import pairwise_next, pairwise_submit
from tests.browser.conftest import login, sky_pairwise_campaign
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_amend_a_vote_with_the_keyboard(page, live_server):
    rater = UserFactory(username="amend-browser-rater", role="rater")
    campaign = sky_pairwise_campaign(raters=[rater])
    vote = pairwise_next(campaign=campaign, rater=rater).assignment
    Assignment.objects.filter(pk=vote.pk).update(shown_order="21")
    pairwise_submit(
        assignment_id=vote.pk,
        rater=rater,
        label="A",
        skill_labels={"factuality": "A"},
        rationale="first thoughts",
    )

    login(page, live_server, rater)
    page.goto(f"{live_server.url}/pairwise/compare/{campaign.pk}/mine/")
    page.get_by_role("main").get_by_role("link", name="Amend").click()
    expect(page.get_by_role("heading", name="Your vote")).to_be_visible()
    expect(page.locator("#l-overall-A")).to_be_checked()
    expect(page.locator("#l-factuality-A")).to_be_checked()
    expect(page.locator("#pair-rationale")).to_have_value("first thoughts")
    # pairwise.js put the focus on the first question.
    page.wait_for_function("() => !!document.activeElement.closest('[data-label-row]')")
    page.evaluate("window.__noFullReload = 'still here'")

    page.keyboard.press("b")  # overall: B better, then on to factuality
    page.keyboard.press("t")  # factuality: a tie
    expect(page.locator("#l-overall-B")).to_be_checked()
    expect(page.locator("#l-factuality-tie")).to_be_checked()
    page.keyboard.press("Enter")
    expect(
        page.get_by_role("status").filter(has_text="Your changed vote is saved")
    ).to_be_visible()
    assert page.evaluate("window.__noFullReload") == "still here"

    preference = HumanPreference.objects.get(assignment=vote)
    # B as shown in order "21" is response 1.
    assert preference.label == "1"
    assert preference.skill_labels == {"factuality": "tie"}
    assert preference.rationale == "first thoughts"
    # The history shows the new answer, as the rater saw it.
    page.get_by_role("link", name="Back to my comparisons").click()
    expect(page.locator("#pairwise-history")).to_contain_text("B better")
    expect(page.locator("#pairwise-history")).to_contain_text("factuality: tie")
    # At 800 px the history table scrolls inside its card, not the page sideways.
    page.set_viewport_size({"width": 800, "height": 900})
    assert page.evaluate("document.documentElement.scrollWidth") <= 800
