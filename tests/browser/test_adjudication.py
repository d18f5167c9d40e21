"""Adjudication in Chromium: a reviewer finds a campaign's disputes in the queue,
opens a response with every rater's scores and rationales, settles a criterion with
a note (a bad value first: refused, nothing saved), moves to the next dispute, and
reads the change in the history; a rater cannot open any of it."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotation.models import Adjudication, HumanScore
from annotation.selectors import assignment_skills
from annotation.services.campaign_spec import (
    CampaignSpec,
    ServingPolicy,
)
from annotation.services.campaigns import campaign_create
from annotation.services.rating import assignment_next, rating_submit
from tests.browser.conftest import login, shot
from tests.factories import (
    DatasetFactory,
    InstructionFactory,
    ResponseFactory,
    UserFactory,
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SKILLS = ["comprehension", "factuality", "readability"]
# Per rater, per response: the scores of the three criteria.
GIVEN = {
    "ann": [(1, 4, 4), (2, 5, 3), (4, 4, 4)],
    "bob": [(3, 4, 4), (2, 2, 3), (4, 4, 4)],
    "cat": [(5, 4, 3), (3, 5, 3), (4, 3, 4)],
}


@pytest.fixture
def disputed(transactional_db):
    researcher = UserFactory(username="adj-researcher", role="researcher")
    raters = {n: UserFactory(username=n, role="rater") for n in GIVEN}
    dataset = DatasetFactory(name="Adjudicated answers")
    responses = []
    for i in range(3):
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
            )  # fmt: skip
        )
    index = {r.pk: i for i, r in enumerate(responses)}
    campaign = campaign_create(spec=CampaignSpec(name="Sky disputes", dataset=dataset, raters=list(raters.values()), serving=ServingPolicy(overlap=3)), created_by=researcher)  # fmt: skip
    for name, user in raters.items():
        while a := assignment_next(campaign=campaign, rater=user).assignment:
            row = GIVEN[name][index[a.response_id]]
            scores = {
                s.key: row[SKILLS.index(s.key)] for s in assignment_skills(assignment=a)
            }
            rating_submit(
                assignment_id=a.pk, rater=user, scores=scores,
                rationales={k: f"{name}: my reason for {k}" for k in scores},
            )  # fmt: skip
    return campaign, responses, raters


def test_a_reviewer_settles_a_dispute(page, live_server, disputed):
    campaign, responses, raters = disputed
    reviewer = UserFactory(username="revi", role="reviewer")
    before = list(HumanScore.objects.order_by("pk").values_list("pk", "score"))
    login(page, live_server, reviewer)
    page.get_by_role("link", name="Adjudicate").click()
    expect(page.locator("#adjudication-campaigns")).to_contain_text("Sky disputes")
    page.get_by_role("link", name="Sky disputes").click()
    summary = page.locator("#adjudication-summary")
    # Response 0 comprehension 1..5, response 1 factuality 2..5: two disputes.
    expect(summary).to_contain_text("2 disputed criteria to settle in 2 responses")
    queue = page.locator("#adjudication-queue")
    expect(queue).to_contain_text("1 to 5 (3 raters)")
    expect(queue).to_contain_text("2 to 5 (3 raters)")
    expect(page.locator("#adjudication-rule-form")).to_have_count(0)  # researchers'
    shot(page, "adjudication-queue")
    queue.get_by_role("link", name=str(responses[0].pk)).click()
    card = page.locator("#criterion-comprehension")
    expect(card).to_contain_text("disputed")
    expect(card).to_contain_text("ann: my reason for comprehension")
    expect(card).to_contain_text("cat: my reason for comprehension")
    shot(page, "adjudication-item")
    card.get_by_label("Settled value").select_option("3")
    card.get_by_label("Note (why)").fill("  ")
    card.get_by_role("button", name="Settle").click()
    # The browser's own check refuses an empty note (required); a blank one reaches us.
    expect(page.locator("#adjudication-problems")).to_contain_text("Nothing was saved")
    assert not Adjudication.objects.exists()
    card = page.locator("#criterion-comprehension")
    card.get_by_label("Settled value").select_option("3")
    card.get_by_label("Note (why)").fill("bob read the question as asked")
    card.get_by_role("button", name="Settle").click()
    expect(page.locator("#criterion-comprehension")).to_contain_text("settled: 3")
    expect(page.locator(".score-history")).to_contain_text(
        "bob read the question as asked"
    )
    assert Adjudication.objects.get().score == 3
    assert list(HumanScore.objects.order_by("pk").values_list("pk", "score")) == before
    page.get_by_role("link", name="Next to settle").click()
    expect(page.locator("h1")).to_have_text(f"Response {responses[1].pk}")
    expect(page.locator("#criterion-factuality")).to_contain_text("disputed")
    page.goto(f"{live_server.url}/campaigns/{campaign.pk}/adjudication/")
    expect(page.locator("#adjudication-summary")).to_contain_text(
        "1 disputed criterion to settle in 1 response; 1 settled"
    )
    page.goto(f"{live_server.url}/campaigns/{campaign.pk}/history/")
    expect(page.locator(".score-history")).to_contain_text("adjudicated")
    expect(page.locator(".score-history")).to_contain_text("revi")
    shot(page, "adjudication-history")


def test_a_rater_cannot_open_the_queue(page, live_server, disputed):
    campaign, responses, raters = disputed
    login(page, live_server, raters["ann"])
    expect(page.get_by_role("link", name="Adjudicate")).to_have_count(0)
    got = page.goto(f"{live_server.url}/campaigns/{campaign.pk}/adjudication/")
    assert got.status == 403
    got = page.goto(
        f"{live_server.url}/campaigns/{campaign.pk}/adjudication/{responses[0].pk}/"
    )
    assert got.status == 403
