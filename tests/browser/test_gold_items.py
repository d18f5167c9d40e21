"""Gold items in Chromium: a researcher marks and imports them, a rater in a training
phase gets feedback after a gold item (and nothing tells a gold item apart before),
and the campaign page reports each rater's accuracy on them."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from annotation.models import Assignment, GoldItem, GoldScore, Skill
from annotation.services.campaign_spec import (
    CampaignSpec,
    GoldPolicy,
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
EXPLANATION = "Rayleigh scattering is named and explained correctly, in plain words."
# The HTML of the page outside the training feedback card (which only follows a
# submitted gold item, in a training phase).
PAGE_WITHOUT_FEEDBACK = """() => {
  const root = document.documentElement.cloneNode(true);
  root.querySelectorAll('#gold-feedback').forEach(e => e.remove());
  return root.outerHTML;
}"""


@pytest.fixture
def researcher(transactional_db):
    return UserFactory(username="sky-researcher", role="researcher")


@pytest.fixture
def rater(transactional_db):
    return UserFactory(username="sky-rater", role="rater")


def sky_dataset(n: int):
    """A dataset of `n` instructions with one response each; the responses, in order."""
    dataset = DatasetFactory(name="Sky answers")
    responses = []
    for i in range(n):
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
    return dataset, responses


def skill_name(dataset, key: str) -> str:
    return Skill.objects.get(rubric_id=dataset.rubric_id, key=key).name


def training_campaign(researcher, rater, *, training_phase: bool = True):
    """Six responses, three of them gold (factuality 4, comprehension 2, exact), in a
    campaign serving one gold item in every two items."""
    dataset, responses = sky_dataset(6)
    for response in responses[::2]:
        gold_set(
            dataset=dataset,
            response_id=response.pk,
            scores={"factuality": 4, "comprehension": 2},
            user=researcher,
            tolerance=0,
            explanation=EXPLANATION,
        )
    campaign = campaign_create(
        spec=CampaignSpec(
            name="Sky training",
            dataset=dataset,
            raters=[rater],
            gold=GoldPolicy(rate=2, training_phase=training_phase),
        ),
        created_by=researcher,
    )
    return dataset, campaign


def open_campaign(page, live_server, rater, campaign) -> None:
    login(page, live_server, rater)
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
    return Assignment.objects.get(pk=pk)


def submit_threes(page, assignment: Assignment) -> None:
    """Score every criterion 3 with the keyboard, submit, and wait for the next
    panel (swapped in by htmx)."""
    for _skill in SKILLS:
        page.keyboard.press("3")
    page.keyboard.press("Enter")
    page.wait_for_function(
        "id => { const p = document.querySelector('#rating-panel');"
        " return p && p.dataset.assignmentId !== String(id); }",
        arg=assignment.pk,
    )
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.SUBMITTED


def assert_looks_real(page) -> None:
    """Nothing on the page of the item being rated says "gold" (the feedback card of
    the previous item aside)."""
    html = page.evaluate(PAGE_WITHOUT_FEEDBACK)
    found = re.search("gold", html, re.IGNORECASE)
    assert not found, html[max(found.start() - 300, 0) : found.end() + 300]
    assert not re.search(
        "gold", page.locator("#rating-panel form").first.inner_html(), re.IGNORECASE
    )


def test_researcher_marks_a_gold_item_and_a_bad_file_saves_nothing(
    page, live_server, researcher, tmp_path
):
    dataset, responses = sky_dataset(3)
    login(page, live_server, researcher)
    page.goto(f"{live_server.url}/datasets/{dataset.pk}/")
    page.get_by_role("link", name="Gold items").click()
    page.wait_for_url(f"{live_server.url}/datasets/{dataset.pk}/gold/")
    expect(page.get_by_role("heading", name="Gold items", exact=True)).to_be_visible()
    expect(page.get_by_text("No gold items yet.")).to_be_visible()

    first = responses[0]
    page.locator("#gold-response").fill(str(first.pk))
    page.locator("#gold-score-factuality").select_option("4")
    page.locator("#gold-score-comprehension").select_option("2")
    page.locator("#gold-score-readability").select_option("N/A")
    page.locator("#gold-tolerance").fill("1")
    page.locator("#gold-kind").select_option("attention")
    page.locator("#gold-explanation").fill(EXPLANATION)
    page.get_by_role("button", name="Mark as gold").click()

    expect(page.get_by_text(f"Response {first.pk} is a gold item.")).to_be_visible()
    rows = page.locator("#gold-list tbody tr")
    expect(rows).to_have_count(1)
    row = rows.first
    expect(row.locator("td").nth(0)).to_have_text(str(first.pk))
    expect(row).to_contain_text("model-alpha")
    expect(row).to_contain_text("Attention check")
    expect(row).to_contain_text("factuality 4")
    expect(row).to_contain_text("comprehension 2")
    expect(row).to_contain_text("readability N/A")
    expect(row.locator("td").nth(5)).to_have_text("1")
    expect(row).to_contain_text(EXPLANATION)
    expect(page.get_by_role("heading", name="1 gold item")).to_be_visible()
    gold = GoldItem.objects.get(response=first)
    assert (gold.kind, gold.tolerance, gold.explanation) == (
        GoldItem.Kind.ATTENTION,
        1,
        EXPLANATION,
    )
    assert dict(gold.scores.values_list("skill__key", "score")) == {
        "factuality": 4,
        "comprehension": 2,
        "readability": None,
    }
    shot(page, "gold-page")

    # A file whose second row has a score outside the 1-5 scale: nothing is saved,
    # not even its good first row.
    bad = tmp_path / "gold.csv"
    bad.write_text(
        "response_id,factuality,comprehension,explanation\n"
        f"{responses[1].pk},4,3,fine\n"
        f"{responses[2].pk},9,3,out of scale\n"
    )
    before = (GoldItem.objects.count(), GoldScore.objects.count())
    page.locator("#gold-file").set_input_files(str(bad))
    with page.expect_response(
        lambda r: r.request.method == "POST" and r.url.endswith("/gold/")
    ) as posted:
        page.get_by_role("button", name="Import gold items").click()
    assert posted.value.status == 400
    problems = page.locator("#gold-problems")
    expect(problems).to_be_visible()
    expect(problems).to_contain_text("Nothing was saved")
    expect(problems.locator("li")).to_have_count(1)
    expect(problems.locator("li").first).to_contain_text("gold.csv")
    expect(problems.locator("li").first).to_contain_text("line 3")
    expect(problems.locator("li").first).to_contain_text("field `factuality`")
    assert (GoldItem.objects.count(), GoldScore.objects.count()) == before
    assert not GoldItem.objects.filter(response__in=responses[1:]).exists()
    # The list still shows the one gold item.
    expect(page.locator("#gold-list tbody tr")).to_have_count(1)
    shot(page, "gold-import-problems")


def test_training_feedback_follows_a_gold_item_and_only_a_gold_item(
    page, live_server, researcher, rater
):
    dataset, campaign = training_campaign(researcher, rater)
    factuality = skill_name(dataset, "factuality")
    comprehension = skill_name(dataset, "comprehension")
    open_campaign(page, live_server, rater, campaign)

    after_gold = after_real = 0
    for _ in range(6):
        assignment = current_assignment(page)
        if assignment.gold:
            assert_looks_real(page)
        submit_threes(page, assignment)
        feedback = page.locator("#gold-feedback")
        if assignment.gold:
            after_gold += 1
            expect(feedback).to_be_visible()
            expect(feedback).to_contain_text("expected answers")
            expect(feedback.locator("tbody tr")).to_have_count(2)
            fact_row = feedback.locator("tbody tr", has_text=factuality)
            expect(fact_row.locator("td")).to_have_text([factuality, "4", "3", "Off"])
            comp_row = feedback.locator("tbody tr", has_text=comprehension)
            expect(comp_row.locator("td")).to_have_text(
                [comprehension, "2", "3", "Off"]
            )
            expect(feedback.locator(".gold-explanation")).to_have_text(EXPLANATION)
            if after_gold == 1:
                shot(page, "gold-feedback")
        else:
            after_real += 1
            expect(page.locator(".saved-flash")).to_be_visible()
            expect(feedback).to_have_count(0)
        if not page.locator("#rating-panel[data-assignment-id]").count():
            break
        wait_for_focus(page)
        if after_gold >= 2 and after_real >= 2:
            break
    assert after_gold >= 1 and after_real >= 1, (after_gold, after_real)
    golds = Assignment.objects.filter(rater=rater, gold=True)
    assert golds.filter(status=Assignment.Status.SUBMITTED).count() == after_gold

    # The feedback survives a full reload of the page after a gold item (?saved=).
    last_gold = golds.filter(status=Assignment.Status.SUBMITTED).latest("pk")
    page.goto(f"{live_server.url}/rate/{campaign.pk}/?saved={last_gold.pk}")
    expect(page.locator("#gold-feedback")).to_contain_text(EXPLANATION)


def test_no_feedback_outside_the_training_phase(page, live_server, researcher, rater):
    _, campaign = training_campaign(researcher, rater, training_phase=False)
    open_campaign(page, live_server, rater, campaign)
    seen_gold = False
    for _ in range(4):
        assignment = current_assignment(page)
        if assignment.gold:
            seen_gold = True
            assert_looks_real(page)
        submit_threes(page, assignment)
        expect(page.locator(".saved-flash")).to_be_visible()
        expect(page.locator("#gold-feedback")).to_have_count(0)
        assert_looks_real(page)
        if seen_gold:
            break
        wait_for_focus(page)
    assert seen_gold


def test_researcher_sees_accuracy_per_rater_and_ends_the_training_phase(
    page, live_server, researcher, rater
):
    _, campaign = training_campaign(researcher, rater)
    # The rater works through four items (two of them gold) with the services.
    for _ in range(4):
        served = assignment_next(campaign=campaign, rater=rater).assignment
        rating_submit(
            assignment_id=served.pk,
            rater=rater,
            scores={"factuality": 4, "comprehension": 3, "readability": 5},
        )
    gold_done = Assignment.objects.filter(
        rater=rater, gold=True, status=Assignment.Status.SUBMITTED
    ).count()
    assert gold_done == 2

    login(page, live_server, researcher)
    page.goto(f"{live_server.url}/campaigns/{campaign.pk}/")
    section = page.locator("#campaign-gold")
    expect(
        section.get_by_role("heading", name="Gold items: accuracy per rater")
    ).to_be_visible()
    rows = section.locator("tbody tr")
    expect(rows).to_have_count(1)
    cells = rows.first.locator("td")
    expect(cells.nth(0)).to_have_text(rater.username)
    expect(cells.nth(1)).to_have_text("2")  # gold items
    # factuality right, comprehension off, on both: 2 right of 4 checked.
    expect(cells.nth(2)).to_have_text("2 / 4")
    expect(cells.nth(3)).to_contain_text("0.50")
    shot(page, "campaign-gold")

    page.get_by_role("button", name="End the training phase").click()
    expect(page.get_by_text("Training phase off")).to_be_visible()
    expect(page.get_by_role("button", name="Start a training phase")).to_be_visible()
    campaign.refresh_from_db()
    assert campaign.training_phase is False
