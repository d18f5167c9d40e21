"""Presentation helpers of the judging pages: durations, status colours (money: flaskapp/numbers.py)."""

from __future__ import annotations

import json

from django import template

from annotation.scales import scale_of
from judging import kinds

register = template.Library()

RUN_TONES = {
    "pending": "neutral",
    "running": "info",
    "completed": "success",
    "failed": "danger",
    "cancelled": "warning",
    "stopped_budget": "warning",
}
CALL_TONES = {
    "pending": "neutral",
    "running": "info",
    "succeeded": "success",
    "failed": "danger",
    "cancelled": "warning",
}
SUGGESTION_TONES = {"proposed": "info", "accepted": "success", "rejected": "neutral"}


@register.filter
def run_tone(status: str) -> str:
    """The badge colour of a run status."""
    return RUN_TONES.get(status, "neutral")


@register.filter
def call_tone(status: str) -> str:
    """The badge colour of a call status."""
    return CALL_TONES.get(status, "neutral")


@register.filter
def suggestion_tone(status: str) -> str:
    return SUGGESTION_TONES.get(status, "neutral")


@register.filter
def duration(seconds) -> str:
    """72 -> `1 min 12 s`, 3 -> `3 s`, 4000 -> `1 h 6 min`; None -> an en dash."""
    if seconds is None or seconds == "":
        return "–"
    seconds = int(seconds)
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds} s" if seconds else f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min" if minutes else f"{hours} h"


@register.filter
def score_text(score) -> str:
    return "N/A" if score is None else str(score)


@register.filter
def score_label(score) -> str:
    """A `JudgeScore` as pages show it: the point of an ordinal criterion, the display
    name of a categorical one's label (never its code), or N/A."""
    return scale_of(score.skill).name_of(score.score)


@register.filter
def task_kind(run):
    """The judge task kind of `run` (`judging.kinds`), whose attributes and template
    partials say what its pages show; None for a kind no longer registered."""
    return kinds.find(getattr(run, "kind", None))


@register.filter
def compact_json(value) -> str:
    """A JSON value on one line (a config's extra request fields); escaped by the
    template like any text."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True)
