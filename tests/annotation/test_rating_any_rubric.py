"""Rating on any rubric (issue 14): a 0-4 five-attribute rubric, a 1-10 single
criterion, a yes/no classification campaign, and critiques; through the service, the
API and the pages. Every refusal names its field, says what is accepted and writes
nothing."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied
from django.db import connection
from django.urls import reverse

from annotation.models import Assignment, Campaign, CampaignItem, HumanScore
from annotation.selectors import assignment_skills
from annotation.services.campaign_spec import (
    CampaignSpec,
    PairPolicy,
)
from annotation.services.campaigns import campaign_set_critique
from annotation.services.rating import assignment_next, rating_amend, rating_submit
from flaskapp.errors import ConflictError, DomainError
from tests.factories import UserFactory
from tests.rubric_samples import HELPSTEER, TEN_POINT, YES_NO, campaign_on


def pytest_generate_tests(metafunc):
    # Both implementations of serve and submit (raw SQL on PostgreSQL, and the ORM).
    if "rating_path" in metafunc.fixturenames:
        paths = ["sql", "orm"] if connection.vendor == "postgresql" else ["orm"]
        metafunc.parametrize("rating_path", paths, indirect=True)


@pytest.fixture(autouse=True)
def rating_path(request, settings):
    settings.RATING_FAST_SQL = getattr(request, "param", "sql") == "sql"
    return getattr(request, "param", "sql")


@pytest.fixture
def raters(db):
    return [UserFactory(username=f"rater-{i}", role="rater") for i in range(2)]


def serve(campaign, rater) -> Assignment:
    assignment = assignment_next(campaign=campaign, rater=rater).assignment
    assert assignment is not None
    return assignment


def problems_of(exc) -> dict[str, str]:
    return {p.field: p.message for p in exc.value.problems}


def assert_nothing_written(assignment: Assignment) -> None:
    assert not HumanScore.objects.filter(assignment=assignment).exists()
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.SERVED
    assert assignment.critique == ""


# --- Service ------------------------------------------------------------------------


def test_helpsteer_0_4_stores_every_point_and_refuses_five(researcher, raters):
    campaign = campaign_on(HELPSTEER, user=researcher, raters=raters)
    a = serve(campaign, raters[0])
    keys = [s.key for s in assignment_skills(assignment=a)]
    assert keys == [
        "helpfulness",
        "correctness",
        "coherence",
        "complexity",
        "verbosity",
    ]
    with pytest.raises(DomainError) as exc:
        rating_submit(
            assignment_id=a.pk,
            rater=raters[0],
            scores={**dict.fromkeys(keys, 2), "verbosity": 5},
        )
    assert problems_of(exc) == {
        "scores.verbosity": "score 5 is outside the scale; use a whole number 0-4 or N/A"
    }
    assert_nothing_written(a)
    given = dict(zip(keys, [0, 4, 2, "na", "1"], strict=True))
    rating_submit(assignment_id=a.pk, rater=raters[0], scores=given)
    stored = {
        s.skill.key: s.score
        for s in HumanScore.objects.filter(assignment=a).select_related("skill")
    }
    assert stored == {
        "helpfulness": 0,
        "correctness": 4,
        "coherence": 2,
        "complexity": None,
        "verbosity": 1,
    }


def test_ten_point_takes_ten_and_refuses_na_and_eleven(researcher, raters):
    campaign = campaign_on(TEN_POINT, user=researcher, raters=raters)
    a = serve(campaign, raters[0])
    for value, message in [
        ("na", "N/A is not allowed here; write a whole number 1-10"),
        (None, "N/A is not allowed here; write a whole number 1-10"),
        (11, "score 11 is outside the scale; use a whole number 1-10"),
        (0, "score 0 is outside the scale; use a whole number 1-10"),
        (7.5, "score 7.5 is not a whole number 1-10"),
    ]:
        with pytest.raises(DomainError) as exc:
            rating_submit(
                assignment_id=a.pk, rater=raters[0], scores={"overall": value}
            )
        assert problems_of(exc) == {"scores.overall": message}
        assert_nothing_written(a)
    with pytest.raises(DomainError) as exc:
        rating_submit(assignment_id=a.pk, rater=raters[0], scores={})
    assert problems_of(exc) == {"scores.overall": "is missing: a whole number 1-10"}
    rating_submit(assignment_id=a.pk, rater=raters[0], scores={"overall": 10})
    assert HumanScore.objects.get(assignment=a).score == 10


def test_yes_no_stores_label_codes_and_refuses_unknown_labels(researcher, raters):
    campaign = campaign_on(YES_NO, user=researcher, raters=raters)
    a = serve(campaign, raters[0])
    for value, message in [
        ("maybe", "'maybe' is not a label here; use 'yes' or 'no'"),
        (0, "must be 'yes' or 'no', got"),  # a code is never accepted as input
        ("na", "N/A is not allowed here; write 'yes' or 'no'"),
    ]:
        with pytest.raises(DomainError) as exc:
            rating_submit(
                assignment_id=a.pk, rater=raters[0], scores={"consistent": value}
            )
        assert problems_of(exc)["scores.consistent"].startswith(message)
        assert_nothing_written(a)
    rating_submit(assignment_id=a.pk, rater=raters[0], scores={"consistent": "No"})
    assert HumanScore.objects.get(assignment=a).score == 1  # code of "no"


def test_classification_campaign_two_raters_overlap_two(researcher, raters):
    campaign = campaign_on(YES_NO, user=researcher, raters=raters, overlap=2)
    answers = {raters[0].pk: "yes", raters[1].pk: "no"}
    for rater in raters:
        for _ in range(6):
            a = serve(campaign, rater)
            rating_submit(
                assignment_id=a.pk,
                rater=rater,
                scores={"consistent": answers[rater.pk]},
            )
        nothing = assignment_next(campaign=campaign, rater=rater)
        assert nothing.assignment is None
    items = CampaignItem.objects.filter(campaign=campaign)
    assert sorted(i.submitted for i in items) == [2] * 6
    by_rater = {
        (r, code)
        for r, code in HumanScore.objects.filter(
            assignment__campaign=campaign
        ).values_list("assignment__rater_id", "score")
    }
    assert by_rater == {(raters[0].pk, 0), (raters[1].pk, 1)}
    # Every response was rated by both raters, never twice by one.
    per_response = HumanScore.objects.filter(assignment__campaign=campaign).values_list(
        "assignment__response_id", "assignment__rater_id"
    )
    assert len(set(per_response)) == len(per_response) == 12


def test_critique_with_scores_is_required_with_its_minimum(researcher, raters):
    campaign = campaign_on(
        TEN_POINT,
        user=researcher,
        raters=raters,
        critique=Campaign.Critique.WITH_SCORES,
        critique_min_length=20,
    )
    a = serve(campaign, raters[0])
    for critique, message in [
        (None, "is empty: write a critique of at least 20 characters"),
        ("   ", "is empty: write a critique of at least 20 characters"),
        ("Too short.", "is 10 characters long; write at least 20"),
    ]:
        with pytest.raises(DomainError) as exc:
            rating_submit(
                assignment_id=a.pk,
                rater=raters[0],
                scores={"overall": 8},
                critique=critique,
            )
        assert problems_of(exc) == {"critique": message}
        assert_nothing_written(a)
    # A bad score and a short critique are reported together.
    with pytest.raises(DomainError) as exc:
        rating_submit(
            assignment_id=a.pk, rater=raters[0], scores={"overall": 12}, critique="x"
        )
    assert set(problems_of(exc)) == {"scores.overall", "critique"}
    assert_nothing_written(a)
    text = "  Clear and correct, but it ignores the second question.  "
    rating_submit(
        assignment_id=a.pk, rater=raters[0], scores={"overall": 8}, critique=text
    )
    a.refresh_from_db()
    assert a.status == Assignment.Status.SUBMITTED
    assert a.critique == text.strip()
    # A resubmit with another critique is a conflict, not a silent change.
    with pytest.raises(ConflictError):
        rating_submit(
            assignment_id=a.pk,
            rater=raters[0],
            scores={"overall": 8},
            critique="Another critique, long enough to pass.",
            conflict_if_changed=True,
        )
    rating_amend(
        assignment_id=a.pk,
        rater=raters[0],
        scores={"overall": 9},
        critique="Amended: clear and correct, answers both parts.",
    )
    a.refresh_from_db()
    assert a.critique.startswith("Amended") and a.scores.get().score == 9
    with pytest.raises(DomainError) as exc:
        rating_amend(
            assignment_id=a.pk, rater=raters[0], scores={"overall": 9}, critique="x"
        )
    assert "critique" in problems_of(exc)
    a.refresh_from_db()
    assert a.critique.startswith("Amended")


def test_critique_only_takes_no_scores(researcher, raters):
    campaign = campaign_on(
        HELPSTEER, user=researcher, raters=raters, critique=Campaign.Critique.ONLY
    )
    a = serve(campaign, raters[0])
    with pytest.raises(DomainError) as exc:
        rating_submit(
            assignment_id=a.pk,
            rater=raters[0],
            scores={"helpfulness": 3},
            critique="A fair answer.",
        )
    assert problems_of(exc) == {
        "scores.helpfulness": "this campaign asks for a critique only, not for scores"
    }
    assert_nothing_written(a)
    rating_submit(
        assignment_id=a.pk, rater=raters[0], scores=None, critique="A fair answer."
    )
    a.refresh_from_db()
    assert a.status == Assignment.Status.SUBMITTED and a.critique == "A fair answer."
    assert not HumanScore.objects.filter(assignment=a).exists()


def test_a_critique_is_refused_where_none_is_asked(researcher, raters):
    campaign = campaign_on(TEN_POINT, user=researcher, raters=raters)
    a = serve(campaign, raters[0])
    with pytest.raises(DomainError) as exc:
        rating_submit(
            assignment_id=a.pk,
            rater=raters[0],
            scores={"overall": 5},
            critique="Unasked for.",
        )
    assert problems_of(exc) == {"critique": "this campaign does not ask for a critique"}
    assert_nothing_written(a)


@pytest.mark.parametrize(
    "options, field, message",
    [
        ({"critique": "sometimes"}, "critique", "unknown critique setting 'sometimes'"),
        (
            {"critique": "with_scores", "critique_min_length": -1},
            "critique_min_length",
            "must be a whole number 0-5000",
        ),
        (
            {"critique": "only", "critique_min_length": 5001},
            "critique_min_length",
            "must be a whole number 0-5000",
        ),
        (
            {"critique_min_length": 10},
            "critique_min_length",
            "is set, but the campaign",
        ),
    ],
)
def test_campaign_create_refuses_bad_critique_settings(
    researcher, raters, options, field, message
):
    with pytest.raises(DomainError) as exc:
        campaign_on(YES_NO, user=researcher, raters=raters, **options)
    assert problems_of(exc)[field].startswith(message)
    assert not Campaign.objects.exists()


def test_campaign_set_critique_is_for_researchers(researcher, raters):
    campaign = campaign_on(YES_NO, user=researcher, raters=raters)
    with pytest.raises(PermissionDenied):
        campaign_set_critique(
            campaign=campaign,
            critique="only",
            critique_min_length=0,
            user=raters[0],
        )
    with pytest.raises(DomainError) as exc:
        campaign_set_critique(
            campaign=campaign, critique="loud", critique_min_length=0, user=researcher
        )
    assert "critique" in problems_of(exc)
    campaign.refresh_from_db()
    assert campaign.critique == "off"
    campaign_set_critique(
        campaign=campaign,
        critique="with_scores",
        critique_min_length=12,
        user=researcher,
    )
    campaign.refresh_from_db()
    assert (campaign.critique, campaign.critique_min_length) == ("with_scores", 12)


# --- API ----------------------------------------------------------------------------


def api_serve(client, campaign) -> dict:
    response = client.post(f"/api/rate/campaigns/{campaign.pk}/next/")
    assert response.status_code == 200, response.content
    return response.json()["assignment"]


def api_fields(response) -> dict[str, str]:
    return {p["field"]: p["message"] for p in response.json()["problems"]}


def test_api_describes_a_ten_point_scale_and_its_keys(
    api_client_for, researcher, raters
):
    campaign = campaign_on(TEN_POINT, user=researcher, raters=raters)
    client = api_client_for(raters[0])
    assignment = api_serve(client, campaign)
    (skill,) = assignment["skills"]
    assert skill["kind"] == "ordinal"
    assert skill["scale"] == {"min": 1, "max": 10}
    assert skill["allow_na"] is False and skill["labels"] == []
    assert skill["anchors"] == {"1": "Useless.", "10": "Could not be better."}
    assert skill["keys"] == {**{str(i): str(i) for i in range(1, 10)}, "0": "10"}
    url = f"/api/rate/assignments/{assignment['id']}/submit/"
    response = client.post(url, {"scores": {"overall": None}}, format="json")
    assert response.status_code == 400
    assert api_fields(response) == {
        "scores.overall": "N/A is not allowed here; write a whole number 1-10"
    }
    assert not HumanScore.objects.exists()
    response = client.post(url, {"scores": {"overall": 10}}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["scores"][0]["value"] == 10


def test_api_classification_takes_label_keys_and_returns_them(
    api_client_for, researcher, raters
):
    campaign = campaign_on(YES_NO, user=researcher, raters=raters, overlap=2)
    client = api_client_for(raters[0])
    assignment = api_serve(client, campaign)
    (skill,) = assignment["skills"]
    assert skill["kind"] == "categorical" and skill["scale"] is None
    assert [label["key"] for label in skill["labels"]] == ["yes", "no"]
    assert skill["keys"] == {"1": "yes", "2": "no"}
    url = f"/api/rate/assignments/{assignment['id']}/submit/"
    for value in ["maybe", 0, 1]:
        response = client.post(url, {"scores": {"consistent": value}}, format="json")
        assert response.status_code == 400, response.content
        message = api_fields(response)["scores.consistent"]
        assert "'yes' or 'no'" in message
    assert not HumanScore.objects.exists()
    response = client.post(url, {"scores": {"consistent": "no"}}, format="json")
    assert response.status_code == 200, response.content
    (score,) = response.json()["scores"]
    assert (score["score"], score["value"], score["is_na"]) == (1, "no", False)
    detail = client.get(f"/api/rate/assignments/{assignment['id']}/").json()
    assert detail["scores"][0]["value"] == "no"


def test_api_critique_is_required_returned_and_amended(
    api_client_for, researcher, raters
):
    campaign = campaign_on(
        HELPSTEER,
        user=researcher,
        raters=raters,
        critique="with_scores",
        critique_min_length=15,
    )
    client = api_client_for(raters[0])
    assignment = api_serve(client, campaign)
    assert assignment["critique_mode"] == "with_scores"
    assert assignment["critique_min_length"] == 15
    scores = {s["key"]: 3 for s in assignment["skills"]}
    url = f"/api/rate/assignments/{assignment['id']}/submit/"
    response = client.post(
        url, {"scores": scores, "critique": "Too short"}, format="json"
    )
    assert response.status_code == 400
    assert api_fields(response) == {
        "critique": "is 9 characters long; write at least 15"
    }
    assert not HumanScore.objects.exists()
    critique = "Helpful but verbose; one wrong date."
    response = client.post(url, {"scores": scores, "critique": critique}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["critique"] == critique
    amend = f"/api/rate/assignments/{assignment['id']}/scores/"
    response = client.put(
        amend,
        {"scores": scores, "critique": "Helpful; the date is wrong."},
        format="json",
    )
    assert response.status_code == 200, response.content
    assert response.json()["critique"] == "Helpful; the date is wrong."
    assert Assignment.objects.get(pk=assignment["id"]).critique.startswith("Helpful;")


def test_api_critique_only_serves_no_skills(api_client_for, researcher, raters):
    campaign = campaign_on(TEN_POINT, user=researcher, raters=raters, critique="only")
    client = api_client_for(raters[0])
    assignment = api_serve(client, campaign)
    assert assignment["skills"] == [] and assignment["critique_mode"] == "only"
    url = f"/api/rate/assignments/{assignment['id']}/submit/"
    response = client.post(url, {"critique": "Reads well."}, format="json")
    assert response.status_code == 200, response.content
    assert (
        response.json()["scores"] == [] and response.json()["critique"] == "Reads well."
    )


def test_api_campaign_create_with_critique_and_classification_task(
    api_client_for, researcher, raters
):
    from tests.rubric_samples import dataset_on

    client = api_client_for(researcher)
    dataset = dataset_on(YES_NO)
    body = {
        "dataset": dataset.pk,
        "name": "Consistency",
        "overlap": 2,
        "raters": [r.username for r in raters],
        "critique": "with_scores",
        "critique_min_length": 25,
    }
    response = client.post("/api/campaigns/", body, format="json")
    assert response.status_code == 201, response.content
    data = response.json()
    assert (data["critique"], data["critique_min_length"]) == ("with_scores", 25)
    assert data["task"] == "Classification, with a critique"
    assert data["criteria"] == [
        {
            "key": "consistent",
            "name": "Consistent with the source",
            "kind": "categorical",
            "scale": None,
            "labels": [
                {"key": "yes", "name": "Yes", "description": "Nothing contradicts it."},
                {"key": "no", "name": "No", "description": "Something contradicts it."},
            ],
            "allow_na": False,
        }
    ]
    response = client.post(
        "/api/campaigns/", {**body, "critique": "always"}, format="json"
    )
    assert response.status_code == 400
    assert "critique" in api_fields(response)
    assert Campaign.objects.count() == 1


def test_api_set_critique_refuses_raters_and_bad_values(
    api_client_for, researcher, raters
):
    campaign = campaign_on(HELPSTEER, user=researcher, raters=raters)
    url = f"/api/campaigns/{campaign.pk}/critique/"
    body = {"critique": "only", "critique_min_length": 40}
    assert api_client_for(raters[0]).put(url, body, format="json").status_code == 403
    assert api_client_for(None).put(url, body, format="json").status_code in (401, 403)
    client = api_client_for(researcher)
    response = client.put(
        url, {"critique": "only", "critique_min_length": "x"}, format="json"
    )
    assert response.status_code == 400
    assert "critique_min_length" in api_fields(response)
    campaign.refresh_from_db()
    assert campaign.critique == "off"
    response = client.put(url, body, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["task"] == "Critique"
    campaign.refresh_from_db()
    assert (campaign.critique, campaign.critique_min_length) == ("only", 40)


# --- Pages --------------------------------------------------------------------------


def submit_url(assignment) -> str:
    return reverse("annotation:assignment-submit", args=[assignment.pk])


def test_rate_page_ten_point_buttons_keys_and_help(client_for, researcher, raters):
    campaign = campaign_on(TEN_POINT, user=researcher, raters=raters)
    html = (
        client_for(raters[0])
        .get(reverse("annotation:rate-next", args=[campaign.pk]))
        .content.decode()
    )
    for point in range(1, 11):
        assert f'id="s-overall-{point}" value="{point}"' in html
    assert 'value="10" required data-key="0"' in html
    assert 'value="9" required data-key="9"' in html
    assert 'id="s-overall-na"' not in html  # this criterion allows no N/A
    # Anchors only where the rubric gives one.
    assert "Could not be better." in html and 'data-score="5"' not in html
    assert 'data-key-hint="1-9, 0 for 10"' in html
    # The help dialog is generated from the criteria, scales and keys.
    assert (
        '<dt data-help-scale="1-10"><kbd>1</kbd> … <kbd>9</kbd> · <kbd>0</kbd> 10</dt>'
        in html
    )
    assert "Overall quality" in html.split("data-rater-help")[1]


def test_rate_page_yes_no_labels_submit_and_history(client_for, researcher, raters):
    campaign = campaign_on(YES_NO, user=researcher, raters=raters)
    client = client_for(raters[0])
    html = client.get(
        reverse("annotation:rate-next", args=[campaign.pk])
    ).content.decode()
    assert 'value="yes" required data-key="1"' in html
    assert 'value="no" required data-key="2"' in html
    assert "Nothing contradicts it." in html
    assert "<kbd>1</kbd> Yes · <kbd>2</kbd> No" in html
    a = Assignment.objects.get(rater=raters[0], status="served")
    response = client.post(submit_url(a), {"score-consistent": "maybe"})
    assert response.status_code == 400
    assert (
        "Consistent with the source score: &#x27;maybe&#x27; is not a label here; "
        "use &#x27;yes&#x27; or &#x27;no&#x27;" in response.content.decode()
    )
    assert not HumanScore.objects.exists()
    response = client.post(submit_url(a), {"score-consistent": "yes"})
    assert response.status_code == 302
    assert HumanScore.objects.get(assignment=a).score == 0
    history = client.get(reverse("annotation:rate-history", args=[campaign.pk]))
    assert "Consistent with the source <strong>Yes</strong>" in history.content.decode()
    review = client.get(reverse("annotation:assignment-review", args=[a.pk]))
    assert 'id="s-consistent-yes" value="yes" checked' in review.content.decode()
    response = client.post(
        reverse("annotation:assignment-review", args=[a.pk]), {"score-consistent": "no"}
    )
    assert response.status_code == 302
    assert HumanScore.objects.get(assignment=a).score == 1


def test_rate_page_critique_box_errors_and_only_mode(client_for, researcher, raters):
    campaign = campaign_on(
        HELPSTEER,
        user=researcher,
        raters=raters,
        critique="with_scores",
        critique_min_length=20,
    )
    client = client_for(raters[0])
    html = client.get(
        reverse("annotation:rate-next", args=[campaign.pk])
    ).content.decode()
    assert 'name="critique"' in html and "at least 20 characters" in html
    a = Assignment.objects.get(rater=raters[0], status="served")
    post = {f"score-{k}": "2" for k in [s["key"] for s in HELPSTEER["criteria"]]}
    response = client.post(
        submit_url(a), {**post, "critique": "Short."}, **{"HTTP_HX_REQUEST": "true"}
    )
    body = response.content.decode()
    assert response.status_code == 422
    assert "Critique is 6 characters long; write at least 20" in body
    assert ">Short.</textarea>" in body  # what the rater wrote is kept
    assert_nothing_written(a)
    critique = "Mostly right; the second step is wrong."
    response = client.post(submit_url(a), {**post, "critique": critique})
    assert response.status_code == 302
    a.refresh_from_db()
    assert a.critique == critique
    review = client.get(
        reverse("annotation:assignment-review", args=[a.pk])
    ).content.decode()
    assert critique in review
    only = campaign_on(TEN_POINT, user=researcher, raters=raters, critique="only")
    html = client.get(reverse("annotation:rate-next", args=[only.pk])).content.decode()
    assert 'class="seg-input"' not in html and 'name="critique"' in html
    b = Assignment.objects.get(rater=raters[0], campaign=only, status="served")
    response = client.post(submit_url(b), {"critique": "Fine."})
    assert response.status_code == 302
    b.refresh_from_db()
    assert b.status == "submitted" and b.critique == "Fine."


def test_campaign_page_lists_scales_and_names_classification(
    client_for, researcher, raters
):
    campaign = campaign_on(YES_NO, user=researcher, raters=raters)
    html = (
        client_for(researcher)
        .get(reverse("annotation:campaign-detail", args=[campaign.pk]))
        .content.decode()
    )
    assert (
        '<span class="badge tone-info" id="campaign-task">Classification</span>' in html
    )
    assert "<td>Consistent with the source</td><td>Labels</td><td>Yes / No</td>" in html
    helpsteer = campaign_on(HELPSTEER, user=researcher, raters=raters)
    html = (
        client_for(researcher)
        .get(reverse("annotation:campaign-detail", args=[helpsteer.pk]))
        .content.decode()
    )
    assert 'id="campaign-task">Pointwise scores</span>' in html
    assert "<td>Helpfulness</td><td>Scale</td><td>0-4, N/A allowed</td>" in html


def test_campaign_critique_page_post_is_for_researchers(client_for, researcher, raters):
    campaign = campaign_on(TEN_POINT, user=researcher, raters=raters)
    url = reverse("annotation:campaign-critique", args=[campaign.pk])
    body = {"critique": "with_scores", "critique_min_length": "30"}
    assert client_for(raters[0]).post(url, body).status_code == 403
    campaign.refresh_from_db()
    assert campaign.critique == "off"
    response = client_for(researcher).post(url, {"critique": "loud"}, follow=True)
    assert "unknown critique setting" in response.content.decode()
    response = client_for(researcher).post(url, body)
    assert response.status_code == 302
    campaign.refresh_from_db()
    assert (campaign.critique, campaign.critique_min_length) == ("with_scores", 30)


def test_campaign_new_form_sets_critique(client_for, researcher, raters):
    from tests.rubric_samples import dataset_on

    dataset = dataset_on(TEN_POINT)
    client = client_for(researcher)
    form = client.get(reverse("annotation:campaign-new") + f"?dataset={dataset.pk}")
    assert "Overall quality (1-10)" in form.content.decode()
    response = client.post(
        reverse("annotation:campaign-new"),
        {
            "name": "Ten points",
            "dataset": dataset.pk,
            "skill_mode": "instruction",
            "overlap": 1,
            "overlap_percent": 100,
            "lock_ttl_minutes": 30,
            "critique": "with_scores",
            "critique_min_length": 50,
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    campaign = Campaign.objects.get(name="Ten points")
    assert (campaign.critique, campaign.critique_min_length) == ("with_scores", 50)
    response = client.post(
        reverse("annotation:campaign-new"),
        {
            "name": "Bad",
            "dataset": dataset.pk,
            "skill_mode": "instruction",
            "overlap": 1,
            "overlap_percent": 100,
            "lock_ttl_minutes": 30,
            "critique": "off",
            "critique_min_length": 50,
        },
    )
    assert response.status_code == 400
    assert "is set, but the campaign asks for no critique" in response.content.decode()
    assert not Campaign.objects.filter(name="Bad").exists()


def test_pairwise_per_criterion_questions_on_a_yes_no_rubric(researcher, raters):
    from annotation.models import HumanPreference
    from annotation.services.campaigns import campaign_create
    from annotation.services.pairwise import pairwise_next, pairwise_submit
    from tests.rubric_samples import dataset_on

    campaign = campaign_create(
        spec=CampaignSpec(
            name="pairs",
            dataset=dataset_on(YES_NO, n_instructions=1),
            skills=["consistent"],
            raters=raters,
            pairs=PairPolicy(),
        ),
        created_by=researcher,
    )
    a = pairwise_next(campaign=campaign, rater=raters[0]).assignment
    with pytest.raises(DomainError) as exc:
        pairwise_submit(
            assignment_id=a.pk,
            rater=raters[0],
            label="A",
            skill_labels={"consistent": "yes"},  # a comparison, not a label
        )
    assert "skill_labels.consistent" in problems_of(exc)
    pairwise_submit(
        assignment_id=a.pk, rater=raters[0], label="A", skill_labels={"consistent": "B"}
    )
    preference = HumanPreference.objects.get(assignment=a)
    assert set(preference.skill_labels) == {"consistent"}
    assert preference.skill_labels["consistent"] in {"1", "2"}
