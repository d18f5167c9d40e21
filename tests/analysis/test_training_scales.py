"""Training data in the FLAMe layout on rubrics other than FLASK's: targets on the
rubric's own scale and labels, task texts that state them, and the raters' and the
judges' critiques as open-ended (critique) examples, synthetic accounts labelled."""

from __future__ import annotations

import io
import json

import pytest
from django.contrib.auth.models import Group
from django.core.management import call_command
from django.urls import reverse

from analysis.exports.training import training_examples, training_options_parse
from flaskapp import roles
from tests.analysis.rubric_data import (
    HELPSTEER,
    rubric_0_4,
    rubric_1_10,
    rubric_yes_no,
    scored_dataset,
)
from tests.factories import UserFactory


def examples(dataset, **options) -> list[dict]:
    return list(
        training_examples(dataset=dataset, options=training_options_parse(**options))
    )


def _instructions(example: dict) -> str:
    return example["input"].split("CONTEXT:")[0]


@pytest.fixture
def raters(db):
    return [UserFactory(username=f"r{k}", role="rater") for k in range(2)]


def test_a_0_4_rubric_targets_and_task_use_its_scale(raters):
    human = {key: [i, None if i == 4 else 4 - i] for i, key in enumerate(HELPSTEER)}
    dataset, *_ = scored_dataset(
        rubric_0_4(),
        raters=raters,
        human_values=human,
        judge_values={k: [0, 0] for k in HELPSTEER},
    )
    rows = examples(dataset, kinds="pointwise")

    assert len(rows) == 2 * 2 * 5
    assert {r["task_kind"] for r in rows} == {"pointwise"}
    first = rows[:5]  # rater 0 on response 0: 0, 1, 2, 3, 4
    assert [r["target"].splitlines()[0] for r in first] == [
        f"score: {v}" for v in range(5)
    ]
    assert rows[9]["target"].startswith("score: N/A")  # rater 1, verbosity
    text = _instructions(first[0])
    assert "Scores are whole numbers from 0 (worst) to 4 (best)" in text
    assert 'answer "N/A" only when' in text
    assert "Score 0: no helpfulness at all" in text
    assert "Score 4: perfect helpfulness" in text
    assert "Score 1:" not in text  # points without an anchor are not listed
    assert "from 1 (worst) to 5 (best)" not in first[0]["input"]
    assert 'an integer from 0 to 4, or "N/A"' in first[0]["input"]


def test_a_1_10_rubric_without_na_says_so(raters):
    dataset, *_ = scored_dataset(
        rubric_1_10(),
        raters=raters,
        human_values={"overall": [10, 1]},
        judge_values={"overall": [5, 5]},
    )
    rows = examples(dataset, kinds="pointwise")

    assert [r["target"].splitlines()[0] for r in rows] == [
        "score: 10",
        "score: 1",
        "score: 10",
        "score: 1",
    ]
    assert "from 1 (worst) to 10 (best)." in rows[0]["input"]
    assert "N/A" not in rows[0]["input"]


def test_a_yes_no_rubric_is_a_classification_with_label_targets(raters):
    dataset, *_ = scored_dataset(
        rubric_yes_no(),
        raters=raters,
        human_values={"consistent": [0, 1]},  # codes: yes, no
        judge_values={"consistent": [0, 0]},
    )
    rows = examples(dataset)
    labelled = [r for r in rows if r["task_kind"] == "classification"]

    assert [r["target"] for r in labelled] == [
        "label: yes\nrationale: rater 0 on consistent",
        "label: no\nrationale: rater 1 on consistent",
    ] * 2
    assert not [r for r in rows if r["task_kind"] == "pointwise"]
    first = labelled[0]["input"]
    assert first.startswith("INSTRUCTIONS:\nTask type: classification\n")
    assert 'exactly one label key out of: "yes", "no"' in first
    assert "Label yes (Yes): every claim is supported" in first
    assert 'label: the label for Consistent with the source: one of "yes", "no"' in (
        first
    )
    # a majority vote counts label keys, and a tie goes to the label given first
    deduped = examples(dataset, kinds="classification", dedupe="input")
    assert [r["source"]["votes"] for r in deduped] == [{"yes": 1, "no": 1}] * 2
    assert [r["target"].splitlines()[0] for r in deduped] == ["label: yes"] * 2


def test_critiques_of_raters_and_judges_are_critique_examples(raters):
    synthetic = raters[1]
    synthetic.groups.add(Group.objects.get_or_create(name=roles.SYNTHETIC)[0])
    dataset, campaign, _, critique_run = scored_dataset(
        rubric_0_4(),
        raters=raters,
        human_values={k: [2, 3] for k in HELPSTEER},
        judge_values={k: [2, 2] for k in HELPSTEER},
    )
    rows = examples(dataset, kinds="critique")

    assert [r["task_kind"] for r in rows] == ["critique"] * 6
    humans = [r for r in rows if r["source"]["source_type"] == "human"]
    judges = [r for r in rows if r["source"]["source_type"] == "judge"]
    assert [r["target"] for r in humans] == [
        f"critique: Rater {k} on response {j}: the second claim is wrong."
        for j in range(2)
        for k in range(2)
    ]
    assert [r["source"]["synthetic"] for r in humans] == [False, True, False, True]
    assert {r["source"]["campaign_id"] for r in humans} == {campaign.pk}
    assert [r["target"] for r in judges] == [
        f"critique: Judge critique of response {j}: it omits the date."
        for j in range(2)
    ]
    assert {(r["source"]["run_id"], r["source"]["synthetic"]) for r in judges} == {
        (critique_run.pk, False)
    }
    text = humans[0]["input"]
    assert text.startswith("INSTRUCTIONS:\nTask type: critique\n")
    assert "request: Summarise source text number 0." in text
    assert "reference answer: A faithful summary." in text  # the campaign showed it
    assert "response: Summary 0." in text
    assert humans[0]["input"] == judges[0]["input"]  # one task, two authors


def test_critiques_are_left_out_when_empty_or_not_asked(raters):
    dataset, *_ = scored_dataset(
        rubric_1_10(),
        raters=raters,
        human_values={"overall": [3, 4]},
        judge_values={"overall": [5, 5]},
        critiques=False,
    )
    rows = examples(dataset)
    by_kind = [r["task_kind"] for r in rows]
    # no rater wrote one; the critique run still has the judge's two
    assert by_kind.count("critique") == 2
    assert by_kind.count("pointwise") == 4
    assert not examples(dataset, kinds="classification")


def test_command_and_api_export_critiques(tmp_path, api_client_for, researcher, raters):
    dataset, *_ = scored_dataset(
        rubric_yes_no(),
        raters=raters,
        human_values={"consistent": [0, 0]},
        judge_values={"consistent": [1, 1]},
    )
    out = tmp_path / "train.jsonl"
    err = io.StringIO()
    call_command(
        "export_training",
        dataset=dataset.name,
        kinds="classification,critique",
        out=str(out),
        stderr=err,
    )
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert [x["task_kind"] for x in lines] == ["classification"] * 4 + ["critique"] * 6
    assert "classification: train" in err.getvalue()
    assert "critique: train" in err.getvalue()
    url = reverse("analysis_api:dataset-training-export", args=[dataset.pk])
    response = api_client_for(researcher).get(url + "?kinds=critique")
    assert response.status_code == 200
    body = b"".join(response.streaming_content).decode().splitlines()
    assert [json.loads(x) for x in body] == lines[4:]
