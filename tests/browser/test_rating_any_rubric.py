"""A rater works on rubrics other than FLASK's in Chromium: a 1-10 item and a yes/no
item with the keyboard, the help dialog generated from the rubric, and a critique."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotation.models import Assignment, HumanScore
from tests.browser.conftest import login, shot
from tests.factories import UserFactory
from tests.rubric_samples import TEN_POINT, YES_NO, campaign_on

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def rater(transactional_db):
    return UserFactory(username="any-rubric-rater", role="rater")


@pytest.fixture
def researcher(transactional_db):
    return UserFactory(username="any-rubric-researcher", role="researcher")


def open_rating(page, live_server, user, campaign, *, rows: bool = True) -> int:
    login(page, live_server, user)
    page.goto(f"{live_server.url}/rate/{campaign.pk}/")
    expect(page.locator("#rating-panel[data-assignment-id]")).to_be_visible()
    if rows:
        # Keys pressed before rating.js focused the first row would be lost.
        page.wait_for_function(
            "() => document.activeElement"
            " && document.activeElement.closest('[data-skill-row]') !== null"
        )
    return int(page.locator("#rating-panel").get_attribute("data-assignment-id"))


def wait_for_next_panel(page, previous_id: int) -> None:
    page.wait_for_function(
        "id => { const p = document.querySelector('#rating-panel');"
        " return p && p.dataset.assignmentId !== String(id); }",
        arg=previous_id,
    )


def test_ten_point_item_with_the_keyboard_zero_is_ten(
    page, live_server, rater, researcher
):
    campaign = campaign_on(TEN_POINT, user=researcher, raters=[rater])
    first = open_rating(page, live_server, rater, campaign)
    row = page.locator("[data-skill-row][data-skill=overall]")
    expect(row.locator(".seg-btn")).to_have_count(10)  # 1..10, no N/A button
    page.keyboard.press("n")  # no N/A on this criterion: nothing is chosen
    expect(row.locator("input.seg-input:checked")).to_have_count(0)
    page.keyboard.press("7")
    expect(page.locator("#s-overall-7")).to_be_checked()
    page.keyboard.press("0")
    expect(page.locator("#s-overall-10")).to_be_checked()
    # The chosen point's anchor is highlighted.
    expect(row.locator('.rate-anchors li[data-score="10"]')).to_have_class("is-chosen")
    shot(page, "rate-1-10-keyboard")
    page.keyboard.press("Enter")
    wait_for_next_panel(page, first)
    assert HumanScore.objects.get(assignment_id=first).score == 10


def test_yes_no_item_with_the_keyboard_and_the_help_dialog(
    page, live_server, rater, researcher
):
    campaign = campaign_on(YES_NO, user=researcher, raters=[rater])
    first = open_rating(page, live_server, rater, campaign)
    page.keyboard.press("?")
    dialog = page.locator("dialog[data-rater-help]")
    expect(dialog).to_be_visible()
    expect(dialog.locator('dt[data-help-scale="yes / no"]')).to_have_text(
        "1 Yes · 2 No"
    )
    expect(dialog).to_contain_text("Consistent with the source")
    shot(page, "rate-yes-no-help")
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    page.keyboard.press("2")
    expect(page.locator("#s-consistent-no")).to_be_checked()
    shot(page, "rate-yes-no-chosen")
    page.keyboard.press("Enter")
    wait_for_next_panel(page, first)
    assert HumanScore.objects.get(assignment_id=first).score == 1  # "no"
    second = int(page.locator("#rating-panel").get_attribute("data-assignment-id"))
    # No wait for rater.js to set the new panel up: a key pressed right after the
    # swap (htmx has already focused the row of the same id) acts on the new panel.
    page.keyboard.press("1")
    expect(page.locator("#s-consistent-yes")).to_be_checked()
    expect(page.locator("[data-submit-hint]")).to_have_text(
        "Every criterion has a value. Press Enter to submit."
    )
    page.keyboard.press("Enter")
    wait_for_next_panel(page, second)
    assert HumanScore.objects.get(assignment_id=second).score == 0  # "yes"


def test_rater_writes_a_critique_next_to_the_score(
    page, live_server, rater, researcher
):
    campaign = campaign_on(
        TEN_POINT,
        user=researcher,
        raters=[rater],
        critique="with_scores",
        critique_min_length=30,
    )
    first = open_rating(page, live_server, rater, campaign)
    page.keyboard.press("8")
    page.keyboard.press("c")
    box = page.locator("textarea[data-critique]")
    expect(box).to_be_focused()
    page.keyboard.type("Too short.")
    expect(page.locator("[data-critique-count]")).to_have_text(
        "10 characters of at least 30"
    )
    page.keyboard.press("Escape")  # back to the rows
    page.keyboard.press("Enter")
    error = page.locator("#err-critique")
    expect(error).to_contain_text("Critique is 10 characters long; write at least 30")
    expect(page.locator("#s-overall-8")).to_be_checked()  # the score is kept
    shot(page, "rate-critique-error")
    assert not HumanScore.objects.exists()
    text = "Correct and complete, but the tone is curt."
    page.locator("textarea[data-critique]").fill(text)
    page.get_by_role("button", name="Submit").click()
    wait_for_next_panel(page, first)
    done = Assignment.objects.get(pk=first)
    assert done.critique == text and done.scores.get().score == 8


def test_critique_only_page_asks_no_score(page, live_server, rater, researcher):
    campaign = campaign_on(YES_NO, user=researcher, raters=[rater], critique="only")
    first = open_rating(page, live_server, rater, campaign, rows=False)
    expect(page.locator("[data-skill-row]")).to_have_count(0)
    page.locator("textarea[data-critique]").fill("It contradicts the source twice.")
    shot(page, "rate-critique-only")
    page.get_by_role("button", name="Submit").click()
    wait_for_next_panel(page, first)
    assert Assignment.objects.get(pk=first).critique.startswith("It contradicts")


def test_campaign_page_and_review_of_a_classification_with_critique(
    page, live_server, rater, researcher
):
    from annotation.services.rating import assignment_next, rating_submit

    campaign = campaign_on(
        YES_NO,
        user=researcher,
        raters=[rater],
        critique="with_scores",
        critique_min_length=10,
    )
    login(page, live_server, researcher)
    page.goto(f"{live_server.url}/campaigns/{campaign.pk}/")
    expect(page.locator("#campaign-task")).to_have_text(
        "Classification, with a critique"
    )
    expect(page.locator("#campaign-criteria")).to_contain_text("Yes / No")
    shot(page, "campaign-classification")
    a = assignment_next(campaign=campaign, rater=rater).assignment
    rating_submit(
        assignment_id=a.pk,
        rater=rater,
        scores={"consistent": "yes"},
        critique="Nothing in it contradicts the source.",
    )
    page.context.clear_cookies()
    login(page, live_server, rater)
    page.goto(f"{live_server.url}/rate/assignments/{a.pk}/")
    expect(page.locator("#s-consistent-yes")).to_be_checked()
    box = page.locator("textarea[data-critique]")
    expect(box).to_have_value("Nothing in it contradicts the source.")
    box.fill("Amended: consistent throughout.")
    page.locator("label.seg-btn[for=s-consistent-no]").click()
    shot(page, "review-classification-critique")
    page.get_by_role("button", name="Save changes").click()
    expect(page.get_by_text("Your changes are saved.")).to_be_visible()
    a.refresh_from_db()
    assert a.critique == "Amended: consistent throughout."
    assert a.scores.get().score == 1
