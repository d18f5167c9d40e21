"""Scored datasets on rubrics other than FLASK's, built row by row for export and page
tests: a 0-4 five-attribute rubric (HelpSteer-style), a 1-10 single score (MT-Bench
style) and a yes/no question. Stored values follow `annotation.scales`: the point of
an ordinal criterion, the 0-based label code of a categorical one, null for N/A.

`scored_dataset` writes, per response: one submitted assignment of each rater (with a
critique when `critiques` is set) and their `HumanScore`s, one pointwise judge run's
`JudgeScore`s, and one critique run's `JudgeCritique`.
"""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from annotation.models import (
    Assignment,
    Campaign,
    CampaignItem,
    Dataset,
    HumanScore,
    Instruction,
    InstructionSkill,
    Response,
    Rubric,
    Skill,
)
from judging.models import JudgeCall, JudgeCritique, JudgeRun, JudgeScore

HELPSTEER = ["helpfulness", "correctness", "coherence", "complexity", "verbosity"]


def _skill(rubric, position, key, **fields) -> Skill:
    defaults = {
        "name": key.replace("_", " ").capitalize(),
        "criteria": f"How good the response is on {key}.",
        "anchor_1": "",
        "anchor_2": "",
        "anchor_3": "",
        "anchor_4": "",
        "anchor_5": "",
        "ability": "",
        "group": "attributes",
    }
    return Skill.objects.create(
        rubric=rubric, position=position, key=key, **(defaults | fields)
    )


def rubric_0_4() -> Rubric:
    """Five attributes scored 0-4, anchors at the ends, N/A allowed."""
    rubric = Rubric.objects.create(
        name="helpsteer", version=2, groups=[{"key": "attributes", "name": "Attrs"}]
    )
    for i, key in enumerate(HELPSTEER):
        _skill(
            rubric,
            i,
            key,
            scale_min=0,
            scale_max=4,
            scale_anchors={"0": f"no {key} at all", "4": f"perfect {key}"},
        )
    return rubric


def rubric_1_10() -> Rubric:
    """One overall score on 1-10, N/A not allowed."""
    rubric = Rubric.objects.create(
        name="mt-bench", version=1, groups=[{"key": "attributes", "name": "Score"}]
    )
    _skill(
        rubric,
        0,
        "overall",
        scale_min=1,
        scale_max=10,
        allow_na=False,
        scale_anchors={"1": "useless", "10": "flawless"},
    )
    return rubric


def rubric_yes_no() -> Rubric:
    """One yes/no question (categorical), N/A allowed."""
    rubric = Rubric.objects.create(
        name="consistency", version=3, groups=[{"key": "attributes", "name": "Q"}]
    )
    _skill(
        rubric,
        0,
        "consistent",
        name="Consistent with the source",
        kind="categorical",
        scale_min=None,
        scale_max=None,
        labels=[
            {"key": "yes", "name": "Yes", "description": "every claim is supported"},
            {"key": "no", "name": "No", "description": "some claim is not supported"},
        ],
    )
    return rubric


def scored_dataset(
    rubric: Rubric,
    *,
    raters: list,
    human_values: dict[str, list],
    judge_values: dict[str, list],
    critiques: bool = True,
    n_responses: int = 2,
    name: str | None = None,
) -> tuple[Dataset, Campaign, JudgeRun, JudgeRun]:
    """A dataset on `rubric` with `n_responses` responses (one per instruction), scored
    by every rater and by one judge run, and critiqued by one critique run.

    `human_values[skill_key][k]` is the STORED value (point, label code or None) rater
    k gives on every response; `judge_values[skill_key][j]` the judge's on response j.
    """
    dataset = Dataset.objects.create(name=name or f"{rubric.name}-set", rubric=rubric)
    skills = list(rubric.skills.order_by("position"))
    campaign = Campaign.objects.create(
        name=f"{rubric.name} campaign",
        dataset=dataset,
        skill_mode=Campaign.SkillMode.ALL,
        overlap=len(raters),
        critique=Campaign.Critique.WITH_SCORES if critiques else Campaign.Critique.OFF,
    )
    campaign.raters.set(raters)
    run = JudgeRun.objects.create(
        dataset=dataset, name="judge", status=JudgeRun.Status.COMPLETED
    )
    critique_run = JudgeRun.objects.create(
        dataset=dataset,
        name="critic",
        kind=JudgeRun.Kind.CRITIQUE,
        status=JudgeRun.Status.COMPLETED,
    )
    now = timezone.now()
    responses = []
    for j in range(n_responses):
        instruction = Instruction.objects.create(
            dataset=dataset,
            external_id=f"{rubric.name}-{j}",
            text=f"Summarise source text number {j}.",
            reference_answer="A faithful summary.",
            position=j,
        )
        InstructionSkill.objects.bulk_create(
            InstructionSkill(instruction=instruction, skill=s, rank=r)
            for r, s in enumerate(skills)
        )
        response = Response.objects.create(
            instruction=instruction, model_name="alpha", text=f"Summary {j}."
        )
        responses.append(response)
        item = CampaignItem.objects.create(
            campaign=campaign,
            response=response,
            target=len(raters),
            submitted=len(raters),
            open_slots=0,
            position=j,
        )
        for k, rater in enumerate(raters):
            assignment = Assignment.objects.create(
                campaign=campaign,
                item=item,
                response=response,
                rater=rater,
                status=Assignment.Status.SUBMITTED,
                reason="test",
                served_at=now,
                expires_at=now + timedelta(minutes=30),
                submitted_at=now,
                critique=(f"Rater {k} on response {j}: the second claim is wrong.")
                if critiques
                else "",
            )
            HumanScore.objects.bulk_create(
                HumanScore(
                    assignment=assignment,
                    skill=s,
                    score=human_values[s.key][k],
                    rationale=f"rater {k} on {s.key}",
                )
                for s in skills
            )
        call = JudgeCall.objects.create(
            run=run, response=response, status=JudgeCall.Status.SUCCEEDED
        )
        JudgeScore.objects.bulk_create(
            JudgeScore(
                run=run,
                call=call,
                response=response,
                skill=s,
                score=judge_values[s.key][j],
                rationale=f"judge on {s.key}",
            )
            for s in skills
        )
        critique_call = JudgeCall.objects.create(
            run=critique_run, response=response, status=JudgeCall.Status.SUCCEEDED
        )
        JudgeCritique.objects.create(
            run=critique_run,
            call=critique_call,
            response=response,
            text=f"Judge critique of response {j}: it omits the date.",
        )
    return dataset, campaign, run, critique_run
