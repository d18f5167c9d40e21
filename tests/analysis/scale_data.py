"""Builders for agreement tests on rubrics that are not FLASK's 1-5: a rubric with
given criteria (any ordinal scale, or categorical), a dataset on it, a campaign of
submitted human scores and judge runs, written straight to the tables.

The campaign is written directly (not through ``campaign_create``), since campaigns
on such rubrics are another part's work; the rows are those the service writes.
"""

from __future__ import annotations

from annotation.models import Campaign, CampaignItem, Rubric, Skill
from tests.analysis.agreement_data import (
    AgreementSetup,
    HumanTable,
    JudgeTable,
    add_human_scores,
    add_judge_run,
)
from tests.factories import (
    DatasetFactory,
    InstructionFactory,
    ResponseFactory,
    UserFactory,
)


def make_rubric(name: str, criteria: list[dict], groups=None) -> Rubric:
    """A rubric of `criteria`: dicts with key and either (low, high) for an ordinal
    scale or labels [keys] for a categorical one; optional group."""
    rubric = Rubric.objects.create(name=name, groups=groups or [])
    for pos, c in enumerate(criteria):
        categorical = "labels" in c
        Skill.objects.create(
            rubric=rubric,
            key=c["key"],
            name=c.get("name", c["key"].title()),
            ability="",
            criteria=f"How good is the {c['key']}?",
            anchor_1="",
            anchor_2="",
            anchor_3="",
            anchor_4="",
            anchor_5="",
            position=pos,
            kind="categorical" if categorical else "ordinal",
            scale_min=None if categorical else c["low"],
            scale_max=None if categorical else c["high"],
            labels=[{"key": k, "name": k.title()} for k in c.get("labels", [])],
            group=c.get("group", ""),
        )
    return rubric


def make_scale_setup(
    rubric: Rubric,
    *,
    human: HumanTable,
    judges: list[JudgeTable],
    n_instructions: int,
    models: tuple[str, ...] = ("alpha", "beta"),
    n_raters: int = 3,
    name: str = "scale-set",
) -> AgreementSetup:
    """A dataset on `rubric` with the human and judge scores given (see
    ``agreement_data``: keys (instruction index, model, skill key))."""
    dataset = DatasetFactory(name=name, rubric=rubric)
    responses = {}
    for i in range(n_instructions):
        ins = InstructionFactory(
            dataset=dataset, external_id=f"q{i}", position=i, skill_keys=[]
        )
        for m in models:
            responses[(i, m)] = ResponseFactory(
                instruction=ins, model_name=m, text=f"{m} answer {i}"
            )
    raters = [
        UserFactory(username=f"{name}-rater-{k}", role="rater") for k in range(n_raters)
    ]
    campaign = Campaign.objects.create(
        name=f"{name} campaign",
        dataset=dataset,
        skill_mode=Campaign.SkillMode.ALL,
        overlap=n_raters,
    )
    CampaignItem.objects.bulk_create(
        CampaignItem(
            campaign=campaign,
            response=r,
            target=n_raters,
            open_slots=0,
            submitted=n_raters,
            position=k,
        )
        for k, r in enumerate(responses.values())
    )
    add_human_scores(campaign, responses, human, raters)
    runs = [
        add_judge_run(dataset, responses, j, name=f"judge {chr(65 + k)}")
        for k, j in enumerate(judges)
    ]
    return AgreementSetup(dataset, campaign, runs, responses, raters)
