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
from annotation.models import (
    Assignment,
    Campaign,
    HumanScore,
    Skill,
)
from annotation.models.campaigns import SCORE_HISTORY
from annotation.scales import scale_of
from annotation.selectors.rating import assignment_skills
from annotation.services import serving_sql
from annotation.services.qualification import qualification_after_submit
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
MAX_CRITIQUE = 20000


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


def _validate_rating(
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
        valid = _validate_scores(
            skills=skills, scores=scores, rationales=rationales, critique_mode=mode
        )
    except DomainError as exc:
        raise DomainError(exc.message, exc.problems + problems) from None
    if problems:
        raise DomainError("the rating was not saved", problems)
    return valid, text


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
    scores: dict | None,
    rationales: dict | None = None,
    critique: str | None = None,
    active_seconds: float | None = None,
    now: datetime | None = None,
    conflict_if_changed: bool = False,
) -> Assignment:
    """Save `rater`'s rating of one assignment and release its lock, in one transaction.

    `scores` maps every listed skill key to a value of the criterion's scale
    (`annotation.scales.Scale.parse`: a point of an ordinal scale, a label key of a
    categorical one, N/A as None / "na" where the criterion allows it); nothing else is
    accepted. `critique` is required (with the campaign's minimum length) when the
    campaign asks for one and refused when it does not; a critique-only campaign takes
    no scores. Idempotent: submitting an already submitted assignment returns it
    unchanged (a double click or a retried POST creates nothing); with
    `conflict_if_changed` (the API) a resubmit whose scores, rationales or critique
    differ from the stored ones raises `ConflictError` (409) instead, so a client knows
    nothing changed and amends instead. A submit after the
    lock expired is accepted while the response still has a free slot; otherwise it is
    refused with a message and recorded on the assignment's note.
    Raises `Http404` for another rater's assignment, `DomainError` (naming
    `scores.<key>`, `rationales.<key>` or `critique`; nothing written) for bad input
    or a paused/closed campaign.
    """
    now = now or timezone.now()
    if scores is None:
        scores = {}
    if serving_sql.enabled():
        with transaction.atomic():
            done = _rating_submit_sql(
                assignment_id=assignment_id,
                rater=rater,
                scores=scores,
                rationales=rationales,
                critique=critique,
                active_seconds=active_seconds,
                now=now,
            )
        if done is not None:
            qualification_after_submit(done)  # no query unless a qualification item
            return done
    # Its own transaction: a refused late submit records its note, then raises.
    done = _rating_submit_orm(
        assignment_id=assignment_id,
        rater=rater,
        scores=scores,
        rationales=rationales,
        critique=critique,
        active_seconds=active_seconds,
        now=now,
        conflict_if_changed=conflict_if_changed,
    )
    qualification_after_submit(done)
    return done


def _rating_submit_sql(
    *,
    assignment_id: int,
    rater: User,
    scores: dict,
    rationales: dict | None,
    critique: str | None,
    active_seconds: float | None,
    now: datetime,
) -> Assignment | None:
    """`rating_submit`'s common case in two statements (PostgreSQL).

    Handles a ``served`` assignment of an active campaign without critique; returns
    None for every other state, which `_rating_submit_orm` then handles (the row lock
    is already held).
    """
    read = serving_sql.submit_read(assignment_id)
    # Another rater's assignment is reported exactly like a missing one.
    if read is None or read[0].rater_id != rater.pk:
        raise Http404("No such assignment.")
    roles.require_campaign_rater(rater, read[0].campaign_id)
    assignment, campaign_status, rubric_id, frozen_at, skills, critique_mode = read
    if (
        assignment.status != Assignment.Status.SERVED
        or campaign_status != Campaign.Status.ACTIVE
        or critique_mode != Campaign.Critique.OFF
    ):
        return None
    valid, _ = _validate_rating(
        mode=critique_mode,
        min_length=0,
        skills=skills,
        scores=scores,
        rationales=rationales,
        critique=critique,
    )
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
    critique: str | None,
    active_seconds: float | None,
    now: datetime,
    conflict_if_changed: bool = False,
) -> Assignment:
    refused = ""
    with transaction.atomic():
        assignment = _own_assignment_for_update(assignment_id, rater, lean=True)
        if assignment.status == Assignment.Status.SUBMITTED:
            if conflict_if_changed:
                _refuse_changed_resubmit(assignment, scores, rationales, critique)
            return assignment
        submit_check(assignment, POINTWISE)
        valid, text = _validate_rating(
            mode=assignment.campaign.critique,
            min_length=assignment.campaign.critique_min_length,
            skills=assignment_skills(assignment=assignment),
            scores=scores,
            rationales=rationales,
            critique=critique,
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
            if text:
                assignment.critique = text
                assignment.save(update_fields=["critique"])
            if assignment.rubric_frozen_at is None:
                rubric_freeze(rubric_id=assignment.rubric_id)
    if refused:
        raise DomainError(refused)
    return assignment


def _refuse_changed_resubmit(
    assignment: Assignment, scores: dict, rationales: dict | None, critique
) -> None:
    """`ConflictError` when `scores`/`rationales`/`critique` (validated as a submit
    would be) differ from what the submitted assignment stores."""
    valid, text = _validate_rating(
        mode=assignment.campaign.critique,
        min_length=assignment.campaign.critique_min_length,
        skills=assignment_skills(assignment=assignment),
        scores=scores,
        rationales=rationales,
        critique=critique,
    )
    given = {skill.pk: (score, rationale) for skill, score, rationale in valid}
    stored = {
        row.skill_id: (row.score, row.rationale)
        for row in HumanScore.objects.filter(assignment=assignment)
    }
    if given != stored or text != assignment.critique:
        raise ConflictError(
            "this assignment is already submitted with another rating; nothing changed",
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


def _record_submitted(row: HumanScore, rater: User) -> None:
    """Before a score's first change, copy the submitted value into its history (the
    bulk insert of a submit writes none), so the history reads "from X to Y"."""
    if HumanScore.history.filter(id=row.pk).exists():
        return
    row._history_user, row._change_reason = rater, "submitted"
    row._history_date = row.updated_at
    SCORE_HISTORY.create_historical_record(row, "+")
    del row._history_date


def rating_amend(
    *,
    assignment_id: int,
    rater: User,
    scores: dict | None,
    rationales: dict | None = None,
    critique: str | None = None,
) -> Assignment:
    """Change a rater's own submitted rating while the campaign is not closed.

    Same validation as submit (scores by the criteria's scales, the critique when the
    campaign asks for one); rows are updated in place (`updated_at` records when),
    and each change is a row of the score's history (who, when, from what value).
    Refused (nothing written) for a gold item of a qualification, or of a campaign
    in its training phase: the rater may have seen its expected scores. Outside
    those, a gold item is amended like any other (refusing would reveal it).
    Nothing is written when anything is refused.
    """
    with transaction.atomic():
        assignment = _own_assignment_for_update(assignment_id, rater)
        if assignment.status != Assignment.Status.SUBMITTED:
            raise DomainError("only submitted ratings can be amended")
        if assignment.campaign.status == Campaign.Status.CLOSED:
            raise DomainError("this campaign is closed; its ratings are final")
        if assignment.gold and (
            assignment.qualification_id or assignment.campaign.training_phase
        ):
            # The rater may have seen this item's expected scores (the training
            # feedback, a failed qualification's report): a changed answer would
            # rewrite their accuracy. Refusing says nothing they were not shown.
            raise DomainError(
                "this was a known-answer item whose expected scores can be shown to "
                "you; its answer is final"
            )
        valid, text = _validate_rating(
            mode=assignment.campaign.critique,
            min_length=assignment.campaign.critique_min_length,
            skills=assignment_skills(assignment=assignment),
            scores=scores if scores is not None else {},
            rationales=rationales,
            critique=critique,
        )
        existing = {s.skill_id: s for s in assignment.scores.all()}
        for skill, score, rationale in valid:
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
        assignment.updated_at = timezone.now()
        fields = ["updated_at"]
        if text != assignment.critique:
            assignment.critique = text
            fields.append("critique")
        assignment.save(update_fields=fields)
    return assignment


__all__ = [
    "NextResult",
    "assignment_next",
    "assignment_skip",
    "assignments_expire",
    "critique_clean",
    "rating_amend",
    "rating_submit",
]
