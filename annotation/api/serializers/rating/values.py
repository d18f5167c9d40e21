"""How the rating API writes a criterion's scale, labels, anchors, keys and values
(`annotation.scales` is the rule; these are its JSON shapes), for the serializers and
the hot-path renderers alike."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from annotation.scales import CATEGORICAL, scale_of

SCORE_SCHEMA = {
    "oneOf": [
        {"type": "integer"},
        {"type": "string"},
    ],
    "nullable": True,
    "description": "A point of the criterion's ordinal scale (`skills[].scale`), or "
    "the key of one of its labels (`skills[].labels[].key`) for a categorical one; "
    'N/A as null or "na" where the criterion allows it (`skills[].allow_na`).',
}
ANCHORS_SCHEMA = {
    "type": "object",
    "additionalProperties": {"type": "string"},
    "description": "Point -> what it means, for the points that have an anchor text "
    "(ordinal criteria; a middle point may have none).",
}
SCALE_SCHEMA = {
    "type": "object",
    "nullable": True,
    "properties": {"min": {"type": "integer"}, "max": {"type": "integer"}},
    "description": "The ordinal scale's range; null for a categorical criterion.",
}
LABELS_SCHEMA = {
    "type": "array",
    "items": {
        "type": "object",
        "properties": {
            "key": {"type": "string"},
            "name": {"type": "string"},
            "description": {"type": "string"},
        },
    },
    "description": "A categorical criterion's labels, in order (empty for ordinal).",
}
KEYS_SCHEMA = {
    "type": "object",
    "additionalProperties": {"type": "string"},
    "description": "Keyboard key -> the value it submits (as in `scores`).",
}


@extend_schema_field(SCORE_SCHEMA)
class ScoreValueField(serializers.Field):
    """A score as sent: any JSON scalar. The service decides what is valid, and names
    the skill (`scores.<key>`) when it is not."""

    def __init__(self, **kwargs):
        kwargs.setdefault("allow_null", True)
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        if isinstance(data, dict | list):
            raise serializers.ValidationError(
                'must be a score, a label key, null or "na".'
            )
        return data

    def to_representation(self, value):
        return value


def scale_data(scale) -> dict | None:
    """The `scale` of a criterion: {"min", "max"}, or None for a categorical one."""
    if scale.is_categorical:
        return None
    return {"min": scale.low, "max": scale.high}


def labels_data(skill) -> list[dict]:
    """The `labels` of a criterion (empty for ordinal)."""
    return [
        {
            "key": str(label["key"]),
            "name": str(label.get("name") or label["key"]),
            "description": str(label.get("description") or ""),
        }
        for label in (skill.labels or [])
    ]


def anchors_data(scale) -> dict:
    """The `anchors` of an ordinal criterion: point -> text, where a text is given."""
    if scale.is_categorical:
        return {}
    return {str(value): text for value, text in scale.anchors if text}


def keys_data(scale) -> dict:
    """The `keys` of a criterion: key -> the value as `scores` takes it."""
    keys = {key: scale.label_of(value) for key, value in scale.keys}
    if scale.allow_na:
        keys["n"] = "na"
    return keys


def score_value_data(score):
    """A saved score's `value`: as `scores` takes it (point, label key or None)."""
    if score.score is None:
        return None
    if score.skill.kind == CATEGORICAL:
        return scale_of(score.skill, anchors=False).label_of(score.score)
    return score.score
