"""A rater compares pairs in Chromium with the keyboard only: a/t/b and 1/2/3 choose
(digits in the buttons' order: A | Tie | B),
Enter submits, the next pair arrives without a full reload, s skips, ? shows help; the
stored preference is in the original numbering whatever order was shown."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotation.models import Assignment, HumanPreference
from annotation.services.pairwise import pairwise_next
from tests.browser.conftest import login, sky_pairwise_campaign
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def rater(transactional_db):
    return UserFactory(username="pair-browser-rater", role="rater")


@pytest.fixture
def campaign(transactional_db, rater):
    return sky_pairwise_campaign(raters=[rater])


def serve_with_order(campaign, rater, order: str) -> Assignment:
    """Serve the rater's first pair before the page opens (the page resumes it) and
    fix the order it is shown in."""
    assignment = pairwise_next(campaign=campaign, rater=rater).assignment
    Assignment.objects.filter(pk=assignment.pk).update(shown_order=order)
    assignment.refresh_from_db()
    return assignment


def open_campaign(page, live_server, user, campaign) -> None:
    login(page, live_server, user)
    page.goto(f"{live_server.url}/pairwise/")
    page.get_by_role("link", name=campaign.name).first.click()
    expect(page.locator("#pairwise-panel[data-assignment-id]")).to_be_visible()
    # pairwise.js is ready once it has put the focus on the first question.
    page.wait_for_function("() => !!document.activeElement.closest('[data-label-row]')")


def current_assignment_id(page) -> int:
    return int(page.locator("#pairwise-panel").get_attribute("data-assignment-id"))


def wait_for_next_panel(page, previous_id: int) -> None:
    page.wait_for_function(
        "id => { const p = document.querySelector('#pairwise-panel');"
        " return p && p.dataset.assignmentId && p.dataset.assignmentId !== String(id); }",
        arg=previous_id,
    )


def focused_row(page) -> str | None:
    return page.evaluate(
        "() => { const r = document.activeElement.closest('[data-label-row]');"
        " return r ? r.dataset.key : null; }"
    )


def test_keys_choose_enter_submits_and_the_label_maps_back(
    page, live_server, rater, campaign
):
    first = serve_with_order(campaign, rater, "21")
    open_campaign(page, live_server, rater, campaign)
    assert current_assignment_id(page) == first.pk
    # Shown order "21": response_2 is on the left, as A.
    expect(page.locator("#response-a")).to_contain_text(first.pair.response_2.text[:12])
    expect(page.locator("#response-b")).to_contain_text(first.pair.response_1.text[:12])
    # Markdown rendered: response 2 (beta) has a code block, response 1 bold text.
    assert first.pair.response_2.model_name == "model-beta"
    expect(page.locator("#response-a .codehilite")).to_have_count(1)
    expect(page.locator("#response-b strong")).to_have_text("Rayleigh")
    assert "model-alpha" not in page.content()  # blind
    page.evaluate("window.__noFullReload = 'still here'")
    assert focused_row(page) == "overall"

    page.keyboard.press("a")  # overall: A (= response 2); on to factuality
    assert focused_row(page) == "factuality"
    page.keyboard.press("t")  # factuality: tie
    page.keyboard.press("Enter")

    wait_for_next_panel(page, first.pk)
    assert page.evaluate("window.__noFullReload") == "still here"  # htmx swap
    expect(page.locator("#pairwise-panel .saved-flash")).to_be_visible()
    expect(page.locator("#rater-progress")).to_contain_text("1 compared")
    pref = HumanPreference.objects.get(assignment=first)
    assert pref.label == "2"
    assert pref.skill_labels == {"factuality": "tie"}
    assert pref.shown_order == "21" and pref.rater == rater
    first.refresh_from_db()
    assert first.status == Assignment.Status.SUBMITTED
    assert first.active_seconds is not None

    # The next pair: digits work too, in the buttons' left-to-right order
    # (A | Tie | B: 1 = A, 2 = tie, 3 = B), and the hints on the buttons say so.
    second = current_assignment_id(page)
    page.wait_for_function(
        "() => document.activeElement.closest('[data-label-row]')?.dataset.key"
        " === 'overall'"
    )
    overall = page.locator("#row-overall .seg-btn")
    expect(overall).to_have_count(3)
    assert [t.split()[0] for t in overall.all_inner_texts()] == ["A", "Tie", "B"]
    hints = page.locator("#row-overall .seg-btn .hint-key").all_inner_texts()
    assert [h.split("·")[1].strip() for h in hints] == ["1", "2", "3"]
    order = Assignment.objects.get(pk=second).shown_order
    page.keyboard.press("3")  # overall: B
    page.keyboard.press("2")  # factuality: tie
    page.keyboard.press("Enter")
    wait_for_next_panel(page, second)
    pref = HumanPreference.objects.get(assignment_id=second)
    assert pref.label == ("2" if order == "12" else "1")
    assert pref.skill_labels == {"factuality": "tie"}


def test_enter_with_a_missing_answer_says_so_and_submits_nothing(
    page, live_server, rater, campaign
):
    open_campaign(page, live_server, rater, campaign)
    first = current_assignment_id(page)
    page.keyboard.press("b")
    page.keyboard.press("k")  # back to overall; factuality still unanswered
    page.keyboard.press("Enter")
    expect(page.locator("[data-submit-hint]")).to_contain_text("Answer “Factuality”")
    assert focused_row(page) == "factuality"
    assert not HumanPreference.objects.exists()
    assert current_assignment_id(page) == first


def test_question_mark_shows_help_and_s_skips_with_a_reason(
    page, live_server, rater, campaign
):
    open_campaign(page, live_server, rater, campaign)
    first = current_assignment_id(page)
    help_dialog = page.locator("#pairwise-help")
    page.keyboard.press("?")
    expect(help_dialog).to_be_visible()
    expect(help_dialog).to_contain_text("Keyboard shortcuts")
    page.keyboard.press("Escape")
    expect(help_dialog).to_be_hidden()

    page.keyboard.press("s")
    reason = page.get_by_label("Why do you skip this pair?")
    expect(reason).to_be_focused()
    page.keyboard.type("Cannot read code")
    page.keyboard.press("Enter")
    wait_for_next_panel(page, first)
    skipped = Assignment.objects.get(pk=first)
    assert skipped.status == Assignment.Status.SKIPPED
    assert skipped.skip_reason == "Cannot read code"


def test_the_mouse_works_too_and_the_last_pair_says_done(
    page, live_server, rater, campaign
):
    open_campaign(page, live_server, rater, campaign)
    for _ in range(3):
        current = current_assignment_id(page)
        page.locator("label[for='l-overall-tie']").click()
        page.locator("label[for='l-factuality-B']").click()
        page.get_by_role("button", name="Submit").click()
        page.wait_for_function(
            "id => { const p = document.querySelector('#pairwise-panel');"
            " return p && p.dataset.assignmentId !== String(id); }",
            arg=current,
        )
    expect(page.locator("#nothing-left")).to_contain_text("You are done")
    assert HumanPreference.objects.filter(label="tie").count() == 3


def test_a_draft_survives_a_reload_and_is_gone_after_the_submit(
    page, live_server, rater, campaign
):
    first = serve_with_order(campaign, rater, "12")
    open_campaign(page, live_server, rater, campaign)
    page.keyboard.press("b")  # overall: B better; on to factuality
    page.keyboard.press("r")
    page.keyboard.type("B explains the physics")
    page.wait_for_function(
        f"() => (localStorage.getItem('pairwise-draft:{first.pk}') || '')"
        ".includes('physics')"
    )
    page.reload()
    expect(page.locator("#l-overall-B")).to_be_checked()
    expect(page.locator("#l-factuality-A")).not_to_be_checked()
    expect(page.locator("#pair-rationale")).to_have_value("B explains the physics")
    expect(page.locator("[data-submit-hint]")).to_contain_text("draft was restored")
    assert current_assignment_id(page) == first.pk  # the same pair was resumed

    page.locator("#row-factuality").focus()
    page.keyboard.press("t")
    page.keyboard.press("Enter")
    wait_for_next_panel(page, first.pk)
    assert HumanPreference.objects.get(assignment=first).label == "2"
    assert page.evaluate(f"localStorage.getItem('pairwise-draft:{first.pk}')") is None
