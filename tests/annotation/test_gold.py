"""Gold items and attention checks: marking (service, API, CLI, page), bad input,
interleaving at the campaign's rate, blindness, training-phase feedback, per-rater
accuracy (against statsmodels' Wilson interval), and their absence from the agreement,
the overlap counters and the training export."""

from __future__ import annotations

import io
import json
import re

import pytest
from django.core.exceptions import PermissionDenied
from django.core.management import call_command
from django.core.management.base import CommandError
from statsmodels.stats.proportion import proportion_confint

from analysis.exports.scores import score_rows
from analysis.selectors.agreement.inputs import _human_rows
from annotation import selectors
from annotation.items import POINTWISE
from annotation.models import (
    Assignment,
    Campaign,
    CampaignItem,
    GoldItem,
    GoldScore,
    HumanScore,
    Response,
)
from annotation.selectors import assignment_skills
from annotation.services.campaign_spec import (
    CampaignSpec,
    GoldPolicy,
)
from annotation.services.campaigns import campaign_create
from annotation.services.gold import gold_import, gold_import_file
from annotation.services.rating import assignment_next, rating_submit
from annotation.services.serving import served_reason
from flaskapp.errors import DomainError
from tests.factories import (
    DatasetFactory,
    InstructionFactory,
    ResponseFactory,
    campaign_from_fields,
)

SKILLS = ["comprehension", "factuality", "readability"]  # InstructionFactory's


def make_dataset(n=6, models=("model-a",)):
    dataset = DatasetFactory()
    for _ in range(n):
        instruction = InstructionFactory(dataset=dataset)
        for model in models:
            ResponseFactory(instruction=instruction, model_name=model)
    return dataset


def responses(dataset):
    return list(
        Response.objects.filter(instruction__dataset=dataset)
        .order_by("instruction__position", "pk")
        .values_list("pk", flat=True)
    )


def mark(dataset, researcher, response_ids, **scores):
    rows = [
        (i + 2, {"response_id": rid, **(scores or {"factuality": 4})})
        for i, rid in enumerate(response_ids)
    ]
    return gold_import(dataset=dataset, rows=rows, user=researcher)


def gold_state():
    return sorted(GoldScore.objects.values_list("gold__response_id", "skill__key",
                                                "score"))  # fmt: skip


def submit(rater, assignment, value=4, **override):
    scores = {s.key: value for s in assignment_skills(assignment=assignment)}
    scores.update(override)
    return rating_submit(assignment_id=assignment.pk, rater=rater,
                                  scores=scores)  # fmt: skip


def serve(campaign, rater):
    return assignment_next(campaign=campaign, rater=rater).assignment


# --- Marking ------------------------------------------------------------------------


def test_import_marks_responses_and_remarking_replaces(researcher):
    dataset = make_dataset()
    ids = responses(dataset)
    result = gold_import(
        dataset=dataset,
        rows=[
            (
                2,
                {
                    "response_id": ids[0],
                    "factuality": 4,
                    "readability": "3",
                    "tolerance": "1",
                    "explanation": "Two facts are wrong.",
                },
            ),
            (
                3,
                {
                    "response_id": ids[1],
                    "scores": {"comprehension": 2},
                    "kind": "attention",
                },
            ),
        ],  # fmt: skip
        user=researcher,
    )
    assert result == {"created": 2, "updated": 0, "items": 2}
    first = GoldItem.objects.get(response_id=ids[0])
    assert (first.tolerance, first.explanation, first.kind) == (
        1,
        "Two facts are wrong.",
        "gold",
    )
    assert GoldItem.objects.get(response_id=ids[1]).kind == "attention"
    assert gold_state() == sorted(
        [(ids[0], "factuality", 4), (ids[0], "readability", 3),
         (ids[1], "comprehension", 2)]
    )  # fmt: skip

    again = mark(dataset, researcher, [ids[0]], factuality=2)
    assert again == {"created": 0, "updated": 1, "items": 1}
    assert gold_state() == sorted(
        [(ids[0], "factuality", 2), (ids[1], "comprehension", 2)]
    )
    assert GoldItem.objects.get(response_id=ids[0]).tolerance == 0  # default exact


def test_csv_file_by_instruction_and_model(researcher):
    dataset = make_dataset(models=("model-a", "model-b"))
    instruction = dataset.instructions.order_by("position").first()
    data = (
        "instruction,model,factuality,readability,explanation\n"
        f"{instruction.external_id},model-b,5,N/A,Correct and clear.\n"
    ).encode()
    result = gold_import_file(
        dataset=dataset, data=data, file="gold.csv", user=researcher
    )
    assert result["created"] == 1
    gold = GoldItem.objects.get()
    assert gold.response.model_name == "model-b"
    assert gold.response.instruction_id == instruction.pk
    assert selectors.gold_expected(selectors.gold_get(
        dataset=dataset, response_id=gold.response_id)) == {
        "factuality": "5", "readability": "N/A"}  # fmt: skip


BAD_ROWS = [
    ({"factuality": 6}, "factuality", "6"),
    ({"factuality": "good"}, "factuality", "good"),
    ({"nonsense": 3}, "nonsense", "criterion"),
    ({"scores": {"nonsense": 3}}, "scores.nonsense", "criterion"),
    ({"factuality": 4, "tolerance": 11}, "tolerance", "11"),
    ({"factuality": 4, "tolerance": "-1"}, "tolerance", "-1"),
    ({"factuality": 4, "kind": "bonus"}, "kind", "bonus"),
    ({}, "scores", "no expected score"),
]


@pytest.mark.parametrize("extra,field,fragment", BAD_ROWS)
def test_a_bad_row_is_refused_naming_line_and_field_and_nothing_changes(
    researcher, extra, field, fragment
):
    dataset = make_dataset()
    ids = responses(dataset)
    mark(dataset, researcher, [ids[0]], factuality=3)
    before = gold_state()
    rows = [
        (2, {"response_id": ids[1], "factuality": 2}),  # a good row: not written
        (3, {"response_id": ids[0], **extra}),
    ]
    with pytest.raises(DomainError) as caught:
        gold_import(dataset=dataset, rows=rows, user=researcher, file="g.csv")
    problems = caught.value.problems
    assert any(p.line == 3 and p.field == field for p in problems), problems
    assert any(fragment in p.message for p in problems if p.field == field)
    assert all(p.file == "g.csv" for p in problems)
    assert gold_state() == before
    assert GoldItem.objects.count() == 1


def test_a_response_of_another_dataset_or_marked_twice_is_refused(researcher):
    dataset, other = make_dataset(), make_dataset()
    ids, foreign = responses(dataset), responses(other)
    with pytest.raises(DomainError) as caught:
        gold_import(
            dataset=dataset,
            rows=[
                (2, {"response_id": foreign[0], "factuality": 4}),
                (3, {"response_id": ids[0], "factuality": 4}),
                (4, {"response_id": ids[0], "factuality": 5}),
                (5, {"instruction": "no-such", "model": "model-a", "factuality": 4}),
                (6, {"model": "model-a", "factuality": 4}),
            ],
            user=researcher,
        )
    where = {(p.line, p.field) for p in caught.value.problems}
    assert where == {
        (2, "response_id"),
        (4, "response_id"),
        (5, "model"),
        (6, "instruction"),
    }
    text = " ".join(p.message for p in caught.value.problems)
    assert "not in dataset" in text and "marked twice (also line 3)" in text
    assert not GoldItem.objects.exists()


def test_an_empty_or_unreadable_file_is_refused(researcher):
    dataset = make_dataset()
    for data in (b"", b"response_id,factuality\n", b"{not json\n"):
        with pytest.raises(DomainError):
            gold_import_file(
                dataset=dataset, data=data, file="g.jsonl", user=researcher
            )
    assert not GoldItem.objects.exists()


def test_only_researchers_mark_gold(rater):
    dataset = make_dataset()
    with pytest.raises(PermissionDenied):
        mark(dataset, rater, responses(dataset)[:1])
    assert not GoldItem.objects.exists()


# --- Campaigns ------------------------------------------------------------------------


def test_a_gold_rate_needs_gold_items_and_stays_in_bounds(researcher, rater):
    dataset = make_dataset()
    for rate, fragment in ((3, "no gold items"), (-1, ""), (1001, "")):
        with pytest.raises(DomainError) as caught:
            campaign_create(spec=CampaignSpec(name="c", dataset=dataset, raters=[rater], gold=GoldPolicy(rate=rate)), created_by=researcher)  # fmt: skip
        assert [p.field for p in caught.value.problems] == ["gold_rate"]
        assert fragment in caught.value.problems[0].message
    assert not Campaign.objects.exists()


def gold_campaign(researcher, raters, *, n=12, golds=3, rate=4, **kwargs):
    dataset = make_dataset(n=n)
    ids = responses(dataset)
    mark(dataset, researcher, ids[:golds], factuality=4)
    campaign = campaign_from_fields(
        name="c", dataset=dataset, created_by=researcher, raters=raters,
        gold_rate=rate, **kwargs,
    )  # fmt: skip
    return campaign, set(ids[:golds])


@pytest.mark.parametrize("fast_sql", [True, False])
def test_one_gold_item_in_every_block_of_the_rate(
    settings, researcher, rater, other_rater, fast_sql
):
    settings.RATING_FAST_SQL = fast_sql  # gold campaigns take the ORM path anyway
    campaign, gold_ids = gold_campaign(researcher, [rater, other_rater], n=15,
                                       golds=3, rate=4, overlap=2)  # fmt: skip
    items = CampaignItem.objects.filter(campaign=campaign)
    assert items.filter(gold=True).count() == 3
    assert set(items.filter(gold=True).values_list("response_id", flat=True)) == (
        gold_ids
    )
    assert items.filter(gold=False).count() == 12  # gold responses are not real items
    order = {}
    for user in (rater, other_rater):
        served = []
        while (a := serve(campaign, user)) is not None:
            served.append(a)
            submit(user, a)
        order[user.pk] = [a.gold for a in served]
        # Every rater gets every gold item once; one gold in each block of 4.
        assert sorted(a.response_id for a in served if a.gold) == sorted(gold_ids)
        flags = order[user.pk]
        for start in range(0, 12, 4):
            assert sum(flags[start : start + 4]) == 1, flags
        assert all(a.response_id not in gold_ids for a in served if not a.gold)
        assert len(flags) == 15
    # Real items were rated twice (overlap 2); gold items hold no slots and count
    # toward nothing.
    real = CampaignItem.objects.filter(campaign=campaign, gold=False)
    assert sorted(real.values_list("submitted", flat=True)) == [2] * 12
    assert set(
        CampaignItem.objects.filter(campaign=campaign, gold=True).values_list(
            "target", "submitted", "reserved", "open_slots"
        )
    ) == {(0, 0, 0, 0)}


def test_a_gold_item_looks_like_a_real_one_to_the_rater(
    researcher, rater, api_client_for, client_for
):
    campaign, gold_ids = gold_campaign(researcher, [rater], n=8, golds=2, rate=2,
                                       overlap=1)  # fmt: skip
    api = api_client_for(rater)
    seen = {}
    while len(seen) < 2 or set(seen) != {True, False}:
        body = api.post(f"/api/rate/campaigns/{campaign.pk}/next/").json()
        assignment = Assignment.objects.get(pk=body["assignment"]["id"])
        text = json.dumps(body).lower()
        assert not re.search(r"\b(gold|attention)", text)
        page = client_for(rater).get(f"/rate/{campaign.pk}/")
        assert page.status_code == 200
        # As a word: a random CSRF token may hold the letters ("...tgold7...").
        assert not re.search(r"\bgold", page.content.decode().lower())
        seen[assignment.gold] = body
        assert assignment.reason == served_reason(POINTWISE, submitted=0, target=1)
        submit(rater, assignment)
    gold_body, real_body = seen[True], seen[False]

    def shape(value):
        if isinstance(value, dict):
            return {k: shape(v) for k, v in value.items() if k != "skills"}
        return type(value).__name__

    assert shape(gold_body) == shape(real_body)
    assert gold_body["assignment"]["reason"] == real_body["assignment"]["reason"]


def test_feedback_only_in_the_training_phase_and_only_for_gold(
    researcher, rater, api_client_for
):
    campaign, gold_ids = gold_campaign(researcher, [rater], n=8, golds=3, rate=2)
    GoldItem.objects.update(explanation="Watch the second claim.")
    api = api_client_for(rater)

    def next_and_submit():
        body = api.post(f"/api/rate/campaigns/{campaign.pk}/next/").json()
        assignment = Assignment.objects.get(pk=body["assignment"]["id"])
        scores = {s.key: 3 for s in assignment_skills(assignment=assignment)}
        response = api.post(
            f"/api/rate/assignments/{assignment.pk}/submit/",
            {"scores": scores},
            format="json",
        )
        assert response.status_code == 200, response.content
        return assignment, response.json()["feedback"]

    feedback = {}
    while True not in feedback:  # outside the training phase: nothing, ever
        assignment, fb = next_and_submit()
        feedback[assignment.gold] = fb
    assert feedback == {True: None, **({False: None} if False in feedback else {})}

    response = api_client_for(researcher).put(
        f"/api/campaigns/{campaign.pk}/training/",
        {"training_phase": True},
        format="json",
    )
    assert response.status_code == 200 and response.json()["training_phase"] is True
    got = {}
    while len(got) < 2:
        assignment, fb = next_and_submit()
        got[assignment.gold] = fb
    assert got[False] is None
    assert got[True]["explanation"] == "Watch the second claim."
    assert got[True]["scores"] == [
        {"skill": "factuality", "name": got[True]["scores"][0]["name"],
         "expected": "4", "yours": "3", "right": False}
    ]  # fmt: skip


def test_gold_accuracy_per_rater_against_statsmodels(researcher, rater, other_rater):
    dataset = make_dataset(n=8)
    ids = responses(dataset)
    gold_import(
        dataset=dataset,
        rows=[
            (2, {"response_id": ids[0], "factuality": 4, "readability": 2}),
            (3, {"response_id": ids[1], "factuality": 4, "tolerance": 1}),
            (4, {"response_id": ids[2], "readability": 2, "kind": "attention"}),
        ],
        user=researcher,
    )
    campaign = campaign_create(spec=CampaignSpec(name="acc", dataset=dataset, raters=[rater, other_rater], gold=GoldPolicy(rate=1)), created_by=researcher)  # fmt: skip
    given = {rater.pk: 5, other_rater.pk: 4}  # every criterion gets this score
    for user in (rater, other_rater):
        for _ in range(3):
            a = serve(campaign, user)
            assert a.gold
            submit(user, a, value=given[user.pk])
    rows = {r.rater_id: r for r in selectors.campaign_gold_accuracy(campaign=campaign)}

    # By hand. rater gives 5 everywhere: ids[0] factuality 4 (exact: wrong), 2 (wrong);
    # ids[1] factuality 4 within 1: right (not exact); attention readability 2: wrong.
    r = rows[rater.pk]
    assert (r.items, r.checked, r.right, r.exact, r.ordinal, r.within1) == (
        3, 4, 1, 0, 4, 2)  # fmt: skip
    assert (r.attention, r.attention_passed) == (1, 0)
    # other_rater gives 4: ids[0] 4 right, 2 wrong; ids[1] right (exact); attention 2
    # wrong.
    o = rows[other_rater.pk]
    assert (o.items, o.checked, o.right, o.exact, o.within1) == (3, 4, 2, 2, 2)
    assert (o.attention, o.attention_passed) == (1, 0)
    for row in (r, o):
        low, high = proportion_confint(row.right, row.checked, alpha=0.05,
                                       method="wilson")  # fmt: skip
        assert row.low == pytest.approx(low, abs=1e-12)
        assert row.high == pytest.approx(high, abs=1e-12)
        assert row.accuracy == row.right / row.checked


def test_gold_scores_stay_out_of_agreement_and_are_marked_in_the_export(
    researcher, rater
):
    campaign, gold_ids = gold_campaign(researcher, [rater], n=6, golds=2, rate=2)
    while (a := serve(campaign, rater)) is not None:
        submit(rater, a)
    assert HumanScore.objects.filter(assignment__gold=True).exists()
    rows = _human_rows([campaign.pk])
    assert len(rows) and not (set(rows[:, 0].tolist()) & gold_ids)
    exported = list(score_rows(dataset=campaign.dataset))
    marked = {r["response_id"] for r in exported if r["gold"]}
    assert marked == gold_ids
    assert all(not r["gold"] for r in exported if r["response_id"] not in gold_ids)
    from analysis.exports.training import _score_examples

    trained = {e.response_id for e in _score_examples(campaign.dataset, ("pointwise",))
               if getattr(e, "response_id", None) is not None}  # fmt: skip
    assert not (trained & gold_ids)


# --- API ----------------------------------------------------------------------------


def gold_urls(dataset, campaign, response_id):
    return [
        ("get", f"/api/datasets/{dataset.pk}/gold/"),
        ("post", f"/api/datasets/{dataset.pk}/gold/"),
        ("post", f"/api/datasets/{dataset.pk}/gold/import/"),
        ("get", f"/api/datasets/{dataset.pk}/gold/{response_id}/"),
        ("delete", f"/api/datasets/{dataset.pk}/gold/{response_id}/"),
        ("put", f"/api/campaigns/{campaign.pk}/training/"),
        ("get", f"/api/campaigns/{campaign.pk}/gold/"),
    ]


def test_every_gold_endpoint_refuses_raters_users_without_role_and_anonymous(
    researcher, rater, no_role_user, api_client_for
):
    campaign, gold_ids = gold_campaign(researcher, [rater], n=4, golds=1, rate=2)
    rid = next(iter(gold_ids))
    before = gold_state()
    for user, codes in ((rater, {403}), (no_role_user, {403}), (None, {401, 403})):
        client = api_client_for(user)
        for method, url in gold_urls(campaign.dataset, campaign, rid):
            response = getattr(client, method)(url, {}, format="json")
            assert response.status_code in codes, (user, method, url)
    assert gold_state() == before
    assert Campaign.objects.get(pk=campaign.pk).training_phase is False


def test_api_marks_lists_reads_and_unmarks(researcher, api_client_for):
    dataset = make_dataset()
    ids = responses(dataset)
    api = api_client_for(researcher)
    response = api.post(
        f"/api/datasets/{dataset.pk}/gold/",
        {"response_id": ids[2], "scores": {"factuality": 5, "readability": None},
         "tolerance": 1, "explanation": "Fine."},
        format="json",
    )  # fmt: skip
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["response_id"] == ids[2] and body["tolerance"] == 1
    assert body["expected"] == {"factuality": "5", "readability": "N/A"}
    listed = api.get(f"/api/datasets/{dataset.pk}/gold/").json()
    assert [g["response_id"] for g in listed["results"]] == [ids[2]]
    one = api.get(f"/api/datasets/{dataset.pk}/gold/{ids[2]}/")
    assert one.status_code == 200 and one.json()["explanation"] == "Fine."
    assert api.get(f"/api/datasets/{dataset.pk}/gold/{ids[1]}/").status_code == 404
    gone = api.delete(f"/api/datasets/{dataset.pk}/gold/{ids[2]}/")
    assert gone.status_code == 204 and not GoldItem.objects.exists()


def test_api_bad_input_is_a_400_naming_the_field_and_writes_nothing(
    researcher, api_client_for
):
    dataset = make_dataset()
    ids = responses(dataset)
    api = api_client_for(researcher)
    cases = [
        ({"response_id": ids[0], "scores": {"factuality": 9}}, "scores.factuality"),
        ({"response_id": ids[0], "scores": {"factuality": 4}, "tolerance": 11},
         "tolerance"),
        ({"response_id": 10**9, "scores": {"factuality": 4}}, "response_id"),
        ({"scores": {"factuality": 4}}, "response_id"),
        ({"response_id": ids[0], "scores": "4"}, "scores"),
    ]  # fmt: skip
    for payload, field in cases:
        response = api.post(f"/api/datasets/{dataset.pk}/gold/", payload, format="json")
        assert response.status_code == 400, (payload, response.content)
        fields = {p["field"] for p in response.json()["problems"]}
        assert field in fields, (payload, response.json())
    upload = io.BytesIO(b"response_id,factuality\n%d,4\n%d,0\n" % (ids[0], ids[1]))
    upload.name = "gold.csv"
    response = api.post(
        f"/api/datasets/{dataset.pk}/gold/import/", {"file": upload},
        format="multipart",
    )  # fmt: skip
    assert response.status_code == 400
    problem = response.json()["problems"][0]
    assert (problem["line"], problem["field"]) == (3, "factuality")
    assert not GoldItem.objects.exists()


def test_api_import_file_and_campaign_gold_accuracy(researcher, rater, api_client_for):
    dataset = make_dataset()
    ids = responses(dataset)
    rows = "\n".join(
        json.dumps({"response_id": rid, "scores": {"factuality": 4}}) for rid in ids[:2]
    )
    upload = io.BytesIO(rows.encode())
    upload.name = "gold.jsonl"
    api = api_client_for(researcher)
    response = api.post(
        f"/api/datasets/{dataset.pk}/gold/import/", {"file": upload},
        format="multipart",
    )  # fmt: skip
    assert response.status_code == 201, response.content
    assert response.json() == {"created": 2, "updated": 0, "items": 2}
    created = api.post(
        "/api/campaigns/",
        {"name": "api gold", "dataset": dataset.pk, "raters": [rater.username],
         "gold_rate": 1},
        format="json",
    )  # fmt: skip
    assert created.status_code == 201, created.content
    campaign = Campaign.objects.get(pk=created.json()["id"])
    assert campaign.gold_rate == 1
    a = serve(campaign, rater)
    submit(rater, a)
    rows = api.get(f"/api/campaigns/{campaign.pk}/gold/").json()
    assert [(r["username"], r["items"], r["checked"]) for r in rows] == [
        (rater.username, 1, 1)
    ]
    assert rows[0]["accuracy"] == 1.0


# --- CLI and pages --------------------------------------------------------------------


def test_gold_import_command(researcher, tmp_path):
    dataset = make_dataset()
    ids = responses(dataset)
    good = tmp_path / "gold.csv"
    good.write_text(f"response_id,factuality\n{ids[0]},4\n")
    out = io.StringIO()
    call_command("gold_import", str(good), "--dataset", dataset.name,
                 "--user", researcher.username, stdout=out)  # fmt: skip
    assert "1" in out.getvalue() and GoldItem.objects.count() == 1
    bad = tmp_path / "bad.csv"
    bad.write_text(f"response_id,factuality\n{ids[1]},4\n{ids[2]},7\n")
    with pytest.raises(CommandError) as caught:
        call_command("gold_import", str(bad), "--dataset", dataset.name,
                     "--user", researcher.username)  # fmt: skip
    assert "line 3" in str(caught.value) and "factuality" in str(caught.value)
    assert GoldItem.objects.count() == 1


def test_gold_page_for_researchers_only(researcher, rater, client_for):
    dataset = make_dataset()
    ids = responses(dataset)
    url = f"/datasets/{dataset.pk}/gold/"
    assert client_for(rater).get(url).status_code == 403
    assert client_for(rater).post(url, {"action": "mark"}).status_code == 403
    page = client_for(researcher)
    assert page.get(url).status_code == 200
    done = page.post(url, {"action": "mark", "response_id": str(ids[0]),
                           "score_factuality": "4", "tolerance": "1"})  # fmt: skip
    assert done.status_code == 302
    assert GoldItem.objects.get().tolerance == 1
    listed = page.get(url).content.decode()
    assert f">{ids[0]}<" in listed
    upload = io.BytesIO(f"response_id,factuality\n{ids[1]},8\n".encode())
    upload.name = "bad.csv"
    refused = page.post(url, {"action": "import", "file": upload})
    assert refused.status_code == 400
    assert "line 2" in refused.content.decode()
    assert GoldItem.objects.count() == 1
    delete = f"/datasets/{dataset.pk}/gold/{ids[0]}/delete/"
    assert client_for(rater).post(delete).status_code == 403
    assert GoldItem.objects.count() == 1
    assert page.post(delete).status_code == 302 and not GoldItem.objects.exists()


def test_a_gold_file_of_many_bad_rows_lists_the_first_thousand_and_counts_the_rest(
    researcher, api_client_for
):
    import gzip

    dataset = make_dataset()
    header = "response_id,factuality,nonsense_a,nonsense_b\n"
    data = gzip.compress((header + "x,4,1,2\n" * 600).encode())  # 3 problems a row
    upload = io.BytesIO(data)
    upload.name = "gold.csv.gz"
    response = api_client_for(researcher).post(
        f"/api/datasets/{dataset.pk}/gold/import/", {"file": upload},
        format="multipart",
    )  # fmt: skip
    assert response.status_code == 400
    body = response.json()
    assert len(body["problems"]) == 1000
    assert body["detail"].startswith("no gold item was saved (and 800 more problems)")
    assert not GoldItem.objects.exists()


def test_a_gold_file_with_problems_past_the_cap_is_not_read_to_its_end(
    researcher, api_client_for
):
    """Issue 34: a gzip of 300,000 bad rows was read to its expansion limit (11 s)
    only to count its problems; reading stops once the cap is reached and the
    refusal says where."""
    import gzip

    dataset = make_dataset()
    header = "response_id,factuality,nonsense_a,nonsense_b\n"
    data = gzip.compress((header + "x,4,1,2\n" * 300_000).encode(), 9)
    upload = io.BytesIO(data)
    upload.name = "gold.csv.gz"
    response = api_client_for(researcher).post(
        f"/api/datasets/{dataset.pk}/gold/import/", {"file": upload},
        format="multipart",
    )  # fmt: skip
    assert response.status_code == 400
    body = response.json()
    assert len(body["problems"]) == 1000
    assert body["problems"][0]["line"] == 2
    # One batch of 1,000 rows (3 problems each) was checked; line 1,002 not read.
    assert body["detail"].startswith(
        "no gold item was saved (and at least 2,000 more problems; reading stopped "
        "at line 1,002, after the first 1,000 problems): gold.csv.gz, line 2,"
    )
    assert not GoldItem.objects.exists()
