"""Reads for adjudication: which (response, criterion)s of a campaign its raters
dispute, the queue a reviewer works through, one response's ratings as a reviewer
sees them (not blind: every rater's name, score, rationale and critique), and the
history of every change of a human judgment.

The rule (`is_disputed`, its one home) looks at the scores of a campaign's real
(not gold) submitted assignments, N/A left out, from raters without an open
exclusion:

* an ordinal criterion is disputed when at least two scores span at least
  `Campaign.adjudication_range` points (0: never);
* a categorical criterion, by `Campaign.adjudication_split`: ``no_majority`` when no
  label has more than half of at least two votes (1-1, 2-2, 1-1-1), ``any`` when the
  labels are not all the same, ``off``: never.

A disputed criterion stays in the queue, settled, once a reviewer has set its
`Adjudication`; an adjudication made before the rule changed stays too.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime

from django.db.models import Count, F, Max, Min, QuerySet
from django.http import Http404

from annotation.models import (
    Adjudication,
    Assignment,
    Campaign,
    HumanScore,
    RaterExclusion,
    Response,
    Skill,
)
from annotation.scales import Scale, scale_of
from annotation.selectors.exclusions import excluded_scores
from flaskapp import roles, workspaces

PAGE_SIZE = 50
STATES = ("open", "settled", "all")


def campaign_get_for_reviewer(*, user, campaign_id: int) -> Campaign:
    """A pointwise campaign for the adjudication pages (reviewers, researchers and
    admins; `PermissionDenied` for anyone else, `Http404` for no such campaign)."""
    roles.require_reviewer(user)
    campaign = (
        Campaign.objects.select_related("dataset", "dataset__rubric")
        .filter(pk=campaign_id, kind=Campaign.Kind.POINTWISE)
        .first()
    )
    if campaign is None:
        raise Http404("No such pointwise campaign.")
    workspaces.require_object_role(user, campaign, workspaces.REVIEWER)
    return campaign


def campaigns_for_review(*, user, workspace=None) -> list[tuple[Campaign, int, int]]:
    """(campaign, disputed criteria not yet settled, settled) for every pointwise
    campaign, newest first: a reviewer's home. One query for the settled criteria of
    all campaigns, then `disputed_items`' two per campaign."""
    roles.require_reviewer(user)
    qs = workspaces.scope_for_role(Campaign.objects, user, workspaces.REVIEWER)
    if workspace is not None:
        qs = qs.filter(workspace=workspace)
    campaigns = list(qs.filter(kind=Campaign.Kind.POINTWISE).select_related("dataset"))
    settled: dict[int, set[tuple[int, int]]] = defaultdict(set)
    for campaign_id, response_id, skill_id in Adjudication.objects.filter(
        campaign__in=campaigns
    ).values_list("campaign_id", "response_id", "skill_id"):
        settled[campaign_id].add((response_id, skill_id))
    out = []
    for campaign in campaigns:
        done = settled[campaign.pk]
        disputed = disputed_items(campaign=campaign)
        out.append((campaign, sum(1 for k in disputed if k not in done), len(done)))
    return out


def is_disputed(values: list[int], *, scale: Scale, spread: int, split: str) -> bool:
    """Whether these raters' stored values (N/A left out) of one criterion of one
    response go to adjudication under the campaign's rule (see the module doc)."""
    if len(values) < 2:
        return False
    if scale.is_categorical:
        if split == Campaign.SplitRule.OFF:
            return False
        counts = Counter(values)
        if split == Campaign.SplitRule.ANY:
            return len(counts) > 1
        return max(counts.values()) * 2 <= len(values)
    return spread > 0 and max(values) - min(values) >= spread


def _rated(campaign: Campaign) -> QuerySet[HumanScore]:
    """The scores the rule reads: real submitted items, no N/A, no excluded rater."""
    return HumanScore.objects.filter(
        assignment__campaign=campaign,
        assignment__status=Assignment.Status.SUBMITTED,
        assignment__gold=False,
        score__isnull=False,
    ).filter(~excluded_scores())


def campaign_skills(campaign: Campaign) -> dict[int, Skill]:
    """The criteria of the campaign's rubric, by id, in their order."""
    return {
        s.pk: s
        for s in Skill.objects.filter(rubric__datasets__campaigns=campaign.pk).order_by(
            "position", "id"
        )
    }


def disputed_items(*, campaign: Campaign) -> dict[tuple[int, int], str]:
    """{(response id, skill id): how the raters split, e.g. "1 to 5 (3 raters)" or
    "yes 2 · no 2"} for every disputed criterion of the campaign.

    Ordinal criteria are aggregated in the database (count, min, max per pair), so a
    campaign of 600,000 scores costs one grouped query; categorical ones are counted
    per label. Two queries in all."""
    skills = campaign_skills(campaign)
    scales = {pk: scale_of(s, anchors=False) for pk, s in skills.items()}
    ordinal = [pk for pk, sc in scales.items() if sc.is_ordinal]
    categorical = [pk for pk, sc in scales.items() if sc.is_categorical]
    out: dict[tuple[int, int], str] = {}
    spread = campaign.adjudication_range
    if spread and ordinal:
        rows = (
            _rated(campaign)
            .filter(skill_id__in=ordinal)
            .values("assignment__response_id", "skill_id")
            .annotate(n=Count("id"), lo=Min("score"), hi=Max("score"))
            .filter(n__gte=2, hi__gte=F("lo") + spread)
        )
        for r in rows:
            key = (r["assignment__response_id"], r["skill_id"])
            out[key] = f"{r['lo']} to {r['hi']} ({r['n']} raters)"
    if categorical and campaign.adjudication_split != Campaign.SplitRule.OFF:
        votes: dict[tuple[int, int], Counter] = defaultdict(Counter)
        rows = (
            _rated(campaign)
            .filter(skill_id__in=categorical)
            .values_list("assignment__response_id", "skill_id", "score")
            .annotate(n=Count("id"))
        )
        for response_id, skill_id, score, n in rows:
            votes[(response_id, skill_id)][score] += n
        for key, counts in votes.items():
            scale = scales[key[1]]
            if is_disputed(
                list(counts.elements()),
                scale=scale,
                spread=spread,
                split=campaign.adjudication_split,
            ):
                out[key] = " · ".join(
                    f"{scale.label_of(v)} {n}" for v, n in sorted(counts.items())
                )
    return dict(sorted(out.items()))


@dataclass(frozen=True)
class QueueCriterion:
    skill: Skill
    split: str  # how the raters split; "" when not disputed (now) but settled
    settled: str  # the adjudicated value's label, "" when not yet


@dataclass(frozen=True)
class QueueRow:
    response: Response
    criteria: list[QueueCriterion]

    @property
    def open(self) -> bool:
        return any(not c.settled for c in self.criteria)


@dataclass(frozen=True)
class AdjudicationQueue:
    campaign: Campaign
    rows: list[QueueRow]  # this page
    state: str
    page: int
    pages: int
    open_count: int  # responses with a disputed criterion not yet settled
    settled_count: int  # responses whose every disputed criterion is settled
    criteria_open: int
    criteria_settled: int
    # The first response (by id) with an unsettled dispute: "Start settling" opens it.
    first_open: int | None = None


def adjudication_queue(
    *, campaign: Campaign, state: str = "open", page: int = 1
) -> AdjudicationQueue:
    """One page (`PAGE_SIZE` responses, by id) of the campaign's adjudication queue:
    responses with a disputed or an adjudicated criterion, filtered by `state`
    (``open``: some disputed criterion not settled; ``settled``; ``all``). A
    constant number of queries. `state` and `page` are checked by the caller
    (out-of-range pages give the last page)."""
    disputed = disputed_items(campaign=campaign)
    skills = campaign_skills(campaign)
    scales = {pk: scale_of(s, anchors=False) for pk, s in skills.items()}
    settled = {
        (a.response_id, a.skill_id): scales[a.skill_id].label_of(a.score)
        for a in Adjudication.objects.filter(campaign=campaign)
        if a.skill_id in scales
    }
    by_response: dict[int, list[QueueCriterion]] = defaultdict(list)
    for key in sorted(set(disputed) | set(settled)):
        response_id, skill_id = key
        by_response[response_id].append(
            QueueCriterion(
                skills[skill_id], disputed.get(key, ""), settled.get(key, "")
            )
        )
    open_ids = [r for r, cs in by_response.items() if any(not c.settled for c in cs)]
    settled_ids = [r for r in by_response if r not in set(open_ids)]
    chosen = {"open": open_ids, "settled": settled_ids, "all": list(by_response)}[state]
    chosen.sort()
    pages = max(1, -(-len(chosen) // PAGE_SIZE))
    page = min(max(1, page), pages)
    ids = chosen[(page - 1) * PAGE_SIZE : page * PAGE_SIZE]
    responses = Response.objects.select_related("instruction").in_bulk(ids)
    rows = [QueueRow(responses[i], by_response[i]) for i in ids if i in responses]
    return AdjudicationQueue(
        campaign=campaign,
        rows=rows,
        state=state,
        page=page,
        pages=pages,
        open_count=len(open_ids),
        settled_count=len(settled_ids),
        criteria_open=sum(1 for k in disputed if k not in settled),
        criteria_settled=len(settled),
        first_open=min(open_ids) if open_ids else None,
    )


@dataclass(frozen=True)
class RatingView:
    rater: str
    value: str  # the label of the stored value ("4", "yes", "N/A")
    rationale: str
    excluded: bool


@dataclass
class CriterionView:
    skill: Skill
    scale: Scale
    disputed: bool
    ratings: list[RatingView] = field(default_factory=list)
    adjudication: Adjudication | None = None

    @property
    def options(self) -> list[tuple[str, str]]:
        """(value to post, text) for the form: points, labels, then N/A if allowed."""
        if self.scale.is_categorical:
            out = list(zip(self.scale.labels, self.scale.names, strict=True))
        else:
            out = [(str(v), str(v)) for v in self.scale.values]
        return out + ([("N/A", "N/A")] if self.scale.allow_na else [])

    @property
    def settled(self) -> str:
        """The adjudicated value's display name, "" when not settled."""
        if self.adjudication is None:
            return ""
        return self.scale.name_of(self.adjudication.score)


@dataclass(frozen=True)
class AdjudicationItem:
    campaign: Campaign
    response: Response
    criteria: list[CriterionView]
    critiques: list[tuple[str, str]]  # (rater, critique)
    history: list[HistoryEvent]
    next_open: int | None  # the next response (by id) with an unsettled dispute


def adjudication_item(*, campaign: Campaign, response_id: int) -> AdjudicationItem:
    """One response of the campaign as a reviewer sees it: per criterion any rater
    scored, every rater's value and rationale (excluded raters shown and marked),
    whether the rule disputes it, its adjudication; the raters' critiques; the
    history of this response's human judgments. `Http404` when no rater of the
    campaign submitted a real rating of this response."""
    assignments = list(
        Assignment.objects.filter(
            campaign=campaign,
            response_id=response_id,
            status=Assignment.Status.SUBMITTED,
            gold=False,
        )
        .select_related("rater")
        .prefetch_related("scores")
        .order_by("rater__username", "pk")
    )
    if not assignments:
        raise Http404("No rater of this campaign rated this response.")
    response = Response.objects.select_related("instruction").get(pk=response_id)
    excluded = set(
        RaterExclusion.objects.filter(
            campaign=campaign,
            kind=RaterExclusion.Kind.EXCLUDE,
            ended_at__isnull=True,
        ).values_list("rater_id", flat=True)
    )
    skills = campaign_skills(campaign)
    criteria: dict[int, CriterionView] = {}
    for a in assignments:
        for s in a.scores.all():
            if s.skill_id not in skills:
                continue
            view = criteria.get(s.skill_id)
            if view is None:
                skill = skills[s.skill_id]
                view = criteria[s.skill_id] = CriterionView(
                    skill, scale_of(skill), False
                )
            view.ratings.append(
                RatingView(
                    a.rater.username,
                    view.scale.label_of(s.score),
                    s.rationale,
                    a.rater_id in excluded,
                )
            )
    disputed = disputed_items(campaign=campaign)
    settled = set(
        Adjudication.objects.filter(campaign=campaign).values_list(
            "response_id", "skill_id"
        )
    )
    for a in Adjudication.objects.filter(
        campaign=campaign, response_id=response_id
    ).select_related("created_by", "updated_by"):
        if a.skill_id in criteria:
            criteria[a.skill_id].adjudication = a
    pending = sorted({r for r, s in disputed if (r, s) not in settled} - {response_id})
    later = [r for r in pending if r > response_id]
    ordered = []
    for skill_id in skills:
        if skill_id in criteria:
            view = criteria[skill_id]
            view.disputed = (response_id, skill_id) in disputed
            ordered.append(view)
    # The disputed criteria first (in rubric order), then the others.
    ordered.sort(key=lambda v: not v.disputed)
    return AdjudicationItem(
        campaign=campaign,
        response=response,
        criteria=ordered,
        critiques=[(a.rater.username, a.critique) for a in assignments if a.critique],
        history=score_history(campaign=campaign, response_id=response_id),
        next_open=(later or pending or [None])[0],
    )


@dataclass(frozen=True)
class HistoryEvent:
    """One change of a human judgment: `kind` is ``score`` (a rater's score, by
    submit or amend), ``adjudication`` or ``exclude`` / ``pause`` (a decision about a
    rater, which applies to all their scores of the campaign)."""

    when: datetime
    who: str  # who made the change ("" when unknown)
    kind: str
    action: str  # "submitted", "amended", "adjudicated", "exclude started", ...
    rater: str  # whose judgment ("" for an adjudication)
    response_id: int | None
    criterion: str
    before: str  # "" when there was nothing before
    after: str
    note: str


def score_history(
    *, campaign: Campaign, response_id: int | None = None, limit: int = 500
) -> list[HistoryEvent]:
    """Every recorded change of the campaign's human judgments, newest first (at most
    `limit`): rater scores amended (each first with its submitted value),
    adjudications set or changed, raters excluded or paused and their reversal.
    With `response_id`, the score and adjudication changes of that response only
    (decisions about raters are campaign-wide and always listed). Five queries."""
    skills = campaign_skills(campaign)
    scales = {pk: scale_of(s, anchors=False) for pk, s in skills.items()}

    def label(skill_id: int, value: int | None) -> str:
        scale = scales.get(skill_id)
        return scale.label_of(value) if scale else str(value)

    def name(skill_id: int) -> str:
        return skills[skill_id].name if skill_id in skills else ""

    # (when, who id, kind, action, rater id, response id, criterion, before, after,
    # note); the user ids become names in one query at the end.
    raw: list[tuple] = []
    scores = HumanScore.history.filter(assignment__campaign_id=campaign.pk)
    if response_id is not None:
        scores = scores.filter(assignment__response_id=response_id)
    rows = scores.values_list(
        "id",
        "history_date",
        "history_user_id",
        "history_change_reason",
        "score",
        "skill_id",
        "assignment__rater_id",
        "assignment__response_id",
    ).order_by("id", "history_date", "history_id")
    previous: dict[int, int | None] = {}
    for pk, when, who, reason, score, skill_id, rater_id, resp in rows:
        before = label(skill_id, previous[pk]) if pk in previous else ""
        previous[pk] = score
        raw.append(
            (when, who, "score", reason or "changed", rater_id, resp, name(skill_id))
            + (before, label(skill_id, score), "")
        )
    adjudications = Adjudication.history.filter(campaign_id=campaign.pk)
    if response_id is not None:
        adjudications = adjudications.filter(response_id=response_id)
    last: dict[int, int | None] = {}
    for h in adjudications.order_by("id", "history_date", "history_id"):
        before = label(h.skill_id, last[h.id]) if h.id in last else ""
        last[h.id] = h.score
        raw.append(
            (h.history_date, h.history_user_id, "adjudication")
            + (h.history_change_reason or "adjudicated", None, h.response_id)
            + (name(h.skill_id), before, label(h.skill_id, h.score), h.note)
        )
    for h in RaterExclusion.history.filter(campaign_id=campaign.pk).order_by(
        "history_date", "history_id"
    ):
        ended = h.ended_at is not None
        action = h.history_change_reason or (f"{h.kind} ended" if ended else h.kind)
        raw.append(
            (h.history_date, h.history_user_id, h.kind, action, h.rater_id, None)
            + ("", "", "", h.end_reason if ended else h.reason)
        )
    raw.sort(key=lambda e: e[0], reverse=True)
    raw = raw[:limit]
    names = _usernames({e[1] for e in raw} | {e[4] for e in raw})
    return [
        HistoryEvent(
            when, names.get(who, ""), kind, action, names.get(rater, ""), *rest
        )
        for when, who, kind, action, rater, *rest in raw
    ]


def _usernames(ids: set) -> dict[int, str]:
    from django.contrib.auth import get_user_model

    wanted = [i for i in ids if i is not None]
    return dict(
        get_user_model().objects.filter(pk__in=wanted).values_list("pk", "username")
    )


def adjudicated_scores(*, campaign_ids) -> QuerySet[Adjudication]:
    """The adjudications of these campaigns (the "human, adjudicated" source of the
    dashboards and exports), with the response and skill ids."""
    return Adjudication.objects.filter(campaign_id__in=list(campaign_ids))


__all__ = [
    "PAGE_SIZE",
    "campaign_get_for_reviewer",
    "campaigns_for_review",
    "STATES",
    "AdjudicationItem",
    "AdjudicationQueue",
    "HistoryEvent",
    "adjudicated_scores",
    "adjudication_item",
    "adjudication_queue",
    "disputed_items",
    "is_disputed",
    "score_history",
]
