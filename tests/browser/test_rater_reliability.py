"""The rater reliability page in Chromium: a researcher reads each rater's figures and
the flags with their reasons, excludes a straight-liner with a reason and reverses it,
pauses a rater (who is then served nothing and told why) and resumes them; a rater is
refused the page."""

from __future__ import annotations

import pytest
from django.template.defaultfilters import floatformat
from playwright.sync_api import expect

from analysis.selectors.reliability import campaign_reliability
from annotation.models import Assignment, Campaign, CampaignItem, RaterExclusion
from annotation.selectors import assignment_skills
from annotation.services.campaign_spec import (
    CampaignSpec,
    ServingPolicy,
)
from annotation.services.campaigns import campaign_create
from annotation.services.exclusions import PAUSED_MESSAGE
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
RESPONSES = 12
# Each rater's habit: their score from the response's true score on a criterion.
HABITS = {
    "ann": lambda t: t,  # the truth
    "bob": lambda t: t,
    "cat": lambda t: t - 1,  # harsh by one point, and fast (below)
    "dan": lambda t: 3,  # the same score everywhere: a straight-liner
    "eve": lambda t: t,  # two items only, then stops: work is left for her
}
EVE_ITEMS = 2
STRAIGHT_FLAG = f"the same score on every criterion in {RESPONSES} of {RESPONSES} items"
FAST_FLAG = f"{RESPONSES} of {RESPONSES} items faster than the speed threshold"
EXCLUDE_REASON = "straight-lined every item (3 on every criterion)"
END_REASON = "talked to dan: the texts really were average"
PAUSE_REASON = "checking her first answers"


def truth(position: int, skill_key: str) -> int:
    """The true score (2..5) of the item served at `position` on a criterion.

    By serving position, not by id: the serving order is a hash of the campaign and
    response ids, which differ from database to database. Every quarter of a rater's
    items (3 consecutive positions) holds the same mix of true scores, so a rater who
    scores the truth cannot seem to drift however the ids fall."""
    return 2 + (position % 3 + SKILLS.index(skill_key)) % 4


@pytest.fixture
def researcher(transactional_db):
    return UserFactory(username="rel-researcher", role="researcher")


@pytest.fixture
def habits(transactional_db, researcher):
    """A campaign of RESPONSES responses every rater of HABITS rates (each scoring
    with their habit) but eve, who stops after EVE_ITEMS; the campaign and the
    raters by name."""
    raters = {name: UserFactory(username=name, role="rater") for name in HABITS}
    dataset = DatasetFactory(name="Habits")
    for i in range(RESPONSES):
        instruction = InstructionFactory(
            dataset=dataset, skill_keys=SKILLS, text=f"Question {i}: why is it so?"
        )
        ResponseFactory(instruction=instruction, model_name="model-alpha")
    campaign = campaign_create(
        spec=CampaignSpec(
            name="Habits campaign",
            dataset=dataset,
            raters=list(raters.values()),
            serving=ServingPolicy(overlap=len(HABITS)),
        ),
        created_by=researcher,
    )
    Campaign.objects.filter(pk=campaign.pk).update(speed_threshold_seconds=5)
    campaign.refresh_from_db()
    position = dict(
        CampaignItem.objects.filter(campaign=campaign).values_list(
            "response_id", "position"
        )
    )
    for name, user in raters.items():
        done = 0
        while name != "eve" or done < EVE_ITEMS:
            served = assignment_next(campaign=campaign, rater=user).assignment
            if served is None:
                break
            scores = {
                s.key: HABITS[name](truth(position[served.response_id], s.key))
                for s in assignment_skills(assignment=served)
            }
            rating_submit(
                assignment_id=served.pk,
                rater=user,
                scores=scores,
                active_seconds=2.0 if name == "cat" else 30.0,
            )
            done += 1
    return campaign, raters


def fmt(value, places: int = 2) -> str:
    """A figure as the page writes it (Django's floatformat), "–" when undefined."""
    return "–" if value is None else floatformat(value, places)


def open_reliability(page, live_server, researcher, campaign) -> None:
    """Log in, open the campaign page and follow its "Rater reliability" link."""
    login(page, live_server, researcher)
    page.goto(f"{live_server.url}/campaigns/{campaign.pk}/")
    page.get_by_role("link", name="Rater reliability").click()
    page.wait_for_url(f"{live_server.url}/reliability/{campaign.pk}/")
    expect(page.get_by_role("heading", name="Rater reliability")).to_be_visible()


def rater_row(page, username: str):
    return page.locator("#reliability-raters tbody tr").filter(
        has=page.locator("th", has_text=username)
    )


def flags_of(page, username: str):
    """The flags line under a flagged rater's figures."""
    return page.locator(
        f'#reliability-raters tr.flag-row[data-rater="{username}"] .flag-list'
    )


def decide(page, rater, action: str, reason: str) -> None:
    """Record a decision through the page's form (a full page load follows)."""
    form = page.locator("#decision-form")
    form.get_by_label("Rater").select_option(str(rater.pk))
    form.get_by_label("Decision").select_option(action)
    form.get_by_label("Reason").fill(reason)
    with page.expect_navigation():
        form.get_by_role("button", name="Record the decision").click()


def history_row(page, username: str, kind: str):
    return (
        page.locator("#decision-history tbody tr")
        .filter(has=page.locator("td", has_text=username))
        .filter(has_text=kind)
    )


def test_researcher_reads_each_raters_figures_and_excludes_the_straight_liner(
    page, live_server, researcher, habits
):
    campaign, raters = habits
    open_reliability(page, live_server, researcher, campaign)
    report = {r.username: r for r in campaign_reliability(campaign=campaign).raters}

    flagged = sum(1 for r in report.values() if r.flags)
    assert {"cat", "dan"} <= {n for n, r in report.items() if r.flags}
    rows = page.locator("#reliability-raters tbody tr")
    expect(rows.locator("th")).to_have_text(sorted(HABITS))
    scores = (4 * RESPONSES + EVE_ITEMS) * len(SKILLS)
    expect(page.locator(".subtitle")).to_contain_text(
        f"5 raters, {scores} scores (N/A and gold items apart); {flagged} flagged"
    )
    for name in HABITS:
        r = report[name]
        cells = rater_row(page, name).locator("td")
        items = EVE_ITEMS if name == "eve" else RESPONSES
        assert r.items == items
        # No gold item in this campaign: no gold column; the flags are a line below.
        expect(cells).to_have_count(11)
        expect(cells.nth(0)).to_have_text(str(items))
        expect(cells.nth(1)).to_have_text("2" if name == "cat" else "30")
        expect(cells.nth(2)).to_have_text(str(r.overall.n))
        expect(cells.nth(3)).to_have_text(fmt(r.overall.exact))
        expect(cells.nth(4)).to_have_text(fmt(r.overall.within1))
        expect(cells.nth(5)).to_have_text(fmt(r.overall.spearman))
        expect(cells.nth(6)).to_have_text(fmt(r.overall.qwk))
        expect(cells.nth(7)).to_have_text(fmt(r.overall.severity))
        straight = RESPONSES if name == "dan" else 0
        expect(cells.nth(8)).to_have_text(f"{straight} / {items}")
        expect(cells.nth(9)).to_have_text(str(RESPONSES if name == "cat" else 0))
    expect(page.locator("#reliability-raters thead")).not_to_contain_text("Gold")
    # Every rater with enough shared scores agrees with the others somewhere.
    assert all(report[n].overall.n >= 20 for n in ("ann", "bob", "cat", "dan"))
    # cat is harsher than the others' consensus; ann, who scores the truth, is not.
    assert report["cat"].overall.severity < 0 < report["ann"].overall.severity

    # Each flagged rater's row is marked and lists every reason; the straight-liner
    # and the fast, harsh rater among them, not eve (too few items to judge).
    for name, r in report.items():
        row = rater_row(page, name)
        if r.flags:
            expect(row).to_have_class("row-flagged")
            expect(flags_of(page, name).locator("li")).to_have_text(r.flags)
        else:
            expect(row).not_to_have_class("row-flagged")
            expect(flags_of(page, name)).to_have_count(0)
    expect(flags_of(page, "dan")).to_contain_text(STRAIGHT_FLAG)
    expect(flags_of(page, "cat")).to_contain_text(FAST_FLAG)
    expect(flags_of(page, "cat")).to_contain_text("harsher")
    expect(flags_of(page, "eve")).to_have_count(0)
    # ann scores the truth: no flag at all (a few items cannot flag drift).
    expect(flags_of(page, "ann")).to_have_count(0)
    # Per criterion: one row per rater, one column per criterion scored.
    criteria = page.locator("#reliability-criteria")
    expect(criteria.locator("thead th")).to_have_text(
        ["Rater", "Factuality", "Comprehension", "Readability"]  # rubric order
    )
    expect(criteria.locator("tbody th")).to_have_text(sorted(HABITS))
    ann_factuality = report["ann"].criteria["factuality"].qwk
    expect(
        criteria.locator("tbody tr").filter(has_text="ann").locator("td").nth(0)
    ).to_have_text(fmt(ann_factuality))
    expect(page.locator("#decision-history")).to_have_count(0)
    shot(page, "reliability-page")

    # Exclude dan, with a reason.
    decide(page, raters["dan"], "start:exclude", EXCLUDE_REASON)
    assert page.url == f"{live_server.url}/reliability/{campaign.pk}/"
    expect(page.locator(".messages")).to_contain_text(
        "dan: scores excluded from the analyses"
    )
    expect(rater_row(page, "dan").locator("th .badge")).to_have_text("excluded")
    expect(rater_row(page, "ann").locator("th .badge")).to_have_count(0)
    expect(page.locator("#decision-rater option", has_text="dan")).to_have_text(
        "dan (excluded)"
    )
    row = history_row(page, "dan", "Scores excluded from analyses")
    expect(row).to_have_count(1)
    cells = row.locator("td")
    expect(cells.nth(2)).to_have_text(EXCLUDE_REASON)
    expect(cells.nth(3)).to_contain_text(f"{researcher.username}, 20")
    expect(cells.nth(4)).to_have_text("in force")
    decision = RaterExclusion.objects.get(campaign=campaign, rater=raters["dan"])
    assert (decision.kind, decision.reason, decision.created_by) == (
        "exclude",
        EXCLUDE_REASON,
        researcher,
    )
    assert decision.ended_at is None
    shot(page, "reliability-excluded")

    # Reverse it: dan is included again, and the history keeps both halves.
    decide(page, raters["dan"], "end:exclude", END_REASON)
    expect(rater_row(page, "dan").locator("th .badge")).to_have_count(0)
    expect(page.locator("#decision-rater option", has_text="dan")).to_have_text("dan")
    row = history_row(page, "dan", "Scores excluded from analyses")
    expect(row).to_have_count(1)
    expect(row.locator("td").nth(2)).to_have_text(EXCLUDE_REASON)
    expect(row.locator("td").nth(4)).to_contain_text(researcher.username)
    expect(row.locator("td").nth(4)).to_contain_text(END_REASON)
    expect(row.locator(".badge", has_text="in force")).to_have_count(0)
    decision.refresh_from_db()
    assert decision.ended_by == researcher and decision.end_reason == END_REASON
    # Still flagged: the figures are the rater's, whatever was decided.
    expect(flags_of(page, "dan")).to_contain_text(STRAIGHT_FLAG)


def test_a_paused_rater_is_served_nothing_and_told_why_until_resumed(
    browser, page, live_server, researcher, habits
):
    campaign, raters = habits
    eve = raters["eve"]
    open_reliability(page, live_server, researcher, campaign)
    decide(page, eve, "start:pause", PAUSE_REASON)
    expect(page.locator(".messages")).to_contain_text("eve: paused")
    expect(rater_row(page, "eve").locator("th .badge")).to_have_text("paused")
    row = history_row(page, "eve", "Paused")
    expect(row.locator("td").nth(2)).to_have_text(PAUSE_REASON)
    expect(row.locator("td").nth(4)).to_have_text("in force")

    context = browser.new_context(viewport={"width": 1366, "height": 900})
    context.set_default_timeout(10_000)
    rater_page = context.new_page()
    try:
        login(rater_page, live_server, eve)
        rater_page.goto(f"{live_server.url}/rate/")
        rater_page.get_by_role("link", name=campaign.name).click()
        panel = rater_page.locator("#rating-panel")
        expect(panel).to_contain_text(PAUSED_MESSAGE)
        expect(rater_page.locator("#rating-panel[data-assignment-id]")).to_have_count(0)
        expect(rater_page.locator("#rating-form")).to_have_count(0)
        expect(panel).to_contain_text(f"You have rated {EVE_ITEMS} responses")
        shot(rater_page, "rater-paused")
        assert Assignment.objects.filter(campaign=campaign, rater=eve).count() == 2

        # Resumed from the page, eve is served one of the responses left for her.
        decide(page, eve, "end:pause", "her answers are fine")
        expect(page.locator(".messages")).to_contain_text("eve: no longer paused")
        expect(rater_row(page, "eve").locator("th .badge")).to_have_count(0)
        rater_page.reload()
        expect(rater_page.locator("#rating-panel[data-assignment-id]")).to_be_visible()
        expect(rater_page.locator("#rating-panel")).not_to_contain_text(PAUSED_MESSAGE)
    finally:
        context.close()
    assert Assignment.objects.filter(
        campaign=campaign, rater=eve, status=Assignment.Status.SERVED
    ).exists()


def test_a_rater_is_refused_the_reliability_page(page, live_server, habits):
    campaign, raters = habits
    login(page, live_server, raters["ann"])
    response = page.goto(f"{live_server.url}/reliability/{campaign.pk}/")
    assert response.status in (403, 404)
    expect(page.locator("#reliability-raters")).to_have_count(0)
    expect(page.locator("#decision-form")).to_have_count(0)
    expect(page.get_by_text("dan", exact=True)).to_have_count(0)
    # The decision form's target refuses a rater too (with a valid CSRF token, so
    # the refusal is the role's), and nothing is recorded.
    token = next(c["value"] for c in page.context.cookies() if c["name"] == "csrftoken")
    refused = page.request.post(
        f"{live_server.url}/campaigns/{campaign.pk}/rater-decision/",
        form={
            "rater_id": str(raters["dan"].pk),
            "action": "start:exclude",
            "reason": "x",
        },
        headers={"X-CSRFToken": token},
        max_redirects=0,
    )
    assert refused.status == 403
    assert "You do not have access to this page" in refused.text()
    assert "CSRF verification failed" not in refused.text()
    assert not RaterExclusion.objects.filter(campaign=campaign).exists()
