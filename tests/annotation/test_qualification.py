"""Qualification: gold items each rater answers before real ones; pass, fail (told
why, with the expected answers, served nothing more), one retry on unseen items,
bad settings refused, every endpoint refused to the roles that must not use it."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied

from annotation import selectors
from annotation.models import Assignment, Campaign, Qualification
from annotation.selectors import assignment_skills
from annotation.services.campaign_spec import (
    CampaignSpec,
    GoldPolicy,
)
from annotation.services.campaigns import campaign_create
from annotation.services.gold import gold_import
from annotation.services.qualification import qualification_allow_retry
from annotation.services.rating import (
    assignment_next,
    assignment_skip,
    rating_amend,
    rating_submit,
)
from flaskapp.errors import DomainError
from tests.annotation.test_gold import make_dataset, responses
from tests.factories import campaign_from_fields


def qual_campaign(researcher, raters, *, n=10, golds=4, size=2, **kwargs):
    dataset = make_dataset(n=n)
    ids = responses(dataset)
    rows = [
        (i + 2, {"response_id": rid, "factuality": 4, "readability": 2})
        for i, rid in enumerate(ids[:golds])
    ]
    gold_import(dataset=dataset, rows=rows, user=researcher)
    campaign = campaign_from_fields(
        name="q", dataset=dataset, created_by=researcher, raters=raters,
        qualification_size=size, **kwargs,
    )  # fmt: skip
    return campaign, set(ids[:golds])


def answer(campaign, rater, value, **override):
    """Serve and submit one item with `value` on every criterion (but those in
    `override`); the assignment."""
    a = assignment_next(campaign=campaign, rater=rater).assignment
    assert a is not None
    scores = {s.key: value for s in assignment_skills(assignment=a)}
    scores.update(override)
    rating_submit(assignment_id=a.pk, rater=rater, scores=scores)
    return a


@pytest.mark.parametrize("fast_sql", [True, False])
def test_a_rater_who_passes_gets_real_items_after_the_qualification(
    settings, researcher, rater, fast_sql
):
    settings.RATING_FAST_SQL = fast_sql  # qualification campaigns take the ORM path
    campaign, gold_ids = qual_campaign(researcher, [rater], qualification_pass=0.5)
    first, second = answer(campaign, rater, 4), answer(campaign, rater, 4)
    assert first.gold and second.gold
    assert {first.response_id, second.response_id} <= gold_ids
    # factuality 4 right, readability 2 wrong (4 given): 2 of 4 right = 0.5, pass.
    q = Qualification.objects.get(campaign=campaign, rater=rater)
    assert (q.status, q.right, q.checked, q.accuracy) == ("passed", 2, 4, 0.5)
    assert q.finished_at is not None
    assert all(
        a.qualification_id == q.pk
        for a in Assignment.objects.filter(pk__in=[first.pk, second.pk])
    )
    third = answer(campaign, rater, 3)
    assert not third.gold and third.response_id not in gold_ids
    assert third.qualification_id is None


def test_every_rater_gets_the_same_first_attempt_items(researcher, rater, other_rater):
    campaign, _ = qual_campaign(researcher, [rater, other_rater], golds=6, size=3)
    served = {}
    for user in (rater, other_rater):
        served[user.pk] = {answer(campaign, user, 4).response_id for _ in range(3)}
    assert served[rater.pk] == served[other_rater.pk]


def test_a_rater_who_fails_is_told_why_and_served_nothing_more(
    researcher, rater, api_client_for, client_for
):
    campaign, gold_ids = qual_campaign(researcher, [rater], qualification_pass=0.8)
    answer(campaign, rater, 1)
    answer(campaign, rater, 1)  # every answer wrong
    q = Qualification.objects.get(campaign=campaign, rater=rater)
    assert (q.status, q.right, q.checked) == ("failed", 0, 4)
    result = assignment_next(campaign=campaign, rater=rater)
    assert result.assignment is None
    assert "did not pass" in result.message and "0 of 4" in result.message
    assert not Assignment.objects.filter(campaign=campaign, gold=False).exists()

    body = api_client_for(rater).post(f"/api/rate/campaigns/{campaign.pk}/next/").json()
    assert body["assignment"] is None
    report = body["qualification"]["report"]
    assert body["qualification"]["status"] == "failed"
    assert len(report) == 2
    expected = {
        (c["skill"], c["expected"], c["yours"], c["right"])
        for item in report
        for c in item["criteria"]
    }
    assert expected == {
        ("factuality", "4", "1", False),
        ("readability", "2", "1", False),
    }
    page = client_for(rater).get(f"/rate/{campaign.pk}/").content.decode()
    assert 'id="qualification-report"' in page and "did not pass" in page


def test_within_one_rule_and_a_skip_counts_as_wrong(researcher, rater):
    campaign, _ = qual_campaign(researcher, [rater], qualification_rule="within1",
                                qualification_pass=0.5)  # fmt: skip
    answer(campaign, rater, 3)  # factuality 4: within 1, right; readability 2: right
    a = assignment_next(campaign=campaign, rater=rater).assignment
    assignment_skip(assignment_id=a.pk, rater=rater, reason="unsure")
    # Graded at the next request: 2 right of 4 (the skipped item's two are wrong),
    # 0.5 >= 0.5: passed, and a real item is served.
    after = assignment_next(campaign=campaign, rater=rater).assignment
    assert after is not None and not after.gold
    q = Qualification.objects.get(campaign=campaign, rater=rater)
    assert (q.status, q.right, q.checked, q.accuracy) == ("passed", 2, 4, 0.5)


def test_one_retry_on_unseen_items_then_no_more(researcher, rater):
    campaign, gold_ids = qual_campaign(researcher, [rater], golds=4, size=2)
    first = {answer(campaign, rater, 1).response_id for _ in range(2)}
    with pytest.raises(PermissionDenied):  # researchers only
        qualification_allow_retry(campaign=campaign, rater=rater, user=rater)
    retry = qualification_allow_retry(campaign=campaign, rater=rater, user=researcher)
    assert retry.attempt == 2 and retry.status == "in_progress"
    failed = Qualification.objects.get(campaign=campaign, rater=rater, attempt=1)
    assert failed.retry_allowed_by == researcher and failed.retry_allowed_at
    second = {
        answer(campaign, rater, 3, factuality=4, readability=2).response_id
        for _ in range(2)
    }
    assert not (first & second) and (first | second) == gold_ids
    retry.refresh_from_db()
    assert retry.status == "passed"
    real = answer(campaign, rater, 3)
    assert not real.gold


def test_retry_refusals_change_nothing(researcher, rater, other_rater):
    campaign, _ = qual_campaign(researcher, [rater, other_rater], golds=3, size=2)
    with pytest.raises(DomainError) as caught:  # never started
        qualification_allow_retry(campaign=campaign, rater=rater, user=researcher)
    assert caught.value.problems[0].field == "rater"
    for _ in range(2):
        answer(campaign, rater, 1)
    with pytest.raises(DomainError) as caught:  # 1 unseen gold item, 2 needed
        qualification_allow_retry(campaign=campaign, rater=rater, user=researcher)
    assert "only 1 gold item" in caught.value.message
    assert Qualification.objects.filter(campaign=campaign).count() == 1
    assert Qualification.objects.get(campaign=campaign).retry_allowed_by is None


BAD_SETTINGS = [
    ({"qualification_size": 2, "qualification_pass": 1.5}, "qualification_pass"),
    ({"qualification_size": 2, "qualification_pass": -0.1}, "qualification_pass"),
    ({"qualification_size": 9}, "qualification_size"),  # 4 gold items only
    ({"qualification_size": 201}, "qualification_size"),
    ({"qualification_size": 2, "qualification_rule": "close"}, "qualification_rule"),
    ({"qualification_size": 2, "rater_quota": 2}, "rater_quota"),
]


@pytest.mark.parametrize("kwargs,field", BAD_SETTINGS)
def test_bad_settings_are_refused_naming_the_field(researcher, rater, kwargs, field):
    dataset = make_dataset(n=8)
    ids = responses(dataset)
    gold_import(
        dataset=dataset,
        rows=[(i, {"response_id": r, "factuality": 4}) for i, r in enumerate(ids[:4])],
        user=researcher,
    )
    with pytest.raises(DomainError) as caught:
        campaign_from_fields(
            name="q", dataset=dataset, created_by=researcher, raters=[rater], **kwargs
        )
    assert field in {p.field for p in caught.value.problems}
    assert not Campaign.objects.exists()


def test_api_create_list_and_retry(researcher, rater, api_client_for):
    dataset = make_dataset(n=8)
    ids = responses(dataset)
    gold_import(
        dataset=dataset,
        rows=[(i, {"response_id": r, "factuality": 4}) for i, r in enumerate(ids[:4])],
        user=researcher,
    )
    api = api_client_for(researcher)
    bad = api.post(
        "/api/campaigns/",
        {"name": "q", "dataset": dataset.pk, "raters": [rater.username],
         "qualification_size": 2, "qualification_pass": 2},
        format="json",
    )  # fmt: skip
    assert bad.status_code == 400
    assert "qualification_pass" in {p["field"] for p in bad.json()["problems"]}
    assert not Campaign.objects.exists()
    created = api.post(
        "/api/campaigns/",
        {"name": "q", "dataset": dataset.pk, "raters": [rater.username],
         "qualification_size": 2, "qualification_pass": 0.75,
         "qualification_rule": "within1"},
        format="json",
    )  # fmt: skip
    assert created.status_code == 201, created.content
    body = created.json()
    assert (body["qualification_size"], body["qualification_pass"]) == (2, 0.75)
    campaign = Campaign.objects.get(pk=body["id"])
    for _ in range(2):
        answer(campaign, rater, 1)
    assignment_next(campaign=campaign, rater=rater)
    rows = api.get(f"/api/campaigns/{campaign.pk}/qualification/").json()
    assert [(r["username"], r["status"], r["done"], r["can_retry"]) for r in rows] == [
        (rater.username, "failed", 2, True)
    ]
    url = f"/api/campaigns/{campaign.pk}/qualification/{rater.pk}/retry/"
    again = api.post(url)
    assert again.status_code == 201 and again.json()["attempt"] == 2
    refused = api.post(url)  # the second attempt is not failed
    assert refused.status_code == 400
    assert Qualification.objects.filter(campaign=campaign).count() == 2


def test_qualification_endpoints_refuse_raters_and_anonymous(
    researcher, rater, no_role_user, api_client_for, client_for
):
    campaign, _ = qual_campaign(researcher, [rater])
    for _ in range(2):
        answer(campaign, rater, 1)
    urls = [
        ("get", f"/api/campaigns/{campaign.pk}/qualification/"),
        ("post", f"/api/campaigns/{campaign.pk}/qualification/{rater.pk}/retry/"),
    ]
    for user, codes in ((rater, {403}), (no_role_user, {403}), (None, {401, 403})):
        for method, url in urls:
            response = getattr(api_client_for(user), method)(url)
            assert response.status_code in codes, (user, url)
    page = f"/campaigns/{campaign.pk}/qualification/{rater.pk}/retry/"
    assert client_for(rater).post(page).status_code == 403
    assert client_for(None).post(page).status_code == 302  # to the login page
    assert Qualification.objects.filter(campaign=campaign).count() == 1


def test_campaign_page_lists_attempts_and_allows_a_retry(researcher, rater, client_for):
    campaign, _ = qual_campaign(researcher, [rater])
    for _ in range(2):
        answer(campaign, rater, 1)
    assignment_next(campaign=campaign, rater=rater)
    c = client_for(researcher)
    page = c.get(f"/campaigns/{campaign.pk}/").content.decode()
    assert 'id="qualification-list"' in page and "Allow a retry" in page
    done = c.post(f"/campaigns/{campaign.pk}/qualification/{rater.pk}/retry/")
    assert done.status_code == 302
    assert Qualification.objects.filter(campaign=campaign, rater=rater).count() == 2
    rows = selectors.campaign_qualifications(campaign=campaign)
    assert [(q.attempt, q.can_retry) for q in rows] == [(1, False), (2, False)]


def test_qualification_answers_are_final(researcher, rater):
    """A failed rater sees the expected scores: amending the answers afterwards
    would rewrite the attempt's accuracy, so it is refused and nothing changes."""
    from annotation.models import HumanScore

    campaign, _ = qual_campaign(researcher, [rater])
    first = answer(campaign, rater, 1)
    answer(campaign, rater, 1)
    before = list(HumanScore.objects.order_by("pk").values_list("pk", "score"))
    with pytest.raises(DomainError, match="known-answer item"):
        rating_amend(
            assignment_id=first.pk, rater=rater,
            scores={s.key: 4 for s in assignment_skills(assignment=first)},
        )  # fmt: skip
    assert list(HumanScore.objects.order_by("pk").values_list("pk", "score")) == before
    assert not HumanScore.history.exists()


def test_gold_answers_outside_training_stay_amendable(researcher, rater):
    """Outside a training phase and a qualification nothing has shown the expected
    scores, and refusing an amend would tell the rater the item is gold."""
    from tests.annotation.test_gold import make_dataset, responses

    dataset = make_dataset(n=6)
    ids = responses(dataset)
    gold_import(
        dataset=dataset,
        rows=[(2, {"response_id": ids[0], "factuality": 4})],
        user=researcher,
    )
    campaign = campaign_create(
        spec=CampaignSpec(
            name="g", dataset=dataset, raters=[rater], gold=GoldPolicy(rate=2)
        ),
        created_by=researcher,
    )
    done = []
    while a := assignment_next(campaign=campaign, rater=rater).assignment:
        scores = {s.key: 3 for s in assignment_skills(assignment=a)}
        rating_submit(assignment_id=a.pk, rater=rater, scores=scores)
        done.append(a)
    gold = next(a for a in done if a.gold)
    rating_amend(
        assignment_id=gold.pk, rater=rater,
        scores={s.key: 4 for s in assignment_skills(assignment=gold)},
    )  # fmt: skip
    assert set(gold.scores.values_list("score", flat=True)) == {4}
