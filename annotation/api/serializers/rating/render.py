"""Hot-path renderers of the rating API (`next` and `submit`, the rater loop:
`annotation.api.loop` builds `next`'s envelope with these).

Rendering them with the nested serializers cost more than their queries. These
functions build the very same JSON by hand (same keys, same order, same value formats,
the same blind-rating rules); the views still declare the serializers in their OpenAPI
schema, and the tests compare both.
"""

from __future__ import annotations

from rest_framework import serializers

from annotation.api.serializers.rating.values import (
    anchors_data,
    keys_data,
    labels_data,
    scale_data,
    score_value_data,
)
from annotation.models import Campaign
from annotation.scales import scale_of

_DATETIME = serializers.DateTimeField()


def _datetime(value) -> str | None:
    return _DATETIME.to_representation(value) if value is not None else None


def rater_skill_data(skill) -> dict:
    """`RaterSkillOutputSerializer` by hand."""
    scale = scale_of(skill)
    return {
        "key": skill.key,
        "name": skill.name,
        "ability": skill.ability,
        "ability_label": skill.get_ability_display(),
        "criteria": skill.criteria,
        "kind": skill.kind,
        "scale": scale_data(scale),
        "labels": labels_data(skill),
        "allow_na": skill.allow_na,
        "anchors": anchors_data(scale),
        "keys": keys_data(scale),
    }


def rater_score_data(score) -> dict:
    """`RaterScoreOutputSerializer` by hand."""
    return {
        "skill": score.skill.key,
        "score": score.score,
        "value": score_value_data(score),
        "is_na": score.score is None,
        "rationale": score.rationale,
    }


def rater_assignment_data(assignment, skills) -> dict:
    """`RaterAssignmentOutputSerializer` by hand: blind unless the campaign says not."""
    campaign = assignment.campaign
    response = assignment.response
    instruction = response.instruction
    instruction_data = {"text": instruction.text, "checklist": instruction.checklist}
    if campaign.show_reference:
        instruction_data["reference_answer"] = instruction.reference_answer
    response_data = {"text": response.text}
    if campaign.show_model_names:
        response_data["model_name"] = response.model_name
    return {
        "id": assignment.pk,
        "campaign_id": assignment.campaign_id,
        "status": str(assignment.status),
        "reason": assignment.reason,
        "served_at": _datetime(assignment.served_at),
        "expires_at": _datetime(assignment.expires_at),
        "submitted_at": _datetime(assignment.submitted_at),
        "instruction": instruction_data,
        "response": response_data,
        "critique_mode": campaign.critique,
        "critique_min_length": campaign.critique_min_length,
        "skills": []
        if campaign.critique == Campaign.Critique.ONLY
        else [rater_skill_data(skill) for skill in skills],
        "scores": [rater_score_data(score) for score in assignment.scores.all()],
        "critique": assignment.critique,
    }


def rater_progress_data(progress) -> dict:
    """`RaterProgressOutputSerializer` by hand."""
    return {
        "submitted": progress.submitted,
        "skipped": progress.skipped,
        "quota": progress.quota,
        "available": progress.available,
        "label": progress.label,
    }


def rater_qualification_data(q) -> dict | None:
    """`RaterQualificationOutputSerializer` by hand (`selectors.RaterQualification`)."""
    if q is None:
        return None
    a = q.attempt
    return {
        "attempt": a.attempt,
        "status": str(a.status),
        "items": a.items,
        "done": q.done,
        "pass_mark": a.pass_mark,
        "rule": a.rule,
        "right": a.right,
        "checked": a.checked,
        "accuracy": a.accuracy,
        "report": q.report,
    }


def rating_data(assignment) -> dict:
    """`RatingOutputSerializer` by hand (`assignment.scores` loaded with their skills)."""
    active = assignment.active_seconds
    return {
        "assignment_id": assignment.pk,
        "status": str(assignment.status),
        "submitted_at": _datetime(assignment.submitted_at),
        "updated_at": _datetime(assignment.updated_at),
        "active_seconds": None if active is None else float(active),
        "scores": [rater_score_data(score) for score in assignment.scores.all()],
        "critique": assignment.critique,
    }
