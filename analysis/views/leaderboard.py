"""The pairwise leaderboard page (researchers and admins; raters get 403).

    /leaderboard/<dataset_id>/pairwise/?source=humans|<run id>[&length_control=1]
        [&n_boot=1000][&seed=0]

Bradley-Terry ratings with 95% intervals, ranks, wins / losses / ties, the win-rate
heat map and the probability of each pairwise order; with a judge run as the source
(or the humans, when the dataset has a pairwise run: the newest), the rank
correlation of the two leaderboards. Thin: parse, one selector call, render. A bad
parameter is shown on the page (status 400) with its name. A dataset with no votes
at all is an empty state (200) that says how to get some; with no human votes but a
pairwise run, the page opens on the newest run.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from analysis.charts.leaderboard import (
    order_from_leaderboard,
    ratings_from_leaderboard,
    win_rate_from_leaderboard,
)
from analysis.selectors.leaderboard import (
    HUMANS,
    LeaderboardError,
    leaderboard_sources,
    pairwise_leaderboard,
)
from annotation import selectors as annotation_selectors
from flaskapp.bounds import N_BOOT, SEED
from flaskapp.params import BadParameter, int_param
from flaskapp.throttling import heavy_page


def default_compare(source: str, sources: dict):
    """The other side of the rank comparison: the humans for a judge run, the
    newest pairwise run for the humans; None when there is none."""
    if source != HUMANS:
        return HUMANS if sources["human_votes"] else None
    return sources["runs"][0]["id"] if sources["runs"] else None


@login_required
@heavy_page
@require_GET
def leaderboard_pairwise(request: HttpRequest, dataset_id: int) -> HttpResponse:
    dataset = annotation_selectors.dataset_get_for_user(
        user=request.user, dataset_id=dataset_id
    )
    sources = leaderboard_sources(dataset)
    source = (request.GET.get("source") or "").strip()
    if not source:
        # no human votes yet: open on the newest pairwise run rather than an error
        newest = sources["runs"][0]["id"] if sources["runs"] else None
        source = str(newest) if newest and not sources["human_votes"] else HUMANS
    no_votes = source == HUMANS and not sources["human_votes"]
    length_control = request.GET.get("length_control", "") in ("1", "true", "on")
    result, error = None, ""
    try:
        n_boot = int_param(request.GET, "n_boot", 1000, **N_BOOT.field_kwargs())
        seed = int_param(request.GET, "seed", 0, **SEED.field_kwargs())
    except BadParameter as exc:
        problem = exc.problems[0]
        n_boot, seed, error = 1000, 0, f"{problem.field}: {problem.message}"
    if not error and not no_votes:
        try:
            result = pairwise_leaderboard(
                dataset=dataset,
                source=source,
                n_boot=n_boot,
                seed=seed,
                length_control=length_control,
                compare=default_compare(source, sources),
            )
        except LeaderboardError as exc:
            error = str(exc)
    context = {
        "dataset": dataset,
        "sources": sources,
        "source": source,
        "length_control": length_control,
        "n_boot": n_boot,
        "result": result,
        "error": error,
        "no_votes": no_votes,
        "charts": None,
    }
    if result:
        context["charts"] = {
            "ratings": ratings_from_leaderboard(result),
            "win_rate": win_rate_from_leaderboard(result),
            "order": order_from_leaderboard(result),
        }
    return render(
        request,
        "analysis/leaderboard_pairwise.html",
        context,
        status=400 if error else 200,
    )
