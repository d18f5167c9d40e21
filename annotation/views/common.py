"""Helpers and constants shared by the campaign pages and the rating UI."""

from __future__ import annotations

from django.contrib.auth import get_user_model

from flaskapp import roles

# An htmx form answer that carries validation errors: rater.js swaps it in anyway.
HTMX_INVALID = 422
HISTORY_PER_PAGE = 50
LOCKS_SHOWN = 50
METACOGNITION = "metacognition"


def rater_users():
    """Every user with the rater role, for the campaign forms' rater lists; not the
    synthetic accounts (their ratings are generated, never asked of a person)."""
    return (
        get_user_model()
        .objects.filter(groups__name=roles.RATER, is_active=True)
        .exclude(groups__name=roles.SYNTHETIC)
        .order_by("username")
        .distinct()
    )
