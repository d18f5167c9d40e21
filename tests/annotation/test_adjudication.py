"""Adjudication: the dispute rule, the queue, settling a criterion (never touching the
raters' scores), the history of every change of a human judgment (amend,
adjudication, exclusion), and each page and endpoint for the roles that may and may
not use them."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import Adjudication, Campaign, HumanScore
from annotation.scales import FLASK_SCALE, Scale
from annotation.selectors import assignment_skills
from annotation.selectors.adjudication import (
    adjudication_item,
    adjudication_queue,
    disputed_items,
    is_disputed,
    score_history,
)
from annotation.services.adjudication import adjudication_rule_set, adjudication_set
from annotation.services.campaign_spec import (
    CampaignSpec,
    ServingPolicy,
)
from annotation.services.campaigns import campaign_create
from annotation.services.exclusions import rater_decision_end, rater_decision_start
from annotation.services.rating import assignment_next, rating_amend, rating_submit
from flaskapp.errors import DomainError
from tests.factories import (
    DatasetFactory,
    InstructionFactory,
    ResponseFactory,
    UserFactory,
)

SKILLS = ["comprehension", "factuality", "readability"]
# Per rater, per response index, the scores (None: N/A) of the three criteria.
GIVEN = {
    "ann": [(3, 3, 3), (1, 4, 2), (5, 5, 5), (2, 2, None)],
    "bob": [(3, 4, 3), (3, 4, 2), (5, 5, 5), (2, 2, 4)],
    "cat": [(4, 3, 3), (5, 4, 3), (5, 2, 5), (2, 2, 1)],
}


@pytest.fixture
def reviewer(db):
    return UserFactory(username="revi", role="reviewer")


@pytest.fixture
def rated(db, researcher):
    raters = {name: UserFactory(username=name, role="rater") for name in GIVEN}
    dataset = DatasetFactory()
    responses = []
    for _ in range(4):
        instruction = InstructionFactory(dataset=dataset, skill_keys=SKILLS)
        responses.append(ResponseFactory(instruction=instruction, model_name="m"))
    index = {r.pk: i for i, r in enumerate(responses)}
    campaign = campaign_create(spec=CampaignSpec(name="adjudicate me", dataset=dataset, raters=list(raters.values()), serving=ServingPolicy(overlap=3)), created_by=researcher)  # fmt: skip
    for name, user in raters.items():
        while a := assignment_next(campaign=campaign, rater=user).assignment:
            row = GIVEN[name][index[a.response_id]]
            scores = {
                s.key: row[SKILLS.index(s.key)] for s in assignment_skills(assignment=a)
            }
            rating_submit(
                assignment_id=a.pk,
                rater=user,
                scores=scores,
                rationales={k: f"{name} on {k}" for k in scores},
            )
    campaign.refresh_from_db()
    return campaign, raters, responses


def expected_disputes(responses, spread=2, left_out=()):
    """(response id, criterion) whose non-N/A scores span >= spread, by hand."""
    out = set()
    for i, response in enumerate(responses):
        for k, key in enumerate(SKILLS):
            values = [
                GIVEN[n][i][k]
                for n in GIVEN
                if n not in left_out and GIVEN[n][i][k] is not None
            ]
            if len(values) >= 2 and max(values) - min(values) >= spread:
                out.add((response.pk, key))
    return out


def keyed(disputed: dict) -> set:
    from annotation.models import Skill

    names = dict(Skill.objects.values_list("pk", "key"))
    return {(r, names[s]) for r, s in disputed}


# --- the rule -----------------------------------------------------------------------


def test_the_rule_on_values():
    yes_no = Scale("categorical", (0, 1), ("yes", "no"), ("Yes", "No"))
    assert is_disputed([1, 3], scale=FLASK_SCALE, spread=2, split="no_majority")
    assert not is_disputed([1, 2], scale=FLASK_SCALE, spread=2, split="no_majority")
    assert not is_disputed([1, 5], scale=FLASK_SCALE, spread=0, split="any")
    assert not is_disputed([5], scale=FLASK_SCALE, spread=1, split="any")
    assert is_disputed([0, 1], scale=yes_no, spread=2, split="no_majority")
    assert not is_disputed([0, 0, 1], scale=yes_no, spread=2, split="no_majority")
    assert is_disputed([0, 0, 1], scale=yes_no, spread=2, split="any")
    assert not is_disputed([0, 1], scale=yes_no, spread=2, split="off")
    assert is_disputed([0, 0, 1, 1], scale=yes_no, spread=2, split="no_majority")


def test_the_queue_holds_exactly_the_disputed_criteria(rated):
    campaign, raters, responses = rated
    want = expected_disputes(responses)
    assert want  # the data has disputes: (1, comprehension) 1..5, (2, factuality)
    assert keyed(disputed_items(campaign=campaign)) == want
    queue = adjudication_queue(campaign=campaign)
    assert {r.response.pk for r in queue.rows} == {r for r, _ in want}
    assert queue.criteria_open == len(want) and queue.criteria_settled == 0
    # N/A is left out: response 3's readability is (None, 4, 1) -> spans 3 over two.
    assert (responses[3].pk, "readability") in want
    # A stricter rule, then the rule off.
    adjudication_rule_set(
        campaign=campaign, spread=4, split="no_majority", user=campaign.created_by
    )
    assert keyed(disputed_items(campaign=campaign)) == expected_disputes(
        responses, spread=4
    )
    adjudication_rule_set(
        campaign=campaign, spread=0, split="off", user=campaign.created_by
    )
    assert disputed_items(campaign=campaign) == {}


def test_excluded_raters_are_left_out_of_the_rule(rated, researcher):
    campaign, raters, responses = rated
    rater_decision_start(
        campaign=campaign, rater=raters["cat"], kind="exclude",
        reason="rushed", user=researcher,
    )  # fmt: skip
    assert keyed(disputed_items(campaign=campaign)) == expected_disputes(
        responses, left_out=("cat",)
    )
    item = adjudication_item(campaign=campaign, response_id=responses[1].pk)
    comprehension = next(c for c in item.criteria if c.skill.key == "comprehension")
    assert [(r.rater, r.value, r.excluded) for r in comprehension.ratings] == [
        ("ann", "1", False),
        ("bob", "3", False),
        ("cat", "5", True),
    ]
    assert comprehension.disputed  # 1 and 3 still span two points


# --- settling ----------------------------------------------------------------------


def test_settling_keeps_the_raters_scores_and_records_history(rated, reviewer):
    campaign, raters, responses = rated
    before = list(HumanScore.objects.order_by("pk").values_list("pk", "score"))
    response = responses[1]
    row = adjudication_set(
        campaign=campaign, response_id=response.pk, criterion="comprehension",
        score="3", note="bob's reading is right", user=reviewer,
    )  # fmt: skip
    assert (row.score, row.created_by, row.updated_by) == (3, reviewer, reviewer)
    again = adjudication_set(
        campaign=campaign, response_id=response.pk, criterion="comprehension",
        score=4, note="on second reading", user=reviewer,
    )  # fmt: skip
    assert again.pk == row.pk and Adjudication.objects.count() == 1
    assert list(HumanScore.objects.order_by("pk").values_list("pk", "score")) == before
    queue = adjudication_queue(campaign=campaign, state="all")
    settled = {
        (r.response.pk, c.skill.key): c.settled for r in queue.rows for c in r.criteria
    }
    assert settled[(response.pk, "comprehension")] == "4"
    events = [
        e
        for e in score_history(campaign=campaign, response_id=response.pk)
        if e.kind == "adjudication"
    ]
    assert [(e.action, e.before, e.after, e.note, e.who) for e in events] == [
        ("adjudication changed", "3", "4", "on second reading", "revi"),
        ("adjudicated", "", "3", "bob's reading is right", "revi"),
    ]
    # The same value and note again: nothing new in the history.
    adjudication_set(
        campaign=campaign, response_id=response.pk, criterion="comprehension",
        score=4, note="on second reading", user=reviewer,
    )  # fmt: skip
    assert Adjudication.history.count() == 2


@pytest.mark.parametrize(
    "change, field",
    [
        ({"score": 6}, "score"),
        ({"score": "seven"}, "score"),
        ({"note": "  "}, "note"),
        ({"note": "bad \x00 byte"}, "note"),
        ({"criterion": "no-such-criterion"}, "criterion"),
        ({"response_id": 10**9}, "response_id"),
        ({"response_id": "x"}, "response_id"),
    ],
)
def test_bad_adjudications_name_the_field_and_change_nothing(
    rated, reviewer, change, field
):
    campaign, raters, responses = rated
    kwargs = {
        "response_id": responses[1].pk,
        "criterion": "comprehension",
        "score": 3,
        "note": "why",
    } | change
    with pytest.raises(DomainError) as info:
        adjudication_set(campaign=campaign, user=reviewer, **kwargs)
    assert field in {p.field for p in info.value.problems}
    assert not Adjudication.objects.exists() and not Adjudication.history.exists()


def test_only_reviewers_researchers_and_admins_settle(rated, rater):
    campaign, raters, responses = rated
    from django.core.exceptions import PermissionDenied

    with pytest.raises(PermissionDenied):
        adjudication_set(
            campaign=campaign, response_id=responses[1].pk, criterion="comprehension",
            score=3, note="me", user=raters["ann"],
        )  # fmt: skip
    assert not Adjudication.objects.exists()


@pytest.mark.parametrize(
    "spread, split, field",
    [(11, "any", "adjudication_range"), (-1, "any", "adjudication_range"),
     ("two", "any", "adjudication_range"), (2, "most", "adjudication_split")],
)  # fmt: skip
def test_bad_rules_are_refused(rated, researcher, spread, split, field):
    campaign, *_ = rated
    with pytest.raises(DomainError) as info:
        adjudication_rule_set(
            campaign=campaign, spread=spread, split=split, user=researcher
        )
    assert field in {p.field for p in info.value.problems}
    campaign.refresh_from_db()
    assert (campaign.adjudication_range, campaign.adjudication_split) == (
        2,
        "no_majority",
    )


def test_a_categorical_split_vote_goes_to_the_queue(researcher):
    from tests.analysis.classification_data import make_classification_setup

    # Two raters: "yes"/"no" on q0 (a split), "yes"/"yes" on q1.
    s = make_classification_setup(
        researcher,
        human={
            (0, "alpha", "consistent"): ["yes", "no"],
            (1, "alpha", "consistent"): ["yes", "yes"],
        },
        judges=[],
        n_instructions=2,
        models=("alpha",),
        n_raters=2,
    )
    campaign = s.campaign
    disputed = disputed_items(campaign=campaign)
    assert len(disputed) == 1
    ((response_id, _), split) = next(iter(disputed.items()))
    assert split == "yes 1 · no 1"
    row = adjudication_set(
        campaign=campaign, response_id=response_id, criterion="consistent",
        score="No", note="the summary adds a date", user=researcher,
    )  # fmt: skip
    assert row.score == 1  # the code of "no"
    with pytest.raises(DomainError) as info:
        adjudication_set(
            campaign=campaign, response_id=response_id, criterion="consistent",
            score="maybe", note="x", user=researcher,
        )  # fmt: skip
    assert {p.field for p in info.value.problems} == {"score"}


# --- the history of human judgments -------------------------------------------------


def test_amends_exclusions_and_pauses_are_in_the_history(rated, researcher):
    campaign, raters, responses = rated
    ann = raters["ann"]
    a = campaign.assignments.get(rater=ann, response=responses[0])
    kept = {k: f"ann on {k}" for k in SKILLS}
    rating_amend(
        assignment_id=a.pk, rater=ann, rationales=kept,
        scores={"comprehension": 4, "factuality": 3, "readability": 3},
    )  # fmt: skip
    rating_amend(
        assignment_id=a.pk, rater=ann, rationales=kept,
        scores={"comprehension": 2, "factuality": 3, "readability": 3},
    )  # fmt: skip
    rater_decision_start(
        campaign=campaign, rater=raters["cat"], kind="exclude",
        reason="rushed", user=researcher,
    )  # fmt: skip
    rater_decision_end(
        campaign=campaign, rater=raters["cat"], kind="exclude",
        reason="checked again", user=researcher,
    )  # fmt: skip
    events = score_history(campaign=campaign)
    scores = [
        (e.action, e.who, e.rater, e.criterion, e.before, e.after)
        for e in events
        if e.kind == "score"
    ]
    assert scores == [
        ("amended", "ann", "ann", "Comprehension", "4", "2"),
        ("amended", "ann", "ann", "Comprehension", "3", "4"),
        ("submitted", "ann", "ann", "Comprehension", "", "3"),
    ]
    decisions = [
        (e.action, e.who, e.rater, e.note) for e in events if e.kind == "exclude"
    ]
    assert decisions == [
        ("exclude ended", researcher.username, "cat", "checked again"),
        ("exclude started", researcher.username, "cat", "rushed"),
    ]
    # An unchanged criterion writes nothing: factuality and readability kept theirs.
    assert HumanScore.history.count() == 3
    # A changed rationale alone is a change too, and says so.
    rating_amend(
        assignment_id=a.pk, rater=ann, rationales=kept | {"readability": "clearer"},
        scores={"comprehension": 2, "factuality": 3, "readability": 3},
    )  # fmt: skip
    readability = [
        (e.action, e.before, e.after)
        for e in score_history(campaign=campaign)
        if e.criterion == "Readability"
    ]
    assert readability == [("rationale amended", "3", "3"), ("submitted", "", "3")]


def test_deleting_a_campaign_stays_a_set_based_delete(
    rated, django_assert_max_num_queries
):
    campaign, *_ = rated
    n = HumanScore.objects.count()
    assert n == 36
    with django_assert_max_num_queries(40):
        Campaign.objects.filter(pk=campaign.pk).delete()
    assert not HumanScore.objects.exists()
    assert not HumanScore.history.exists()  # a deletion is not recorded per row


# --- pages and API, by role -----------------------------------------------------------


def test_pages_for_a_reviewer(rated, reviewer, client_for):
    campaign, raters, responses = rated
    c = client_for(reviewer)
    home = c.get(reverse("annotation:adjudication-home"))
    assert home.status_code == 200 and "adjudicate me" in home.content.decode()
    queue = c.get(reverse("annotation:adjudication-queue", args=[campaign.pk]))
    html = queue.content.decode()
    assert queue.status_code == 200
    assert "1 to 5 (3 raters)" in html  # response 1's comprehension
    assert 'id="adjudication-rule-form"' not in html  # the rule is researchers'
    url = reverse("annotation:adjudication-item", args=[campaign.pk, responses[1].pk])
    page = c.get(url)
    assert page.status_code == 200
    assert "ann on comprehension" in page.content.decode()  # rationales, not blind
    bad = c.post(url, {"criterion": "comprehension", "score": "9", "note": "x"})
    assert bad.status_code == 400 and "outside the scale" in bad.content.decode()
    assert not Adjudication.objects.exists()
    ok = c.post(url, {"criterion": "comprehension", "score": "3", "note": "bob"})
    assert ok.status_code == 302
    assert Adjudication.objects.get().score == 3
    history = c.get(reverse("annotation:adjudication-history", args=[campaign.pk]))
    assert history.status_code == 200 and "adjudicated" in history.content.decode()
    refused = c.post(
        reverse("annotation:adjudication-rule", args=[campaign.pk]),
        {"adjudication_range": "3", "adjudication_split": "any"},
    )
    assert refused.status_code == 403


def test_researcher_sets_the_rule_on_the_page(rated, researcher, client_for):
    campaign, *_ = rated
    c = client_for(researcher)
    url = reverse("annotation:adjudication-rule", args=[campaign.pk])
    bad = c.post(url, {"adjudication_range": "99", "adjudication_split": "any"})
    assert bad.status_code == 400 and "adjudication_range" in bad.content.decode()
    ok = c.post(url, {"adjudication_range": "3", "adjudication_split": "any"})
    assert ok.status_code == 302
    campaign.refresh_from_db()
    assert (campaign.adjudication_range, campaign.adjudication_split) == (3, "any")


@pytest.mark.parametrize("who", ["rater", "nobody", "anonymous"])
def test_pages_refuse_raters_and_others(rated, who, client_for, rater, no_role_user):
    campaign, raters, responses = rated
    user = {"rater": raters["ann"], "nobody": no_role_user, "anonymous": None}[who]
    c = client_for(user)
    urls = [
        reverse("annotation:adjudication-home"),
        reverse("annotation:adjudication-queue", args=[campaign.pk]),
        reverse("annotation:adjudication-item", args=[campaign.pk, responses[1].pk]),
        reverse("annotation:adjudication-history", args=[campaign.pk]),
    ]
    for url in urls:
        got = c.get(url)
        assert got.status_code == (302 if user is None else 403), url
    post = c.post(urls[2], {"criterion": "comprehension", "score": "3", "note": "x"})
    assert post.status_code in (302, 403)
    assert not Adjudication.objects.exists()


def test_api_for_a_reviewer(rated, reviewer, api_client_for):
    campaign, raters, responses = rated
    api = api_client_for(reviewer)
    queue = api.get(f"/api/campaigns/{campaign.pk}/adjudication/")
    assert queue.status_code == 200
    body = queue.json()
    assert body["rule"] == {
        "adjudication_range": 2,
        "adjudication_split": "no_majority",
    }
    pairs = {
        (r["response_id"], c["criterion"])
        for r in body["results"]
        for c in r["criteria"]
    }
    assert pairs == expected_disputes(responses)
    for params, field in [
        ("state=nope", "state"),
        ("page=0", "page"),
        ("page=x", "page"),
    ]:
        bad = api.get(f"/api/campaigns/{campaign.pk}/adjudication/?{params}")
        assert bad.status_code == 400, params
        assert field in str(bad.json()), params
    url = f"/api/campaigns/{campaign.pk}/adjudication/{responses[1].pk}/"
    item = api.get(url).json()
    comp = next(c for c in item["criteria"] if c["criterion"] == "comprehension")
    assert comp["disputed"] and [r["score"] for r in comp["ratings"]] == ["1", "3", "5"]
    bad = api.post(
        url, {"criterion": "comprehension", "score": 0, "note": "x"}, format="json"
    )
    assert bad.status_code == 400 and "score" in str(bad.json())
    made = api.post(
        url, {"criterion": "comprehension", "score": None, "note": "cannot tell"},
        format="json",
    )  # fmt: skip
    assert made.status_code == 201 and made.json()["score"] == "N/A"
    history = api.get(
        f"/api/campaigns/{campaign.pk}/history/?response_id={responses[1].pk}"
    )
    assert history.status_code == 200
    assert [e["action"] for e in history.json()] == ["adjudicated"]
    assert (
        api.get(f"/api/campaigns/{campaign.pk}/history/?response_id=z").status_code
        == 400
    )
    rule = api.put(
        f"/api/campaigns/{campaign.pk}/adjudication/rule/",
        {"adjudication_range": 3, "adjudication_split": "any"}, format="json",
    )  # fmt: skip
    assert rule.status_code == 403  # reviewers do not set the rule


def test_api_rule_for_a_researcher(rated, researcher, api_client_for):
    campaign, *_ = rated
    api = api_client_for(researcher)
    url = f"/api/campaigns/{campaign.pk}/adjudication/rule/"
    bad = api.put(
        url, {"adjudication_range": 3, "adjudication_split": "x"}, format="json"
    )
    assert bad.status_code == 400 and "adjudication_split" in str(bad.json())
    ok = api.put(
        url, {"adjudication_range": 3, "adjudication_split": "any"}, format="json"
    )
    assert ok.status_code == 200 and ok.json()["adjudication_range"] == 3


@pytest.mark.parametrize("who", ["rater", "nobody", "anonymous"])
def test_api_refuses_raters_and_others(rated, who, api_client_for, no_role_user):
    campaign, raters, responses = rated
    user = {"rater": raters["ann"], "nobody": no_role_user, "anonymous": None}[who]
    api = api_client_for(user)
    want = 401 if user is None else 403
    base = f"/api/campaigns/{campaign.pk}"
    for url in [f"{base}/adjudication/", f"{base}/adjudication/{responses[1].pk}/",
                f"{base}/history/"]:  # fmt: skip
        assert api.get(url).status_code == want, url
    posted = api.post(
        f"{base}/adjudication/{responses[1].pk}/",
        {"criterion": "comprehension", "score": 3, "note": "x"}, format="json",
    )  # fmt: skip
    assert posted.status_code == want
    assert api.put(f"{base}/adjudication/rule/", {}, format="json").status_code == want
    assert not Adjudication.objects.exists()


def test_unknown_campaign_and_unrated_response_are_404(rated, reviewer, api_client_for):
    campaign, *_ = rated
    api = api_client_for(reviewer)
    assert api.get("/api/campaigns/999999/adjudication/").status_code == 404
    assert (
        api.get(f"/api/campaigns/{campaign.pk}/adjudication/999999/").status_code == 404
    )
