"""The navigation's "Results" (issue 37, defect 15): the result pages that belong to
one dataset or one campaign (leaderboards, estimates, reports, rater reliability,
adjudication) on one page that lists the workspace's datasets and campaigns with a
link to each page of each, so that one entry of the navigation reaches them all
(an admin's navigation stays one row on a wide screen). Researchers."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from annotation import selectors as annotation_selectors
from annotation.models import Campaign
from flaskapp import roles
from flaskapp.workspaces import current_workspace


@dataclass(frozen=True)
class Chooser:
    title: str
    intro: str
    of: str  # "dataset" or "campaign"
    links: tuple[tuple[str, str], ...]  # (label, URL name taking the object's id)
    empty: str


CHOOSERS = {
    "leaderboards": Chooser(
        title="Leaderboards",
        intro="Rank a dataset's evaluated models: by pairwise votes (Bradley-Terry "
        "ratings) or by their scores per criterion (skill profiles).",
        of="dataset",
        links=(
            ("Pairwise leaderboard", "analysis:leaderboard-pairwise"),
            ("Skill profiles", "analysis:leaderboard-profiles"),
        ),
        empty="No dataset yet. Add one on the Upload page; its leaderboards then "
        "show here.",
    ),
    "estimates": Chooser(
        title="Prediction-powered estimates",
        intro="A dataset's mean scores and win rates from a few human labels and "
        "many judge scores, with intervals that stay valid.",
        of="dataset",
        links=(
            ("Estimates", "analysis:estimates"),
            ("Win rates", "analysis:estimates-win-rates"),
        ),
        empty="No dataset yet. Add one on the Upload page; its estimates then show "
        "here.",
    ),
    "report": Chooser(
        title="Reports",
        intro="A dataset's zip for a paper: tables, charts and a README stating "
        "the data, the methods and the seeds.",
        of="dataset",
        links=(("Report", "analysis:dataset-report"),),
        empty="No dataset yet. Add one on the Upload page; its report then shows here.",
    ),
    "reliability": Chooser(
        title="Rater reliability",
        intro="How each rater of a campaign scores next to the others: agreement "
        "with the consensus, severity, gold accuracy, speed and drift.",
        of="campaign",
        links=(("Rater reliability", "analysis:reliability"),),
        empty="No rating campaign yet. Start one from a dataset's page under "
        "Campaigns; its raters' reliability then shows here.",
    ),
}


@login_required
@require_GET
def results_home(request: HttpRequest) -> HttpResponse:
    """The navigation's "Results": per section of `CHOOSERS`, the current workspace's
    datasets (or pointwise campaigns) with links to that page of each; and the
    adjudication queues."""
    roles.require_researcher(request.user)
    workspace = current_workspace(request)
    datasets = annotation_selectors.dataset_list_for_user(
        user=request.user, workspace=workspace
    ).order_by("name")
    campaigns = (
        annotation_selectors.campaign_list_for_user(
            user=request.user, workspace=workspace
        )
        .filter(kind=Campaign.Kind.POINTWISE)
        .select_related("dataset")
    )
    sections = [
        (key, chooser, datasets if chooser.of == "dataset" else campaigns)
        for key, chooser in CHOOSERS.items()
    ]
    return render(request, "analysis/results_home.html", {"sections": sections})
