"""Score export: human and judge scores in one long shape, as CSV and JSON Lines, from
the selector, the `export` command and the researcher-only streaming API."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from analysis.exports.encoding import ROWS_PER_WRITE, csv_cell
from analysis.exports.scores import (
    FIELDS,
    export_chunks,
    export_csv,
    export_jsonl,
    score_rows,
)
from annotation.models import Response, Skill
from annotation.services.campaign_spec import (
    CampaignSpec,
)
from annotation.services.campaigns import campaign_create
from annotation.services.rating import assignment_next, rating_submit
from judging.models import JudgeCall, JudgeRun, JudgeScore
from tests.factories import (
    DatasetFactory,
    InstructionFactory,
    ResponseFactory,
    UserFactory,
)

SKILLS = ["factuality", "readability"]
TRICKY = 'Says "no", then,\nchanges its mind; café'


def make_dataset(n_responses: int = 2, name: str = "export-set"):
    dataset = DatasetFactory(name=name)
    for i in range(n_responses):
        instruction = InstructionFactory(
            dataset=dataset,
            external_id=f"q{i}",
            skill_keys=SKILLS,
            domain_1="math",
            domain_2="coding" if i == 0 else "",
            difficulty=4,
            is_hard=i == 0,
            source_task="gsm8k",
        )
        ResponseFactory(instruction=instruction, model_name="alpha")
    return dataset


def rate_all(dataset, researcher, rater, *, name="campaign"):
    """A campaign where `rater` scores every response: factuality 4 with a tricky
    rationale, readability N/A."""
    campaign = campaign_create(
        spec=CampaignSpec(name=name, dataset=dataset, raters=[rater]),
        created_by=researcher,
    )
    while assignment := assignment_next(campaign=campaign, rater=rater).assignment:
        rating_submit(
            assignment_id=assignment.pk,
            rater=rater,
            scores={"factuality": 4, "readability": "na"},
            rationales={"factuality": TRICKY},
        )
    return campaign


def judge_all(dataset, *, samples=1, name="run"):
    """A completed judge run scoring every response: factuality 2, readability N/A."""
    run = JudgeRun.objects.create(
        dataset=dataset, name=name, status=JudgeRun.Status.COMPLETED
    )
    skills = Skill.objects.filter(rubric_id=dataset.rubric_id, key__in=SKILLS)
    for response in Response.objects.filter(instruction__dataset=dataset):
        for sample in range(samples):
            call = JudgeCall.objects.create(
                run=run,
                response=response,
                sample_index=sample,
                status=JudgeCall.Status.SUCCEEDED,
            )
            JudgeScore.objects.bulk_create(
                JudgeScore(
                    run=run,
                    call=call,
                    response=response,
                    skill=skill,
                    sample_index=sample,
                    score=2 if skill.key == "factuality" else None,
                    rationale=f"judge on {skill.key}",
                )
                for skill in skills
            )
    return run


@pytest.fixture
def scored(researcher, rater):
    """Two responses, each scored by one rater and by a judge run with two samples."""
    dataset = make_dataset(2)
    campaign = rate_all(dataset, researcher, rater)
    run = judge_all(dataset, samples=2)
    return dataset, campaign, run


# --- The selector -------------------------------------------------------------------------


def test_human_and_judge_scores_share_one_shape(scored, rater):
    dataset, campaign, run = scored
    rows = list(score_rows(dataset=dataset))

    assert len(rows) == 2 * 2 + 2 * 2 * 2  # humans: 2 responses x 2 skills; judges x2
    assert all(tuple(row) == FIELDS for row in rows)
    human = next(
        r
        for r in rows
        if r["source_type"] == "human"
        and r["skill_key"] == "factuality"
        and r["instruction_external_id"] == "q0"
    )
    assert human | {"created_at": None, "updated_at": None, "response_id": None} == {
        "dataset": "export-set",
        "instruction_external_id": "q0",
        "instruction_id": dataset.instructions.get(external_id="q0").pk,
        "response_id": None,
        "model": "alpha",
        "skill_key": "factuality",
        "skill_name": "Factuality",
        "ability": "background_knowledge",
        "rubric": f"{dataset.rubric.name} v{dataset.rubric.version}",
        "source_type": "human",
        "source": "rater-user",
        "rater_id": rater.pk,
        "campaign_id": campaign.pk,
        "run_id": None,
        "sample_index": None,
        "score": 4,
        "is_na": False,
        "rationale": TRICKY,
        "created_at": None,
        "updated_at": None,
        "domains": ["math", "coding"],
        "difficulty": 4,
        "is_hard": True,
        "source_task": "gsm8k",
        "synthetic": False,
        "rubric_name": dataset.rubric.name,
        "rubric_version": dataset.rubric.version,
        "skill_kind": "ordinal",
        "skill_group": "background_knowledge",
        "scale": "1-5",
        "value": 4,
        "gold": False,
        "excluded": False,
        "split": "",
        "expected_score": None,  # a judge's probability-weighted score only
        "expected_mass": None,
        "domain_labels": None,  # FLASK's taxonomy: nothing declared
        "difficulty_label": None,
    }
    assert human["created_at"] and "T" in human["created_at"]
    judge = [r for r in rows if r["source_type"] == "judge"]
    assert {r["source"] for r in judge} == {
        f"run:{run.pk}/sample:0",
        f"run:{run.pk}/sample:1",
    }
    assert all(
        r["rater_id"] is None and r["campaign_id"] is None and r["run_id"] == run.pk
        for r in judge
    )
    assert {r["sample_index"] for r in judge} == {0, 1}


def test_na_scores_export_as_null_with_is_na_true(scored):
    dataset, _, _ = scored
    rows = list(score_rows(dataset=dataset))
    na = [r for r in rows if r["skill_key"] == "readability"]
    scored_rows = [r for r in rows if r["skill_key"] == "factuality"]
    assert na and all(r["score"] is None and r["is_na"] is True for r in na)
    assert all(r["score"] in (2, 4) and r["is_na"] is False for r in scored_rows)


def test_filters_select_campaigns_and_runs(researcher, rater, other_rater):
    dataset = make_dataset(2)
    first = rate_all(dataset, researcher, rater, name="first")
    second = rate_all(dataset, researcher, other_rater, name="second")
    run_a = judge_all(dataset, name="a")
    run_b = judge_all(dataset, name="b")

    def sources(**filters):
        return {
            (r["campaign_id"], r["run_id"])
            for r in score_rows(dataset=dataset, **filters)
        }

    assert sources() == {
        (first.pk, None),
        (second.pk, None),
        (None, run_a.pk),
        (None, run_b.pk),
    }
    assert sources(campaign_ids=[second.pk]) == {(second.pk, None)}
    assert sources(run_ids=[run_a.pk]) == {(None, run_a.pk)}
    assert sources(campaign_ids=[first.pk], run_ids=[run_b.pk]) == {
        (first.pk, None),
        (None, run_b.pk),
    }


def test_other_datasets_scores_are_not_exported(scored, researcher, rater):
    dataset, _, _ = scored
    other = make_dataset(1, name="other-set")
    other_campaign = rate_all(other, researcher, rater)
    judge_all(other)
    rows = list(score_rows(dataset=dataset))
    assert {r["dataset"] for r in rows} == {"export-set"}
    assert not list(score_rows(dataset=dataset, campaign_ids=[other_campaign.pk]))


def test_scores_of_synthetic_accounts_are_exported_as_synthetic(
    settings, researcher, rater
):
    """Generated ratings (a synthetic account's) say so in every export format; a
    person's and a judge's rows do not."""
    from django.contrib.auth.models import Group

    from flaskapp import roles

    dataset = make_dataset(2)
    rate_all(dataset, researcher, rater, name="people")
    bot = UserFactory(username="synthetic-rater-1", role="rater")
    bot.groups.add(Group.objects.get_or_create(name=roles.SYNTHETIC)[0])
    rate_all(dataset, researcher, bot, name="generated")
    judge_all(dataset)

    rows = list(score_rows(dataset=dataset))
    assert {(r["source"], r["synthetic"]) for r in rows} == {
        ("rater-user", False),
        ("synthetic-rater-1", True),
        *{(r["source"], False) for r in rows if r["source_type"] == "judge"},
    }
    for fast in (True, False):  # the SQL CSV (PostgreSQL) and the Python one
        settings.EXPORT_FAST_SQL = fast
        text = b"".join(export_chunks(dataset=dataset, fmt="csv")).decode()
        parsed = list(csv.DictReader(io.StringIO(text)))
        assert {
            (p["source"], p["synthetic"]) for p in parsed if p["source_type"] == "human"
        } == {
            ("rater-user", "false"),
            ("synthetic-rater-1", "true"),
        }
    lines = b"".join(export_chunks(dataset=dataset, fmt="jsonl")).decode().splitlines()
    flagged = [json.loads(line) for line in lines if json.loads(line)["synthetic"]]
    assert flagged and {f["source"] for f in flagged} == {"synthetic-rater-1"}


@pytest.mark.parametrize("n_responses", [5, 50])
def test_query_count_does_not_grow_with_rows(
    n_responses, researcher, rater, django_assert_max_num_queries
):
    """10 or 100 human scores, as many judge scores and an adjudication per
    response: the same three queries (one per source)."""
    from annotation.models import Adjudication, HumanScore

    dataset = make_dataset(n_responses)
    campaign = rate_all(dataset, researcher, rater)
    judge_all(dataset)
    for score in HumanScore.objects.filter(assignment__campaign=campaign)[::2]:
        Adjudication.objects.create(
            campaign=campaign, response_id=score.assignment.response_id,
            skill_id=score.skill_id, score=3, note="settled", updated_by=researcher,
        )  # fmt: skip
    with django_assert_max_num_queries(4):  # the split's parts, then one per source
        rows = list(score_rows(dataset=dataset))
    assert len(rows) == 2 * 2 * n_responses + n_responses
    assert sum(r["source_type"] == "human_adjudicated" for r in rows) == n_responses


# --- Encoders -----------------------------------------------------------------------------


def test_csv_parses_back_to_the_same_values(scored):
    dataset, _, _ = scored
    rows = list(score_rows(dataset=dataset))
    parsed = list(csv.DictReader(io.StringIO("".join(export_csv(rows)))))

    assert parsed == [{f: str(csv_cell(r[f])) for f in FIELDS} for r in rows]
    na = next(p for p in parsed if p["skill_key"] == "readability")
    assert na["score"] == "" and na["is_na"] == "true"
    assert any(p["rationale"] == TRICKY for p in parsed)
    assert {p["domains"] for p in parsed} == {"math;coding", "math"}


def test_jsonl_lines_parse_to_the_rows(scored):
    dataset, _, _ = scored
    rows = list(score_rows(dataset=dataset))
    text = "".join(export_jsonl(rows))
    lines = text.splitlines()
    assert text.endswith("\n") and len(lines) == len(rows)
    assert [json.loads(line) for line in lines] == rows


def test_encoders_stream_in_chunks_without_losing_rows():
    rows = [
        {f: None for f in FIELDS} | {"response_id": i, "domains": []}
        for i in range(ROWS_PER_WRITE * 2 + 7)
    ]
    csv_chunks = list(export_csv(iter(rows)))
    jsonl_chunks = list(export_jsonl(iter(rows)))
    assert len(csv_chunks) == 3 and len(jsonl_chunks) == 3
    parsed = list(csv.DictReader(io.StringIO("".join(csv_chunks))))
    assert [int(p["response_id"]) for p in parsed] == list(range(len(rows)))
    lines = "".join(jsonl_chunks).splitlines()
    assert [json.loads(line)["response_id"] for line in lines] == list(range(len(rows)))
    assert list(export_jsonl([])) == []
    assert "".join(export_csv([])) == ",".join(FIELDS) + "\r\n"


# --- The command --------------------------------------------------------------------------


def test_export_command_writes_a_file(scored, tmp_path):
    dataset, campaign, _ = scored
    out = tmp_path / "scores.jsonl"
    err = io.StringIO()
    call_command(
        "export", dataset=dataset.name, format="jsonl", out=str(out), stderr=err
    )
    lines = out.read_text(encoding="utf-8").splitlines()
    assert [json.loads(line) for line in lines] == list(score_rows(dataset=dataset))
    assert f"12 scores of {dataset.name} written to {out}" in err.getvalue()

    call_command(
        "export", "--dataset", dataset.name, "--campaign", str(campaign.pk), "--out",
        str(tmp_path / "humans.csv"),
    )  # fmt: skip
    parsed = list(csv.DictReader((tmp_path / "humans.csv").open(newline="")))
    assert len(parsed) == 4 and {p["source_type"] for p in parsed} == {"human"}


def test_export_command_writes_csv_to_stdout_by_default(scored):
    dataset, _, run = scored
    out = io.StringIO()
    call_command("export", "--dataset", dataset.name, "--run", str(run.pk), stdout=out)
    parsed = list(csv.DictReader(io.StringIO(out.getvalue())))
    assert len(parsed) == 8 and {p["run_id"] for p in parsed} == {str(run.pk)}


def test_export_command_refuses_unknown_dataset_and_foreign_run(scored):
    dataset, _, _ = scored
    with pytest.raises(CommandError, match="no dataset named 'nope'"):
        call_command("export", dataset="nope")
    with pytest.raises(CommandError, match="run"):
        call_command("export", dataset=dataset.name, run=[999999], stderr=io.StringIO())


# --- The API ------------------------------------------------------------------------------


def export_url(dataset, query: str = "") -> str:
    url = reverse("analysis_api:dataset-export", args=[dataset.pk])
    return f"{url}?{query}" if query else url


def body(response) -> str:
    return b"".join(response.streaming_content).decode("utf-8")


def test_api_streams_csv_to_a_researcher(api_client_for, researcher, scored):
    dataset, _, _ = scored
    response = api_client_for(researcher).get(export_url(dataset, "format=csv"))
    assert response.status_code == 200
    assert response.streaming is True
    assert response["Content-Type"].startswith("text/csv")
    assert (
        response["Content-Disposition"]
        == 'attachment; filename="export-set-scores.csv"'
    )
    parsed = list(csv.DictReader(io.StringIO(body(response))))
    assert len(parsed) == 12
    assert {p["source_type"] for p in parsed} == {"human", "judge"}


def test_api_streams_filtered_jsonl_to_an_admin(api_client_for, admin_user, scored):
    dataset, campaign, run = scored
    response = api_client_for(admin_user).get(
        export_url(dataset, f"format=jsonl&campaign={campaign.pk}&run={run.pk}")
    )
    assert response.status_code == 200 and response.streaming is True
    assert response["Content-Type"].startswith("application/x-ndjson")
    rows = [json.loads(line) for line in body(response).splitlines()]
    assert rows == list(
        score_rows(dataset=dataset, campaign_ids=[campaign.pk], run_ids=[run.pk])
    )
    only_run = api_client_for(admin_user).get(
        export_url(dataset, f"format=jsonl&run={run.pk}")
    )
    assert {json.loads(x)["source_type"] for x in body(only_run).splitlines()} == {
        "judge"
    }


def test_api_refuses_raters_and_anonymous(api_client_for, rater, scored):
    """Raters never read scores, not even their own, through the export."""
    dataset, campaign, _ = scored
    for query in ("", "format=jsonl", f"campaign={campaign.pk}"):
        refused = api_client_for(rater).get(export_url(dataset, query))
        assert refused.status_code == 403
        assert not refused.streaming
        assert "rater-user" not in refused.content.decode()
        assert TRICKY not in refused.content.decode()
    assert api_client_for(None).get(export_url(dataset)).status_code == 401
    no_role = UserFactory(username="nobody")
    assert api_client_for(no_role).get(export_url(dataset)).status_code == 403


def test_api_bad_format_is_a_400_naming_format(api_client_for, researcher, scored):
    dataset, _, _ = scored
    response = api_client_for(researcher).get(export_url(dataset, "format=xml"))
    assert response.status_code == 400
    assert [p["field"] for p in response.json()["problems"]] == ["format"]
    assert "csv, jsonl" in response.json()["detail"]


def test_api_bad_filters_are_400s_naming_the_field(
    api_client_for, researcher, rater, scored
):
    dataset, _, _ = scored
    other = make_dataset(1, name="other-set")
    foreign = rate_all(other, researcher, rater, name="foreign")
    client = api_client_for(researcher)

    not_a_number = client.get(export_url(dataset, "campaign=abc"))
    assert not_a_number.status_code == 400
    assert not_a_number.json()["problems"][0]["field"] == "campaign"
    foreign_campaign = client.get(export_url(dataset, f"campaign={foreign.pk}"))
    assert foreign_campaign.status_code == 400
    assert foreign_campaign.json()["problems"][0]["field"] == "campaign"
    missing = client.get(reverse("analysis_api:dataset-export", args=[999999]))
    assert missing.status_code == 404
