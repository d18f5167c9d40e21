"""The pointwise item kind: a response, scored on each of its criteria.

A submitted answer is one `HumanScore` per criterion the assignment lists
(`selectors.rating.assignment_skills`), each value read by the criterion's
`Scale.parse` (the one rule for what a score may be), with an optional rationale,
and the campaign's critique when it asks for one (`CritiquePolicy`). Amending
updates the rows in place and keeps each change in the score's history.
"""

from __future__ import annotations

from datetime import datetime

from django.contrib.auth.models import User
from django.db import connection
from django.db.models import QuerySet

from annotation.items import ItemKind
from annotation.models import (
    Assignment,
    Campaign,
    HumanScore,
    Instruction,
    Response,
    Skill,
)
from annotation.models.campaigns import SCORE_HISTORY
from annotation.scales import scale_of
from annotation.selectors.rating import assignment_skills, rater_assignments
from annotation.sqlrows import from_row, table
from flaskapp import limits
from flaskapp.errors import ConflictError, DomainError, Problem
from flaskapp.untrusted import text_problem

MAX_RATIONALE = limits.RATIONALE  # HumanScore.rationale
MAX_CRITIQUE = limits.RATIONALE  # Assignment.critique

# A checked rating: (skill, stored value, rationale) per listed skill, and the critique.
Rating = tuple[list[tuple[Skill, int | None, str]], str]


def scores_clean(  # noqa: C901 - one rule per way a submitted score can be wrong, each with its own message
    *,
    skills: list[Skill],
    scores: dict,
    rationales: dict | None,
    critique_mode: str = Campaign.Critique.OFF,
) -> list[tuple[Skill, int | None, str]]:
    """(skill, stored value, rationale) for every listed skill, or `DomainError`.

    Each value is read by the criterion's `Scale.parse` (the one rule for what a
    score may be): an ordinal criterion takes a whole number of its scale, a
    categorical one a label key (or display name, never a code); N/A (null or "na")
    only where the criterion allows it. Problems name `scores.<key>` and say what the
    criterion accepts. In a critique-only campaign (`critique_mode` "only") no score is
    asked for and any given is refused.
    """
    problems: list[Problem] = []
    if scores is None and critique_mode == Campaign.Critique.ONLY:
        scores = {}
    if not isinstance(scores, dict):
        raise DomainError(
            "scores must be an object of skill -> score",
            [Problem("must be an object", field="scores")],
        )
    rationales = rationales or {}
    if not isinstance(rationales, dict):
        raise DomainError(
            "rationales must be an object of skill -> text",
            [Problem("must be an object", field="rationales")],
        )
    if critique_mode == Campaign.Critique.ONLY:
        skills = []
        for key in scores:
            problems.append(
                Problem(
                    "this campaign asks for a critique only, not for scores",
                    field=f"scores.{key}",
                )
            )
    wanted = {s.key: s for s in skills}
    scales = {key: scale_of(skill, anchors=False) for key, skill in wanted.items()}
    for key in rationales:
        if key not in wanted:
            problems.append(
                Problem(
                    f"{key!r} is not a skill of this response",
                    field=f"rationales.{key}",
                )
            )
    if critique_mode != Campaign.Critique.ONLY:
        for key in scores:
            if key not in wanted:
                problems.append(
                    Problem(
                        f"{key!r} is not a skill of this response",
                        field=f"scores.{key}",
                    )
                )
    out = []
    for key, skill in wanted.items():
        scale = scales[key]
        if key not in scores:
            problems.append(
                Problem(f"is missing: {scale.describe()}", field=f"scores.{key}")
            )
            continue
        ok, score, problem = scale.parse(scores[key])
        if not ok:
            problems.append(Problem(problem, field=f"scores.{key}"))
            continue
        rationale = rationales.get(key) or ""
        if not isinstance(rationale, str):
            problems.append(Problem("must be text", field=f"rationales.{key}"))
            continue
        if len(rationale) > MAX_RATIONALE:
            problems.append(
                Problem(
                    f"is longer than {MAX_RATIONALE} characters",
                    field=f"rationales.{key}",
                )
            )
            continue
        if problem := text_problem(rationale):
            problems.append(Problem(problem, field=f"rationales.{key}"))
            continue
        out.append((skill, score, rationale.strip()))
    if problems:
        raise DomainError("the scores were not saved", problems)
    return out


def critique_clean(
    critique: object, *, mode: str, min_length: int
) -> tuple[str, list[Problem]]:
    """The stripped critique and the problems with it (naming `critique`), for a
    campaign whose critique setting is `mode` (off / with_scores / only).

    With a critique asked for, it is required and has at least `min_length`
    characters (at least one when `min_length` is 0) and at most `MAX_CRITIQUE`;
    with `mode` off a critique is refused (the campaign does not ask for one).
    """
    if critique is None:
        critique = ""
    if not isinstance(critique, str):
        return "", [Problem("must be text", field="critique")]
    text = critique.strip()
    if mode == Campaign.Critique.OFF:
        if text:
            return "", [
                Problem("this campaign does not ask for a critique", field="critique")
            ]
        return "", []
    need = max(1, int(min_length or 0))
    if not text:
        return "", [
            Problem(
                f"is empty: write a critique of at least {need} "
                f"character{'s' if need != 1 else ''}",
                field="critique",
            )
        ]
    if len(text) < need:
        return "", [
            Problem(
                f"is {len(text)} character{'s' if len(text) != 1 else ''} long; "
                f"write at least {need}",
                field="critique",
            )
        ]
    if len(text) > MAX_CRITIQUE:
        return "", [
            Problem(f"is longer than {MAX_CRITIQUE} characters", field="critique")
        ]
    if problem := text_problem(text):
        return "", [Problem(problem, field="critique")]
    return text, []


def rating_clean(
    *,
    mode: str,
    min_length: int,
    skills: list[Skill],
    scores: dict,
    rationales: dict | None,
    critique: object,
) -> tuple[list[tuple[Skill, int | None, str]], str]:
    """The validated scores and critique of one rating (for a campaign whose critique
    setting is `mode`, with `min_length`), or one `DomainError` with every problem of
    both."""
    text, problems = critique_clean(critique, mode=mode, min_length=min_length)
    try:
        valid = scores_clean(
            skills=skills, scores=scores, rationales=rationales, critique_mode=mode
        )
    except DomainError as exc:
        raise DomainError(exc.message, exc.problems + problems) from None
    if problems:
        raise DomainError("the rating was not saved", problems)
    return valid, text


def hand_over_scores(assignment: Assignment, saved: list[HumanScore]) -> None:
    """Attach the saved rows (in `HumanScore.Meta.ordering`) as if prefetched, so
    that rendering the rating needs no further query."""
    scores_cache = assignment.scores.all()
    scores_cache._result_cache = saved
    scores_cache._prefetch_done = True
    assignment._prefetched_objects_cache = {"scores": scores_cache}


def _record_submitted(row: HumanScore, rater: User) -> None:
    """Before a score's first change, copy the submitted value into its history (the
    bulk insert of a submit writes none), so the history reads "from X to Y"."""
    if HumanScore.history.filter(id=row.pk).exists():
        return
    row._history_user, row._change_reason = rater, "submitted"
    row._history_date = row.updated_at
    SCORE_HISTORY.create_historical_record(row, "+")
    del row._history_date


class PointwiseItem(ItemKind):
    """A response to score (`Campaign.Kind.POINTWISE`); gold items and
    qualifications are served among them, and the raw-SQL fast path serves and
    stores them (`services.serving_sql`)."""

    campaign_kind = Campaign.Kind.POINTWISE
    key = "response_id"
    noun = "response"
    verb = "rated"
    serves_gold = True
    sql_fast_path = True
    sql_submit = True
    sql_where = "pair_id IS NULL"

    def sql_form(self, *, skills: dict[str, str], skill_mode: str) -> tuple[str, str]:
        """The response, its instruction and the skills to score (by the campaign's
        skill mode)."""
        columns = (
            "r.instruction_id, r.model_name, r.text, n.text, n.reference_answer, "
            f"n.checklist, n.instance_rubric, {skills[skill_mode]}"
        )
        joins = (
            f"JOIN {table(Response)} r ON r.id = got.response_id "
            f"JOIN {table(Instruction)} n ON n.id = r.instruction_id"
        )
        return columns, joins

    def sql_form_load(self, assignment: Assignment, values, skills_of) -> list[Skill]:
        instruction_id, model_name, response_text = values[:3]
        text, reference, checklist, own_rubric, skills_rows = values[3:8]
        instruction = from_row(
            Instruction,
            ("id", "text", "reference_answer", "checklist", "instance_rubric"),
            (instruction_id, text, reference, checklist, own_rubric),
        )
        response = from_row(
            Response,
            ("id", "instruction_id", "model_name", "text"),
            (assignment.response_id, instruction_id, model_name, response_text),
        )
        response.instruction = instruction
        assignment.response = response
        return skills_of(skills_rows)

    def reserved(self, assignment: Assignment) -> None:
        """Hand the rows over, so that rendering the form needs no further query."""
        assignment.response = Response.objects.select_related("instruction").get(
            pk=assignment.response_id
        )

    def clean(
        self,
        *,
        assignment: Assignment,
        answer: dict,
        skills: list[Skill] | None = None,
    ) -> Rating:
        """`answer`: ``scores``, ``rationales``, ``critique`` (`rating_clean`);
        `skills` when already read (the SQL path), else `assignment_skills`."""
        campaign = assignment.campaign
        scores = answer.get("scores")
        return rating_clean(
            mode=campaign.critique,
            min_length=campaign.critique_min_length,
            skills=assignment_skills(assignment=assignment)
            if skills is None
            else skills,
            scores=scores if scores is not None else {},
            rationales=answer.get("rationales"),
            critique=answer.get("critique"),
        )

    def holds(self, assignment: Assignment) -> bool:
        return assignment.pair_id is None

    def clean_read(self, *, skills: list[Skill], answer: dict) -> Rating:
        scores = answer.get("scores")
        return rating_clean(
            mode=Campaign.Critique.OFF,
            min_length=0,
            skills=skills,
            scores=scores if scores is not None else {},
            rationales=answer.get("rationales"),
            critique=answer.get("critique"),
        )

    def sql_answer_insert(self) -> str:
        h = connection.ops.quote_name(HumanScore._meta.db_table)
        return f"""INSERT INTO {h}
    (assignment_id, skill_id, score, rationale, created_at, updated_at)
SELECT %(assignment)s, u.skill_id, u.score, u.rationale, %(stamp)s, %(stamp)s
FROM unnest(%(skills)s::bigint[], %(scores)s::smallint[], %(rationales)s::text[])
    WITH ORDINALITY AS u(skill_id, score, rationale, ord)
ORDER BY u.ord
RETURNING id, skill_id"""

    def sql_answer_params(self, *, assignment: Assignment, valid: Rating) -> dict:
        scores, _ = valid
        return {
            "skills": [skill.pk for skill, _, _ in scores],
            "scores": [score for _, score, _ in scores],
            "rationales": [rationale for _, _, rationale in scores],
        }

    def sql_answer_saved(
        self, *, assignment: Assignment, valid: Rating, rows: list, stamp: datetime
    ) -> None:
        """The saved `HumanScore` rows, handed over for rendering."""
        ids = {skill_id: pk for pk, skill_id in rows}
        saved = []
        for skill, score, rationale in valid[0]:
            row = HumanScore(
                id=ids[skill.pk],
                assignment=assignment,
                skill=skill,
                score=score,
                rationale=rationale,
                created_at=stamp,
                updated_at=stamp,
            )
            row._state.adding = False
            saved.append(row)
        saved.sort(key=lambda row: (row.skill.position, row.skill_id))
        hand_over_scores(assignment, saved)

    def store(
        self, *, assignment: Assignment, valid: Rating, rater: User, now: datetime
    ) -> None:
        """One `HumanScore` per skill (handed over for rendering) and the
        critique."""
        scores, text = valid
        saved = HumanScore.objects.bulk_create(
            HumanScore(
                assignment=assignment, skill=skill, score=score, rationale=rationale
            )
            for skill, score, rationale in scores
        )
        saved.sort(key=lambda row: (row.skill.position, row.skill_id))
        hand_over_scores(assignment, saved)
        if text:
            assignment.critique = text
            assignment.save(update_fields=["critique"])

    def stored_equal(self, *, assignment: Assignment, valid: Rating) -> bool:
        scores, text = valid
        given = {skill.pk: (score, rationale) for skill, score, rationale in scores}
        stored = {
            row.skill_id: (row.score, row.rationale)
            for row in HumanScore.objects.filter(assignment=assignment)
        }
        return given == stored and text == assignment.critique

    def conflict(self, assignment: Assignment) -> ConflictError:
        return ConflictError(
            "this assignment is already submitted with another rating; nothing changed",
            [
                Problem(
                    "differ from the submitted ones; amend them with PUT "
                    f"/api/rate/assignments/{assignment.pk}/scores/",
                    field="scores",
                )
            ],
        )

    def amend_refusal(self, *, assignment: Assignment) -> str:
        """Only a submitted rating, until its campaign is closed; never a gold
        item of a qualification, or of a campaign in its training phase: the rater
        may have seen its expected scores (the training feedback, a failed
        qualification's report), and a changed answer would rewrite their accuracy.
        Outside those, a gold item is amended like any other (refusing would
        reveal it)."""
        if assignment.status != Assignment.Status.SUBMITTED:
            return "only submitted ratings can be amended"
        if assignment.campaign.status == Campaign.Status.CLOSED:
            return "this campaign is closed; its ratings are final"
        if assignment.gold and (
            assignment.qualification_id
            or assignment.campaign.training_phase
            or assignment.answers_shown
        ):
            return (
                "this was a known-answer item whose expected scores can be shown to "
                "you; its answer is final"
            )
        return ""

    def amend(
        self, *, assignment: Assignment, valid: Rating, rater: User, now: datetime
    ) -> None:
        """Rows updated in place (`updated_at` records when); each change is a row
        of the score's history (who, when, from what value)."""
        scores, text = valid
        existing = {s.skill_id: s for s in assignment.scores.all()}
        for skill, score, rationale in scores:
            row = existing.get(skill.pk)
            if row is None:
                row = HumanScore(
                    assignment=assignment, skill=skill, score=score, rationale=rationale
                )
                row._history_user, row._change_reason = rater, "amended (added)"
                row.save()
            elif row.score != score or row.rationale != rationale:
                _record_submitted(row, rater)
                what = "amended" if row.score != score else "rationale amended"
                row.score, row.rationale = score, rationale
                row._history_user, row._change_reason = rater, what
                row.save(update_fields=["score", "rationale", "updated_at"])
        assignment.updated_at = now
        fields = ["updated_at"]
        if text != assignment.critique:
            assignment.critique = text
            fields.append("critique")
        assignment.save(update_fields=fields)

    def history(self, *, user: User, campaign: Campaign) -> QuerySet[Assignment]:
        return rater_assignments(user=user, campaign=campaign)


POINTWISE = PointwiseItem()
