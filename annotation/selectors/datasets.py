"""Reads of the annotation app. Querysets come with their joins applied, so list pages
issue a constant number of queries; `*_for_user` reads check permissions themselves."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

from django.db import connections
from django.db.models import Count, F, Prefetch, Q, QuerySet, TextField
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Cast
from django.http import Http404

from annotation.importers.taxonomy import FACET_PREFIX, Taxonomy
from annotation.models import (
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
from annotation.selectors.taxonomy import taxonomy_usage
from flaskapp import roles, workspaces
from flaskapp.errors import DomainError
from flaskapp.workspaces import RESEARCHER


def rubric_list(*, user=None, workspace=None) -> QuerySet[Rubric]:
    """Rubrics with their skill counts: the built-in ones (shared) and, with `user`,
    those of the workspaces where `user` is a researcher (only `workspace`'s when
    given)."""
    qs = Rubric.objects.all()
    if user is not None:
        qs = qs.filter(
            Q(workspace__isnull=True)
            | Q(
                pk__in=workspaces.scope_for_role(Rubric.objects.all(), user, RESEARCHER)
            )
        )
    if workspace is not None:
        qs = qs.filter(Q(workspace__isnull=True) | Q(workspace=workspace))
    return qs.annotate(skill_count=Count("skills")).order_by("name", "version")


def rubric_get(*, rubric_id: int) -> Rubric:
    rubric = (
        Rubric.objects.prefetch_related(
            Prefetch("skills", Skill.objects.order_by("position"))
        )
        .filter(pk=rubric_id)
        .first()
    )
    if rubric is None:
        raise Http404("No such rubric.")
    return rubric


def dataset_list_for_user(*, user, workspace=None) -> QuerySet[Dataset]:
    """Datasets with instruction/response counts, of the workspaces where `user` is a
    researcher (only `workspace`'s when given: the pages' current workspace).
    Researchers and admins only."""
    roles.require_researcher(user)
    qs = workspaces.scope_for_role(Dataset.objects, user, RESEARCHER)
    if workspace is not None:
        qs = qs.filter(workspace=workspace)
    return (
        qs.select_related("rubric")
        .annotate(
            instruction_count=Count("instructions", distinct=True),
            response_count=Count("instructions__responses", distinct=True),
        )
        .order_by("name")
    )


def dataset_get_for_user(
    *,
    user,
    dataset_id: int | None = None,
    name: str | None = None,
    workspace=None,
    needed: str = RESEARCHER,
) -> Dataset:
    """The dataset `dataset_id` (or named `name`, within `workspace` when given,
    else within the workspaces `user` may read) when `user` holds `needed` in its
    workspace: 404 for another workspace's dataset, 403 naming the role when the
    user's role there is too low."""
    workspaces.require_role_somewhere(user, needed)
    qs = Dataset.objects.select_related("rubric")
    if dataset_id is not None:
        dataset = qs.filter(pk=dataset_id).first()
    else:
        qs = workspaces.scope_queryset(qs.filter(name=name), user)
        if workspace is not None:
            qs = qs.filter(workspace=workspace)
        dataset = qs.order_by("workspace__name").first()
    if dataset is None:
        raise Http404("No such dataset.")
    workspaces.require_object_role(user, dataset, needed)
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
    # Per facet of the dataset's taxonomy: (``facet.NAME``, name, [(value, n)]),
    # its declared values first (in their order), then the others held, sorted.
    facets: list[tuple[str, str, list[tuple[str, int]]]] = dataclasses.field(
        default_factory=list
    )


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
        for value, n in (
            instructions.exclude(**{field: ""})
            .values_list(field)
            .annotate(n=Count("id"))
        ):
            domain_counts[value] = domain_counts.get(value, 0) + n
    labels = dict(Domain.choices)
    diff_labels = dict(Difficulty.choices)
    if dataset.taxonomy:  # the dataset's own names and levels (its import's)
        taxonomy = Taxonomy.stored(dataset.taxonomy)
        labels = taxonomy.domain_labels()
        if taxonomy.difficulty is not None:
            diff_labels = taxonomy.difficulty_labels()
    domains = [(k, labels.get(k, k), domain_counts[k]) for k in sorted(domain_counts)]
    difficulties = [
        (level, diff_labels.get(level, "Unknown") if level else "Unknown", n)
        for level, n in instructions.values_list("difficulty")
        .annotate(n=Count("id"))
        # "Unknown" last on every database (SQLite sorts NULL first).
        .order_by(F("difficulty").asc(nulls_last=True))
    ]
    tasks = list(
        instructions.values_list("source_task")
        .annotate(n=Count("id"))
        .order_by("source_task")
    )
    skills = list(
        InstructionSkill.objects.filter(instruction__dataset=dataset)
        .values_list("skill__key", "skill__name")
        .annotate(n=Count("id"))
        .order_by("skill__position")
    )
    taxonomy = dataset.declared_taxonomy
    held = taxonomy_usage(
        dataset=dataset, facet_names=[f.name for f in taxonomy.facets]
    ).facet_values if taxonomy.facets else {}  # fmt: skip
    facets = []
    for facet in taxonomy.facets:
        seen = held.get(facet.name, {})
        order = [v for v in facet.values or () if v in seen]
        order += sorted(v for v in seen if v not in order)
        facets.append((facet.dimension, facet.name, [(v, seen[v]) for v in order]))
    return DatasetStats(
        facets=facets,
        instructions=instructions.count(),
        responses=sum(n for _, n in models),
        models=models,
        domains=domains,
        difficulties=difficulties,
        tasks=tasks,
        skills=skills,
    )


def instruction_filters_parse(params, dataset: Dataset | None = None) -> dict:
    """The instruction browser's filters from a query string (`domain`, `difficulty`,
    `skill`, `task`, `hard`, `q`, and ``facet.NAME`` for each facet the dataset
    declares), as keyword arguments of `instruction_list`.

    Values that cannot match anything are dropped (the browser's menus only offer
    valid ones), so a stale link still shows a page. Domains and levels are FLASK's,
    or those `dataset` declares (its own taxonomy).
    """
    taxonomy = Taxonomy.stored(dataset.taxonomy if dataset is not None else None)
    filters: dict = {}
    domain = params.get("domain", "")
    if domain in taxonomy.domain_labels():
        filters["domain"] = domain
    difficulty = params.get("difficulty", "")
    levels = {str(v) for v in taxonomy.difficulty_labels()}
    if difficulty == "unknown" or difficulty in levels:
        filters["difficulty"] = difficulty
    for name in ("skill", "task"):
        value = params.get(name, "").strip()
        if value:
            filters[name] = value
    hard = params.get("hard", "")
    if hard in {"yes", "no"}:
        filters["hard"] = hard == "yes"
    facets = {
        facet.dimension: params.get(facet.dimension, "").strip()
        for facet in taxonomy.facets
        if params.get(facet.dimension, "").strip()
    }
    if facets and not taxonomy.filter_problems(facets):
        filters["facets"] = facets
    q = params.get("q", "").strip()
    if q:
        filters["q"] = q
    return filters


# The SQLite full-text index of instruction texts (migration 0008): an FTS5 table
# whose rowid is the instruction id, kept in step by triggers.
SQLITE_FTS_TABLE = "annotation_instruction_fts"
_FTS_TOKEN = re.compile(r'(-?)"([^"]*)"?|(\S+)')
_FTS_WORD = re.compile(r"\w+")


def sqlite_match_expression(q: str) -> str | None:
    """`q` (a search box's words) as an FTS5 MATCH expression, or None if it holds no
    word to look for.

    The same reading as PostgreSQL's `websearch_to_tsquery`: every word must occur
    (in any order, anywhere), a "quoted phrase" must occur as a phrase, `-word`
    excludes, `or` between two terms accepts either. Every word is quoted, so no
    user input is read as FTS5 syntax. Unlike PostgreSQL's English configuration,
    FTS5 has no stop-word list: "the" must occur too.
    """
    parts: list[str] = []  # FTS5 terms and operators, in order
    pending_or = False
    for minus, phrase, bare in _FTS_TOKEN.findall(q):
        if bare and bare.lower() == "or":
            pending_or = bool(parts)
            continue
        negate = bool(minus)
        text = phrase
        if bare:
            negate = bare.startswith("-")
            text = bare[1:] if negate else bare
        words = _FTS_WORD.findall(text)
        if not words:
            continue
        term = '"' + " ".join(words) + '"'
        if negate:
            if parts:  # FTS5's NOT needs a left side; a lone -word is dropped
                parts.append(f"NOT {term}")
        elif pending_or and parts:
            parts.append(f"OR {term}")
        else:
            parts.append(term)
        pending_or = False
    return " ".join(parts) if parts else None


def instruction_text_search(qs: QuerySet[Instruction], q: str) -> QuerySet[Instruction]:
    """`qs` narrowed to instructions whose text matches the words of `q`.

    One rule, two backends: PostgreSQL's English full-text search (the GIN index of
    migration 0002, `websearch_to_tsquery`) and SQLite's FTS5 index (migration 0008,
    `sqlite_match_expression`, Porter stemming as PostgreSQL's English stemmer does).
    A query with no word matches nothing.
    """
    vendor = connections[qs.db].vendor
    if vendor == "postgresql":
        return qs.extra(
            where=[
                "to_tsvector('english', annotation_instruction.text) @@ "
                "websearch_to_tsquery('english', %s)"
            ],
            params=[q],
        )
    if vendor == "sqlite":
        expression = sqlite_match_expression(q)
        if expression is None:
            return qs.none()
        return qs.extra(
            where=[
                f"annotation_instruction.id IN (SELECT rowid FROM {SQLITE_FTS_TABLE} "
                f"WHERE {SQLITE_FTS_TABLE} MATCH %s)"
            ],
            params=[expression],
        )
    return qs.filter(text__icontains=q)


def _instruction_filtered(
    *,
    dataset: Dataset,
    domain: str | None = None,
    difficulty: str | int | None = None,
    skill: str | None = None,
    task: str | None = None,
    q: str | None = None,
    hard: bool | None = None,
    facets: dict[str, str] | None = None,
) -> QuerySet[Instruction]:
    qs = Instruction.objects.filter(dataset=dataset)
    for n, (dimension, value) in enumerate(sorted((facets or {}).items())):
        value = (value or "").strip()
        if not value:
            continue
        alias = f"facet_{n}"
        # Cast: compared as plain text on every database (SQLite's JSON lookups
        # would read the value as a JSON document).
        key = KeyTextTransform(dimension.removeprefix(FACET_PREFIX), "metadata")
        qs = qs.alias(**{alias: Cast(key, output_field=TextField())})
        qs = qs.filter(
            **{f"{alias}__isnull": True} if value == "unknown" else {alias: value}
        )
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
        qs = instruction_text_search(qs, q)
    return qs


def instruction_list(*, dataset: Dataset, **filters) -> QuerySet[Instruction]:
    """Instructions of `dataset` filtered as in the browse page; skills prefetched.

    Filters (all optional): `domain`, `difficulty` ("unknown" for instructions
    without a level), `skill`, `task`, `hard`, `facets` ({``facet.NAME``: value or
    "unknown"}: the instruction's metadata value of a facet), and `q`, a word search on the
    instruction text (`instruction_text_search`). Dataset order: position, then id.
    """
    return (
        _instruction_filtered(dataset=dataset, **filters)
        .annotate(response_count=Count("responses", distinct=True))
        .prefetch_related(
            Prefetch("skill_links", InstructionSkill.objects.select_related("skill"))
        )
        .order_by("position", "id")
    )


def instruction_id_list(*, dataset: Dataset, **filters) -> list[int]:
    """The ids of `instruction_list(dataset, **filters)`, in dataset order (one query;
    for previous / next links)."""
    return list(
        _instruction_filtered(dataset=dataset, **filters)
        .order_by("position", "id")
        .values_list("id", flat=True)
        .distinct()
    )


def instruction_get_for_user(*, user, instruction_id: int) -> Instruction:
    """One instruction with its dataset, skills and every model's response (404 for
    another workspace's, 403 below researcher)."""
    workspaces.require_role_somewhere(user, workspaces.RESEARCHER)
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
    workspaces.require_object_role(user, instruction.dataset, RESEARCHER)
    return instruction


def import_job_list_for_user(*, user, workspace=None) -> QuerySet[ImportJob]:
    """Imports of the workspaces where `user` is a researcher (only `workspace`'s
    when given)."""
    roles.require_researcher(user)
    qs = workspaces.scope_for_role(ImportJob.objects, user, RESEARCHER)
    if workspace is not None:
        qs = qs.filter(workspace=workspace)
    return qs.select_related("dataset", "created_by").order_by("-created_at")


def import_job_rubric(*, job: ImportJob) -> Rubric | None:
    """The rubric an import's options name (`rubric_id`), if it is still one of the
    job's workspace or a built-in one; None otherwise."""
    rubric_id = (job.options or {}).get("rubric_id")
    if not isinstance(rubric_id, int):
        return None
    return (
        Rubric.objects.filter(pk=rubric_id)
        .filter(Q(workspace_id=job.workspace_id) | Q(workspace__isnull=True))
        .first()
    )


def import_job_get_for_user(*, user, job_id: int) -> ImportJob:
    """One import (404 for another workspace's, 403 below researcher)."""
    workspaces.require_role_somewhere(user, workspaces.RESEARCHER)
    job = (
        ImportJob.objects.select_related("dataset", "created_by")
        .filter(pk=job_id)
        .first()
    )
    if job is None:
        raise Http404("No such import.")
    workspaces.require_object_role(user, job, RESEARCHER)
    return job


# Campaigns and judge runs listed on a dataset's page (newest first); the rest are
# on the campaign and run lists.
DATASET_WORK_SHOWN = 20


def dataset_work(*, dataset: Dataset) -> dict:
    """The dataset's campaigns and judge runs for its page, newest first, at most
    DATASET_WORK_SHOWN of each, with their totals: {"campaigns", "campaign_count",
    "runs", "run_count"}. The runs are read through the reverse relation, so
    annotation imports nothing of judging. Two queries (a count only past the
    limit); read only; the caller has checked the dataset's permission."""

    def shown_and_count(qs) -> tuple[list, int]:
        rows = list(qs[: DATASET_WORK_SHOWN + 1])
        if len(rows) <= DATASET_WORK_SHOWN:
            return rows, len(rows)
        return rows[:DATASET_WORK_SHOWN], qs.count()

    campaigns, campaign_count = shown_and_count(
        dataset.campaigns.order_by("-created_at", "-pk")
    )
    runs, run_count = shown_and_count(
        dataset.judge_runs.select_related("config").order_by("-created_at", "-pk")
    )
    return {
        "campaigns": campaigns,
        "campaign_count": campaign_count,
        "runs": runs,
        "run_count": run_count,
    }


# Lines listed in a group of identical problems; the rest are counted.
PROBLEM_LINES_SHOWN = 10


def import_problem_groups(errors: list[dict]) -> list[dict]:
    """An import's problems with identical ones (same file, field and message)
    grouped, in the order of their first line: each group is the first problem's
    dict plus `count` and `lines` (every line number, None left out), so a file
    with one mistake on 12 lines reads "12 lines: 2, 3, ..." once. Pure."""
    groups: dict[tuple, dict] = {}
    for problem in errors:
        key = (problem.get("file"), problem.get("field"), problem.get("message"))
        group = groups.get(key)
        if group is None:
            group = groups[key] = {**problem, "count": 0, "lines": []}
        group["count"] += 1
        if problem.get("line") is not None:
            group["lines"].append(problem["line"])
    for group in groups.values():
        group["lines_shown"] = group["lines"][:PROBLEM_LINES_SHOWN]
        group["lines_more"] = len(group["lines"]) - len(group["lines_shown"])
    return list(groups.values())


# --- Permission-scoped reads for the REST API --------------------------------------------


def rubric_list_for_user(*, user, workspace=None) -> QuerySet[Rubric]:
    """The built-in rubrics and those of `user`'s workspaces (as researcher), with
    skill counts. Researchers and admins only."""
    roles.require_researcher(user)
    return rubric_list(user=user, workspace=workspace)


def rubric_get_for_user(*, user, rubric_id: int, needed: str = RESEARCHER) -> Rubric:
    """One rubric with its skills in rubric order (404 for another workspace's,
    403 below `needed`; a built-in one is readable by every researcher)."""
    workspaces.require_role_somewhere(user, needed)
    rubric = rubric_get(rubric_id=rubric_id)
    workspaces.require_object_role(user, rubric, needed)
    return rubric


def dataset_detail_for_user(*, user, dataset_id: int) -> tuple[Dataset, DatasetStats]:
    """A dataset and its overview counts (a fixed number of queries)."""
    dataset = dataset_get_for_user(user=user, dataset_id=dataset_id)
    return dataset, dataset_stats(dataset=dataset)


def instruction_list_for_user(
    *, user, dataset_id: int, **filters
) -> QuerySet[Instruction]:
    """`instruction_list` of a dataset the user may read (filters as there).

    `domain`, `difficulty` and each `facets` key (``facet.NAME``) must be values
    the dataset's taxonomy declares: otherwise `DomainError` with one problem per
    parameter, naming it and listing the allowed values (after the read check, so
    another workspace's dataset is still a 404)."""
    dataset = dataset_get_for_user(user=user, dataset_id=dataset_id)
    checked = {k: filters.get(k) or "" for k in ("domain", "difficulty")}
    problems = dataset.declared_taxonomy.filter_problems(
        {**checked, **(filters.get("facets") or {})}
    )
    if problems:
        raise DomainError("a filter value is not in this dataset's taxonomy", problems)
    return instruction_list(dataset=dataset, **filters)


def response_list_for_user(
    *, user, dataset_id: int, model: str | None = None
) -> QuerySet[Response]:
    """Responses of a dataset in instruction order, optionally of one model.

    The instruction's external id is annotated instead of joined in full, so the page
    does not carry every instruction's text along.
    """
    dataset = dataset_get_for_user(user=user, dataset_id=dataset_id)
    qs = Response.objects.filter(instruction__dataset=dataset)
    if model:
        qs = qs.filter(model_name=model)
    return qs.annotate(instruction_external_id=F("instruction__external_id")).order_by(
        "instruction__position", "instruction_id", "model_name"
    )


# --- Reads for the HTML pages ----------------------------------------------------------


def dataset_overview_list_for_user(*, user, workspace=None) -> QuerySet[Dataset]:
    """`dataset_list_for_user` plus `model_count`, the number of evaluated models.

    One query whatever the number of datasets. Researchers and admins only.
    """
    return dataset_list_for_user(user=user, workspace=workspace).annotate(
        model_count=Count("instructions__responses__model_name", distinct=True)
    )


def dataset_name_list(*, workspace=None) -> list[str]:
    """The dataset names of `workspace` (None: the default workspace), sorted (for
    the import form's suggestions)."""
    workspace = workspace or workspaces.default_workspace()
    return list(
        Dataset.objects.filter(workspace=workspace)
        .order_by("name")
        .values_list("name", flat=True)
    )
