"""Builders for agreement tests: a campaign with given human scores and judge runs
with given judge scores, written straight to the tables (fast, exact control).

`make_agreement_setup(researcher, human=..., judge=...)` takes score tables keyed by
(instruction index, model, skill key) and returns the objects; every score is stored
exactly as given (None = N/A), so tests can compute the expected statistics by hand
or with the reference libraries on the same numbers.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.utils import timezone

from annotation.models import (
    Assignment,
    Campaign,
    CampaignItem,
    Dataset,
    HumanScore,
    Response,
    Skill,
)
from annotation.services.campaign_spec import (
    CampaignSpec,
    ServingPolicy,
)
from annotation.services.campaigns import campaign_create
from judging.models import JudgeRun, JudgeScore
from tests.factories import (
    DatasetFactory,
    InstructionFactory,
    ResponseFactory,
    UserFactory,
)

# (instruction index, model, skill key) -> list of human scores (one per rater; None = N/A)
HumanTable = dict[tuple[int, str, str], list[int | None]]
# (instruction index, model, skill key) -> judge score (or list of samples)
JudgeTable = dict[tuple[int, str, str], int | None | list[int | None]]


@dataclass
class AgreementSetup:
    dataset: Dataset
    campaign: Campaign
    runs: list[JudgeRun]
    responses: dict[tuple[int, str], Response]
    raters: list = field(default_factory=list)


def make_dataset(
    name: str, n_instructions: int, models: tuple[str, ...], **meta
) -> tuple[Dataset, dict[tuple[int, str], Response]]:
    """Instructions with optional per-index metadata: meta["difficulty"][i] etc."""
    dataset = DatasetFactory(name=name)
    responses = {}
    for i in range(n_instructions):
        extra = {k: v[i] for k, v in meta.items()}
        instruction = InstructionFactory(
            dataset=dataset,
            external_id=f"q{i}",
            text=f"Question {i}",
            position=i,
            **extra,
        )
        for m in models:
            responses[(i, m)] = ResponseFactory(
                instruction=instruction, model_name=m, text=f"{m} answer {i}"
            )
    return dataset, responses


def add_human_scores(
    campaign: Campaign, responses, human: HumanTable, raters: list, rationale=""
) -> None:
    """One submitted assignment per (response, rater position) with its scores."""
    skills = {s.key: s for s in Skill.objects.filter(rubric=campaign.dataset.rubric)}
    items = {
        it.response_id: it for it in CampaignItem.objects.filter(campaign=campaign)
    }
    now = timezone.now()
    by_assignment: dict[tuple[int, int], list[tuple[str, int | None]]] = {}
    for (i, m, key), scores in human.items():
        for pos, score in enumerate(scores):
            if score == "-":  # this rater did not rate the item
                continue
            by_assignment.setdefault((responses[(i, m)].pk, pos), []).append(
                (key, score)
            )
    for (response_id, pos), scores in by_assignment.items():
        a = Assignment.objects.create(
            campaign=campaign,
            item=items[response_id],
            response_id=response_id,
            rater=raters[pos],
            status=Assignment.Status.SUBMITTED,
            reason="test",
            served_at=now,
            expires_at=now,
            submitted_at=now,
        )
        HumanScore.objects.bulk_create(
            HumanScore(
                assignment=a,
                skill=skills[key],
                score=score,
                rationale=rationale or f"human {pos} on {key}",
            )
            for key, score in scores
        )


def add_judge_run(dataset: Dataset, responses, judge: JudgeTable, name="judge A"):
    run = JudgeRun.objects.create(
        dataset=dataset,
        name=name,
        kind=JudgeRun.Kind.IMPORTED,
        status=JudgeRun.Status.COMPLETED,
        settings_snapshot={"samples": 2},
    )
    skills = {s.key: s for s in Skill.objects.filter(rubric=dataset.rubric)}
    rows = []
    for (i, m, key), value in judge.items():
        samples = value if isinstance(value, list) else [value]
        for s, score in enumerate(samples):
            rows.append(
                JudgeScore(
                    run=run,
                    response=responses[(i, m)],
                    skill=skills[key],
                    sample_index=s,
                    score=score,
                    rationale=f"{name} says {score} for {m} on q{i} {key}",
                )
            )
    JudgeScore.objects.bulk_create(rows)
    return run


def make_agreement_setup(
    researcher,
    *,
    human: HumanTable,
    judges: list[JudgeTable],
    n_instructions: int,
    models: tuple[str, ...] = ("alpha", "beta"),
    n_raters: int = 3,
    name: str = "agree-set",
    **meta,
) -> AgreementSetup:
    dataset, responses = make_dataset(name, n_instructions, models, **meta)
    raters = [
        UserFactory(username=f"{name}-rater-{k}", role="rater") for k in range(n_raters)
    ]
    campaign = campaign_create(
        spec=CampaignSpec(
            name=f"{name} campaign",
            dataset=dataset,
            skill_mode=Campaign.SkillMode.ALL,
            raters=raters,
            serving=ServingPolicy(overlap=n_raters),
        ),
        created_by=researcher,
    )
    add_human_scores(campaign, responses, human, raters)
    runs = [
        add_judge_run(dataset, responses, j, name=f"judge {chr(65 + k)}")
        for k, j in enumerate(judges)
    ]
    return AgreementSetup(dataset, campaign, runs, responses, raters)
