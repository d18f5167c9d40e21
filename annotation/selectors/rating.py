"""Reads for rating campaigns (re-exported by `annotation.selectors`).

Raters only ever reach their own campaigns and assignments: the `_for_rater` reads
raise `Http404` otherwise, so a foreign id looks exactly like a missing one.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from functools import cache

from django.contrib.auth.models import Group, User
from django.db import connection
from django.db.models import Count, Prefetch, Q, QuerySet, Sum
from django.http import Http404

from annotation import membership
from annotation.models import (
    Assignment,
    Campaign,
    CampaignItem,
    HumanScore,
    InstructionSkill,
    Qualification,
    Skill,
)
from annotation.scales import Scale, scale_of
from annotation.selectors.gold import gold_schedule_left, items_left_counts
from annotation.sqlrows import columns, concrete_attnames, from_row, prepared_cursor
from flaskapp import roles, workspaces
from flaskapp.models import Membership


def campaign_list_for_user(*, user, workspace=None) -> QuerySet[Campaign]:
    """Researchers see every campaign of the workspaces where they are researchers;
    raters the open campaigns they are in, of workspaces they belong to. `workspace`
    narrows the list to one workspace (the pages' current one)."""
    qs = Campaign.objects.select_related("dataset", "created_by").order_by(
        "-created_at", "-id"
    )
    if workspace is not None:
        qs = qs.filter(workspace=workspace)
    if not (roles.is_researcher(user) or roles.is_rater(user)):
        roles.require_researcher(user)  # raises
    mine = Q(
        raters=user.pk,
        status__in=[Campaign.Status.ACTIVE, Campaign.Status.PAUSED],
    )
    research_ids = workspaces.workspace_ids_with_role(user, workspaces.RESEARCHER)
    if research_ids is None:
        return qs
    member_ids = workspaces.workspace_ids_for_user(user)
    return qs.filter(
        Q(workspace_id__in=research_ids) | (mine & Q(workspace_id__in=member_ids))
    ).distinct()


@dataclass
class RaterCampaignRow:
    """One campaign a rater works in, with their own counts (`rater_campaign_rows`)."""

    campaign: Campaign
    submitted: int = 0
    skipped: int = 0
    in_progress: int = 0
    # Items the rater may still be served (`rater_items_left`).
    open_slots: int = 0
    # Median active seconds per item: the rater's own in this campaign, else the
    # campaign's (every rater's), else None (`_seconds_per_item`).
    seconds_per_item: float | None = None
    seconds_source: str = ""  # "yours" or "campaign"

    @property
    def left(self) -> int:
        """Items still to do: the ones open now and the ones still to be served."""
        return self.in_progress + self.open_slots

    @property
    def total(self) -> int:
        """Done plus left (skipped items are neither)."""
        return self.submitted + self.left

    @property
    def minutes_left(self) -> int | None:
        """About how many minutes the items left take at `seconds_per_item`
        (rounded up; None without a measured time or with nothing left)."""
        if not self.left or not self.seconds_per_item:
            return None
        return max(1, math.ceil(self.left * self.seconds_per_item / 60))

    @property
    def done_text(self) -> str:
        """ "12 of 48 done, about 20 min left": the rater's home's one line."""
        text = f"{self.submitted} of {self.total} done"
        if self.minutes_left is not None:
            text += f", about {self.minutes_left} min left"
        elif not self.left and self.total:
            text += ", nothing left"
        return text

    @property
    def is_pairwise(self) -> bool:
        return self.campaign.kind == Campaign.Kind.PAIRWISE

    @property
    def is_paused(self) -> bool:
        return self.campaign.status == Campaign.Status.PAUSED

    @property
    def label(self) -> str:
        """The rater's own progress, in the campaign's unit (ratings or comparisons)."""
        if self.campaign.rater_quota:
            return f"{self.submitted} of {self.campaign.rater_quota}"
        return f"{self.submitted} {'compared' if self.is_pairwise else 'rated'}"


def rater_campaign_rows(*, user, kind: str | None = None) -> list[RaterCampaignRow]:
    """The campaigns `user` has rating work in, with their own counts: the one rule
    for every page that lists a rater's work (the home page, /rate/, /pairwise/).

    Active or paused campaigns that list `user` as a rater, newest first, of both
    kinds (pointwise and pairwise) unless `kind` narrows them; none for a user
    without the rater role; each row with the rater's time left
    (`_seconds_per_item`). 5 queries at most.
    """
    if not roles.is_rater(user):
        return []
    qs = workspaces.scope_queryset(
        Campaign.objects.filter(
            raters=user, status__in=[Campaign.Status.ACTIVE, Campaign.Status.PAUSED]
        ),
        user,
    ).order_by("-created_at", "-id")
    if kind is not None:
        qs = qs.filter(kind=kind)
    rows = {c.pk: RaterCampaignRow(campaign=c) for c in qs}
    if not rows:
        return []
    statuses: dict[int, dict[str, int]] = {pk: {} for pk in rows}
    for campaign_id, status, n in (
        Assignment.objects.filter(rater=user, campaign_id__in=rows)
        .values_list("campaign_id", "status")
        .annotate(n=Count("id"))
        .order_by()
    ):
        statuses[campaign_id][status] = n
        row = rows[campaign_id]
        if status == Assignment.Status.SUBMITTED:
            row.submitted = n
        elif status == Assignment.Status.SKIPPED:
            row.skipped = n
        elif status == Assignment.Status.SERVED:
            row.in_progress = n
    left = rater_items_left(
        user=user, campaigns=[r.campaign for r in rows.values()], statuses=statuses
    )
    for campaign_id, n in left.items():
        rows[campaign_id].open_slots = n
    _seconds_per_item(user=user, rows=rows)
    return list(rows.values())


# How many of a campaign's latest timed items its median reads (a bounded query).
CAMPAIGN_MEDIAN_SAMPLE = 500


def _seconds_per_item(*, user, rows: dict[int, RaterCampaignRow]) -> None:
    """Set each row's `seconds_per_item`: the median active time of the rater's own
    submitted items in the campaign, or, before they have one, the campaign's (its
    latest CAMPAIGN_MEDIAN_SAMPLE timed items). Times of 0 s (not measured) are left
    out. Two queries at most."""
    timed = Assignment.objects.filter(
        campaign_id__in=rows,
        status=Assignment.Status.SUBMITTED,
        active_seconds__gt=0,
    )
    mine: dict[int, list[float]] = {}
    for campaign_id, seconds in timed.filter(rater=user).values_list(
        "campaign_id", "active_seconds"
    ):
        mine.setdefault(campaign_id, []).append(seconds)
    for campaign_id, values in mine.items():
        rows[campaign_id].seconds_per_item = statistics.median(values)
        rows[campaign_id].seconds_source = "yours"
    others = [pk for pk, row in rows.items() if pk not in mine and row.left]
    if not others:
        return
    theirs: dict[int, list[float]] = {}
    for campaign_id, seconds in (
        timed.filter(campaign_id__in=others)
        .order_by("-submitted_at")
        .values_list("campaign_id", "active_seconds")[
            : CAMPAIGN_MEDIAN_SAMPLE * len(others)
        ]
    ):
        theirs.setdefault(campaign_id, []).append(seconds)
    for campaign_id, values in theirs.items():
        rows[campaign_id].seconds_per_item = statistics.median(values)
        rows[campaign_id].seconds_source = "campaign"


def rater_items_left(
    *, user, campaigns: list[Campaign], statuses: dict[int, dict[str, int]]
) -> dict[int, int]:
    """Per campaign, how many more items `user` may be served: the one count of work
    left that a rater reads (the API's `available`, the campaign cards).

    It counts what the serving rules would serve this rater if nobody else acted:
    the real items they have not been served that still have an open slot, the
    qualification items still to come, the gold items the interleaving would reach
    (`selectors.gold.gold_schedule_left`), within what is left of their quota. So
    every item served, skipped or submitted moves it exactly alike whether the item
    is a gold item, an attention check or a real one: no count tells them apart
    (issue 34). `statuses`: each campaign's ``{status: n}`` of the rater's
    assignments. One query, and one more per campaign with a qualification.
    """
    counts = items_left_counts(rater_id=user.pk, campaign_ids=[c.pk for c in campaigns])
    out = {}
    for campaign in campaigns:
        mine = statuses.get(campaign.pk, {})
        real, gold = counts.get(campaign.pk, (0, 0))
        position = sum(
            mine.get(s, 0)
            for s in (
                Assignment.Status.SUBMITTED,
                Assignment.Status.SKIPPED,
                Assignment.Status.SERVED,
            )
        )
        qualifying = 0
        if campaign.qualification_size and campaign.kind == Campaign.Kind.POINTWISE:
            attempt = (
                Qualification.objects.filter(campaign=campaign, rater_id=user.pk)
                .annotate(
                    taken=Count(
                        "assignments",
                        filter=~Q(assignments__status=Assignment.Status.EXPIRED),
                    )
                )
                .order_by("-attempt")
                .first()
            )
            if attempt is not None and attempt.status == Qualification.Status.FAILED:
                out[campaign.pk] = 0
                continue
            if attempt is None:
                qualifying = campaign.qualification_size
            elif attempt.status == Qualification.Status.IN_PROGRESS:
                qualifying = max(attempt.items - attempt.taken, 0)
            qualifying = min(qualifying, gold)
        left = qualifying + gold_schedule_left(
            campaign=campaign,
            rater_id=user.pk,
            position=position + qualifying,
            real=real,
            gold=gold - qualifying,
        )
        if campaign.rater_quota is not None:
            taken = mine.get(Assignment.Status.SUBMITTED, 0) + mine.get(
                Assignment.Status.SERVED, 0
            )
            left = min(left, max(campaign.rater_quota - taken, 0))
        out[campaign.pk] = left
    return out


def campaign_get_for_user(*, user, campaign_id: int) -> Campaign:
    """A campaign for its researchers' pages: 404 for another workspace's, 403 below
    researcher in its workspace."""
    workspaces.require_role_somewhere(user, workspaces.RESEARCHER)
    campaign = (
        Campaign.objects.select_related("dataset", "dataset__rubric", "created_by")
        .filter(pk=campaign_id)
        .first()
    )
    if campaign is None:
        raise Http404("No such campaign.")
    workspaces.require_object_role(user, campaign, workspaces.RESEARCHER)
    return campaign


def campaign_get_for_rater(
    *, user, campaign_id: int, with_dataset: bool = True, kind: str = "pointwise"
) -> Campaign:
    """A campaign of `kind` (pointwise by default: the rating pages and API) that `user`
    rates in; any other id, or a campaign of the other kind, is a 404 (no existence
    leak; pairwise campaigns have their own pages, `annotation.views.pairwise`). A
    rater removed from it (or whose rater role was removed) who worked in it gets a
    403 naming the reason instead (`membership.explain_missing_campaign`).

    `with_dataset=False` (the API's next, a hot path) skips loading the dataset and
    rubric rows, which serving and rendering the form do not read; on PostgreSQL it is
    one prepared hand-written query (same rules; roles cached on the user by the token
    check are used instead of a join).
    """
    if (
        not with_dataset
        and kind == Campaign.Kind.POINTWISE
        and (connection.vendor == "postgresql")
    ):
        campaign = _campaign_get_for_rater_sql(user=user, campaign_id=campaign_id)
        if campaign is None:
            membership.explain_missing_campaign(user, campaign_id, kind)
            raise Http404("No such campaign.")
        return campaign
    qs = Campaign.objects.filter(kind=kind)
    if with_dataset:
        qs = qs.select_related("dataset", "dataset__rubric")
    if getattr(user, "_flask_roles", None) is None and user.is_authenticated:
        # The role check rides along with the membership join (no roles query). Both
        # conditions in one filter() call, so that they apply to the same rater row.
        campaign = qs.filter(
            pk=campaign_id, raters=user, raters__groups__name=roles.RATER
        ).first()
        is_rater = campaign is not None
    else:
        campaign = qs.filter(pk=campaign_id, raters=user).first()
        is_rater = roles.is_rater(user)
    if (
        campaign is not None
        and workspaces.workspace_role(user, campaign.workspace_id) is None
    ):
        # Rating happens inside the campaign's workspace: a rater who left it (or
        # was never in it) does not see the campaign.
        campaign = None
    if campaign is None or not is_rater:
        membership.explain_missing_campaign(user, campaign_id, kind)
        raise Http404("No such campaign.")
    return campaign


@cache
def _campaign_for_rater_sql(check_role: bool) -> str:
    q = connection.ops.quote_name
    raters = q(Campaign.raters.through._meta.db_table)
    role = (
        f" JOIN {q(User.groups.through._meta.db_table)} ug ON ug.user_id = m.user_id "
        f"JOIN {q(Group._meta.db_table)} g ON g.id = ug.group_id AND g.name = %(role)s"
        if check_role
        else ""
    )
    members = q(Membership._meta.db_table)
    return (
        f"SELECT {columns(Campaign, concrete_attnames(Campaign), 'c')} "
        f"FROM {q(Campaign._meta.db_table)} c WHERE c.id = %(campaign)s "
        f"AND c.kind = '{Campaign.Kind.POINTWISE}' AND EXISTS "
        f"(SELECT 1 FROM {raters} m{role} WHERE m.campaign_id = c.id "
        "AND m.user_id = %(user)s) "
        # Only inside the campaign's workspace (issue 35).
        f"AND EXISTS (SELECT 1 FROM {members} wm WHERE wm.workspace_id = "
        "c.workspace_id AND wm.user_id = %(user)s)"
    )


def _campaign_get_for_rater_sql(*, user, campaign_id: int) -> Campaign | None:
    """`campaign_get_for_rater(with_dataset=False)` in one hand-written query (the
    API's `next`, PostgreSQL): the same membership and role rules."""
    if not user.is_authenticated:
        return None
    cached_roles = getattr(user, "_flask_roles", None)
    if cached_roles is not None and roles.RATER not in cached_roles:
        return None
    with prepared_cursor() as cursor:
        cursor.execute(
            _campaign_for_rater_sql(cached_roles is None),
            {"campaign": campaign_id, "user": user.pk, "role": roles.RATER},
        )
        row = cursor.fetchone()
    if row is None:
        return None
    return from_row(Campaign, concrete_attnames(Campaign), row)


def assignment_get_for_rater(*, user, assignment_id: int) -> Assignment:
    """One of `user`'s own assignments with everything the rating form shows."""
    assignment = (
        Assignment.objects.select_related(
            "campaign", "campaign__dataset", "response", "response__instruction", "item"
        )
        .prefetch_related(
            Prefetch(
                "response__instruction__skill_links",
                InstructionSkill.objects.select_related("skill"),
            ),
            Prefetch("scores", HumanScore.objects.select_related("skill")),
        )
        .filter(pk=assignment_id, rater=user, pair__isnull=True)
        .first()
    )
    if assignment is None:
        raise Http404("No such assignment.")
    membership.require_campaign_rater(user, assignment.campaign_id)
    return assignment


def assignment_scores_for_rater(*, user, assignment_id: int) -> Assignment:
    """One of `user`'s own assignments with only their scores (and skills) loaded."""
    assignment = (
        Assignment.objects.prefetch_related(
            Prefetch("scores", HumanScore.objects.select_related("skill"))
        )
        .filter(pk=assignment_id, rater=user, pair__isnull=True)
        .first()
    )
    if assignment is None:
        raise Http404("No such assignment.")
    membership.require_campaign_rater(user, assignment.campaign_id)
    return assignment


# Which skills a rater scores, per campaign skill mode: the first of these sources
# that lists any. "chosen": the campaign's list; "instruction": the instruction's own
# skills, most relevant first; "rubric": every skill of the dataset's rubric. One rule
# for both renderings: `assignment_skills` below and the SQL of `services.serving_sql`.
SKILL_SOURCES: dict[str, tuple[str, ...]] = {
    Campaign.SkillMode.CHOSEN: ("chosen",),
    Campaign.SkillMode.INSTRUCTION: ("instruction", "rubric"),
    Campaign.SkillMode.ALL: ("rubric",),
}


def _instruction_skills(assignment: Assignment) -> list[Skill]:
    response = assignment._state.fields_cache.get("response")
    instruction = response._state.fields_cache.get("instruction") if response else None
    # Submit's lean read annotates the instruction's id instead of loading rows.
    instruction_id = getattr(assignment, "instruction_id", None)
    if instruction is not None and "skill_links" in getattr(
        instruction, "_prefetched_objects_cache", {}
    ):
        links = sorted(instruction.skill_links.all(), key=lambda x: x.rank)
    else:
        links_qs = InstructionSkill.objects.select_related("skill").order_by("rank")
        if response is not None:
            links_qs = links_qs.filter(instruction_id=response.instruction_id)
        elif instruction_id is not None:
            links_qs = links_qs.filter(instruction_id=instruction_id)
        else:
            links_qs = links_qs.filter(instruction__responses=assignment.response_id)
        links = list(links_qs)
    return [link.skill for link in links]


def campaign_skills(*, campaign: Campaign) -> list[Skill]:
    """Every criterion a rater of `campaign` may be asked about: the chosen skills
    (skill mode "chosen"), else the rubric's, in rubric order. One query. For pages
    that describe the campaign as a whole (the keyboard help, the campaign page)."""
    if campaign.skill_mode == Campaign.SkillMode.CHOSEN:
        return list(campaign.chosen_skills.order_by("position", "id"))
    return list(
        Skill.objects.filter(rubric__datasets__campaigns=campaign.pk).order_by(
            "position", "id"
        )
    )


@dataclass(frozen=True)
class CampaignCriterion:
    """One criterion a campaign asks about, with its `Scale` (for campaign pages)."""

    skill: Skill
    scale: Scale

    @property
    def scale_text(self) -> str:
        """ "1-10, N/A allowed", "yes / no" """
        if self.scale.is_categorical:
            text = " / ".join(self.scale.names)
        else:
            text = self.scale.label
        return text + (", N/A allowed" if self.scale.allow_na else "")


def campaign_criteria(*, campaign: Campaign) -> list[CampaignCriterion]:
    """`campaign_skills` with each criterion's scale. One query."""
    return [
        CampaignCriterion(skill=s, scale=scale_of(s))
        for s in campaign_skills(campaign=campaign)
    ]


def campaign_task_label(*, campaign: Campaign, scales) -> str:
    """What a campaign asks raters, as pages name it: "Pairwise preference",
    "Critique" (a critique instead of scores), "Classification" (pointwise, every
    criterion it covers categorical) or "Pointwise scores"; with ", with a critique"
    when a critique is asked next to the scores. The one rule for the label: a
    classification campaign is a pointwise one whose criteria are all categorical."""
    if campaign.kind == Campaign.Kind.PAIRWISE:
        return "Pairwise preference"
    if campaign.critique == Campaign.Critique.ONLY:
        return "Critique"
    scales = list(scales)
    label = (
        "Classification"
        if scales and all(s.is_categorical for s in scales)
        else "Pointwise scores"
    )
    if campaign.critique == Campaign.Critique.WITH_SCORES:
        label += ", with a critique"
    return label


def assignment_skills(*, assignment: Assignment) -> list[Skill]:
    """The skills to score for `assignment`, per its campaign's skill mode
    (`SKILL_SOURCES`).

    One query at most (none for the instruction's skills when
    `assignment_get_for_rater` prefetched the links).
    """
    campaign = assignment.campaign
    skills: list[Skill] = []
    for source in SKILL_SOURCES[campaign.skill_mode]:
        if source == "chosen":
            skills = list(campaign.chosen_skills.order_by("position", "id"))
        elif source == "instruction":
            skills = _instruction_skills(assignment)
        else:
            skills = list(
                Skill.objects.filter(rubric__datasets__campaigns=campaign.pk).order_by(
                    "position", "id"
                )
            )
        if skills:
            break
    return skills


def rater_assignments(*, user, campaign: Campaign) -> QuerySet[Assignment]:
    """`user`'s submitted and skipped work in `campaign`, newest first (review list),
    with their own scores (`scores`, skill joined, in rubric order) prefetched: one
    query for the page's assignments and one for their scores."""
    return (
        Assignment.objects.filter(campaign=campaign, rater=user)
        .exclude(status=Assignment.Status.SERVED)
        .select_related("response", "response__instruction")
        .prefetch_related(
            Prefetch(
                "scores",
                HumanScore.objects.select_related("skill").order_by(
                    "skill__position", "skill_id"
                ),
            )
        )
        .order_by("-closed_at", "-id")
    )


@dataclass
class RaterProgress:
    submitted: int
    skipped: int
    quota: int | None
    available: int | None  # items the rater may still be served, when asked for

    @property
    def label(self) -> str:
        if self.quota:
            return f"{self.submitted} of {self.quota}"
        return f"{self.submitted} rated"


def rater_progress(
    *,
    user,
    campaign: Campaign,
    with_available: bool = False,
    counts: tuple[int, int] | None = None,
) -> RaterProgress:
    """The rater's own counts: one indexed query on the hot path, none when `counts`
    (``(submitted, skipped)``, as `services.assignment_next` may hand them over) is
    given.

    `with_available` adds `rater_items_left` (a scan of the campaign's items);
    pages that show it ask for it, the next/submit loop does not.
    """
    if counts is not None:
        counts = {
            Assignment.Status.SUBMITTED: counts[0],
            Assignment.Status.SKIPPED: counts[1],
        }
    else:
        counts = dict(
            Assignment.objects.filter(campaign=campaign, rater=user)
            .values_list("status")
            .annotate(n=Count("id"))
        )
    available = None
    if with_available:
        available = rater_items_left(
            user=user, campaigns=[campaign], statuses={campaign.pk: counts}
        )[campaign.pk]
    return RaterProgress(
        submitted=counts.get(Assignment.Status.SUBMITTED, 0),
        skipped=counts.get(Assignment.Status.SKIPPED, 0),
        quota=campaign.rater_quota,
        available=available,
    )


@dataclass
class RaterRow:
    rater_id: int
    username: str
    submitted: int
    skipped: int
    expired: int
    in_progress: int
    median_seconds: float | None
    median_active_seconds: float | None
    # No longer one of the campaign's raters, or no longer has the rater role: their
    # submitted work is kept (and counted), and the campaign page says so.
    removed: bool = False
    # An account holding human scores imported with a dataset file (never a rater in
    # the role sense, so never "removed"): the campaign page marks it "imported".
    imported: bool = False
    # Gold items (and qualification items) submitted: not in `submitted`, which counts
    # real items only, as the campaign's totals do.
    gold: int = 0


@dataclass
class CampaignProgress:
    responses: int
    responses_done: int
    ratings_needed: int
    ratings_submitted: int
    locked: int
    raters: list[RaterRow] = field(default_factory=list)
    # Score rows (one per skill) of the submitted assignments of removed raters
    # (pointwise; a pairwise campaign has none).
    removed_scores: int = 0

    @property
    def removed_submitted(self) -> int:
        """Submitted assignments from raters who were removed since."""
        return sum(r.submitted for r in self.raters if r.removed)

    @property
    def percent(self) -> int:
        if not self.ratings_needed:
            return 100
        return int(100 * self.ratings_submitted / self.ratings_needed)


def campaign_progress(*, campaign: Campaign) -> CampaignProgress:
    """Campaign totals and per-rater counts with median seconds per response.

    Raters removed from the campaign, or whose rater role was removed, keep their row
    (marked `removed`) and their submitted work counts in every total as before."""
    totals = CampaignItem.objects.filter(campaign=campaign, gold=False).aggregate(
        responses=Count("id"),
        done=Count("id", filter=Q(submitted__gte=1) & Q(open_slots=0) & Q(reserved=0)),
        needed=Sum("target"),
        submitted=Sum("submitted"),
        locked=Sum("reserved"),
    )
    rows: dict[int, dict] = {}
    for (
        rater_id,
        username,
        status,
        served,
        submitted,
        active,
        gold,
    ) in Assignment.objects.filter(campaign=campaign).values_list(
        "rater_id",
        "rater__username",
        "status",
        "served_at",
        "submitted_at",
        "active_seconds",
        "gold",
    ):
        row = rows.setdefault(
            rater_id,
            {"username": username, "counts": {}, "durations": [], "active": [],
             "gold": 0},
        )  # fmt: skip
        if gold and status == Assignment.Status.SUBMITTED:
            row["gold"] += 1
        else:
            row["counts"][status] = row["counts"].get(status, 0) + 1
        # Imported scores were not timed here: no durations for their accounts.
        timed = not roles.is_imported_account(username)
        if status == Assignment.Status.SUBMITTED and submitted and timed:
            row["durations"].append((submitted - served).total_seconds())
            if active is not None:
                row["active"].append(active)
    current = set(
        campaign.raters.filter(groups__name=roles.RATER).values_list("pk", flat=True)
    )
    imported = {
        rid for rid, r in rows.items() if roles.is_imported_account(r["username"])
    }
    raters = [
        RaterRow(
            removed=rid not in current and rid not in imported,
            imported=rid in imported,
            rater_id=rid,
            username=r["username"],
            submitted=r["counts"].get(Assignment.Status.SUBMITTED, 0),
            skipped=r["counts"].get(Assignment.Status.SKIPPED, 0),
            expired=r["counts"].get(Assignment.Status.EXPIRED, 0),
            in_progress=r["counts"].get(Assignment.Status.SERVED, 0),
            gold=r["gold"],
            median_seconds=statistics.median(r["durations"])
            if r["durations"]
            else None,
            median_active_seconds=statistics.median(r["active"])
            if r["active"]
            else None,
        )
        for rid, r in sorted(rows.items(), key=lambda kv: kv[1]["username"])
    ]
    removed = [r.rater_id for r in raters if r.removed and r.submitted]
    removed_scores = (
        HumanScore.objects.filter(
            assignment__campaign=campaign,
            assignment__rater_id__in=removed,
            assignment__status=Assignment.Status.SUBMITTED,
        ).count()
        if removed
        else 0
    )
    return CampaignProgress(
        removed_scores=removed_scores,
        responses=totals["responses"] or 0,
        responses_done=totals["done"] or 0,
        ratings_needed=totals["needed"] or 0,
        ratings_submitted=totals["submitted"] or 0,
        locked=totals["locked"] or 0,
        raters=raters,
    )


def campaign_locked_assignments(*, campaign: Campaign) -> QuerySet[Assignment]:
    """Live locks: who holds which response and until when."""
    return (
        Assignment.objects.filter(campaign=campaign, status=Assignment.Status.SERVED)
        .select_related("rater", "response", "response__instruction")
        .order_by("expires_at")
    )
