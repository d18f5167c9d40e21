"""Adjudication: a reviewer settles a criterion of a response where a campaign's
raters disagree (the rule: `annotation.selectors.adjudication.is_disputed`).

An adjudication is its own source, "human, adjudicated": the raters' scores are never
changed. Setting it again changes the one row and keeps the earlier value in its
history (django-simple-history: who, when, the note), as do exclusions and amends.
"""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db import transaction

from annotation.models import Adjudication, Assignment, Campaign, HumanScore, Skill
from annotation.scales import scale_of
from flaskapp import bounds, limits, workspaces
from flaskapp.errors import DomainError, Problem
from flaskapp.params import ascii_int
from flaskapp.untrusted import text_problem

MAX_NOTE = limits.NOTE  # Adjudication.note


def adjudication_rule_set(*, campaign: Campaign, spread, split, user: User) -> Campaign:
    """Set the campaign's adjudication rule: `spread` (`adjudication_range`, the
    points an ordinal criterion's scores must span; 0: never) and `split`
    (`adjudication_split`, for categorical criteria). Researchers only; refused
    (DomainError naming the field, nothing changed) when out of bounds or
    unknown."""
    workspaces.require_object_role(user, campaign, workspaces.RESEARCHER)
    problems = []
    if isinstance(spread, str) and ascii_int(spread) is not None:
        spread = ascii_int(spread)
    if problem := bounds.ADJUDICATION_RANGE.problem(spread, "adjudication_range"):
        problems.append(problem)
    if split not in Campaign.SplitRule.values:
        problems.append(
            Problem(
                f"one of {', '.join(Campaign.SplitRule.values)}",
                field="adjudication_split",
            )
        )
    if problems:
        raise DomainError("the adjudication rule is not valid", problems)
    Campaign.objects.filter(pk=campaign.pk).update(
        adjudication_range=spread, adjudication_split=split
    )
    campaign.adjudication_range, campaign.adjudication_split = spread, split
    return campaign


def _criterion(campaign: Campaign, criterion) -> Skill:
    skills = Skill.objects.filter(rubric__datasets__campaigns=campaign.pk)
    if isinstance(criterion, Skill):
        criterion = criterion.pk
    if isinstance(criterion, int) and not isinstance(criterion, bool):
        skill = skills.filter(pk=criterion).first()
    elif isinstance(criterion, str) and criterion.strip():
        skill = skills.filter(key=criterion.strip()).first()
    else:
        skill = None
    if skill is None:
        raise DomainError(
            f"no criterion {criterion!r} in this campaign's rubric",
            [Problem("unknown criterion", field="criterion")],
        )
    return skill


def adjudication_set(
    *,
    campaign: Campaign,
    response_id,
    criterion,
    score,
    note,
    user: User,
) -> Adjudication:
    """Set (or change) the adjudicated value of one criterion of one response of a
    pointwise campaign. `criterion`: a skill id or key of the campaign's rubric;
    `score`: as a rater would give it (a point, a label, or N/A where the criterion
    allows it; `Scale.parse`); `note`: why, required.

    Reviewers, researchers and admins only. Refused (DomainError naming the field,
    nothing changed) for a response no rater of the campaign rated on this
    criterion, a value outside the scale, an empty note. Idempotent for the same
    value and note. The row's history keeps every earlier value."""
    workspaces.require_object_role(user, campaign, workspaces.REVIEWER)
    if campaign.kind != Campaign.Kind.POINTWISE:
        raise DomainError(
            "only pointwise campaigns have an adjudication queue",
            [Problem("not a pointwise campaign", field="campaign")],
        )
    if isinstance(response_id, str) and ascii_int(response_id) is not None:
        response_id = ascii_int(response_id)
    if not isinstance(response_id, int) or isinstance(response_id, bool):
        raise DomainError(
            "say which response", [Problem("must be an id", field="response_id")]
        )
    skill = _criterion(campaign, criterion)
    rated = HumanScore.objects.filter(
        assignment__campaign=campaign,
        assignment__response_id=response_id,
        assignment__status=Assignment.Status.SUBMITTED,
        assignment__gold=False,
        skill=skill,
    ).exists()
    if not rated:
        raise DomainError(
            f"no rater of this campaign scored {skill.name} of response "
            f"{response_id}; there is nothing to adjudicate",
            [Problem("not rated in this campaign", field="response_id")],
        )
    ok, value, problem = scale_of(skill).parse(score)
    if not ok:
        raise DomainError(f"{skill.name}: {problem}", [Problem(problem, field="score")])
    note = note.strip() if isinstance(note, str) else ""
    if not note:
        raise DomainError("say why", [Problem("is empty", field="note")])
    if problem := text_problem(note):
        raise DomainError(f"the note {problem}", [Problem(problem, field="note")])
    if len(note) > MAX_NOTE:
        raise DomainError(
            "the note is too long",
            [Problem(f"at most {MAX_NOTE} characters", field="note")],
        )
    with transaction.atomic():
        row = (
            Adjudication.objects.select_for_update()
            .filter(campaign=campaign, response_id=response_id, skill=skill)
            .first()
        )
        if row is None:
            row = Adjudication(
                campaign=campaign,
                response_id=response_id,
                skill=skill,
                created_by=user,
            )
            reason = "adjudicated"
        elif row.score == value and row.note == note:
            return row
        else:
            reason = "adjudication changed"
        row.score, row.note, row.updated_by = value, note, user
        row._history_user, row._change_reason = user, reason
        row.save()
    return row


__all__ = ["adjudication_rule_set", "adjudication_set"]
