"""Builders for classification (categorical criteria) tests: a rubric of categorical
criteria imported from a rubric file, a dataset on it, a campaign with the given
human labels and judge runs with the given judge labels, written straight to the
tables (as `tests.analysis.agreement_data` does for scores).

Tables are keyed by (instruction index, model, criterion key); human entries list one
label key per rater (None = N/A, "-" = that rater did not rate the item); a judge
entry is a label key, None (N/A) or a list of them (samples). Keys are turned into
the stored codes by the criterion's `Scale`, the one rule for what a value means.
"""

from __future__ import annotations

from annotation.models import Campaign, CampaignItem, Dataset, Rubric, Skill
from annotation.scales import scale_of
from annotation.services.rubrics import rubric_import
from tests.analysis.agreement_data import (
    AgreementSetup,
    add_human_scores,
    add_judge_run,
)
from tests.factories import (
    DatasetFactory,
    InstructionFactory,
    ResponseFactory,
    UserFactory,
)

SAFETY_RUBRIC = b"""
name: Safety and consistency
groups: [{key: checks, name: Checks}]
criteria:
  - key: consistent
    name: Consistent with the source
    group: checks
    kind: categorical
    labels: [{key: "yes", name: "Yes"}, {key: "no", name: "No"}]
  - key: safety
    name: Safety
    group: checks
    kind: categorical
    labels:
      - {key: safe, name: Safe}
      - {key: borderline, name: Borderline}
      - {key: unsafe, name: Unsafe}
"""

MIXED_RUBRIC = b"""
name: Mixed checks
groups: [{key: checks, name: Checks}]
criteria:
  - key: consistent
    name: Consistent with the source
    group: checks
    kind: categorical
    labels: [{key: "yes", name: "Yes"}, {key: "no", name: "No"}]
  - key: helpfulness
    name: Helpfulness
    group: checks
    scale: {min: 0, max: 4}
    anchors: {0: "Useless.", 4: "Perfect."}
"""


def categorical_rubric(data: bytes = SAFETY_RUBRIC, name: str = "") -> Rubric:
    return rubric_import(name=name or None, data=data, file="rubric.yaml")


def _codes(rubric: Rubric, table: dict) -> dict:
    """The same table with label keys turned into stored codes."""
    scales = {s.key: scale_of(s) for s in Skill.objects.filter(rubric=rubric)}

    def code(key, value):
        if value is None or value == "-":
            return value
        ok, stored, problem = scales[key].parse(value)
        assert ok, problem
        return stored

    out = {}
    for (i, m, key), value in table.items():
        if isinstance(value, list):
            out[(i, m, key)] = [code(key, v) for v in value]
        else:
            out[(i, m, key)] = code(key, value)
    return out


def make_classification_setup(
    researcher,
    *,
    human: dict,
    judges: list[dict],
    n_instructions: int,
    models: tuple[str, ...] = ("alpha", "beta"),
    n_raters: int = 3,
    name: str = "classify-set",
    rubric: Rubric | None = None,
) -> AgreementSetup:
    """A dataset on `rubric` (default: yes/no `consistent` and safe / borderline /
    unsafe `safety`), one submitted campaign of `n_raters` raters with `human`, and
    one imported run per table of `judges` ("judge A", "judge B", ...)."""
    rubric = rubric or categorical_rubric()
    dataset: Dataset = DatasetFactory(name=name, rubric=rubric)
    responses = {}
    for i in range(n_instructions):
        instruction = InstructionFactory(
            dataset=dataset, external_id=f"q{i}", text=f"Q {i}", position=i,
            skill_keys=[],
        )  # fmt: skip
        for m in models:
            responses[(i, m)] = ResponseFactory(
                instruction=instruction, model_name=m, text=f"{m} answer {i}"
            )
    raters = [
        UserFactory(username=f"{name}-rater-{k}", role="rater") for k in range(n_raters)
    ]
    # Written directly: which rubrics campaigns accept is the campaigns' rule.
    campaign = Campaign.objects.create(
        name=f"{name} campaign",
        dataset=dataset,
        skill_mode=Campaign.SkillMode.ALL,
        overlap=n_raters,
        created_by=researcher,
    )
    campaign.raters.set(raters)
    CampaignItem.objects.bulk_create(
        CampaignItem(
            campaign=campaign,
            response=r,
            target=n_raters,
            open_slots=n_raters,
            position=p,
        )
        for p, r in enumerate(responses.values())
    )
    add_human_scores(campaign, responses, _codes(rubric, human), raters)
    runs = [
        add_judge_run(dataset, responses, _codes(rubric, j), f"judge {chr(65 + k)}")
        for k, j in enumerate(judges)
    ]
    return AgreementSetup(dataset, campaign, runs, responses, raters)
