"""Gold items: known-answer responses, their import, serving and scoring.

* Marking: `gold_import` (a file's rows, all or nothing) and `gold_set` (one
  response, the browser and the API) validate every expected score against its
  criterion's scale (`annotation.scales`) and write nothing on any problem, naming
  the line and field. A response holds at most one gold item (re-marking it replaces
  its expected scores).
* Campaigns: with `Campaign.gold_rate` N > 0, the dataset's gold responses are not
  real items of the campaign; they are its gold items (`CampaignItem.gold`, no slots)
  and `gold_pick` serves one in every N items a rater is served, at a seeded random
  position in each block of N (raters cannot count their way to it). A gold item is
  served and recorded exactly like a real one: the same page, API fields and
  recorded reason (that of a new response), so nothing a rater sees tells it apart.
* Feedback: `gold_feedback` gives the expected scores and explanation after a gold
  item is submitted, only while the campaign is in its training phase.
* Training gold apart from test gold, per rater: a gold item whose expected answers
  a rater was shown (that feedback, or a failed qualification's report) is marked
  `Assignment.answers_shown` before they are shown, and `gold_pick` never serves it
  to that rater again, in this campaign or any other campaign of the dataset. For
  every other rater it stays a test. (Tagging items "training" or "test" instead
  would waste the training items on raters who never saw their answers.)
* Scoring: `Scale.matches` is the rule of a right answer (within the item's
  tolerance; a label exactly); `selectors.gold` counts them per rater.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Iterable
from dataclasses import dataclass, field

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Exists, OuterRef

from annotation.importers.base import Problems, read_rows, refusal, until_full
from annotation.models import (
    Assignment,
    Campaign,
    CampaignItem,
    Dataset,
    GoldItem,
    GoldScore,
    HumanScore,
    Response,
    Skill,
)
from annotation.scales import Scale, scale_of
from annotation.selectors.gold import gold_answers_seen, gold_block_slot
from annotation.services.import_rows import copy_rows
from flaskapp import bounds, limits, workspaces
from flaskapp.errors import Problem
from flaskapp.limits import too_long
from flaskapp.params import ascii_int
from flaskapp.untrusted import text_problem

# Row fields of a gold file besides the criteria (CSV columns, JSON keys).
ROW_FIELDS = ("instruction", "model", "response_id", "tolerance", "explanation", "kind")
DEFAULT_TOLERANCE = 0


@dataclass
class GoldRow:
    line: int | None
    response: Response
    kind: str
    tolerance: int
    explanation: str
    scores: dict[int, int | None] = field(default_factory=dict)  # skill id -> value


def _skills(dataset: Dataset) -> dict[str, Skill]:
    return {s.key: s for s in Skill.objects.filter(rubric_id=dataset.rubric_id)}


def _as_id(value):
    """A response id as a file gives it: an int, or digits in text (CSV); anything
    else is returned as is (and refused by the caller)."""
    number = ascii_int(value) if isinstance(value, str) else None
    return number if number is not None and number >= 0 else value


# Rows are checked in batches of this many (two lookup queries each), and reading
# stops once the problems reach the cap (`importers.base.until_full`).
PLAN_BATCH = 1000


def _batches(rows: Iterable, size: int):
    rows = iter(rows)
    while batch := list(itertools.islice(rows, size)):
        yield batch


def _plan(dataset: Dataset, rows: Iterable[tuple[int | None, dict]], file: str,
          problems: Problems):  # fmt: skip
    """(GoldRow per row, problems): every check, no write; `rows` are read in batches
    (`PLAN_BATCH`) until `problems` is full (`until_full`: the rest is not read)."""
    skills = _skills(dataset)
    planned: list[GoldRow] = []
    seen: dict[int, int | None] = {}
    for batch in _batches(until_full(rows, problems), PLAN_BATCH):
        planned += _plan_batch(dataset, batch, file, problems, skills, seen)
    return planned, problems


def _plan_batch(dataset: Dataset, rows: list, file: str, problems: Problems,  # noqa: C901, PLR0913 - the whole file is validated before one transaction; each check names its line
                skills: dict, seen: dict) -> list[GoldRow]:  # fmt: skip
    """The GoldRow of each row of one batch; its problems appended to `problems`;
    `seen` (response id -> line) spans the batches."""
    scales = {k: scale_of(s) for k, s in skills.items()}

    def problem(message, line, name):
        problems.append(Problem(message, line=line, field=name, file=file or None))

    by_id: dict[int, Response] = {}
    by_key: dict[tuple[str, str], Response] = {}
    ids = {
        _as_id(r.get("response_id"))
        for _, r in rows
        if r.get("response_id") is not None
    }
    keys = {
        (str(r.get("instruction")), str(r.get("model")))
        for _, r in rows
        if r.get("response_id") is None
    }
    wanted = Response.objects.filter(instruction__dataset=dataset).select_related(
        "instruction"
    )
    if ids:
        int_ids = [i for i in ids if isinstance(i, int) and not isinstance(i, bool)]
        by_id = {r.pk: r for r in wanted.filter(pk__in=int_ids)}
    if keys:
        found = wanted.filter(
            instruction__external_id__in={e for e, _ in keys},
            model_name__in={m for _, m in keys},
        )
        by_key = {(r.instruction.external_id, r.model_name): r for r in found}
    planned: list[GoldRow] = []
    # One text for every unknown column of every row (it lists the criteria).
    not_a_field = (
        "is neither a criterion of the dataset's rubric nor a gold field "
        f"({', '.join(ROW_FIELDS)}); criteria: {', '.join(skills)}"
    )
    for line, row in rows:
        unknown = [
            k for k in row if k not in ROW_FIELDS and k not in skills and k != "scores"
        ]
        for k in unknown:
            problem(not_a_field, line, k)
        response = None
        rid = row.get("response_id")
        if rid is not None:
            rid = _as_id(rid)
            response = by_id.get(rid) if isinstance(rid, int) else None
            if response is None and not isinstance(rid, int):
                problem(f"{rid!r} is not a response id", line, "response_id")
            elif response is None:
                problem(f"response {rid} is not in dataset {dataset.name!r}", line,
                        "response_id")  # fmt: skip
        else:
            ext, model = row.get("instruction"), row.get("model")
            if ext in (None, "") or model in (None, ""):
                problem(
                    "name the response: `response_id`, or `instruction` (its id) "
                    "and `model`",
                    line,
                    "instruction" if ext in (None, "") else "model",
                )
            else:
                response = by_key.get((str(ext), str(model)))
                if response is None:
                    problem(
                        f"model {model!r} has no response to instruction {ext!r} in "
                        f"dataset {dataset.name!r}",
                        line,
                        "model",
                    )
        kind = str(row.get("kind") or GoldItem.Kind.GOLD).strip().lower()
        if kind not in GoldItem.Kind.values:
            problem(f"{kind!r} is not one of {', '.join(GoldItem.Kind.values)}",
                    line, "kind")  # fmt: skip
        tolerance = row.get("tolerance")
        if tolerance in (None, ""):
            tolerance = DEFAULT_TOLERANCE
        elif isinstance(tolerance, str) and ascii_int(tolerance) is not None:
            tolerance = ascii_int(tolerance)
        if not (
            isinstance(tolerance, int) and bounds.GOLD_TOLERANCE.contains(tolerance)
        ):
            problem(
                f"tolerance {tolerance!r} {bounds.GOLD_TOLERANCE.message()}",
                line,
                "tolerance",
            )
            tolerance = DEFAULT_TOLERANCE
        explanation = row.get("explanation") or ""
        if not isinstance(explanation, str):
            problem("must be text", line, "explanation")
            explanation = ""
        elif why := text_problem(explanation) or too_long(
            explanation, limits.GOLD_EXPLANATION
        ):
            problem(why, line, "explanation")
            explanation = ""
        given = row.get("scores")
        if given is None:
            given = {}
        if not isinstance(given, dict):
            problem("must be an object of criterion -> expected score", line, "scores")
            given = {}
        for k in given:
            if k not in skills:
                problem(
                    f"{k!r} is not a criterion of the dataset's rubric "
                    f"({', '.join(skills)})",
                    line,
                    f"scores.{k}",
                )
        values = {
            **{k: v for k, v in row.items() if k in skills and v not in (None, "")},
            **{k: v for k, v in given.items() if k in skills},
        }
        where = "scores.{}" if row.get("scores") else "{}"
        expected: dict[int, int | None] = {}
        for key, raw in values.items():
            ok, value, why = scales[key].parse(raw)
            if not ok:
                problem(why, line, where.format(key))
                continue
            expected[skills[key].pk] = value
        if not values and not unknown:
            problem("gives no expected score (one criterion at least)", line, "scores")
        if response is not None:
            if response.pk in seen:
                problem(
                    f"response {response.pk} is marked twice (also line "
                    f"{seen[response.pk]})",
                    line,
                    "response_id" if rid is not None else "model",
                )
            seen[response.pk] = line
            planned.append(GoldRow(line, response, kind, tolerance, explanation,
                                   expected))  # fmt: skip
    return planned


def gold_import(
    *,
    dataset: Dataset,
    rows: Iterable[tuple[int | None, dict]],
    user: User,
    file: str = "",
    problems: Problems | None = None,
) -> dict:
    """Mark responses of `dataset` as gold from `rows` ((line, row) pairs, as
    `importers.base.read_rows` yields them). A row names a response (`response_id`,
    or `instruction` external id and `model`) and gives expected scores as criterion
    columns or a `scores` object, with optional `tolerance` (default 0: exact),
    `explanation` and `kind` (gold / attention). All or nothing: any problem raises
    `DomainError` listing each (line and field) and nothing is written. A response
    already gold has its item replaced. Returns {"created", "updated", "items"}.
    Researchers and admins only. `problems`: those of reading `rows` so far (a lazy
    reader's, `gold_import_file`); past `MAX_PROBLEMS` the rest is not read (the
    refusal says at which line it stopped)."""
    workspaces.require_object_role(user, dataset, workspaces.RESEARCHER)
    if problems is None:
        problems = Problems()
    planned, problems = _plan(dataset, rows, file, problems)
    if not planned and not problems:
        problems.append(Problem("has no rows", file=file or None))
    if problems:
        raise refusal("no gold item was saved", problems)
    created = updated = 0
    with transaction.atomic():
        existing = {
            g.response_id: g
            for g in GoldItem.objects.select_for_update().filter(
                response_id__in=[p.response.pk for p in planned]
            )
        }
        for p in planned:
            item = existing.get(p.response.pk)
            if item is None:
                item = GoldItem.objects.create(
                    dataset=dataset,
                    response=p.response,
                    kind=p.kind,
                    tolerance=p.tolerance,
                    explanation=p.explanation,
                    created_by=user,
                )
                created += 1
            else:
                item.kind, item.tolerance = p.kind, p.tolerance
                item.explanation = p.explanation
                item.save(update_fields=["kind", "tolerance", "explanation",
                                         "updated_at"])  # fmt: skip
                item.scores.all().delete()
                updated += 1
            GoldScore.objects.bulk_create(
                GoldScore(gold=item, skill_id=sid, score=v)
                for sid, v in p.scores.items()
            )
    return {"created": created, "updated": updated, "items": created + updated}


def gold_set(
    *,
    dataset: Dataset,
    response_id,
    scores: dict,
    user: User,
    tolerance=None,
    explanation: str = "",
    kind: str = GoldItem.Kind.GOLD,
) -> GoldItem:
    """Mark one response as gold (`gold_import`'s rules, without line numbers)."""
    row = {"response_id": response_id, "scores": scores, "kind": kind,
           "tolerance": tolerance, "explanation": explanation}  # fmt: skip
    gold_import(dataset=dataset, rows=[(None, row)], user=user)
    return GoldItem.objects.get(response_id=response_id)


def gold_delete(*, gold: GoldItem, user: User) -> None:
    """Unmark a gold item. Campaigns that already serve it keep serving it (their
    gold set is fixed at creation); scores given to it stay."""
    workspaces.require_object_role(user, gold.dataset, workspaces.RESEARCHER)
    gold.delete()


# --- Campaigns ------------------------------------------------------------------------


def gold_rate_problems(*, dataset: Dataset, gold_rate) -> list[Problem]:
    """A gold rate within bounds, and gold items to serve when it is not 0."""
    problem = bounds.GOLD_RATE.problem(gold_rate, "gold_rate")
    if problem:
        return [problem]
    if gold_rate and not GoldItem.objects.filter(dataset=dataset).exists():
        return [
            Problem(
                f"dataset {dataset.name!r} has no gold items; mark some first "
                "(or set 0)",
                field="gold_rate",
            )
        ]
    return []


def gold_items_create(campaign: Campaign, start: int) -> int:
    """The campaign's gold items (no slots), one per gold response of its dataset,
    at positions from `start`. Returns how many."""
    ids = list(
        GoldItem.objects.filter(dataset_id=campaign.dataset_id)
        .order_by("response_id")
        .values_list("response_id", flat=True)
    )
    copy_rows(
        CampaignItem,
        ["campaign_id", "response_id", "target", "submitted", "reserved",
         "open_slots", "position", "gold"],
        [(campaign.pk, rid, 0, 0, 0, 0, start + k, True) for k, rid in enumerate(ids)],
    )  # fmt: skip
    return len(ids)


def gold_due(*, campaign: Campaign, rater: User) -> bool:
    """Whether the rater's next served item is a gold one: the rater's n-th item
    (counting every assignment they hold, expired ones aside) is gold when n falls on
    the seeded position of its block of `gold_rate` items."""
    rate = campaign.gold_rate
    if not rate:
        return False
    n = (
        Assignment.objects.filter(campaign=campaign, rater=rater)
        .exclude(status=Assignment.Status.EXPIRED)
        .count()
    )
    return n % rate == gold_block_slot(campaign.pk, rater.pk, n // rate, rate)


def gold_pick(*, campaign: Campaign, rater: User, per_rater: bool = True):
    """A gold item of the campaign this rater was never served (or only had expire),
    in an order seeded per rater (`per_rater=False`: per campaign, the same order for
    every rater, as qualification sets are), locked for the caller; None when none is
    left. Annotated with `mine_expired`, as `serving.reserve_item` expects.

    Never one whose expected answers the rater was shown, here or in another campaign
    of the dataset (`selectors.gold.gold_answers_seen`): training gold is kept apart
    from test gold per rater, so a known answer never counts as a test."""
    mine = Assignment.objects.filter(
        campaign=campaign, rater=rater, response_id=OuterRef("response_id")
    )
    items = list(
        CampaignItem.objects.filter(campaign=campaign, gold=True)
        .filter(~Exists(mine.exclude(status=Assignment.Status.EXPIRED)))
        .filter(~gold_answers_seen(rater_id=rater.pk))
        .annotate(mine_expired=Exists(mine.filter(status=Assignment.Status.EXPIRED)))
        .order_by("position")
    )
    if not items:
        return None
    seed = (
        f"gold-order:{campaign.pk}:{rater.pk}" if per_rater else f"qual:{campaign.pk}"
    )
    items.sort(
        key=lambda i: hashlib.sha256(f"{seed}:{i.response_id}".encode()).digest()
    )
    return items[0]


# --- Feedback and checks --------------------------------------------------------------


def expected_scores(gold: GoldItem) -> list[dict]:
    """Per criterion: key, name, the expected value as the rater would write it."""
    out = []
    for gs in gold.scores.select_related("skill"):
        scale: Scale = scale_of(gs.skill)
        out.append({
            "skill": gs.skill.key,
            "name": gs.skill.name,
            "expected": scale.label_of(gs.score) if gs.score is not None else "N/A",
            "tolerance": 0 if scale.is_categorical else gold.tolerance,
        })  # fmt: skip
    return out


def gold_answers_shown_mark(*, assignment_ids) -> int:
    """Record that the raters of these gold assignments are (about to be) shown the
    expected answers: from then on `gold_pick` never serves them those items again,
    in any campaign. Called inside the transaction that decides to show them (a
    training-phase submit, a failed qualification's grading). Idempotent; returns
    how many were newly marked."""
    return (
        Assignment.objects.filter(pk__in=list(assignment_ids), gold=True)
        .exclude(answers_shown=True)
        .update(answers_shown=True)
    )


def gold_after_submit(assignment: Assignment) -> None:
    """After a submit: a gold item submitted while its campaign is in its training
    phase gets its expected answers shown (`gold_feedback`), so it is marked
    `answers_shown` here, before any page or answer shows them. No query for a real
    item. Idempotent."""
    if not assignment.gold:
        return
    marked = (
        Assignment.objects.filter(
            pk=assignment.pk,
            status=Assignment.Status.SUBMITTED,
            campaign__training_phase=True,
        )
        .exclude(answers_shown=True)
        .update(answers_shown=True)
    )
    if marked:
        assignment.answers_shown = True


def gold_feedback(assignment: Assignment) -> dict | None:
    """After a submitted gold item in a campaign's training phase: its expected
    scores, the explanation and which of the rater's scores were right. None
    otherwise (outside the training phase a rater learns nothing of gold). Shown
    only for an assignment marked `answers_shown` (the submit marks it while the
    campaign is in its training phase), so every answer shown is on record."""
    if not assignment.gold or assignment.status != Assignment.Status.SUBMITTED:
        return None  # no query for a real item: the submit loop stays as fast
    if not Assignment.objects.filter(pk=assignment.pk, answers_shown=True).exists():
        return None
    gold = GoldItem.objects.filter(response_id=assignment.response_id).first()
    if gold is None:
        return None
    given = {
        s.skill_id: s.score for s in HumanScore.objects.filter(assignment=assignment)
    }
    rows = []
    for gs in gold.scores.select_related("skill"):
        scale = scale_of(gs.skill)
        mine = given.get(gs.skill_id, "missing")
        if mine == "missing":  # a criterion this rater was not asked: not shown
            continue
        rows.append({
            "skill": gs.skill.key,
            "name": gs.skill.name,
            "expected": scale.label_of(gs.score) if gs.score is not None else "N/A",
            "yours": "N/A" if mine is None else scale.label_of(mine),
            "right": scale.matches(gs.score, mine, gold.tolerance),
        })  # fmt: skip
    return {"explanation": gold.explanation, "scores": rows}


def gold_import_file(
    *, dataset: Dataset, data, file: str, user: User, fmt: str | None = None
) -> dict:
    """`gold_import` of a CSV, JSON Lines or Parquet file (bytes or a path; Parquet and
    gzip are recognised by their content, CSV by `fmt` or a ``.csv`` name). A file
    that cannot be read is refused like a bad row: every problem, nothing written."""
    workspaces.require_object_role(user, dataset, workspaces.RESEARCHER)
    if fmt is None:
        fmt = "csv" if file.lower().removesuffix(".gz").endswith(".csv") else "jsonl"
    problems = Problems()
    # Read as the rows are checked: a file with many problems is not read past the
    # cap (`gold_import`); a reading problem refuses the import like a bad row.
    rows = read_rows(data, file=file, fmt=fmt, problems=problems)
    return gold_import(
        dataset=dataset, rows=rows, user=user, file=file, problems=problems
    )
