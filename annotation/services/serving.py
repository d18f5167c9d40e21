"""Serving campaign items to raters: the one set of rules for every item kind.

A campaign's `CampaignItem` rows are its items (a response for pointwise rating, a
pair for pairwise comparison); its `annotation.items.ItemKind` says what differs
between kinds, everything else is here: resume the rater's live assignment, the quota, the breadth-first pick
under ``FOR UPDATE SKIP LOCKED`` (and, in campaigns with a gold rate, the gold
items of `services.gold` interleaved), reserving a slot and why it was served, expiring
stale locks, taking the slot at submit (also late, while one is free), and skipping.

Fairness and the overlap invariant rest on `CampaignItem` rows: each holds
`open_slots = target - submitted - reserved`, changed only under that row's lock, and
a check constraint keeps `submitted <= target`. The texts recorded on assignments
(`served_reason`, `REVIVED_REASON`, the notes) are defined once here; the PostgreSQL
fast path (`serving_sql`) builds its SQL from the same constants.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cache

from django.contrib.auth.models import User
from django.db import connection, transaction
from django.db.models import Exists, F, OuterRef
from django.utils import timezone

from annotation.items import ItemKind
from annotation.models import Assignment, Campaign, CampaignItem, Skill
from annotation.services.exclusions import PAUSED_MESSAGE
from annotation.services.gold import gold_due, gold_pick
from annotation.services.qualification import qualification_gate
from flaskapp.errors import DomainError, Problem
from flaskapp.untrusted import text_problem

# Why an item was served (Assignment.reason): the templates take the kind's noun and
# verb and the item's counts; `serving_sql` renders the same templates in SQL.
REASON_PARTLY = "finishing a partly {verb} {noun} ({submitted} of {target})"
REASON_NEW_MANY = "new {noun}; {target} raters wanted"
REASON_NEW = "new {noun}"
REVIVED_REASON = "served again after your earlier lock expired"
# A sampling campaign's item (`services.sampling`): its inclusion probability and
# why it had that probability, e.g. "sampled: p=0.031 (judge uncertainty)".
REASON_SAMPLED = "sampled: p={p:.2g} ({why})"
# Notes recorded on assignments (Assignment.note).
EXPIRED_NOTE = "lock expired before submission; the response went back to the pool"
REMOVED_NOTE = "rater removed from the campaign; the lock was released to the pool"
ROLE_REMOVED_NOTE = "rater role removed; the lock was released to the pool"
LATE_ACCEPTED_NOTE = "submitted after the lock expired; a slot was still free"
MAX_SKIP_REASON = 500


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
    # Nothing was free for the rater (not the quota, a gate or a pause): expired
    # locks returned to the pool may still give them an item (`serve_next`).
    pool_empty: bool = False


def served_reason(kind: ItemKind, *, submitted: int, target: int) -> str:
    """The recorded reason for serving an item with `submitted` of `target` ratings."""
    if submitted:
        template = REASON_PARTLY
    elif target > 1:
        template = REASON_NEW_MANY
    else:
        template = REASON_NEW
    return template.format(
        noun=kind.noun, verb=kind.verb, submitted=submitted, target=target
    )


def sampled_reason(campaign: Campaign, item: CampaignItem) -> str:
    """The recorded reason for serving an item of a sampling campaign: its inclusion
    probability and the strategy that gave it (`Campaign.sampling["why"]`), with the
    item's progress when it is partly rated."""
    why = (campaign.sampling or {}).get("why") or "sampling plan"
    reason = REASON_SAMPLED.format(p=item.sampling_probability, why=why)
    if item.submitted:
        reason += f"; {item.submitted} of {item.target} rated"
    return reason


def item_reason(campaign: Campaign, item: CampaignItem, kind: ItemKind) -> str:
    """The recorded reason for serving the real `item`."""
    if getattr(item, "sampling_probability", None) is not None:
        return sampled_reason(campaign, item)
    return served_reason(kind, submitted=item.submitted, target=item.target)


def gold_reason(*, campaign: Campaign, rater: User, kind: ItemKind) -> str:
    """The reason recorded for a gold item served to `rater`: the one the real item
    served in its place would have carried (the first this rater could be served
    now, by the pick's order), so that nothing in the reason tells them apart: a
    gold item never reads "new" while the real items read "finishing a partly rated
    ..." (issue 34). With no real item left, that of a new item of the campaign.
    One query, on gold serves only."""
    mine = Assignment.objects.filter(
        campaign=campaign, rater=rater, item_id=OuterRef("pk")
    ).exclude(status=Assignment.Status.EXPIRED)
    stand_in = (
        CampaignItem.objects.filter(campaign=campaign, gold=False, open_slots__gt=0)
        .filter(~Exists(mine))
        .order_by("-submitted", "position")
        .first()
    )
    if stand_in is not None:
        return item_reason(campaign, stand_in, kind)
    target = campaign.overlap if campaign.overlap_percent >= 50 else 1
    return served_reason(kind, submitted=0, target=target)


def late_refused_note(now: datetime) -> str:
    return f"late submission at {now.isoformat()} refused: no free slot"


def assignments_expire(
    *, campaign_id: int | None = None, now: datetime | None = None
) -> int:
    """Return expired locks to the pool; returns how many assignments expired.

    Locks only assignments and items no one else holds (SKIP LOCKED), so it never
    waits on a rater's transaction and cannot deadlock with `assignment_next` or a
    submit; a skipped one expires on a later call. Each expired assignment keeps its row with status ``expired`` and a note.
    Idempotent. Runs in its own transaction.
    """
    now = now or timezone.now()
    stale = Assignment.objects.filter(
        status=Assignment.Status.SERVED, expires_at__lt=now
    )
    if campaign_id is not None:
        stale = stale.filter(campaign_id=campaign_id)
    return _release(stale, note=EXPIRED_NOTE, now=now, skip_locked=True)


def rater_locks_release(
    *,
    rater_id: int,
    campaign_ids: list[int] | None = None,
    note: str = REMOVED_NOTE,
    now: datetime | None = None,
) -> int:
    """Release the live locks of a rater who was taken out of campaigns
    (`campaign_ids`) or lost the rater role (every campaign, `campaign_ids=None`):
    each served assignment becomes ``expired`` with `note` as its recorded reason and
    its item goes back to the pool for the other raters. Submitted work is untouched.

    Called by `annotation.signals` on every membership or role removal (inside the
    transaction that removes the row, so both commit together). Waits for the rows a
    rater's transaction holds (the release must not be skipped): a submit already
    under way finishes first and counts, and its assignment is then not released.
    Idempotent. Returns how many locks were released."""
    held = Assignment.objects.filter(rater_id=rater_id, status=Assignment.Status.SERVED)
    if campaign_ids is not None:
        held = held.filter(campaign_id__in=campaign_ids)
    return _release(held, note=note, now=now or timezone.now(), skip_locked=False)


def _release(stale, *, note: str, now: datetime, skip_locked: bool) -> int:
    """Close the served assignments of `stale` as ``expired`` with `note` and give
    their slots back to the items, in one transaction; returns how many closed.

    Locks in the order submit and skip do, the assignment rows first and then their
    items (by id), so that it cannot deadlock with a rater's submit; the counts come
    from the locked rows, so a submit that committed meanwhile is not released twice.
    `skip_locked`: leave rows someone else holds for a later call instead of waiting.
    """
    if not stale.exists():
        return 0
    with transaction.atomic():
        locked = list(
            stale.select_for_update(skip_locked=skip_locked)
            .order_by("pk")
            .values_list("pk", "item_id")
        )
        if not locked:
            return 0
        item_ids = set(
            CampaignItem.objects.select_for_update(skip_locked=skip_locked)
            .filter(pk__in={item_id for _, item_id in locked})
            .order_by("pk")
            .values_list("pk", flat=True)
        )
        ids, counts = [], {}
        for pk, item_id in locked:
            if item_id in item_ids:
                ids.append(pk)
                counts[item_id] = counts.get(item_id, 0) + 1
        if not ids:
            return 0
        released = Assignment.objects.filter(pk__in=ids).update(
            status=Assignment.Status.EXPIRED, closed_at=now, note=note
        )
        for item_id, n in counts.items():
            CampaignItem.objects.filter(pk=item_id, gold=False).update(
                reserved=F("reserved") - n, open_slots=F("open_slots") + n
            )
    return released


def quota_reached(campaign: Campaign, rater: User) -> bool:
    if campaign.rater_quota is None:
        return False
    taken = Assignment.objects.filter(
        campaign=campaign,
        rater=rater,
        status__in=[Assignment.Status.SUBMITTED, Assignment.Status.SERVED],
    ).count()
    return taken >= campaign.rater_quota


@cache
def lock_rater_sql() -> str:
    """Locks the rater's user row: one rater's concurrent serving calls queue."""
    table = connection.ops.quote_name(User._meta.db_table)
    return f"SELECT 1 FROM {table} WHERE id = %s FOR UPDATE"


def serve_next(
    *,
    campaign: Campaign,
    rater: User,
    now: datetime,
    kind: ItemKind,
    fast: Callable[..., NextResult | None] | None = None,
) -> NextResult:
    """Serve `rater` the next item of `campaign` (or resume the one they hold).

    In one transaction, under a lock on the rater's user row (one rater's parallel
    calls, a double click or two tabs, serialise, and the second resumes the first's
    assignment): the rules of `serve_next_locked`. `fast(campaign=, rater=, now=,
    ttl=)`, when given, is a faster rendering of the same rules for the common case
    (the PostgreSQL path): it takes the rater lock itself and returns None when these
    rules must decide. When nothing is free, stale locks are expired in a
    transaction of their own (`assignments_expire`) and, if any came back, the rules
    run once more. A campaign that is not active serves nothing, and says so; nor
    does one that paused this rater (`services.exclusions`, pointwise and pairwise).
    """
    if campaign.status != Campaign.Status.ACTIVE:
        return NextResult(
            None, f"This campaign is {campaign.get_status_display().lower()}."
        )
    if rater.pk in (campaign.paused_raters or []):  # read with the campaign
        return NextResult(None, message=PAUSED_MESSAGE)
    ttl = timedelta(minutes=campaign.lock_ttl_minutes)
    with transaction.atomic():
        if fast is not None:
            served = fast(campaign=campaign, rater=rater, now=now, ttl=ttl)
            if served is not None:
                return served
        else:
            User.objects.select_for_update().filter(pk=rater.pk).first()
        result = serve_next_locked(
            campaign=campaign, rater=rater, now=now, ttl=ttl, kind=kind
        )
    # Nothing free: return stale locks to the pool in their own transaction, then
    # serve again. Expiring inside the serving transaction would hold the released
    # items' row locks while the pick waits for items others hold: two raters doing
    # that at once deadlock (seen under 8 concurrent pairwise raters).
    if result.pool_empty and assignments_expire(campaign_id=campaign.pk, now=now):
        with transaction.atomic():
            User.objects.select_for_update().filter(pk=rater.pk).first()
            result = serve_next_locked(
                campaign=campaign, rater=rater, now=now, ttl=ttl, kind=kind
            )
    return result


def serve_next_locked(
    *,
    campaign: Campaign,
    rater: User,
    now: datetime,
    ttl: timedelta,
    kind: ItemKind,
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
    if quota_reached(campaign, rater):
        return NextResult(
            None,
            f"You have reached this campaign's quota of "
            f"{campaign.rater_quota} {kind.noun}s. Thank you!",
        )

    if campaign.qualification_size and kind.serves_gold:
        gate = qualification_gate(campaign=campaign, rater=rater)
        if gate.item is not None:  # a qualification item, before any real one
            assignment = reserve_item(
                campaign=campaign,
                item=gate.item,
                rater=rater,
                now=now,
                ttl=ttl,
                kind=kind,
                qualification=gate.attempt,
            )
            kind.reserved(assignment)
            assignment.campaign = campaign
            return NextResult(assignment)
        if gate.message:  # failed: nothing more is served
            return NextResult(None, gate.message)
    if (
        campaign.gold_rate
        and kind.serves_gold
        and gold_due(campaign=campaign, rater=rater)
    ):
        gold = gold_pick(campaign=campaign, rater=rater)
        if gold is not None:  # served like any item (services.gold)
            assignment = reserve_item(
                campaign=campaign, item=gold, rater=rater, now=now, ttl=ttl, kind=kind
            )
            kind.reserved(assignment)
            assignment.campaign = campaign
            return NextResult(assignment)
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
    # Stale locks are expired by `serve_next` when nothing is free, and by the
    # periodic task otherwise, so the common path stays a single pick query.
    item = pick.first()
    if item is None:
        # SKIP LOCKED passes over items another transaction holds for a moment (a
        # rater being served one, a submit or skip in flight). Before saying "done" or
        # "locked by others", wait for those: their commit may leave a slot for this
        # rater (PostgreSQL re-checks the filter on the committed row). Row locks on
        # items are held only by short serving, submit and skip transactions, and this
        # one holds no item lock (expiry runs in a transaction of its own), so the
        # wait is brief and cannot deadlock.
        item = pick.select_for_update(skip_locked=False).first()
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
                pool_empty=True,
            )
        return NextResult(
            None,
            "You are done: nothing in this campaign is left for you.",
            pool_empty=True,
        )
    assignment = reserve_item(
        campaign=campaign,
        item=item,
        rater=rater,
        now=now,
        ttl=ttl,
        kind=kind,
        **kind.extra(campaign, item, rater),
    )
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
    kind: ItemKind,
    **create_fields,
) -> Assignment:
    """Serve the picked `item` (locked by the caller) to `rater`: revive the rater's own
    expired assignment of it or create one (with `create_fields`, e.g. a pair's shown
    order), record why it was served, and take one open slot.

    Shared by pointwise and pairwise serving (`serve_next_locked`).
    `item` carries `mine_expired` (the rater holds an expired assignment of it).
    """
    if item.gold:
        reason = gold_reason(campaign=campaign, rater=rater, kind=kind)
    else:
        reason = item_reason(campaign, item, kind)
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
        previous.reason = REVIVED_REASON
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
            gold=item.gold,
            **create_fields,
        )
    # A gold item has no slots (CampaignItem.gold): every rater may take it.
    CampaignItem.objects.filter(pk=item.pk, gold=False).update(
        reserved=F("reserved") + 1, open_slots=F("open_slots") - 1
    )
    return assignment


def submit_check(assignment: Assignment, kind: ItemKind) -> None:
    """Refuse a submit of an assignment that cannot take one: the campaign is not
    active, or the rater skipped it (`DomainError`). A submitted assignment is the
    caller's business (submits are idempotent)."""
    campaign = assignment.campaign
    if campaign.status != Campaign.Status.ACTIVE:
        raise DomainError(
            f"this campaign is {campaign.get_status_display().lower()}; "
            f"{kind.answer} can no longer be submitted"
        )
    if assignment.status == Assignment.Status.SKIPPED:
        raise DomainError(f"you skipped this {kind.noun}; it cannot be submitted")


def submit_take_slot(*, assignment: Assignment, kind: ItemKind, now: datetime) -> str:
    """Count a submit against the item, under the caller's lock on the assignment.

    A live assignment's reserved slot becomes a submitted one (one UPDATE, which locks
    the item row). An expired one takes a free slot when there is one (noted on the
    assignment, saved by the caller); otherwise the refusal is noted and saved here
    and its message returned, for the caller to raise after committing the note.
    Returns "" when the submit counts.
    """
    if assignment.status == Assignment.Status.SERVED:
        CampaignItem.objects.filter(pk=assignment.item_id, gold=False).update(
            reserved=F("reserved") - 1, submitted=F("submitted") + 1
        )
        return ""
    item = CampaignItem.objects.select_for_update().get(pk=assignment.item_id)
    if item.gold:  # no slots to run out of
        assignment.note = LATE_ACCEPTED_NOTE
        return ""
    if item.open_slots > 0:
        CampaignItem.objects.filter(pk=item.pk).update(
            open_slots=F("open_slots") - 1, submitted=F("submitted") + 1
        )
        assignment.note = LATE_ACCEPTED_NOTE
        return ""
    assignment.note = late_refused_note(now)
    assignment.save(update_fields=["note"])
    return (
        f"Your lock on this {kind.noun} expired and other raters completed it, so "
        f"{kind.lost}."
    )


def submit_close(
    *, assignment: Assignment, now: datetime, active_seconds: float | None
) -> None:
    """Mark the assignment submitted (after `submit_take_slot` counted it) with the
    rater's active seconds when given, and save it with the slot's note."""
    assignment.status = Assignment.Status.SUBMITTED
    assignment.submitted_at = now
    assignment.closed_at = now
    if active_seconds is not None and active_seconds >= 0:
        assignment.active_seconds = float(active_seconds)
    assignment.save(
        update_fields=["status", "submitted_at", "closed_at", "active_seconds", "note"]
    )


def skip_reason_clean(reason) -> str:
    """The stripped skip reason; `DomainError` naming `reason` when there is none."""
    reason = reason.strip() if isinstance(reason, str) else ""
    if not reason:
        raise DomainError("say why you skip", [Problem("is empty", field="reason")])
    if problem := text_problem(reason):
        raise DomainError(
            f"the skip reason {problem}", [Problem(problem, field="reason")]
        )
    return reason[:MAX_SKIP_REASON]


def skip_locked(
    *, assignment: Assignment, kind: ItemKind, reason: str, now: datetime
) -> Assignment:
    """Skip the rater's own assignment (locked by the caller) with a cleaned `reason`:
    a live slot goes back to the pool and the rater is never served the item again.
    Idempotent for a skipped assignment; a submitted one is refused (`DomainError`)."""
    if assignment.status == Assignment.Status.SKIPPED:
        return assignment
    if assignment.status == Assignment.Status.SUBMITTED:
        raise DomainError(f"this {kind.noun} is already submitted{kind.skip_submitted}")
    if assignment.status == Assignment.Status.SERVED:
        CampaignItem.objects.filter(pk=assignment.item_id, gold=False).update(
            reserved=F("reserved") - 1, open_slots=F("open_slots") + 1
        )
    assignment.status = Assignment.Status.SKIPPED
    assignment.skip_reason = reason
    assignment.closed_at = now
    assignment.save(update_fields=["status", "skip_reason", "closed_at"])
    return assignment
