"""Helpers and constants shared by the campaign pages and the rating UI."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.cache import patch_vary_headers

from annotation import roles

# htmx stops polling when a response has this status.
HTMX_STOP_POLLING = 286
# An htmx form answer that carries validation errors: rating.js swaps it in anyway.
HTMX_INVALID = 422
HISTORY_PER_PAGE = 50
LOCKS_SHOWN = 50
SCORE_CHOICES = [
    ("1", "1"),
    ("2", "2"),
    ("3", "3"),
    ("4", "4"),
    ("5", "5"),
    ("na", "N/A"),
]
METACOGNITION = "metacognition"


def wants_fragment(request: HttpRequest) -> bool:
    # A history restore (back button after htmx's cache expired) needs the whole page.
    return bool(request.htmx) and not request.htmx.history_restore_request


def render_page_or_fragment(
    request: HttpRequest, template: str, fragment: str, context: dict, status: int = 200
) -> HttpResponse:
    name = f"{template}#{fragment}" if wants_fragment(request) else template
    response = render(request, name, context, status=status)
    # The same URL answers with two bodies: caches must keep them apart.
    patch_vary_headers(response, ("HX-Request",))
    return response


def rater_users():
    """Every user with the rater role, for the campaign forms' rater lists."""
    return (
        get_user_model()
        .objects.filter(groups__name=roles.RATER, is_active=True)
        .order_by("username")
        .distinct()
    )
