"""Few-shot examples for a judge run, drawn from the development split's human labels.

The rules are `judging.fewshot` (pure); this module reads the candidates, checks what
the researcher asked for and returns what a run stores in `JudgeRun.few_shot`. The
run service (`judging.services.runs`) then leaves every example response out of the
run's calls; `analysis` leaves them out of the run's agreement.
"""

from __future__ import annotations

from django.db.models import Sum
from django.db.models.functions import Length

from annotation.models import Assignment, Dataset, HumanScore, Response, Skill
from annotation.selectors.exclusions import excluded_scores
from flaskapp.bounds import FEW_SHOT_EXAMPLES, SEED
from flaskapp.errors import DomainError, Problem
from judging.fewshot import (
    FIELD,
    RULES,
    Candidate,
    FewShotRequest,
    draw_stratified,
    pick_manual,
)
from judging.selectors.splits import DEV, TEST, eval_split_of

NOT_MADE = "the few-shot examples were not drawn"
# Per example: its headings and score lines, besides the texts themselves.
EXAMPLE_OVERHEAD_CHARS = 160


def _candidates(dataset: Dataset, **filters) -> list[Candidate]:
    """Human scores that may be shown: submitted, not of a gold item, not of an
    excluded rater, not N/A (an example shows a score). One query."""
    rows = (
        HumanScore.objects.filter(
            assignment__response__instruction__dataset=dataset,
            assignment__status=Assignment.Status.SUBMITTED,
            assignment__gold=False,
            score__isnull=False,
            **filters,
        )
        .filter(~excluded_scores())
        .values_list(
            "pk",
            "assignment__response_id",
            "assignment__response__instruction_id",
            "assignment__response__instruction__external_id",
            "assignment__response__model_name",
            "skill__key",
            "score",
            "rationale",
        )
        .order_by("pk")
    )
    return [Candidate(*row) for row in rows]


def _request_problems(request: FewShotRequest) -> list[Problem]:
    """The problems of the request on its own (rule, seed, k, the named responses),
    before anything is read from the database."""
    problems: list[Problem] = []
    if request.rule not in RULES:
        problems.append(
            Problem(
                f"unknown rule {request.rule!r}; use {' or '.join(RULES)}",
                field="few_shot_rule",
            )
        )
    if problem := SEED.problem(request.seed, "few_shot_seed"):
        problems.append(problem)
    if request.rule == "random":
        if problem := FEW_SHOT_EXAMPLES.problem(request.k, "few_shot"):
            problems.append(problem)
        if request.response_ids:
            problems.append(
                Problem("responses are named only with rule 'manual'", field=FIELD)
            )
    elif request.rule == "manual":
        if not request.response_ids:
            problems.append(
                Problem("rule 'manual' needs the ids of the responses", field=FIELD)
            )
        elif len(request.response_ids) > FEW_SHOT_EXAMPLES.high:
            problems.append(
                Problem(
                    f"at most {FEW_SHOT_EXAMPLES.high} responses, not "
                    f"{len(request.response_ids)}",
                    field=FIELD,
                )
            )
    return problems


def few_shot_examples_draw(*, dataset: Dataset, request: FewShotRequest) -> dict:
    """The few-shot examples of a new run over `dataset`, as `JudgeRun.few_shot`:
    {"rule", "k", "seed", "split_id", "examples": [{"response_id", "instruction_id",
    "instruction_external_id", "model", "skill", "score", "rationale"}, ...]}.

    Examples come from the dataset's development split only. "random" draws
    `request.k` (stratified by criterion and score level, seeded: `judging.fewshot`);
    "manual" takes the named responses, each with one human score per criterion
    (`request.criteria`, or all it has). Refused, with `DomainError` naming the field
    (`few_shot_examples` for the examples) and nothing written: no split yet, a
    response that is in the test split (naming it and its instruction), not in the
    dataset, or without a human score; a bad rule, k or seed. Reads only.
    """
    problems = _request_problems(request)
    skill_order = list(
        Skill.objects.filter(rubric_id=dataset.rubric_id)
        .order_by("position", "pk")
        .values_list("key", flat=True)
    )
    unknown = [c for c in request.criteria if c not in skill_order]
    if unknown:
        problems.append(
            Problem(
                f"not a criterion of the dataset's rubric: {', '.join(unknown)}",
                field="few_shot_criteria",
            )
        )
    split = eval_split_of(dataset=dataset)
    if split is None:
        problems.append(
            Problem(
                f"dataset {dataset.name!r} has no development / test split: make a "
                "development / test split first (judge workbench), so that examples "
                "can come from the development split only",
                field=FIELD,
            )
        )
    if problems:
        raise DomainError(NOT_MADE, problems)
    in_dev = {"assignment__response__instruction_id__in": _part(split, DEV)}
    if request.rule == "random":
        candidates = _candidates(dataset, **in_dev)
        if request.criteria:
            candidates = [c for c in candidates if c.skill in request.criteria]
        picked = draw_stratified(
            candidates, k=request.k, seed=request.seed, skill_order=skill_order
        )
        if not picked:
            raise DomainError(
                NOT_MADE,
                [
                    Problem(
                        "no human score in the development split to draw from",
                        field=FIELD,
                    )
                ],
            )
    else:
        ids = list(dict.fromkeys(int(r) for r in request.response_ids))
        _check_manual(dataset, split, ids)
        candidates = _candidates(dataset, assignment__response_id__in=ids)
        picked = pick_manual(
            candidates, response_ids=ids, criteria=list(request.criteria)
        )
        scored = {c.response_id for c in picked}
        if missing := [r for r in ids if r not in scored]:
            criteria = f" on {', '.join(request.criteria)}" if request.criteria else ""
            raise DomainError(
                NOT_MADE,
                [
                    Problem(
                        f"response {r} has no human score{criteria} (submitted, not "
                        "N/A, by a rater who is not excluded)",
                        field=FIELD,
                    )
                    for r in missing
                ],
            )
    return {
        "rule": request.rule,
        "k": len(picked),
        "seed": request.seed if request.rule == "random" else None,
        "split_id": split.pk,
        "criteria": list(request.criteria),
        "examples": [c.record() for c in picked],
    }


def _part(split, part: str):
    return split.members.filter(part=part).values("instruction_id")


def _check_manual(dataset: Dataset, split, ids: list[int]) -> None:
    """Every named response is in the dataset and in the development split."""
    rows = {
        r["pk"]: r
        for r in Response.objects.filter(
            pk__in=ids, instruction__dataset=dataset
        ).values("pk", "instruction_id", "instruction__external_id")
    }
    parts = dict(
        split.members.filter(
            instruction_id__in=[r["instruction_id"] for r in rows.values()]
        ).values_list("instruction_id", "part")
    )
    problems = []
    for rid in ids:
        row = rows.get(rid)
        if row is None:
            problems.append(
                Problem(
                    f"response {rid} is not in dataset {dataset.name!r}", field=FIELD
                )
            )
            continue
        where = f"response {rid} (instruction {row['instruction__external_id']})"
        part = parts.get(row["instruction_id"])
        if part == TEST:
            problems.append(
                Problem(
                    f"{where} is in the test split: examples may come from the "
                    "development split only (an example would leak the held-out "
                    "labels)",
                    field=FIELD,
                )
            )
        elif part != DEV:
            problems.append(
                Problem(f"{where} is in neither part of the split", field=FIELD)
            )
    if problems:
        raise DomainError(NOT_MADE, problems)


def few_shot_prompt_chars(*, few_shot: dict) -> int:
    """About how many characters the examples add to a prompt (for the estimate):
    their requests, answers and reasons. One query."""
    examples = few_shot.get("examples") or []
    if not examples:
        return 0
    sums = Response.objects.filter(
        pk__in={e["response_id"] for e in examples}
    ).aggregate(text=Sum(Length("text")), instruction=Sum(Length("instruction__text")))
    reasons = sum(len(e.get("rationale") or "") for e in examples)
    return (
        (sums["text"] or 0)
        + (sums["instruction"] or 0)
        + reasons
        + EXAMPLE_OVERHEAD_CHARS * len(examples)
    )


def few_shot_estimate_note(*, few_shot: dict, left_out: int) -> dict:
    """What a run's estimate says about its examples (shown with the estimate)."""
    return {
        "examples": len(few_shot.get("examples") or []),
        "left_out": left_out,
        "why": "responses shown as few-shot examples are never judged by this run",
    }
