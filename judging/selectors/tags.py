"""Reads of the failure tags on a run's items and of the notes on a prompt version's
criteria (written by `judging.services.tags`).

A run's prompt version is the prompt its frozen settings name
(`settings_snapshot["prompt_id"]`), else, for a run made before snapshots held it,
its config's prompt: a config may have moved to another prompt since, and the run's
tags belong to the prompt it was judged with. Every function issues a fixed number
of queries, whatever the number of runs, items or tags. Role checks are the
callers' (`judge_run_get_for_user`, the API's `IsResearcher`), except in
`prompt_get_for_user`.
"""

from __future__ import annotations

from collections import defaultdict

from django.db.models import Count, Q, QuerySet
from django.http import Http404

from annotation.models import Dataset, Skill
from flaskapp import workspaces
from judging.models import (
    CriterionNote,
    DisagreementTag,
    FailureTag,
    JudgeRun,
    PromptTemplate,
)


def run_prompt_id(run: JudgeRun) -> int | None:
    """The id of the prompt version `run` was judged with (module doc); no query."""
    snapshot = run.settings_snapshot or {}
    if "prompt_id" in snapshot:
        value = snapshot["prompt_id"]
        return value if isinstance(value, int) else None
    return run.config.prompt_id if run.config_id else None


def prompt_get_for_user(*, user, prompt_id: int) -> PromptTemplate:
    """One prompt version: 404 for another workspace's (or an unknown id), 403 below
    researcher; a built-in one is readable by every researcher."""
    workspaces.require_role_somewhere(user, workspaces.RESEARCHER)
    prompt = PromptTemplate.objects.filter(pk=prompt_id).first()
    if prompt is None:
        raise Http404("No such prompt template.")
    workspaces.require_object_role(user, prompt, workspaces.RESEARCHER)
    return prompt


def run_prompt(*, run: JudgeRun) -> PromptTemplate | None:
    """The prompt version `run` was judged with, or None (an import, a baseline).
    At most one query."""
    prompt_id = run_prompt_id(run)
    if prompt_id is None:
        return None
    if run.config_id and run.config.prompt_id == prompt_id:
        return run.config.prompt  # no query when the run came with its config's prompt
    return PromptTemplate.objects.filter(pk=prompt_id).first()


def _prompt_runs_q(prompt_id: int, prefix: str = "") -> Q:
    snapshot = f"{prefix}settings_snapshot"
    return Q(**{f"{snapshot}__prompt_id": prompt_id}) | (
        ~Q(**{f"{snapshot}__has_key": "prompt_id"})
        & Q(**{f"{prefix}config__prompt_id": prompt_id})
    )


def prompt_run_list(
    *, prompt: PromptTemplate, workspace_id: int | None = None
) -> QuerySet[JudgeRun]:
    """The runs judged with the prompt version `prompt` (module doc), newest first;
    only those of workspace `workspace_id` when given (a built-in prompt is shared:
    its runs in other workspaces are theirs)."""
    runs = JudgeRun.objects.filter(_prompt_runs_q(prompt.pk))
    if workspace_id is not None:
        runs = runs.filter(workspace_id=workspace_id)
    return runs.select_related("config", "dataset").order_by("-created_at", "-pk")


def prompt_criterion_keys(
    *,
    prompt: PromptTemplate,
    dataset: Dataset | None = None,
    workspace_id: int | None = None,
) -> set[str]:
    """The criterion keys a note on `prompt` may name: those of the rubrics of the
    datasets its runs judged, and of `dataset`'s rubric when given. One query."""
    where = Q(
        rubric__datasets__judge_runs__in=prompt_run_list(
            prompt=prompt, workspace_id=workspace_id
        )
    )
    if dataset is not None:
        where |= Q(rubric_id=dataset.rubric_id)
    return set(Skill.objects.filter(where).values_list("key", flat=True).distinct())


def failure_tag_names(*, dataset: Dataset) -> list[str]:
    """The names of the dataset's failure tags, alphabetically (for a datalist)."""
    return list(
        FailureTag.objects.filter(dataset=dataset)
        .order_by("name")
        .values_list("name", flat=True)
    )


def disagreement_tag_list(
    *,
    run: JudgeRun,
    response_ids: list[int] | None = None,
    skill_key: str | None = None,
) -> QuerySet[DisagreementTag]:
    """The tags on `run`'s items, optionally of some responses and of one criterion,
    by response, criterion and tag name, with their tag, criterion and author."""
    qs = DisagreementTag.objects.filter(run=run)
    if response_ids is not None:
        qs = qs.filter(response_id__in=response_ids)
    if skill_key:
        qs = qs.filter(skill__key=skill_key)
    return qs.select_related("tag", "skill", "created_by").order_by(
        "response_id", "skill__key", "tag__name", "pk"
    )


def disagreement_tags_by_item(
    *,
    run: JudgeRun,
    response_ids: list[int] | None = None,
    skill_key: str | None = None,
) -> dict[tuple[int, str], list[DisagreementTag]]:
    """`disagreement_tag_list` keyed by item, (response id, criterion key); one
    query."""
    out: dict[tuple[int, str], list[DisagreementTag]] = defaultdict(list)
    for row in disagreement_tag_list(
        run=run, response_ids=response_ids, skill_key=skill_key
    ):
        out[(row.response_id, row.skill.key)].append(row)
    return dict(out)


def _counts(qs: QuerySet[DisagreementTag]) -> list[dict]:
    """[{"tag", "items", "by_skill": {key: n}}], most used first, then by name: how
    many items carry each tag name, in all and per criterion. One query."""
    tags: dict[str, dict] = {}
    for row in qs.values("tag__name", "skill__key").annotate(n=Count("pk")):
        entry = tags.setdefault(
            row["tag__name"], {"tag": row["tag__name"], "items": 0, "by_skill": {}}
        )
        entry["items"] += row["n"]
        entry["by_skill"][row["skill__key"]] = row["n"]
    return sorted(tags.values(), key=lambda t: (-t["items"], t["tag"]))


def failure_tag_counts_of_run(*, run: JudgeRun) -> list[dict]:
    """How many of `run`'s items carry each tag (shape: `_counts`). One query."""
    return _counts(DisagreementTag.objects.filter(run=run))


def failure_tag_counts_of_prompt(
    *, prompt: PromptTemplate, workspace_id: int | None = None
) -> dict:
    """{"prompt_id", "prompt", "runs": n, "tags": [...]}: the tags on the items of
    every run of the prompt version (module doc) summed by name, across datasets
    (shape of "tags": `_counts`), and how many runs used it; only runs of workspace
    `workspace_id` when given (the caller's run's: a built-in prompt is shared by
    every workspace). Two queries."""
    runs = JudgeRun.objects.filter(_prompt_runs_q(prompt.pk))
    tags = DisagreementTag.objects.filter(_prompt_runs_q(prompt.pk, prefix="run__"))
    if workspace_id is not None:
        runs = runs.filter(workspace_id=workspace_id)
        tags = tags.filter(run__workspace_id=workspace_id)
    return {
        "prompt_id": prompt.pk,
        "prompt": str(prompt),
        "runs": runs.count(),
        "tags": _counts(tags),
    }


def criterion_note_list(
    *,
    prompt: PromptTemplate,
    skill_key: str | None = None,
    user=None,
    workspace_id=None,
) -> QuerySet[CriterionNote]:
    """The notes kept with the prompt version, oldest first (the trail of how the
    criterion was understood), optionally of one criterion, with their authors; only
    those of workspace `workspace_id` and of the workspaces where `user` is a
    researcher, when given."""
    qs = CriterionNote.objects.filter(prompt=prompt)
    if user is not None:
        qs = workspaces.scope_for_role(qs, user, workspaces.RESEARCHER)
    if workspace_id is not None:
        qs = qs.filter(workspace_id=workspace_id)
    if skill_key:
        qs = qs.filter(skill_key=skill_key)
    return qs.select_related("created_by").order_by("created_at", "pk")
