"""The rater loop, one for every item kind: serve the next item, submit, skip, amend.

The serving rules (pick, reserve, expiry, late submit, skip) are in
`services.serving`; what differs between a response to score and a pair to compare
(the answer's checks and rows, amend, history) is the campaign's item kind
(`annotation.items`). `item_next`, `item_submit`, `item_skip` and `item_amend` take
the kind and dispatch to it; the named entry points below them (`assignment_next`,
`rating_submit`, ... for pointwise campaigns; `services.pairwise` for pairwise ones)
are the same calls with that kind's answer fields.

On PostgreSQL the common cases of serve and submit of a kind with a raw-SQL path
(`ItemKind.sql_fast_path`, `sql_submit`) run as a few hand-written statements
(`services.serving_sql`, prepared once per connection) with the same effects; the
rare cases (nothing free, quota, expired locks, late or repeated submits) and SQLite
use the ORM code below. The tests run on both paths and compare them.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.http import Http404
from django.utils import timezone

from annotation import membership
from annotation.items import POINTWISE, ItemKind, item_kind
from annotation.items.pointwise import MAX_CRITIQUE, MAX_RATIONALE, critique_clean
from annotation.models import Assignment, Campaign
from annotation.services import serving_sql
from annotation.services.gold import gold_after_submit
from annotation.services.qualification import qualification_after_submit
from annotation.services.rubrics import rubric_freeze
from annotation.services.serving import (
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
from flaskapp.errors import DomainError

# --- The loop, for every kind ---------------------------------------------------------


def item_next(
    *, campaign: Campaign, rater: User, now: datetime | None = None
) -> NextResult:
    """Serve `rater` the next item of `campaign` (or resume the one they hold).

    In one transaction, under a lock on the rater's user row (so one rater's parallel
    calls serialise and the second resumes the first's assignment): the rater's own
    live assignment first (its lock is extended); else the open item with the most
    submitted answers (breadth-first toward the overlap) and the lowest position that
    this rater has not answered or skipped and no one else is locking is reserved
    with ``FOR UPDATE SKIP LOCKED``. Expired locks are returned to the pool here only
    when nothing is free (the periodic task does it otherwise). Each assignment
    records why it was served (and the kind's own fields: a pair's shown order).

    Precondition: the caller checked that `rater` belongs to the campaign
    (`selectors.campaign_get_for_rater`). Returns a `NextResult` whose message explains
    an empty result (paused or closed campaign, quota reached, nothing left, or only
    items locked by others).
    """
    return serve_next(
        campaign=campaign,
        rater=rater,
        now=now or timezone.now(),
        kind=item_kind(campaign.kind),
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


def item_submit(
    *,
    kind: ItemKind,
    assignment_id: int,
    rater: User,
    answer: dict[str, Any],
    active_seconds: float | None = None,
    now: datetime | None = None,
    conflict_if_changed: bool = False,
) -> Assignment:
    """Save `rater`'s answer to one assignment of `kind` and release its lock, in one
    transaction.

    `answer` holds the kind's fields (`ItemKind.clean`: pointwise ``scores``,
    ``rationales``, ``critique``; pairwise ``label``, ``skill_labels``,
    ``rationale``). Idempotent: submitting an already submitted assignment returns it
    unchanged (a double click or a retried POST creates nothing); with
    `conflict_if_changed` (the API) a resubmit with another answer raises
    `ConflictError` (409) instead, so a client knows nothing changed and amends
    instead. A submit after the lock expired is accepted while the item still has a
    free slot; otherwise it is refused with a message and recorded on the
    assignment's note (committed; then `DomainError`). The rubric is frozen by the
    first answer that uses it; a qualification's last item grades it.
    Raises `Http404` for another rater's (or another kind's) assignment,
    `DomainError` (naming each field; nothing written) for bad input, a skipped
    assignment or a paused/closed campaign.
    """
    now = now or timezone.now()
    if kind.sql_submit and serving_sql.enabled():
        with transaction.atomic():
            done = _submit_sql(
                kind=kind,
                assignment_id=assignment_id,
                rater=rater,
                answer=answer,
                active_seconds=active_seconds,
                now=now,
            )
        if done is not None:
            qualification_after_submit(done)  # no query unless a qualification item
            gold_after_submit(done)  # no query unless a gold item
            return done
    # Its own transaction: a refused late submit records its note, then raises.
    refused = ""
    with transaction.atomic():
        assignment = kind.lock_own(assignment_id, rater)
        if assignment.status == Assignment.Status.SUBMITTED:
            if conflict_if_changed:
                valid = kind.clean(assignment=assignment, answer=answer)
                if not kind.stored_equal(assignment=assignment, valid=valid):
                    raise kind.conflict(assignment)
            return assignment
        submit_check(assignment, kind)
        valid = kind.clean(assignment=assignment, answer=answer)
        refused = submit_take_slot(assignment=assignment, kind=kind, now=now)
        if not refused:
            kind.store(assignment=assignment, valid=valid, rater=rater, now=now)
            submit_close(assignment=assignment, now=now, active_seconds=active_seconds)
            if assignment.rubric_frozen_at is None and kind.uses_rubric(valid):
                rubric_freeze(rubric_id=assignment.rubric_id)
    if refused:
        raise DomainError(refused)
    qualification_after_submit(assignment)
    gold_after_submit(assignment)
    return assignment


def _submit_sql(
    *,
    kind: ItemKind,
    assignment_id: int,
    rater: User,
    answer: dict[str, Any],
    active_seconds: float | None,
    now: datetime,
) -> Assignment | None:
    """A submit's common case in two statements (PostgreSQL, `services.serving_sql`).

    Handles a ``served`` assignment of an active campaign without critique; returns
    None for every other state, which `item_submit`'s ORM code then handles (the row
    lock is already held).
    """
    read = serving_sql.submit_read(assignment_id)
    # Another rater's assignment (or another kind's) is reported exactly like a
    # missing one.
    if read is None or read[0].rater_id != rater.pk or not kind.holds(read[0]):
        raise Http404("No such assignment.")
    membership.require_campaign_rater(rater, read[0].campaign_id)
    assignment, campaign_status, rubric_id, frozen_at, skills, critique_mode = read
    if (
        assignment.status != Assignment.Status.SERVED
        or campaign_status != Campaign.Status.ACTIVE
        or critique_mode != Campaign.Critique.OFF
    ):
        return None
    valid = kind.clean_read(skills=skills, answer=answer)
    if active_seconds is not None and active_seconds >= 0:
        assignment.active_seconds = float(active_seconds)
    serving_sql.submit_write(kind=kind, assignment=assignment, valid=valid, now=now)
    assignment.status = Assignment.Status.SUBMITTED
    assignment.submitted_at = now
    assignment.closed_at = now
    if frozen_at is None and kind.uses_rubric(valid):
        rubric_freeze(rubric_id=rubric_id)
    return assignment


def item_skip(
    *,
    kind: ItemKind,
    assignment_id: int,
    rater: User,
    reason: str,
    now: datetime | None = None,
) -> Assignment:
    """Skip a served item of `kind` with a reason; it goes back to the pool for
    others, and the rater is never served it again. Idempotent for an already
    skipped assignment; a submitted one is refused (`DomainError`). Raises `Http404`
    for another rater's (or another kind's) assignment."""
    now = now or timezone.now()
    reason = skip_reason_clean(reason)
    with transaction.atomic():
        assignment = kind.lock_own(assignment_id, rater)
        return skip_locked(assignment=assignment, kind=kind, reason=reason, now=now)


def item_amend(
    *,
    kind: ItemKind,
    assignment_id: int,
    rater: User,
    answer: dict[str, Any],
    now: datetime | None = None,
) -> Assignment:
    """Change `rater`'s own submitted answer to an assignment of `kind`, while the
    kind allows it (`ItemKind.amend_refusal`: submitted, campaign not closed, ...).

    Same checks as submit; the stored rows are updated in place and the assignment's
    `updated_at` records when (pointwise scores also keep each change in their
    history). One transaction under the assignment's row lock; slot counters do not
    change (the answer was already counted). Raises `Http404` for another rater's (or
    another kind's) assignment and `DomainError` for a refusal or bad input; then
    nothing is written.
    """
    now = now or timezone.now()
    with transaction.atomic():
        assignment = kind.lock_own(assignment_id, rater)
        if refusal := kind.amend_refusal(assignment=assignment):
            raise DomainError(refusal)
        valid = kind.clean(assignment=assignment, answer=answer)
        kind.amend(assignment=assignment, valid=valid, rater=rater, now=now)
    return assignment


# --- Pointwise entry points -------------------------------------------------------------


def assignment_next(
    *, campaign: Campaign, rater: User, now: datetime | None = None
) -> NextResult:
    """`item_next` of a pointwise campaign; an active pairwise one serves nothing
    here and says where its pairs are."""
    if (
        campaign.status == Campaign.Status.ACTIVE
        and campaign.kind != POINTWISE.campaign_kind
    ):
        return NextResult(
            None,
            message="This is a pairwise campaign: compare pairs on its pairwise page.",
        )
    return item_next(campaign=campaign, rater=rater, now=now)


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
    """`item_submit` of a pointwise rating: `scores` maps every listed skill key to a
    value of the criterion's scale (`annotation.scales.Scale.parse`: a point of an
    ordinal scale, a label key of a categorical one, N/A as None / "na" where the
    criterion allows it); nothing else is accepted. `critique` is required (with the
    campaign's minimum length) when the campaign asks for one and refused when it
    does not; a critique-only campaign takes no scores. Problems name
    `scores.<key>`, `rationales.<key>` or `critique`."""
    return item_submit(
        kind=POINTWISE,
        assignment_id=assignment_id,
        rater=rater,
        answer={"scores": scores, "rationales": rationales, "critique": critique},
        active_seconds=active_seconds,
        now=now,
        conflict_if_changed=conflict_if_changed,
    )


def assignment_skip(
    *, assignment_id: int, rater: User, reason: str, now: datetime | None = None
) -> Assignment:
    """`item_skip` of a served response."""
    return item_skip(
        kind=POINTWISE, assignment_id=assignment_id, rater=rater, reason=reason, now=now
    )


def rating_amend(
    *,
    assignment_id: int,
    rater: User,
    scores: dict | None,
    rationales: dict | None = None,
    critique: str | None = None,
) -> Assignment:
    """`item_amend` of a pointwise rating (`rating_submit`'s fields). Refused for a
    gold item of a qualification, or of a campaign in its training phase: the rater
    may have seen its expected scores."""
    return item_amend(
        kind=POINTWISE,
        assignment_id=assignment_id,
        rater=rater,
        answer={"scores": scores, "rationales": rationales, "critique": critique},
    )


__all__ = [
    "MAX_CRITIQUE",
    "MAX_RATIONALE",
    "NextResult",
    "assignment_next",
    "assignment_skip",
    "assignments_expire",
    "critique_clean",
    "item_amend",
    "item_next",
    "item_skip",
    "item_submit",
    "rating_amend",
    "rating_submit",
]
