"""A rater scores responses in Chromium: keyboard only, mouse only, drafts, help, skip,
and two raters side by side."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotation import membership
from annotation.models import Assignment, HumanScore
from annotation.services.campaigns import campaign_set_raters
from tests.browser.conftest import SKILLS, login, sky_rating_campaign
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def rater(transactional_db):
    return UserFactory(username="browser-rater", role="rater")


@pytest.fixture
def second_rater(transactional_db):
    return UserFactory(username="browser-rater-2", role="rater")


@pytest.fixture
def campaign(transactional_db, rater, second_rater):
    return sky_rating_campaign(raters=[rater, second_rater])


def open_campaign(page, live_server, user, campaign):
    """Log in through the form, then open the campaign from the rater's list."""
    login(page, live_server, user)
    page.goto(f"{live_server.url}/rate/")
    page.get_by_role("link", name=campaign.name).click()
    expect(page.locator("#rating-panel[data-assignment-id]")).to_be_visible()
    # Keys pressed before the page's script has run would be lost: wait until it has
    # focused the first skill row.
    page.wait_for_function(
        "() => document.activeElement"
        " && document.activeElement.closest('[data-skill-row]') !== null"
    )


def current_assignment_id(page) -> int:
    return int(page.locator("#rating-panel").get_attribute("data-assignment-id"))


def wait_for_next_panel(page, previous_id: int) -> None:
    page.wait_for_function(
        "id => { const p = document.querySelector('#rating-panel');"
        " return p && p.dataset.assignmentId && p.dataset.assignmentId !== String(id); }",
        arg=previous_id,
    )


def focused_row(page) -> str | None:
    return page.evaluate(
        "() => { const r = document.activeElement.closest('[data-skill-row]');"
        " return r ? r.dataset.skill : null; }"
    )


def scores_of(assignment_id: int) -> dict:
    return {
        s.skill.key: s.score
        for s in HumanScore.objects.filter(assignment_id=assignment_id).select_related(
            "skill"
        )
    }


def test_rater_scores_a_response_with_the_keyboard_only(
    page, live_server, rater, campaign
):
    open_campaign(page, live_server, rater, campaign)
    first = current_assignment_id(page)
    page.evaluate("window.__noFullReload = 'still here'")
    assert focused_row(page) == "comprehension"

    page.keyboard.press("4")  # comprehension = 4, on to factuality
    assert focused_row(page) == "factuality"
    page.keyboard.press("j")  # leave factuality for now
    page.keyboard.press("n")  # readability = N/A; the first missing row gets focus
    assert focused_row(page) == "factuality"
    page.keyboard.press("k")
    assert focused_row(page) == "comprehension"
    page.keyboard.press("j")
    page.keyboard.press("Numpad5")  # factuality = 5 from the numpad
    page.keyboard.press("Enter")

    wait_for_next_panel(page, first)
    assert page.evaluate("window.__noFullReload") == "still here"  # swapped by htmx
    # Focus goes back to the first skill row of the new response.
    page.wait_for_function(
        "key => document.activeElement.closest('[data-skill-row]')?.dataset.skill === key",
        arg=SKILLS[0],
    )
    expect(page.locator("#rater-progress")).to_contain_text("1 rated")
    assert scores_of(first) == {
        "comprehension": 4,
        "factuality": 5,
        "readability": None,
    }
    assignment = Assignment.objects.get(pk=first)
    assert assignment.status == Assignment.Status.SUBMITTED
    assert assignment.active_seconds is not None and assignment.active_seconds >= 0
    # The draft of a submitted response is gone from the browser.
    assert page.evaluate(f"localStorage.getItem('rating-draft:{first}')") is None


def test_enter_with_a_missing_skill_focuses_it_and_says_so(
    page, live_server, rater, campaign
):
    open_campaign(page, live_server, rater, campaign)
    first = current_assignment_id(page)
    page.keyboard.press("3")
    page.keyboard.press("j")
    page.keyboard.press("2")
    page.keyboard.press("Enter")
    expect(page.locator("[data-submit-hint]")).to_contain_text(
        "Score “Factuality” first"
    )
    assert focused_row(page) == "factuality"
    assert not HumanScore.objects.exists()
    assert current_assignment_id(page) == first


def test_a_draft_survives_a_reload(page, live_server, rater, campaign):
    open_campaign(page, live_server, rater, campaign)
    first = current_assignment_id(page)
    page.keyboard.press("3")
    page.keyboard.press("2")
    page.reload()
    expect(page.locator("#s-comprehension-3")).to_be_checked()
    expect(page.locator("#s-factuality-2")).to_be_checked()
    expect(page.locator("#s-readability-3")).not_to_be_checked()
    assert current_assignment_id(page) == first  # the same response was resumed
    expect(page.locator("[data-submit-hint]")).to_contain_text("draft was restored")


def test_question_mark_opens_help_and_s_skips_with_a_reason(
    page, live_server, rater, campaign
):
    open_campaign(page, live_server, rater, campaign)
    first = current_assignment_id(page)
    help_dialog = page.locator("#rating-help")
    page.keyboard.press("?")
    expect(help_dialog).to_be_visible()
    expect(help_dialog).to_contain_text("Keyboard shortcuts")
    page.keyboard.press("Escape")
    expect(help_dialog).to_be_hidden()

    page.keyboard.press("s")
    reason = page.get_by_label("Why do you skip this response?")
    expect(reason).to_be_focused()
    page.keyboard.type("Outside my expertise")
    page.keyboard.press("Enter")
    wait_for_next_panel(page, first)
    skipped = Assignment.objects.get(pk=first)
    assert skipped.status == Assignment.Status.SKIPPED
    assert skipped.skip_reason == "Outside my expertise"


def test_everything_works_with_the_mouse(page, live_server, rater, campaign):
    open_campaign(page, live_server, rater, campaign)
    first = current_assignment_id(page)
    page.locator("label.seg-btn[for='s-comprehension-2']").click()
    # Clicking an anchor's description chooses its score too.
    page.locator("#row-factuality .rate-anchors li[data-score='5'] label").click()
    page.locator("label.seg-btn[for='s-readability-na']").click()
    page.locator("#row-readability summary").click()
    page.locator("#rationale-readability").fill("Nothing to read.")
    page.get_by_role("button", name="Submit").click()
    wait_for_next_panel(page, first)
    assert scores_of(first) == {
        "comprehension": 2,
        "factuality": 5,
        "readability": None,
    }
    rationale = HumanScore.objects.get(
        assignment_id=first, skill__key="readability"
    ).rationale
    assert rationale == "Nothing to read."


def test_two_raters_with_overlap_one_never_get_the_same_response(
    browser, live_server, rater, second_rater, campaign
):
    pages = []
    for user in (rater, second_rater):
        context = browser.new_context(viewport={"width": 1366, "height": 900})
        context.set_default_timeout(10_000)
        page = context.new_page()
        open_campaign(page, live_server, user, campaign)
        pages.append(page)
    try:
        served: list[set[int]] = [set(), set()]
        for _ in range(2):
            for i, page in enumerate(pages):
                if not page.locator("#rating-panel[data-assignment-id]").count():
                    continue
                assignment_id = current_assignment_id(page)
                served[i].add(Assignment.objects.get(pk=assignment_id).response_id)
                for _skill in SKILLS:
                    page.keyboard.press("3")
                page.keyboard.press("Enter")
                page.wait_for_function(
                    "id => document.querySelector('#rating-panel').dataset.assignmentId"
                    " !== String(id)",
                    arg=assignment_id,
                )
        assert served[0] and served[1]
        assert not served[0] & served[1]
        # Three responses, k = 1: each was submitted at most once.
        submitted = Assignment.objects.filter(status=Assignment.Status.SUBMITTED)
        response_ids = list(submitted.values_list("response_id", flat=True))
        assert len(response_ids) == len(set(response_ids)) == 3
        # The second rater was told the last response was locked by the first one.
        expect(pages[1].locator("#rating-panel")).to_contain_text(
            "being rated by others"
        )
        for page in pages:
            page.reload()
            expect(page.locator("#rating-panel")).to_contain_text("You are done")
    finally:
        for page in pages:
            page.context.close()


def test_a_rater_removed_meanwhile_is_told_why_the_submit_was_refused(
    page, live_server, rater, second_rater, campaign
):
    open_campaign(page, live_server, rater, campaign)
    held = current_assignment_id(page)
    # A researcher takes the rater out of the campaign while the page is open.
    campaign_set_raters(
        campaign=campaign, raters=[second_rater], user=campaign.created_by
    )
    for _skill in SKILLS:
        page.keyboard.press("3")
    page.keyboard.press("Enter")
    expect(page.locator("#htmx-error")).to_contain_text(
        "Not allowed: " + membership.REMOVED_FROM_CAMPAIGN
    )
    # ... and the hint under the button no longer says it is submitting.
    expect(page.locator("[data-submit-hint]")).to_contain_text("Not submitted")
    assert not HumanScore.objects.filter(assignment_id=held).exists()
    # A reload shows the refusal page with the same reason.
    page.reload()
    expect(page.locator("[data-refusal]")).to_have_text(
        membership.REMOVED_FROM_CAMPAIGN
    )
