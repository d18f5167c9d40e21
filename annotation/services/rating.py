"""Rating campaigns: creation, fair assignment of the next response, submit, skip, amend.

Fairness and the overlap invariant rest on `CampaignItem` rows: each holds
`open_slots = target - submitted - reserved`, changed only under that row's lock, and a
check constraint keeps `submitted <= target`. The next response is picked with
``SELECT ... FOR UPDATE SKIP LOCKED`` so concurrent raters never wait on each other and
never take the same slot.

On PostgreSQL the common cases of serve and submit run as a few hand-written statements
(`services.serving_sql`, prepared once per connection) with the same effects; the rare
cases (nothing free, quota, expired locks, late or repeated submits) and SQLite use the
ORM code below. The tests run on both paths and compare them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cache

from django.contrib.auth.models import User
from django.db import connection, transaction
from django.db.models import Exists, F, OuterRef
from django.http import Http404
from django.utils import timezone

from annotation.errors import DomainError, Problem
from annotation.models import (
    Assignment,
    Campaign,
    CampaignItem,
    HumanScore,
    Response,
    Skill,
)
from annotation.selectors.rating import assignment_skills
from annotation.services import serving_sql
from annotation.services.rubrics import rubric_freeze
from annotation.sqlrows import prepared_cursor

MAX_RATIONALE = 5000


@dataclass
class NextResult:
    """What `assignment_next` served, or why it served nothing.

    The raw-SQL path (PostgreSQL) also hands over what the rating form shows, so that
    rendering needs no further query: `skills` (as `selectors.assignment_skills` would
    list them) and `counts`, the rater's own ``(submitted, skipped)`` in the campaign.
    Both are None when not loaded (the ORM path).
    """

    assignment: Assignment | None
    message: str = ""
    locked_by_others: int = 0
    skills: list[Skill] | None = None
    counts: tuple[int, int] | None = None


def assignments_expire(
    *, campaign_id: int | None = None, now: datetime | None = None
) -> int:
    """Return expired locks to the pool; returns how many assignments expired.

    Locks only items no one else holds (SKIP LOCKED), so it never waits on a rater's
    transaction and cannot deadlock with `assignment_next`; a skipped item expires on a
    later call. Each expired assignment keeps its row with status ``expired`` and a note.
    Idempotent. Runs in its own transaction.
    """
    now = now or timezone.now()
    stale = Assignment.objects.filter(
        status=Assignment.Status.SERVED, expires_at__lt=now
    )
    if campaign_id is not None:
        stale = stale.filter(campaign_id=campaign_id)
    if not stale.exists():
        return 0
    expired = 0
    with transaction.atomic():
        item_ids = list(
            CampaignItem.objects.select_for_update(skip_locked=True)
            .filter(pk__in=stale.values("item_id"))
            .order_by("pk")
            .values_list("pk", flat=True)
        )
        if not item_ids:
            return 0
        counts: dict[int, int] = {}
        for item_id in stale.filter(item_id__in=item_ids).values_list(
            "item_id", flat=True
        ):
            counts[item_id] = counts.get(item_id, 0) + 1
        expired = stale.filter(item_id__in=item_ids).update(
            status=Assignment.Status.EXPIRED,
            closed_at=now,
            note="lock expired before submission; the response went back to the pool",
        )
        for item_id, n in counts.items():
            CampaignItem.objects.filter(pk=item_id).update(
                reserved=F("reserved") - n, open_slots=F("open_slots") + n
            )
    return expired


def _quota_reached(campaign: Campaign, rater: User) -> bool:
    if campaign.rater_quota is None:
        return False
    taken = Assignment.objects.filter(
        campaign=campaign,
        rater=rater,
        status__in=[Assignment.Status.SUBMITTED, Assignment.Status.SERVED],
    ).count()
    return taken >= campaign.rater_quota


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
    now = now or timezone.now()
    if campaign.status != Campaign.Status.ACTIVE:
        return NextResult(
            None, f"This campaign is {campaign.get_status_display().lower()}."
        )
    ttl = timedelta(minutes=campaign.lock_ttl_minutes)
    if campaign.kind != Campaign.Kind.POINTWISE:
        # Pairwise campaigns serve pairs through annotation.services.pairwise.
        return NextResult(
            None,
            message="This is a pairwise campaign: compare pairs on its pairwise page.",
        )
    with transaction.atomic():
        # One rater's concurrent "next" calls (a double click, two tabs) queue here, so
        # the second one resumes the first one's assignment instead of taking another.
        if serving_sql.enabled(campaign):
            # The same lock and the same choice, in two statements (services.serving_sql).
            with prepared_cursor() as cursor:
                cursor.execute(_lock_rater_sql(), [rater.pk])
            served = serving_sql.serve(campaign=campaign, rater=rater, now=now, ttl=ttl)
            if served is not None:
                assignment, skills, counts = served
                return NextResult(assignment, skills=skills, counts=counts)
            # Nothing live and nothing free: the ORM path expires stale locks and
            # says why nothing is served.
        else:
            User.objects.select_for_update().filter(pk=rater.pk).first()
        return serve_next_locked(campaign=campaign, rater=rater, now=now, ttl=ttl)


@cache
def _lock_rater_sql() -> str:
    table = connection.ops.quote_name(User._meta.db_table)
    return f"SELECT 1 FROM {table} WHERE id = %s FOR UPDATE"


@dataclass(frozen=True)
class ItemKind:
    """What a campaign item stands for when it is served: everything that differs
    between pointwise serving (an item is a response) and pairwise serving (a pair)."""

    key: str  # the Assignment field naming the item, e.g. "response_id"
    noun: str  # "response" / "pair" (messages and reasons)
    verb: str  # "rated" / "compared"
    # extra Assignment fields for a new assignment: f(campaign, item, rater) -> dict
    extra: Callable[[Campaign, CampaignItem, User], dict] | None = None
    # called with a newly reserved assignment (e.g. to load what the page shows)
    reserved: Callable[[Assignment], None] | None = None


def _load_response(assignment: Assignment) -> None:
    """Hand the rows over, so that rendering the form needs no further query."""
    assignment.response = Response.objects.select_related("instruction").get(
        pk=assignment.response_id
    )


POINTWISE = ItemKind(
    key="response_id", noun="response", verb="rated", reserved=_load_response
)


def serve_next_locked(
    *,
    campaign: Campaign,
    rater: User,
    now: datetime,
    ttl: timedelta,
    kind: ItemKind = POINTWISE,
) -> NextResult:
    """The ORM serving rules, under the caller's lock on the rater's row: resume the
    rater's live assignment; else the quota; else pick the open item with the most
    submitted ratings and the lowest position that this rater has not done or skipped
    and nobody else holds (``FOR UPDATE SKIP LOCKED``) and reserve it."""
    live = (
        Assignment.objects.filter(
            campaign=campaign,
            rater=rater,
            status=Assignment.Status.SERVED,
            expires_at__gt=now,
        )
        .order_by("served_at")
        .first()
    )
    if live is not None:
        Assignment.objects.filter(pk=live.pk).update(expires_at=now + ttl)
        live.expires_at = now + ttl
        return NextResult(live)
    if _quota_reached(campaign, rater):
        return NextResult(
            None,
            f"You have reached this campaign's quota of "
            f"{campaign.rater_quota} {kind.noun}s. Thank you!",
        )

    # Matches the unique (campaign, response or pair, rater) index: one probe per
    # candidate, however many items this rater has already done.
    mine = Assignment.objects.filter(
        campaign=campaign, rater=rater, **{kind.key: OuterRef(kind.key)}
    )
    # Items only (no joins): the planner then walks the partial index in order and
    # stops at the first free item, whatever the campaign's size.
    pick = (
        CampaignItem.objects.select_for_update(skip_locked=True)
        .filter(campaign=campaign, open_slots__gt=0)
        .filter(~Exists(mine.exclude(status=Assignment.Status.EXPIRED)))
        .annotate(mine_expired=Exists(mine.filter(status=Assignment.Status.EXPIRED)))
        .order_by("-submitted", "position")
    )
    item = pick.first()
    if item is None and assignments_expire(campaign_id=campaign.pk, now=now):
        # Serving expires stale locks only when nothing is free; the periodic task
        # returns them otherwise, so the common path stays a single pick query.
        item = pick.first()
    mine = mine.exclude(status=Assignment.Status.EXPIRED)
    if item is None:
        locked = (
            CampaignItem.objects.filter(campaign=campaign, reserved__gt=0)
            .filter(~Exists(mine))
            .count()
        )
        if locked:
            return NextResult(
                None,
                f"Nothing is free for you right now: {locked} "
                f"{f'{kind.noun} is' if locked == 1 else f'{kind.noun}s are'} being "
                f"{kind.verb} by others. Try again in a few minutes; expired locks "
                "come back.",
                locked_by_others=locked,
            )
        return NextResult(
            None, "You are done: nothing in this campaign is left for you."
        )
    assignment = reserve_item(
        campaign=campaign,
        item=item,
        rater=rater,
        now=now,
        ttl=ttl,
        noun=kind.noun,
        verb=kind.verb,
        **(kind.extra(campaign, item, rater) if kind.extra else {}),
    )
    if kind.reserved:
        kind.reserved(assignment)
    assignment.campaign = campaign
    return NextResult(assignment)


def reserve_item(
    *,
    campaign: Campaign,
    item,
    rater: User,
    now: datetime,
    ttl: timedelta,
    noun: str,
    verb: str,
    **create_fields,
) -> Assignment:
    """Serve the picked `item` (locked by the caller) to `rater`: revive the rater's own
    expired assignment of it or create one (with `create_fields`, e.g. a pair's shown
    order), record why it was served, and take one open slot.

    Shared by pointwise and pairwise serving (`serve_next_locked`).
    `item` carries `mine_expired` (the rater holds an expired assignment of it).
    """
    if item.submitted:
        reason = f"finishing a partly {verb} {noun} ({item.submitted} of {item.target})"
    elif item.target > 1:
        reason = f"new {noun}; {item.target} raters wanted"
    else:
        reason = f"new {noun}"
    previous = (
        Assignment.objects.filter(
            campaign=campaign, item_id=item.pk, rater=rater
        ).first()
        if item.mine_expired
        else None
    )
    if previous is not None:
        # Only an expired assignment of this rater can exist here.
        previous.status = Assignment.Status.SERVED
        previous.reason = "served again after your earlier lock expired"
        previous.served_at = now
        previous.expires_at = now + ttl
        previous.closed_at = None
        previous.save(
            update_fields=["status", "reason", "served_at", "expires_at", "closed_at"]
        )
        assignment = previous
    else:
        assignment = Assignment.objects.create(
            campaign=campaign,
            item=item,
            response_id=item.response_id,
            rater=rater,
            reason=reason,
            served_at=now,
            expires_at=now + ttl,
            **create_fields,
        )
    CampaignItem.objects.filter(pk=item.pk).update(
        reserved=F("reserved") + 1, open_slots=F("open_slots") - 1
    )
    return assignment


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
        if value is None or (
            isinstance(value, str) and value.strip().lower() in {"na", "n/a"}
        ):
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
    return assignment


def rating_submit(
    *,
    assignment_id: int,
    rater: User,
    scores: dict,
    rationales: dict | None = None,
    active_seconds: float | None = None,
    now: datetime | None = None,
) -> Assignment:
    """Save `rater`'s scores for one assignment and release its lock, in one transaction.

    `scores` maps every listed skill key to 1-5 or N/A (None / "na"); nothing else is
    accepted. Idempotent: submitting an already submitted assignment returns it
    unchanged (a double click or a retried POST creates nothing). A submit after the
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
) -> Assignment:
    refused = ""
    with transaction.atomic():
        assignment = _own_assignment_for_update(assignment_id, rater, lean=True)
        if assignment.status == Assignment.Status.SUBMITTED:
            return assignment
        if assignment.campaign.status != Campaign.Status.ACTIVE:
            raise DomainError(
                f"this campaign is {assignment.campaign.get_status_display().lower()}; "
                "scores can no longer be submitted"
            )
        if assignment.status == Assignment.Status.SKIPPED:
            raise DomainError("you skipped this response; it cannot be submitted")
        valid = _validate_scores(
            skills=assignment_skills(assignment=assignment),
            scores=scores,
            rationales=rationales,
        )
        item = None
        if assignment.status != Assignment.Status.SERVED:
            item = CampaignItem.objects.select_for_update().get(pk=assignment.item_id)
        if item is None:
            # The common case: the rater's own live slot becomes a submitted one, in
            # one UPDATE (it locks the item row like SELECT ... FOR UPDATE would).
            CampaignItem.objects.filter(pk=assignment.item_id).update(
                reserved=F("reserved") - 1, submitted=F("submitted") + 1
            )
        elif item.open_slots > 0:  # expired, but a slot is still free: take it
            item.open_slots -= 1
            item.submitted += 1
            assignment.note = "submitted after the lock expired; a slot was still free"
        else:
            refused = (
                "Your lock on this response expired and other raters completed it, so "
                "these scores were not counted."
            )
            assignment.note = (
                f"late submission at {now.isoformat()} refused: no free slot"
            )
            assignment.save(update_fields=["note"])
        if not refused:
            if item is not None:
                item.save(update_fields=["reserved", "submitted", "open_slots"])
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
            assignment.status = Assignment.Status.SUBMITTED
            assignment.submitted_at = now
            assignment.closed_at = now
            if active_seconds is not None and active_seconds >= 0:
                assignment.active_seconds = float(active_seconds)
            assignment.save(
                update_fields=[
                    "status",
                    "submitted_at",
                    "closed_at",
                    "active_seconds",
                    "note",
                ]
            )
            if assignment.rubric_frozen_at is None:
                rubric_freeze(rubric_id=assignment.rubric_id)
    if refused:
        raise DomainError(refused)
    return assignment


def assignment_skip(
    *, assignment_id: int, rater: User, reason: str, now: datetime | None = None
) -> Assignment:
    """Skip a served response with a reason; it goes back to the pool for others.

    The rater is never served it again. Idempotent for an already skipped assignment.
    """
    now = now or timezone.now()
    reason = (reason or "").strip()
    if not reason:
        raise DomainError("say why you skip", [Problem("is empty", field="reason")])
    with transaction.atomic():
        assignment = _own_assignment_for_update(assignment_id, rater)
        if assignment.status == Assignment.Status.SKIPPED:
            return assignment
        if assignment.status == Assignment.Status.SUBMITTED:
            raise DomainError("this response is already submitted; amend it instead")
        if assignment.status == Assignment.Status.SERVED:
            CampaignItem.objects.filter(pk=assignment.item_id).update(
                reserved=F("reserved") - 1, open_slots=F("open_slots") + 1
            )
        assignment.status = Assignment.Status.SKIPPED
        assignment.skip_reason = reason[:500]
        assignment.closed_at = now
        assignment.save(update_fields=["status", "skip_reason", "closed_at"])
    return assignment


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
