"""The skill-profiles leaderboard page: per model and criterion, each source's mean
with its cluster-bootstrap interval, the ranks, and the probability of each pairwise
order.

Thin: the query string is the agreement dashboard's (`analysis.display.parse_choice`:
``campaign``, ``run``, ``slice``, ``n_boot``) plus ``row`` (the criterion of the bars
and of the heat map, default ``overall``) and ``source`` (the heat map's source,
default the first). Researchers and admins only (raters 403, anonymous users the
login page). With htmx, the row and source links ask for the
``#profiles-detail`` fragment; the form and the slice links for ``#profiles-results``.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.views.decorators.http import require_GET

from analysis.charts.profiles import (
    bars_from_profiles,
    find_profile_row,
    order_heatmap_from_profiles,
    radar_from_profiles,
)
from analysis.display import N_BOOT_MAX, SLICE_DIMS, parse_choice, slice_dims
from analysis.selectors import agreement
from analysis.selectors.skill_profiles import skill_profiles
from analysis.views.agreement import budget_check
from annotation import selectors as annotation_selectors
from flaskapp import roles
from flaskapp.htmx import render_page_or_fragment, wants_fragment
from flaskapp.throttling import heavy_page

# The slices a leaderboard offers (the issue's: domain, difficulty, FLASK-Hard), then
# the facets of the dataset's own taxonomy (`profile_slices`).
PROFILE_SLICES = {"domain": "Domain", "difficulty": "Difficulty", "hard": "FLASK-Hard"}


def profile_slices(slice_values: dict) -> list[tuple[str, str, list[dict]]]:
    """(dimension, heading, values) of each slice the leaderboard offers for a
    dataset: its domains and difficulty levels with the labels of its taxonomy
    (`agreement_slice_values`), FLASK-Hard only when some instruction is in it, and
    each facet its taxonomy declares (``facet.channel``)."""
    dims = {
        **PROFILE_SLICES,
        **{d: h for d, h in slice_dims(slice_values).items() if d not in SLICE_DIMS},
    }
    has_hard = any(v["value"] == "hard" for v in slice_values.get("hard") or [])
    return [
        (dim, label, slice_values.get(dim) or [])
        for dim, label in dims.items()
        if dim != "hard" or has_hard
    ]


def _tables(result: dict) -> list[dict]:
    """Per row: one line per model with each source's figures, in source order."""
    keys = [s["key"] for s in result["sources"]]
    out = []
    for row in result["rows"]:
        lines = []
        for m, model in enumerate(result["models"]):
            cells = [
                (row["sources"].get(k, {}).get("models") or [{}] * (m + 1))[m]
                for k in keys
            ]
            lines.append({"model": model, "cells": cells})
        rankings = [
            (s["label"], row["sources"].get(s["key"], {}).get("ranking", ""))
            for s in result["sources"]
        ]
        out.append({"row": row, "lines": lines, "rankings": rankings})
    return out


@login_required
@heavy_page
@require_GET
def leaderboard_profiles(request: HttpRequest, dataset_id: int) -> HttpResponse:
    """The page (or, with htmx, its `#profiles-results` / `#profiles-detail`
    fragment). A bad choice lists each problem by parameter (400 for the page)."""
    roles.require_researcher(request.user)
    dataset = annotation_selectors.dataset_get_for_user(
        user=request.user, dataset_id=dataset_id
    )
    sources = agreement.agreement_sources_for_user(user=request.user, dataset=dataset)
    slice_values = agreement.agreement_slice_values(dataset=dataset)
    choice = parse_choice(request.GET, sources, slice_values)
    result = None
    if choice.ready:
        budget_check(dataset, choice, request.GET)
    if choice.ready:
        try:
            result = skill_profiles(
                dataset=dataset,
                campaign_ids=choice.campaign_ids or None,
                run_ids=choice.run_ids or None,
                slice_dim=choice.slice_dim,
                slice_value=choice.slice_value,
                n_boot=choice.n_boot,
            )
        except agreement.AgreementError as exc:
            choice.errors.append(str(exc))
        else:
            # The summary and the form show the sources used (the defaults too).
            choice.adopt_sources(
                [c["id"] for c in result.get("campaigns") or []],
                [r["id"] for r in result.get("runs") or []],
            )
    context = {
        "dataset": dataset,
        "page_url": reverse("analysis:leaderboard-profiles", args=[dataset.pk]),
        "sources": sources,
        "choice": choice,
        "result": result,
        "n_boot_max": N_BOOT_MAX,
        "slices": profile_slices(slice_values),
        "slice_key": f"{choice.slice_dim}:{choice.slice_value}"
        if choice.slice_dim
        else "",
    }
    if result is not None:
        row_key = request.GET.get("row", "").strip() or "overall"
        if find_profile_row(result, row_key) is None:
            row_key = "overall"
        keys = [s["key"] for s in result["sources"]]
        source_key = request.GET.get("source", "").strip()
        if source_key not in keys:
            source_key = keys[0] if keys else ""
        context.update(
            row_key=row_key,
            source_key=source_key,
            tables=_tables(result),
            radars=[
                (s, radar_from_profiles(result, s["key"])) for s in result["sources"]
            ],
            bars=bars_from_profiles(result, row_key),
            heatmap=order_heatmap_from_profiles(result, row_key, source_key)
            if source_key
            else "",
        )
    fragment = (
        "profiles-detail"
        if request.htmx and request.htmx.target == "profiles-detail"
        else "profiles-results"
    )
    status = 400 if choice.errors and not wants_fragment(request) else 200
    return render_page_or_fragment(
        request, "analysis/leaderboard_profiles.html", fragment, context, status
    )
