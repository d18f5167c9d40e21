"""Pointwise rating: serve the next response, submit, skip and amend scores.

The serving rules (pick, reserve, expiry, late submit, skip) are those of every item
kind, in `services.serving`; this module is what is particular to pointwise rating:
scores per skill, validated against the rubric.

On PostgreSQL the common cases of serve and submit run as a few hand-written statements
(`services.serving_sql`, prepared once per connection) with the same effects; the rare
cases (nothing free, quota, expired locks, late or repeated submits) and SQLite use the
ORM code below. The tests run on both paths and compare them.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import F
from django.http import Http404
from django.utils import timezone

from annotation import roles
from annotation.errors import ConflictError, DomainError, Problem
from annotation.importers.base import is_na
from annotation.models import (
    Assignment,
    Campaign,
    HumanScore,
    Skill,
)
from annotation.selectors.rating import assignment_skills
from annotation.services import serving_sql
from annotation.services.rubrics import rubric_freeze
from annotation.services.serving import (
    POINTWISE,
    NextResult,
    assignments_expire,
    lock_rater_sql,
    serve_next,
    skip_locked,
    skip_reason_clean,
    submit_check,
    submit_close,
    submit_take_slot,
)
from annotation.sqlrows import prepared_cursor
from flaskapp.untrusted import text_problem

MAX_RATIONALE = 5000


def assignment_next(
    *, campaign: Campaign, rater: User, now: datetime | None = None
) -> NextResult:
    """Serve `rater` the next response of `campaign` (or resume the one they hold).

    In one transaction, under a lock on the rater's user row (so one rater's parallel
    calls serialise): the rater's own live assignment first (its lock is extended);
    else the open item with the most submitted ratings (breadth-first toward the
    overlap) and the lowest position that this rater has not rated or skipped and no
    one else is locking is reserved with ``FOR UPDATE SKIP LOCKED``. Expired locks are
    returned to the pool here only when nothing is free (the periodic task does it
    otherwise). Each assignment records why it was served.

    Precondition: the caller checked that `rater` belongs to the campaign
    (`selectors.campaign_get_for_rater`). Returns a `NextResult` whose message explains
    an empty result (paused or closed campaign, quota reached, nothing left, or only
    items locked by others).
    """
    if campaign.status == Campaign.Status.ACTIVE and (
        campaign.kind != Campaign.Kind.POINTWISE
    ):
        # Pairwise campaigns serve pairs through annotation.services.pairwise.
        return NextResult(
            None,
            message="This is a pairwise campaign: compare pairs on its pairwise page.",
        )
    return serve_next(
        campaign=campaign,
        rater=rater,
        now=now or timezone.now(),
        kind=POINTWISE,
        fast=_serve_sql if serving_sql.enabled(campaign) else None,
    )


def _serve_sql(
    *, campaign: Campaign, rater: User, now: datetime, ttl: timedelta
) -> NextResult | None:
    """The same lock and the same choice in two statements (`services.serving_sql`);
    None when nothing is live and nothing free: the ORM rules then expire stale locks
    and say why nothing is served."""
    with prepared_cursor() as cursor:
        cursor.execute(lock_rater_sql(), [rater.pk])
    served = serving_sql.serve(campaign=campaign, rater=rater, now=now, ttl=ttl)
    if served is None:
        return None
    assignment, skills, counts = served
    return NextResult(assignment, skills=skills, counts=counts)


def _validate_scores(
    *, skills: list[Skill], scores: dict, rationales: dict | None
) -> list[tuple[Skill, int | None, str]]:
    problems: list[Problem] = []
    wanted = {s.key: s for s in skills}
    if not isinstance(scores, dict):
        raise DomainError(
            'scores must be an object of skill -> 1-5 or "na"',
            [Problem("must be an object", field="scores")],
        )
    rationales = rationales or {}
    if not isinstance(rationales, dict):
        raise DomainError(
            "rationales must be an object of skill -> text",
            [Problem("must be an object", field="rationales")],
        )
    for key in rationales:
        if key not in wanted:
            problems.append(
                Problem(
                    f"{key!r} is not a skill of this response",
                    field=f"rationales.{key}",
                )
            )
    for key in scores:
        if key not in wanted:
            problems.append(
                Problem(
                    f"{key!r} is not a skill of this response", field=f"scores.{key}"
                )
            )
    out = []
    for key, skill in wanted.items():
        if key not in scores:
            problems.append(
                Problem("is missing: score 1-5 or N/A", field=f"scores.{key}")
            )
            continue
        value = scores[key]
        if value is None or is_na(value):
            score = None
        elif isinstance(value, bool):
            problems.append(Problem("must be 1-5 or N/A", field=f"scores.{key}"))
            continue
        else:
            try:
                score = int(str(value).strip())
            except ValueError:
                problems.append(
                    Problem(f"{value!r} is not 1-5 or N/A", field=f"scores.{key}")
                )
                continue
            if not 1 <= score <= 5 or str(value).strip() not in {
                "1",
                "2",
                "3",
                "4",
                "5",
            }:
                problems.append(
                    Problem(f"{value!r} is not 1-5 or N/A", field=f"scores.{key}")
                )
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


def _own_assignment_for_update(
    assignment_id: int, rater: User, *, lean: bool = False
) -> Assignment:
    """The rater's own assignment, locked, with its campaign, dataset, rubric, response.

    `lean` (submit, the hot path) loads only the campaign row and annotates what
    submit needs from the others: `rubric_id`, `rubric_frozen_at` and
    `instruction_id` (read by `assignment_skills`).
    """
    qs = Assignment.objects.select_for_update(of=("self",))
    if lean:
        qs = qs.select_related("campaign").annotate(
            rubric_id=F("campaign__dataset__rubric_id"),
            rubric_frozen_at=F("campaign__dataset__rubric__frozen_at"),
            instruction_id=F("response__instruction_id"),
        )
    else:
        qs = qs.select_related(
            "campaign", "campaign__dataset", "campaign__dataset__rubric", "response"
        )
    assignment = qs.filter(pk=assignment_id).first()
    # Another rater's assignment (or a pairwise one, which has its own service) is
    # reported exactly like a missing one.
    if assignment is None or assignment.rater_id != rater.pk or assignment.pair_id:
        raise Http404("No such assignment.")
    roles.require_campaign_rater(rater, assignment.campaign_id)
    return assignment


def rating_submit(
    *,
    assignment_id: int,
    rater: User,
    scores: dict,
    rationales: dict | None = None,
    active_seconds: float | None = None,
    now: datetime | None = None,
    conflict_if_changed: bool = False,
) -> Assignment:
    """Save `rater`'s scores for one assignment and release its lock, in one transaction.

    `scores` maps every listed skill key to 1-5 or N/A (None / "na"); nothing else is
    accepted. Idempotent: submitting an already submitted assignment returns it
    unchanged (a double click or a retried POST creates nothing); with
    `conflict_if_changed` (the API) a resubmit whose scores or rationales differ from
    the stored ones raises `ConflictError` (409) instead, so a client knows nothing
    changed and amends instead. A submit after the
    lock expired is accepted while the response still has a free slot; otherwise it is
    refused with a message and recorded on the assignment's note.
    Raises `Http404` for another rater's assignment, `DomainError` for bad scores or a
    paused/closed campaign.
    """
    now = now or timezone.now()
    if serving_sql.enabled():
        with transaction.atomic():
            done = _rating_submit_sql(
                assignment_id=assignment_id,
                rater=rater,
                scores=scores,
                rationales=rationales,
                active_seconds=active_seconds,
                now=now,
            )
        if done is not None:
            return done
    # Its own transaction: a refused late submit records its note, then raises.
    return _rating_submit_orm(
        assignment_id=assignment_id,
        rater=rater,
        scores=scores,
        rationales=rationales,
        active_seconds=active_seconds,
        now=now,
        conflict_if_changed=conflict_if_changed,
    )


def _rating_submit_sql(
    *,
    assignment_id: int,
    rater: User,
    scores: dict,
    rationales: dict | None,
    active_seconds: float | None,
    now: datetime,
) -> Assignment | None:
    """`rating_submit`'s common case in two statements (PostgreSQL).

    Handles a ``served`` assignment of an active campaign; returns None for every other
    state, which `_rating_submit_orm` then handles (the row lock is already held).
    """
    read = serving_sql.submit_read(assignment_id)
    # Another rater's assignment is reported exactly like a missing one.
    if read is None or read[0].rater_id != rater.pk:
        raise Http404("No such assignment.")
    roles.require_campaign_rater(rater, read[0].campaign_id)
    assignment, campaign_status, rubric_id, frozen_at, skills = read
    if (
        assignment.status != Assignment.Status.SERVED
        or campaign_status != Campaign.Status.ACTIVE
    ):
        return None
    valid = _validate_scores(skills=skills, scores=scores, rationales=rationales)
    if active_seconds is not None and active_seconds >= 0:
        assignment.active_seconds = float(active_seconds)
    saved = serving_sql.submit_write(assignment=assignment, valid=valid, now=now)
    saved.sort(key=lambda row: (row.skill.position, row.skill_id))
    _hand_over_scores(assignment, saved)
    assignment.status = Assignment.Status.SUBMITTED
    assignment.submitted_at = now
    assignment.closed_at = now
    if frozen_at is None:
        rubric_freeze(rubric_id=rubric_id)
    return assignment


def _hand_over_scores(assignment: Assignment, saved: list[HumanScore]) -> None:
    """Attach the saved rows (in `HumanScore.Meta.ordering`) as if prefetched, so
    that rendering the rating needs no further query."""
    scores_cache = assignment.scores.all()
    scores_cache._result_cache = saved
    scores_cache._prefetch_done = True
    assignment._prefetched_objects_cache = {"scores": scores_cache}


def _rating_submit_orm(
    *,
    assignment_id: int,
    rater: User,
    scores: dict,
    rationales: dict | None,
    active_seconds: float | None,
    now: datetime,
    conflict_if_changed: bool = False,
) -> Assignment:
    refused = ""
    with transaction.atomic():
        assignment = _own_assignment_for_update(assignment_id, rater, lean=True)
        if assignment.status == Assignment.Status.SUBMITTED:
            if conflict_if_changed:
                _refuse_changed_resubmit(assignment, scores, rationales)
            return assignment
        submit_check(assignment, POINTWISE)
        valid = _validate_scores(
            skills=assignment_skills(assignment=assignment),
            scores=scores,
            rationales=rationales,
        )
        refused = submit_take_slot(assignment=assignment, kind=POINTWISE, now=now)
        if not refused:
            saved = HumanScore.objects.bulk_create(
                HumanScore(
                    assignment=assignment, skill=skill, score=score, rationale=rationale
                )
                for skill, score, rationale in valid
            )
            # Hand the saved rows over (in `HumanScore.Meta.ordering`), so that
            # rendering the rating needs no further query.
            saved.sort(key=lambda row: (row.skill.position, row.skill_id))
            _hand_over_scores(assignment, saved)
            submit_close(assignment=assignment, now=now, active_seconds=active_seconds)
            if assignment.rubric_frozen_at is None:
                rubric_freeze(rubric_id=assignment.rubric_id)
    if refused:
        raise DomainError(refused)
    return assignment


def _refuse_changed_resubmit(
    assignment: Assignment, scores: dict, rationales: dict | None
) -> None:
    """`ConflictError` when `scores`/`rationales` (validated as a submit would be)
    differ from what the submitted assignment stores."""
    valid = _validate_scores(
        skills=assignment_skills(assignment=assignment),
        scores=scores,
        rationales=rationales,
    )
    given = {skill.pk: (score, rationale) for skill, score, rationale in valid}
    stored = {
        row.skill_id: (row.score, row.rationale)
        for row in HumanScore.objects.filter(assignment=assignment)
    }
    if given != stored:
        raise ConflictError(
            "this assignment is already submitted with other scores; nothing changed",
            [
                Problem(
                    "differ from the submitted ones; amend them with PUT "
                    f"/api/rate/assignments/{assignment.pk}/scores/",
                    field="scores",
                )
            ],
        )


def assignment_skip(
    *, assignment_id: int, rater: User, reason: str, now: datetime | None = None
) -> Assignment:
    """Skip a served response with a reason; it goes back to the pool for others.

    The rater is never served it again. Idempotent for an already skipped assignment.
    """
    now = now or timezone.now()
    reason = skip_reason_clean(reason)
    with transaction.atomic():
        assignment = _own_assignment_for_update(assignment_id, rater)
        return skip_locked(
            assignment=assignment, kind=POINTWISE, reason=reason, now=now
        )


def rating_amend(
    *, assignment_id: int, rater: User, scores: dict, rationales: dict | None = None
) -> Assignment:
    """Change a rater's own submitted scores while the campaign is not closed.

    Same validation as submit; rows are updated in place (`updated_at` records when).
    """
    with transaction.atomic():
        assignment = _own_assignment_for_update(assignment_id, rater)
        if assignment.status != Assignment.Status.SUBMITTED:
            raise DomainError("only submitted ratings can be amended")
        if assignment.campaign.status == Campaign.Status.CLOSED:
            raise DomainError("this campaign is closed; its ratings are final")
        valid = _validate_scores(
            skills=assignment_skills(assignment=assignment),
            scores=scores,
            rationales=rationales,
        )
        existing = {s.skill_id: s for s in assignment.scores.all()}
        for skill, score, rationale in valid:
            row = existing.get(skill.pk)
            if row is None:
                HumanScore.objects.create(
                    assignment=assignment, skill=skill, score=score, rationale=rationale
                )
            elif row.score != score or row.rationale != rationale:
                row.score, row.rationale = score, rationale
                row.save(update_fields=["score", "rationale", "updated_at"])
        assignment.updated_at = timezone.now()
        assignment.save(update_fields=["updated_at"])
    return assignment


__all__ = [
    "NextResult",
    "assignment_next",
    "assignment_skip",
    "assignments_expire",
    "rating_amend",
    "rating_submit",
]
