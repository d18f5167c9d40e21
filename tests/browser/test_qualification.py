"""Qualification in Chromium: a rater answers the campaign's qualification items under
a banner, passes and is served real items; a rater who answers wrongly is shown the
expected answers and served nothing more; a researcher allows a retry from the
campaign page and the rater is served gold items they have not seen."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotation.models import Assignment, Qualification
from annotation.selectors import assignment_skills
from annotation.services.campaign_spec import (
    CampaignSpec,
    QualificationPolicy,
)
from annotation.services.campaigns import campaign_create
from annotation.services.gold import gold_set
from annotation.services.rating import assignment_next, rating_submit
from tests.browser.conftest import login, shot
from tests.factories import (
    DatasetFactory,
    InstructionFactory,
    ResponseFactory,
    UserFactory,
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SKILLS = ["comprehension", "factuality", "readability"]  # of every instruction here
EXPECTED = {"factuality": 4, "readability": 2}  # of every gold item here
RIGHT = {"comprehension": 3, **EXPECTED}  # comprehension has no expected score
EXPLANATION = "Rayleigh scattering is named, and the answer is hard to read."


@pytest.fixture
def researcher(transactional_db):
    return UserFactory(username="qual-researcher", role="researcher")


@pytest.fixture
def rater(transactional_db):
    return UserFactory(username="qual-rater", role="rater")


def qualification_campaign(researcher, rater, *, pass_mark=1.0):
    """Eight responses (texts "Answer 0: ..." to "Answer 7: ..."), the first four
    gold (EXPECTED, exact), in a campaign that qualifies each rater on two of them."""
    dataset = DatasetFactory(name="Sky qualification")
    responses = []
    for i in range(8):
        instruction = InstructionFactory(
            dataset=dataset,
            skill_keys=SKILLS,
            text=f"Question {i}: why is the sky blue?",
        )
        responses.append(
            ResponseFactory(
                instruction=instruction,
                model_name="model-alpha",
                text=f"Answer {i}: sunlight is scattered by the air.",
            )
        )
    for response in responses[:4]:
        gold_set(
            dataset=dataset,
            response_id=response.pk,
            scores=EXPECTED,
            user=researcher,
            tolerance=0,
            explanation=EXPLANATION,
        )
    campaign = campaign_create(
        spec=CampaignSpec(
            name="Sky qualification",
            dataset=dataset,
            raters=[rater],
            qualification=QualificationPolicy(
                size=2, pass_mark=pass_mark, rule="exact"
            ),
        ),
        created_by=researcher,
    )
    gold_ids = {r.pk for r in responses[:4]}
    return campaign, gold_ids


def open_campaign(page, live_server, user, campaign) -> None:
    login(page, live_server, user)
    page.goto(f"{live_server.url}/rate/")
    page.get_by_role("link", name=campaign.name).click()
    wait_for_focus(page)


def wait_for_focus(page) -> None:
    """Keys pressed before the page's script has focused the first skill row would be
    lost."""
    expect(page.locator("#rating-panel[data-assignment-id]")).to_be_visible()
    page.wait_for_function(
        "() => document.activeElement"
        " && document.activeElement.closest('[data-skill-row]') !== null"
    )


def current_assignment(page) -> Assignment:
    pk = int(page.locator("#rating-panel").get_attribute("data-assignment-id"))
    return Assignment.objects.select_related("response").get(pk=pk)


def wait_for_next_panel(page, assignment: Assignment) -> None:
    page.wait_for_function(
        "id => { const p = document.querySelector('#rating-panel');"
        " return p && p.dataset.assignmentId !== String(id); }",
        arg=assignment.pk,
    )


def row_order(page) -> list[str]:
    return page.eval_on_selector_all(
        "[data-skill-row]", "rows => rows.map(r => r.dataset.skill)"
    )


def answer_with_keys(page, scores: dict) -> Assignment:
    """Score each row with its digit key, in the rows' order, submit with Enter and
    wait for the next panel; the submitted assignment."""
    assignment = current_assignment(page)
    for key in row_order(page):
        page.keyboard.press(str(scores[key]))
    page.keyboard.press("Enter")
    wait_for_next_panel(page, assignment)
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.SUBMITTED
    return assignment


def answer_with_clicks(page, scores: dict) -> Assignment:
    """Click each row's button, then Submit; the submitted assignment."""
    assignment = current_assignment(page)
    for key, value in scores.items():
        page.locator(f"label.seg-btn[for='s-{key}-{value}']").click()
    page.get_by_role("button", name="Submit").click()
    wait_for_next_panel(page, assignment)
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.SUBMITTED
    return assignment


def fail_with_services(campaign, rater) -> set[int]:
    """The rater answers both qualification items with 1 everywhere (all wrong); the
    responses they were served."""
    seen = set()
    for _ in range(2):
        served = assignment_next(campaign=campaign, rater=rater).assignment
        scores = {s.key: 1 for s in assignment_skills(assignment=served)}
        rating_submit(assignment_id=served.pk, rater=rater, scores=scores)
        seen.add(served.response_id)
    assignment_next(campaign=campaign, rater=rater)  # graded: failed
    return seen


def test_a_rater_answers_the_qualification_right_and_is_served_real_items(
    page, live_server, researcher, rater
):
    campaign, gold_ids = qualification_campaign(researcher, rater)
    open_campaign(page, live_server, rater, campaign)

    banner = page.locator("#qualification-banner")
    expect(banner).to_be_visible()
    expect(banner).to_contain_text("Qualification:")
    expect(banner).to_contain_text("item 1 of 2")
    expect(banner).to_contain_text("all of your answers are right")
    first = current_assignment(page)
    assert first.gold and first.response_id in gold_ids
    expect(page.locator(".response-text")).to_contain_text(first.response.text)
    shot(page, "qualification-banner")

    answer_with_keys(page, RIGHT)
    wait_for_focus(page)
    expect(page.locator(".saved-flash")).to_be_visible()
    expect(banner).to_contain_text("item 2 of 2")
    second = current_assignment(page)
    assert second.gold and second.response_id in gold_ids - {first.response_id}
    expect(page.locator(".response-text")).to_contain_text(second.response.text)

    answer_with_clicks(page, RIGHT)
    wait_for_focus(page)
    attempt = Qualification.objects.get(campaign=campaign, rater=rater)
    assert (attempt.status, attempt.right, attempt.checked) == ("passed", 4, 4)

    # Passed: no banner any more, and the response shown is a real one.
    expect(page.locator(".saved-flash")).to_be_visible()
    expect(page.locator("#qualification-banner")).to_have_count(0)
    expect(page.locator("#qualification-report")).to_have_count(0)
    real = current_assignment(page)
    assert not real.gold and real.qualification_id is None
    assert real.response_id not in gold_ids
    expect(page.locator(".response-text")).to_contain_text(real.response.text)
    # A full reload serves the same real item, still without a banner.
    page.reload()
    wait_for_focus(page)
    assert current_assignment(page).pk == real.pk
    expect(page.locator("#qualification-banner")).to_have_count(0)


def test_a_rater_who_answers_wrongly_sees_the_expected_answers_and_gets_nothing(
    page, live_server, researcher, rater
):
    campaign, gold_ids = qualification_campaign(researcher, rater, pass_mark=0.5)
    open_campaign(page, live_server, rater, campaign)
    wrong = {key: 1 for key in SKILLS}
    first = answer_with_keys(page, wrong)
    wait_for_focus(page)
    expect(page.locator("#qualification-banner")).to_contain_text("item 2 of 2")
    second = answer_with_keys(page, wrong)

    report = page.locator("#qualification-report")
    expect(report).to_be_visible()
    expect(page.locator("#rating-panel[data-assignment-id]")).to_have_count(0)
    expect(page.locator("#qualification-banner")).to_have_count(0)
    panel = page.locator("#rating-panel")
    expect(panel).to_contain_text("You did not pass this campaign's qualification")
    expect(panel).to_contain_text("0 of 4 answers right")
    expect(panel).to_contain_text("the pass mark is 50%")
    expect(
        report.get_by_role("heading", name="Your qualification answers")
    ).to_be_visible()

    # One heading and one table per item, in the order they were served, each with
    # the expected score, the rater's and the verdict of the two gold criteria.
    headings = report.locator("h3")
    expect(headings).to_have_count(2)
    expect(headings.nth(0)).to_contain_text(
        f"Item 1 · {first.response.instruction.text}"
    )
    expect(headings.nth(1)).to_contain_text(
        f"Item 2 · {second.response.instruction.text}"
    )
    tables = report.locator("table")
    expect(tables).to_have_count(2)
    for i in range(2):
        rows = tables.nth(i).locator("tbody tr")
        expect(rows).to_have_count(2)  # comprehension had no expected score
        expect(rows.filter(has_text="Factuality").locator("td")).to_have_text(
            ["Factuality", "4", "1", "Wrong"]
        )
        expect(rows.filter(has_text="Readability").locator("td")).to_have_text(
            ["Readability", "2", "1", "Wrong"]
        )
    expect(report.locator(".gold-explanation")).to_have_text([EXPLANATION] * 2)
    expect(report).to_contain_text("may allow you one more attempt")
    shot(page, "qualification-failed")

    attempt = Qualification.objects.get(campaign=campaign, rater=rater)
    assert (attempt.status, attempt.right, attempt.checked) == ("failed", 0, 4)
    # Served nothing more, even on a full reload.
    page.reload()
    expect(page.locator("#qualification-report")).to_be_visible()
    expect(page.locator("#rating-panel[data-assignment-id]")).to_have_count(0)
    assert Assignment.objects.filter(campaign=campaign, rater=rater).count() == 2
    assert {first.response_id, second.response_id} <= gold_ids


def test_a_researcher_allows_a_retry_and_the_rater_gets_unseen_gold_items(
    browser, page, live_server, researcher, rater
):
    campaign, gold_ids = qualification_campaign(researcher, rater)
    seen = fail_with_services(campaign, rater)

    login(page, live_server, researcher)
    page.goto(f"{live_server.url}/campaigns/{campaign.pk}/")
    section = page.locator("#campaign-qualification")
    expect(section.get_by_role("heading", name="Qualification")).to_be_visible()
    expect(section).to_contain_text("Each rater first answers 2 gold items")
    rows = page.locator("#qualification-list tbody tr")
    expect(rows).to_have_count(1)
    cells = rows.first.locator("td")
    expect(cells.nth(0)).to_have_text(rater.username)
    expect(cells.nth(1)).to_have_text("1")
    expect(cells.nth(2)).to_have_text("Failed")
    expect(cells.nth(3)).to_have_text("0 / 4")
    expect(cells.nth(4)).to_have_text("0.00")
    shot(page, "qualification-campaign")

    rows.first.get_by_role("button", name="Allow a retry").click()
    page.wait_for_url(f"{live_server.url}/campaigns/{campaign.pk}/")
    expect(page.locator(".messages")).to_contain_text(
        f"{rater.username} may try the qualification once more"
    )
    rows = page.locator("#qualification-list tbody tr")
    expect(rows).to_have_count(2)
    expect(rows.nth(0).locator("td").nth(2)).to_contain_text(
        f"retry allowed by {researcher.username}"
    )
    expect(rows.nth(1).locator("td").nth(1)).to_have_text("2")
    expect(rows.nth(1).locator("td").nth(2)).to_have_text("In progress")
    expect(rows.nth(1).locator("td").nth(3)).to_have_text("0 of 2 answered")
    expect(page.get_by_role("button", name="Allow a retry")).to_have_count(0)

    # The rater, in a browser of their own, gets the second attempt on gold items
    # they have not seen.
    context = browser.new_context(viewport={"width": 1366, "height": 900})
    context.set_default_timeout(10_000)
    rater_page = context.new_page()
    try:
        open_campaign(rater_page, live_server, rater, campaign)
        banner = rater_page.locator("#qualification-banner")
        expect(banner).to_contain_text("Qualification (second attempt):")
        expect(banner).to_contain_text("item 1 of 2")
        retried = set()
        for n in (1, 2):
            served = current_assignment(rater_page)
            assert served.gold and served.response_id in gold_ids - seen
            expect(rater_page.locator(".response-text")).to_contain_text(
                served.response.text
            )
            expect(banner).to_contain_text(f"item {n} of 2")
            retried.add(answer_with_keys(rater_page, RIGHT).response_id)
            wait_for_focus(rater_page)
        assert retried == gold_ids - seen
        expect(rater_page.locator("#qualification-banner")).to_have_count(0)
        real = current_assignment(rater_page)
        assert not real.gold and real.response_id not in gold_ids
    finally:
        context.close()
    second = Qualification.objects.get(campaign=campaign, rater=rater, attempt=2)
    assert second.status == "passed"
