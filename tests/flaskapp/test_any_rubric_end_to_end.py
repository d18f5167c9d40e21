"""Issue 14 end to end, across the apps: a rubric of our own goes in as a file, human
scores or labels come from an import or from raters, a judge (the real fake server)
scores the same responses, and agreement and the export read them on the rubric's
own scale or labels, checked against scikit-learn on arrays rebuilt from the rows."""

from __future__ import annotations

import io
from collections import Counter, defaultdict

import numpy as np
import pytest
from django.core.management import call_command
from sklearn.metrics import accuracy_score, cohen_kappa_score

from analysis.exports.scores import score_rows
from analysis.selectors.agreement.compute import agreement_compute
from analysis.selectors.classification import classification_compute
from annotation.models import Campaign, Dataset, HumanScore, Response
from annotation.services.campaign_spec import (
    CampaignSpec,
    ServingPolicy,
)
from annotation.services.campaigns import campaign_create
from annotation.services.rating import assignment_next, rating_submit
from annotation.services.rubrics import rubric_import
from judging.models import JudgeRun, JudgeScore
from tests.factories import (
    DatasetFactory,
    InstructionFactory,
    ResponseFactory,
    UserFactory,
)
from tests.judging.test_any_rubric_runs import eager_tasks, make_config, run_to_end

pytestmark = pytest.mark.django_db(transaction=True)
__all__ = ["eager_tasks"]  # the fixture, used by name

HELPSTEER_YAML = b"""\
name: E2E HelpSteer
groups: [{key: quality, name: Quality}]
criteria:
  - {key: helpfulness, name: Helpfulness, group: quality, scale: {min: 0, max: 4},
     anchors: {0: "Not helpful.", 4: "Very helpful."}, allow_na: false}
  - {key: correctness, name: Correctness, group: quality, scale: {min: 0, max: 4},
     anchors: {0: "Wrong.", 4: "Right."}, allow_na: false}
"""

YESNO_YAML = b"""\
name: E2E consistency
groups: [{key: faithful, name: Faithfulness}]
criteria:
  - key: consistent
    name: Consistent with the source
    group: faithful
    kind: categorical
    allow_na: false
    labels: [{key: "yes", name: "Consistent"}, {key: "no", name: "Inconsistent"}]
"""


def helpsteer_csv(n_prompts: int, rng) -> str:
    lines = ["prompt,response,model,rater,helpfulness,correctness"]
    for i in range(n_prompts):
        for model in ("m-a", "m-b"):
            for rater in ("r1", "r2"):
                h, c = rng.integers(0, 5, size=2)
                lines.append(
                    f"Prompt {i},Answer of {model} to {i},{model},{rater},{h},{c}"
                )
    return "\n".join(lines) + "\n"


def test_a_0_to_4_rubric_from_file_to_agreement_and_export(
    tmp_path, eager_tasks, fake_server
):
    rubric = rubric_import(data=HELPSTEER_YAML, file="r.yaml")
    path = tmp_path / "helpsteer.csv"
    path.write_text(helpsteer_csv(12, np.random.default_rng(4)))
    call_command(
        "import_dataset",
        str(path),
        dataset="e2e-hs",
        rubric=rubric.name,
        map=["instruction=prompt"],
        stdout=io.StringIO(),
    )
    dataset = Dataset.objects.get(name="e2e-hs")
    campaign = Campaign.objects.get(dataset=dataset)
    assert HumanScore.objects.filter(assignment__campaign=campaign).count() == 96

    config, user = make_config(fake_server(latency_ms=1), output_mode="json_schema")
    run = run_to_end(config, user, dataset)
    assert run.status == JudgeRun.Status.COMPLETED
    dataset.rubric.refresh_from_db()
    assert dataset.rubric.is_frozen

    res = agreement_compute(
        dataset=dataset, campaign_ids=[campaign.pk], run_ids=[run.pk], n_boot=50
    )
    for key in ("helpfulness", "correctness"):
        human = defaultdict(list)
        for rid, score in HumanScore.objects.filter(skill__key=key).values_list(
            "assignment__item__response_id", "score"
        ):
            human[rid].append(score)
        judge = dict(
            JudgeScore.objects.filter(run=run, skill__key=key).values_list(
                "response_id", "score"
            )
        )
        ids = sorted(set(human) & set(judge))
        med = np.floor(np.array([np.median(human[i]) for i in ids]) + 0.5).astype(int)
        jv = np.array([judge[i] for i in ids])
        row = res.row(f"skill:{key}")
        j = row.judge(run.pk)
        assert j.stat("qwk").value == pytest.approx(
            cohen_kappa_score(jv, med, weights="quadratic", labels=range(5))
        )
        assert np.array(j.confusion).shape == (5, 5)
        assert row.scale.label == "0-4"

    rows = list(score_rows(dataset=dataset))
    assert {r["scale"] for r in rows} == {"0-4"}
    assert {r["value"] for r in rows} <= set(range(5))
    assert any(r["value"] == 0 for r in rows)  # a 0 is a score, not N/A


def test_a_yes_no_classification_campaign_with_two_raters_and_a_judge(
    eager_tasks, fake_server
):
    rubric = rubric_import(data=YESNO_YAML, file="c.yaml")
    dataset = DatasetFactory(rubric=rubric)
    for _ in range(10):
        instruction = InstructionFactory(dataset=dataset, skill_keys=[])
        for model in ("m-a", "m-b"):
            ResponseFactory(instruction=instruction, model_name=model)
    researcher = UserFactory(username="e2e-researcher", role="researcher")
    raters = [UserFactory(username=f"e2e-rater-{i}", role="rater") for i in range(2)]
    campaign = campaign_create(
        spec=CampaignSpec(
            name="consistency",
            dataset=dataset,
            raters=raters,
            serving=ServingPolicy(overlap=2),
        ),
        created_by=researcher,
    )
    rng = np.random.default_rng(7)
    for rater in raters:
        while (
            served := assignment_next(campaign=campaign, rater=rater).assignment
        ) is not None:
            label = "yes" if rng.random() < 0.6 else "no"
            rating_submit(
                assignment_id=served.pk, rater=rater, scores={"consistent": label}
            )
    n = Response.objects.filter(instruction__dataset=dataset).count()
    assert HumanScore.objects.filter(assignment__campaign=campaign).count() == 2 * n

    config, user = make_config(fake_server(latency_ms=1), output_mode="json_schema")
    run = run_to_end(config, user, dataset)
    assert run.status == JudgeRun.Status.COMPLETED

    report = classification_compute(
        dataset=dataset, campaign_ids=[campaign.pk], run_ids=[run.pk], n_boot=50
    )
    assert report["classification"] is True
    votes = defaultdict(list)
    for rid, code in HumanScore.objects.filter(
        assignment__campaign=campaign
    ).values_list("assignment__item__response_id", "score"):
        votes[rid].append(code)
    judge = dict(JudgeScore.objects.filter(run=run).values_list("response_id", "score"))
    majority = {}
    for rid, v in votes.items():
        (top, c1), *rest = Counter(v).most_common()
        if not rest or rest[0][1] < c1:  # ties are left out
            majority[rid] = top
    ids = sorted(set(majority) & set(judge))
    h = [majority[i] for i in ids]
    j = [judge[i] for i in ids]
    crit = report["criteria"][0]
    figures = crit["judges"][str(run.pk)]
    assert figures["accuracy"]["value"] == pytest.approx(accuracy_score(h, j))
    assert figures["kappa"]["value"] == pytest.approx(
        cohen_kappa_score(h, j, labels=[0, 1])
    )
    exported = {r["value"] for r in score_rows(dataset=dataset)}
    assert exported <= {"yes", "no"} and exported
