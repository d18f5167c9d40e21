"""Reads of the annotation app. Querysets come with their joins applied, so list pages
issue a constant number of queries; `*_for_user` reads check permissions themselves."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import connection
from django.db.models import Count, Prefetch, Q, QuerySet
from django.http import Http404

from . import roles
from .models import (
    Dataset,
    Difficulty,
    Domain,
    ImportJob,
    Instruction,
    InstructionSkill,
    Response,
    Rubric,
    Skill,
)


def rubric_list() -> QuerySet[Rubric]:
    return Rubric.objects.annotate(skill_count=Count("skills")).order_by("name", "version")


def rubric_get(*, rubric_id: int) -> Rubric:
    rubric = (
        Rubric.objects.prefetch_related(Prefetch("skills", Skill.objects.order_by("position")))
        .filter(pk=rubric_id)
        .first()
    )
    if rubric is None:
        raise Http404("No such rubric.")
    return rubric


def dataset_list_for_user(*, user) -> QuerySet[Dataset]:
    """Datasets with instruction/response counts. Researchers and admins only."""
    roles.require_researcher(user)
    return (
        Dataset.objects.select_related("rubric")
        .annotate(
            instruction_count=Count("instructions", distinct=True),
            response_count=Count("instructions__responses", distinct=True),
        )
        .order_by("name")
    )


def dataset_get_for_user(*, user, dataset_id: int | None = None, name: str | None = None
                         ) -> Dataset:
    roles.require_researcher(user)
    qs = Dataset.objects.select_related("rubric")
    dataset = qs.filter(pk=dataset_id).first() if dataset_id is not None else qs.filter(
        name=name).first()
    if dataset is None:
        raise Http404("No such dataset.")
    return dataset


@dataclass
class DatasetStats:
    instructions: int
    responses: int
    models: list[tuple[str, int]]
    domains: list[tuple[str, str, int]]
    difficulties: list[tuple[int | None, str, int]]
    tasks: list[tuple[str, int]]
    skills: list[tuple[str, str, int]]


def dataset_stats(*, dataset: Dataset) -> DatasetStats:
    """Counts for a dataset's overview and filter menus (a fixed number of queries)."""
    instructions = Instruction.objects.filter(dataset=dataset)
    models = list(
        Response.objects.filter(instruction__dataset=dataset)
        .values_list("model_name")
        .annotate(n=Count("id"))
        .order_by("model_name")
    )
    domain_counts: dict[str, int] = {}
    for field in ("domain_1", "domain_2"):
        for value, n in instructions.exclude(**{field: ""}).values_list(field).annotate(
            n=Count("id")
        ):
            domain_counts[value] = domain_counts.get(value, 0) + n
    labels = dict(Domain.choices)
    domains = [(k, labels.get(k, k), domain_counts[k]) for k in sorted(domain_counts)]
    diff_labels = dict(Difficulty.choices)
    difficulties = [
        (level, diff_labels.get(level, "Unknown") if level else "Unknown", n)
        for level, n in instructions.values_list("difficulty").annotate(n=Count("id")).order_by(
            "difficulty"
        )
    ]
    tasks = list(
        instructions.values_list("source_task").annotate(n=Count("id")).order_by("source_task")
    )
    skills = list(
        InstructionSkill.objects.filter(instruction__dataset=dataset)
        .values_list("skill__key", "skill__name")
        .annotate(n=Count("id"))
        .order_by("skill__position")
    )
    return DatasetStats(
        instructions=instructions.count(),
        responses=sum(n for _, n in models),
        models=models,
        domains=domains,
        difficulties=difficulties,
        tasks=tasks,
        skills=skills,
    )


def instruction_list(
    *,
    dataset: Dataset,
    domain: str | None = None,
    difficulty: str | int | None = None,
    skill: str | None = None,
    task: str | None = None,
    q: str | None = None,
    hard: bool | None = None,
) -> QuerySet[Instruction]:
    """Instructions of `dataset` filtered as in the browse page; skills prefetched.

    `difficulty` may be "unknown" for instructions without a level. `q` is a full-text
    search on the instruction text (PostgreSQL text search; substring on SQLite).
    """
    qs = Instruction.objects.filter(dataset=dataset)
    if domain:
        qs = qs.filter(Q(domain_1=domain) | Q(domain_2=domain))
    if difficulty not in (None, ""):
        if str(difficulty) == "unknown":
            qs = qs.filter(difficulty__isnull=True)
        else:
            qs = qs.filter(difficulty=int(difficulty))
    if skill:
        qs = qs.filter(skill_links__skill__key=skill)
    if task:
        qs = qs.filter(source_task=task)
    if hard is not None:
        qs = qs.filter(is_hard=hard)
    if q:
        if connection.vendor == "postgresql":
            qs = qs.extra(
                where=["to_tsvector('english', annotation_instruction.text) @@ "
                       "websearch_to_tsquery('english', %s)"],
                params=[q],
            )
        else:
            qs = qs.filter(text__icontains=q)
    return (
        qs.annotate(response_count=Count("responses", distinct=True))
        .prefetch_related(
            Prefetch("skill_links", InstructionSkill.objects.select_related("skill"))
        )
        .order_by("position", "id")
    )


def instruction_get_for_user(*, user, instruction_id: int) -> Instruction:
    """One instruction with its dataset, skills and every model's response."""
    roles.require_researcher(user)
    instruction = (
        Instruction.objects.select_related("dataset", "dataset__rubric")
        .prefetch_related(
            Prefetch("skill_links", InstructionSkill.objects.select_related("skill")),
            Prefetch("responses", Response.objects.order_by("model_name")),
        )
        .filter(pk=instruction_id)
        .first()
    )
    if instruction is None:
        raise Http404("No such instruction.")
    return instruction


def import_job_list_for_user(*, user) -> QuerySet[ImportJob]:
    """Imports are an admin's job (DESIGN: admins upload datasets)."""
    roles.require_admin(user)
    return ImportJob.objects.select_related("dataset", "created_by").order_by("-created_at")


def import_job_get_for_user(*, user, job_id: int) -> ImportJob:
    roles.require_admin(user)
    job = ImportJob.objects.select_related("dataset", "created_by").filter(pk=job_id).first()
    if job is None:
        raise Http404("No such import.")
    return job
