"""The first-run checklist of a researcher's home page (issue 35): import data, a rubric,
a campaign, a judge, a judge run, then compare (the agreement dashboard).

One selector, `first_run_checklist`, reads what exists (one query per step, each an
`EXISTS` or a single row) and says, per step, whether it is done, what it found and
where to go next; the home page shows it. Scoped by workspace: `workspace_id` None
reads the whole instance (today's one space); with an id, each step counts only the
rows of that workspace (the `workspace` foreign key of datasets, rubrics, campaigns,
judge configs and runs).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Exists, OuterRef, Q, QuerySet
from django.urls import reverse

from annotation.models import (
    Campaign,
    Dataset,
    HumanPreference,
    HumanScore,
    Rubric,
)
from judging.models import JudgeConfig, JudgeRun, JudgeScore, PairwiseVerdict


@dataclass(frozen=True)
class ChecklistStep:
    """One step: `done` for the workspace's data, `detail` what was found (or what to
    do), `url` / `action` where to do it, `is_next` on the first step not done, `note`
    what this person's role does not allow there (the page says it before a 403)."""

    key: str
    title: str
    done: bool
    detail: str
    url: str
    action: str
    is_next: bool = False
    note: str = ""


def _in(queryset: QuerySet, workspace_id: int | None, field: str = "workspace"):
    if workspace_id is None:
        return queryset
    return queryset.filter(**{f"{field}_id": workspace_id})


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _comparable_dataset(workspace_id: int | None) -> Dataset | None:
    """The latest dataset with both human and judge judgments on the same kind of item
    (scores, or pairwise preferences and verdicts): its agreement has something to
    show."""
    scored = Exists(
        HumanScore.objects.filter(assignment__campaign__dataset=OuterRef("pk"))
    ) & Exists(JudgeScore.objects.filter(run__dataset=OuterRef("pk")))
    preferred = Exists(
        HumanPreference.objects.filter(pair__dataset=OuterRef("pk"))
    ) & Exists(PairwiseVerdict.objects.filter(run__dataset=OuterRef("pk")))
    return (
        _in(Dataset.objects.all(), workspace_id)
        .filter(Q(scored) | Q(preferred))
        .order_by("-pk")
        .only("pk", "name")
        .first()
    )


def first_run_checklist(*, workspace_id: int | None) -> list[ChecklistStep]:
    """The six steps from data to agreement, for the workspace `workspace_id` (None:
    every workspace). Read only; six queries whatever the data's size. The first step
    not done is marked `is_next`; every step links where it is done."""
    datasets = _in(Dataset.objects.all(), workspace_id).count()
    own_rubrics = _in(Rubric.objects.filter(is_builtin=False), workspace_id).count()
    campaigns = _in(Campaign.objects.all(), workspace_id).count()
    judges = _in(JudgeConfig.objects.all(), workspace_id).count()
    runs = _in(JudgeRun.objects.all(), workspace_id).count()
    compare = _comparable_dataset(workspace_id)
    upload = reverse("annotation:upload-new")
    steps = [
        ChecklistStep(
            "data",
            "Import data",
            datasets > 0,
            f"{_plural(datasets, 'dataset')} imported"
            if datasets
            else "A FLASK evaluation set, JSON Lines, CSV or Parquet: drop it on the "
            "upload page.",
            upload,
            "Upload a file",
        ),
        ChecklistStep(
            "rubric",
            "Create or choose a rubric",
            own_rubrics > 0 or datasets > 0,
            f"{_plural(own_rubrics, 'rubric')} of your own"
            if own_rubrics
            else "Your datasets use the built-in FLASK rubric; write or upload your own "
            "for other criteria."
            if datasets
            else "The built-in FLASK rubric, or your own criteria and scales.",
            reverse("annotation:rubric-list"),
            "Rubrics",
        ),
        ChecklistStep(
            "campaign",
            "Start a rating campaign",
            campaigns > 0,
            _plural(campaigns, "campaign")
            if campaigns
            else "Raters score the responses, criterion by criterion.",
            reverse("annotation:campaign-new"),
            "New campaign",
        ),
        ChecklistStep(
            "judge",
            "Add a judge",
            judges > 0,
            _plural(judges, "judge")
            if judges
            else "An OpenAI-compatible endpoint and model, or a built-in baseline.",
            reverse("judging:judge-new"),
            "New judge",
        ),
        ChecklistStep(
            "run",
            "Start a judge run",
            runs > 0,
            _plural(runs, "run")
            if runs
            else "The judge scores a dataset's responses (or import its results).",
            reverse("judging:run-new"),
            "New run",
        ),
        ChecklistStep(
            "compare",
            "Compare humans and judges",
            compare is not None,
            f"Agreement is ready for “{compare.name}”."
            if compare
            else "Needs human and judge scores on the same dataset.",
            reverse("analysis:agreement", args=[compare.pk])
            if compare
            else reverse("analysis:agreement-home"),
            "Agreement",
        ),
    ]
    for index, step in enumerate(steps):
        if not step.done:
            steps[index] = ChecklistStep(**{**step.__dict__, "is_next": True})
            break
    return steps
