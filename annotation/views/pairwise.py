"""HTML pages of pairwise campaigns: researchers create them and watch progress; raters
compare two responses side by side (A / B / tie, optionally per skill).

Function views, thin: parse, call one service or selector, render. The raters' next,
submit, skip and history pages are the rater loop's (`annotation.views.loop`), with
this kind's `PairwisePage`, and so is the rater's amend page of a submitted vote. Permission checks
live in the selectors: researcher pages go through `pairwise_campaign_get_for_user`
(a rater gets 403), rater pages through `pairwise_campaign_get_for_rater` /
`pairwise_assignment_get_for_rater` (anyone outside the campaign, or asking for
another rater's assignment, gets a 404, exactly as for a missing id).

Blind comparison: the page only receives the rater's own assignment; other raters'
votes and judge verdicts are never queried here, model names enter the context only
when the campaign shows them, and the two responses are shown in the assignment's
recorded order as "A" and "B".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotation import selectors as selectors
from annotation.items import PAIRWISE
from annotation.items.pairwise import pairwise_skills
from annotation.models import Assignment, Campaign, Dataset, PreferencePair, Skill
from annotation.selectors import pairwise as pairwise_selectors
from annotation.services import pairwise as pairwise_services
from annotation.services.campaign_spec import spec_from_fields
from annotation.services.campaigns import campaign_create, campaign_set_status
from annotation.views.common import (
    HISTORY_PER_PAGE,
    LOCKS_SHOWN,
    LoopPage,
    rater_users,
)
from annotation.views.pairwise_rows import (
    pair_context,
    parse_pair_answer,
    shown_answer,
)
from flaskapp import bounds, limits, roles
from flaskapp.errors import DomainError, Problem
from flaskapp.htmx import HTMX_STOP_POLLING, render_page_or_fragment, wants_fragment
from flaskapp.params import ascii_int
from flaskapp.workspaces import current_workspace

PAIR_MODE_LABELS = {
    "all_pairs": "Every pair of models, for each instruction",
    "baseline": "A baseline model against each other model",
    "sample": "A random sample of all pairs",
    "existing": "The pairs already in the dataset (e.g. imported preferences)",
}


# --- Home --------------------------------------------------------------------------------


@login_required
@require_GET
def pairwise_home(request: HttpRequest) -> HttpResponse:
    """Researchers: every pairwise campaign with its progress. Raters: their own
    pairwise campaigns. Users with neither role: 403."""
    user = request.user
    if not (roles.is_researcher(user) or roles.is_rater(user)):
        raise PermissionDenied("This needs the researcher, admin or rater role.")
    context = {
        "campaigns": list(
            pairwise_selectors.pairwise_campaign_list_for_user(
                user=user, workspace=current_workspace(request)
            )
        )
        if roles.is_researcher(user)
        else None,
        "rater_campaigns": selectors.rater_campaign_rows(
            user=user, kind=Campaign.Kind.PAIRWISE
        ),
    }
    return render(request, "annotation/pairwise_home.html", context)


# --- New campaign ------------------------------------------------------------------------


class PairwiseCampaignForm(forms.Form):
    """Parses the new-pairwise-campaign form. Ranges and rules are the service's."""

    name = forms.CharField(max_length=200, required=False)
    dataset = forms.ModelChoiceField(
        queryset=Dataset.objects.none(), empty_label="Choose…"
    )
    pair_mode = forms.ChoiceField(
        choices=list(PAIR_MODE_LABELS.items()),
        initial="all_pairs",
        widget=forms.RadioSelect,
    )
    baseline_model = forms.ChoiceField(required=False)
    models = forms.MultipleChoiceField(
        required=False, widget=forms.CheckboxSelectMultiple
    )
    sample = forms.IntegerField(required=False, **bounds.PAIR_SAMPLE.field_kwargs())
    seed = forms.IntegerField(required=False, initial=0, **bounds.SEED.field_kwargs())
    categories = forms.MultipleChoiceField(
        required=False, widget=forms.CheckboxSelectMultiple
    )
    skills = forms.MultipleChoiceField(
        required=False, widget=forms.CheckboxSelectMultiple
    )
    overlap = forms.IntegerField(initial=1, **bounds.OVERLAP.field_kwargs())
    overlap_percent = forms.IntegerField(
        initial=100, **bounds.OVERLAP_PERCENT.field_kwargs()
    )
    show_reference = forms.BooleanField(required=False, initial=True)
    show_model_names = forms.BooleanField(required=False, initial=False)
    lock_ttl_minutes = forms.IntegerField(
        initial=30, **bounds.LOCK_TTL_MINUTES.field_kwargs()
    )
    rater_quota = forms.IntegerField(
        required=False, **bounds.RATER_QUOTA.field_kwargs()
    )
    guidelines = forms.CharField(
        required=False,
        max_length=limits.GUIDELINES,
        widget=forms.Textarea(attrs={"rows": 5}),
    )
    raters = forms.ModelMultipleChoiceField(
        queryset=get_user_model().objects.none(),
        required=False,
        widget=forms.CheckboxSelectMultiple,
    )

    def __init__(
        self, *args, user, workspace=None, dataset: Dataset | None = None, **kwargs
    ):
        """`workspace`: the request's current one; only its datasets and people
        are choices (a posted id of another workspace is refused like a missing
        one). None: every workspace where `user` is a researcher."""
        super().__init__(*args, **kwargs)
        self.fields["dataset"].queryset = selectors.dataset_list_for_user(
            user=user, workspace=workspace
        )
        if dataset is not None:
            workspace_id = dataset.workspace_id
        else:
            workspace_id = workspace.pk if workspace is not None else None
        self.fields["raters"].queryset = rater_users(
            user=user, workspace_id=workspace_id
        )
        self.dataset_stats = None
        self.pair_count = 0
        if dataset is not None:
            self.dataset_stats = selectors.dataset_stats(dataset=dataset)
            model_choices = [
                (name, f"{name} ({n})") for name, n in self.dataset_stats.models
            ]
            self.fields["models"].choices = model_choices
            self.fields["baseline_model"].choices = [("", "—"), *model_choices]
            categories = (
                PreferencePair.objects.filter(dataset=dataset)
                .exclude(category="")
                .values_list("category", flat=True)
                .distinct()
                .order_by("category")
            )
            self.fields["categories"].choices = [(c, c) for c in categories]
            self.pair_count = PreferencePair.objects.filter(dataset=dataset).count()
            skills: list[Skill] = list(dataset.rubric.skills.order_by("position"))
            self.fields["skills"].choices = [(s.key, s.name) for s in skills]

    def add_problems(self, exc: DomainError) -> None:
        """Put each of the service's problems next to the field it names."""
        if not exc.problems:
            self.add_error(None, exc.message)
        for problem in exc.problems:
            name = problem.field or ""
            self.add_error(name if name in self.fields else None, problem.message)


def _dataset_from_params(request: HttpRequest, params: QueryDict) -> Dataset | None:
    """The dataset `params` names, when it is one of the current workspace's."""
    dataset_id = ascii_int(params.get("dataset"))
    if dataset_id is None:
        return None
    try:
        dataset = selectors.dataset_get_for_user(
            user=request.user, dataset_id=dataset_id
        )
    except (Http404, PermissionDenied):  # a stale id offers no models and skills
        return None
    workspace = current_workspace(request)
    if workspace is not None and dataset.workspace_id != workspace.pk:
        return None  # another workspace's: not a choice here (the form says so)
    return dataset


@login_required
@require_http_methods(["GET", "POST"])
def pairwise_campaign_new(request: HttpRequest) -> HttpResponse:
    """Create a pairwise campaign. Models, categories and skills on offer depend on
    the dataset: with htmx, choosing one asks this URL (GET ?dataset=ID) for the
    `#pairwise-options` fragment; without JavaScript a button reloads the page."""
    roles.require_researcher(request.user)
    status = 200
    if request.method == "POST":
        dataset = _dataset_from_params(request, request.POST)
        form = PairwiseCampaignForm(
            request.POST,
            user=request.user,
            workspace=current_workspace(request),
            dataset=dataset,
        )
        if form.is_valid():
            try:
                campaign = campaign_create(
                    spec=spec_from_fields(form.cleaned_data, pairwise=True),
                    created_by=request.user,
                )
            except DomainError as exc:
                form.add_problems(exc)
            else:
                n = campaign.items.count()
                messages.success(
                    request,
                    f"Pairwise campaign “{campaign.name}” created with {n} "
                    f"pair{'s' if n != 1 else ''} to compare.",
                )
                return redirect(
                    "annotation:pairwise-campaign-detail", campaign_id=campaign.pk
                )
        status = 400
    else:
        dataset = _dataset_from_params(request, request.GET)
        initial = {
            k: v
            for k, v in request.GET.items()
            if k in PairwiseCampaignForm.base_fields
        }
        form = PairwiseCampaignForm(
            initial=initial,
            user=request.user,
            workspace=current_workspace(request),
            dataset=dataset,
        )
    context = {"form": form, "dataset": dataset}
    return render_page_or_fragment(
        request,
        "annotation/pairwise_campaign_new.html",
        "pairwise-options",
        context,
        status=status,
    )


# --- Campaign progress -------------------------------------------------------------------


def _campaign_settings(
    campaign: Campaign, skills: list[Skill]
) -> list[tuple[str, str]]:
    sources = sorted(
        {
            source or "no source recorded"
            for source in PreferencePair.objects.filter(
                pk__in=campaign.items.values("pair_id")
            )
            .values_list("source", flat=True)
            .distinct()
        }
    )
    overlap = f"{campaign.overlap} rater{'s' if campaign.overlap != 1 else ''} per pair"
    if campaign.overlap > 1 and campaign.overlap_percent < 100:
        overlap += f" on {campaign.overlap_percent}% of pairs (1 on the rest)"
    return [
        ("Dataset", campaign.dataset.name),
        ("Pairs from", ", ".join(sources)),
        ("Models", ", ".join(campaign.models_included) or "All models"),
        ("Per-skill questions", ", ".join(s.name for s in skills) or "None"),
        ("Overlap", overlap),
        ("Reference answer", "Shown" if campaign.show_reference else "Hidden"),
        ("Model names", "Shown to raters" if campaign.show_model_names else "Hidden"),
        ("Lock time-to-live", f"{campaign.lock_ttl_minutes} min"),
        ("Quota per rater", str(campaign.rater_quota or "None")),
    ]


@login_required
@require_GET
def pairwise_campaign_detail(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """A pairwise campaign's settings and live progress (votes done / needed, per
    rater counts). htmx polls `#pairwise-progress` every 5 s; a closed campaign's
    fragment answers 286, which stops the polling."""
    campaign = pairwise_selectors.pairwise_campaign_get_for_user(
        user=request.user, campaign_id=campaign_id
    )
    context = {
        "campaign": campaign,
        "progress": selectors.campaign_progress(campaign=campaign),
        "locks": list(
            selectors.campaign_locked_assignments(campaign=campaign)[:LOCKS_SHOWN]
        ),
        "polling": campaign.status != Campaign.Status.CLOSED,
    }
    fragment = wants_fragment(request)
    if not fragment:
        context["settings"] = _campaign_settings(
            campaign, pairwise_skills(campaign=campaign)
        )
        context["members"] = list(campaign.raters.order_by("username"))
    status = HTMX_STOP_POLLING if fragment and not context["polling"] else 200
    return render_page_or_fragment(
        request,
        "annotation/pairwise_campaign_detail.html",
        "pairwise-progress",
        context,
        status=status,
    )


@login_required
@require_POST
def pairwise_campaign_status(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """Pause, resume or close a pairwise campaign."""
    campaign = pairwise_selectors.pairwise_campaign_get_for_user(
        user=request.user, campaign_id=campaign_id
    )
    try:
        campaign_set_status(
            campaign=campaign, status=request.POST.get("status", ""), user=request.user
        )
    except DomainError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(
            request, f"The campaign is {campaign.get_status_display().lower()}."
        )
    return redirect("annotation:pairwise-campaign-detail", campaign_id=campaign.pk)


# --- Raters: compare ---------------------------------------------------------------------


def _panel_context(  # noqa: PLR0913 - the rating panel's context pieces, keyword-only
    request: HttpRequest,
    *,
    campaign: Campaign,
    assignment: Assignment | None,
    message: str = "",
    locked_by_others: int = 0,
    values: dict[str, str] | None = None,
    rationale: str = "",
    problems: list[Problem] | None = None,
    error: str = "",
    skip_error: str = "",
    skip_reason: str = "",
    saved: bool = False,
) -> dict:
    """Everything `item_next.html#item-panel` shows of a pair."""
    context: dict = {
        "campaign": campaign,
        "assignment": assignment,
        "message": message,
        "locked_by_others": locked_by_others,
        "progress": selectors.rater_progress(user=request.user, campaign=campaign),
        "error": error,
        "skip_error": skip_error,
        "skip_reason": skip_reason,
        "saved": saved,
    }
    if assignment is not None:
        context.update(
            pair_context(
                assignment=assignment,
                values=values,
                rationale=rationale,
                problems=problems,
            )
        )
    return context


def _serve_next(request: HttpRequest, campaign: Campaign, **extra) -> dict:
    result = pairwise_services.pairwise_next(campaign=campaign, rater=request.user)
    assignment = None
    if result.assignment is not None:
        assignment = pairwise_selectors.pairwise_assignment_get_for_rater(
            user=request.user, assignment_id=result.assignment.pk
        )
    return _panel_context(
        request,
        campaign=campaign,
        assignment=assignment,
        message=result.message,
        locked_by_others=result.locked_by_others,
        **extra,
    )


@dataclass
class HistoryRow:
    assignment: Assignment
    label: str = ""  # the rater's answer as they saw it: A, B or tie
    skill_labels: list[tuple[str, str]] | None = None
    rationale: str = ""
    amendable: bool = False


class PairwisePage(LoopPage):
    """The rater loop's pages of pairs to compare (`annotation.views.loop`)."""

    kind = PAIRWISE
    partial = "annotation/partials/pair_item.html"
    title = "Compare"
    page_class = "rate-page pairwise-page"
    styles = ("css/rating.css", "css/pairwise.css")
    scripts = ("js/rater.js", "js/pairwise.js")
    home_url = "annotation:pairwise-home"
    home_label = "Pairwise"
    history_url = "annotation:pairwise-history"
    history_label = "My comparisons"
    panel_id = "pairwise-panel"
    panel_class = "rating-panel pairwise-panel"
    help_pairwise = True
    next_label = "Compare the next pair"  # the history page's way back
    next_url = "annotation:pairwise-next"
    # Answers are as the rater saw the pair, with the compare page's keys
    # (pairwise.js).
    amend_url = "annotation:pairwise-amend"
    amend_title = "Your vote"
    amend_panel = "amend-panel"
    amended_message = "Your changed vote is saved."

    def campaign(self, request: HttpRequest, campaign_id: int) -> Campaign:
        return pairwise_selectors.pairwise_campaign_get_for_rater(
            user=request.user, campaign_id=campaign_id
        )

    def assignment(self, request: HttpRequest, assignment_id: int) -> Assignment:
        return pairwise_selectors.pairwise_assignment_get_for_rater(
            user=request.user, assignment_id=assignment_id
        )

    def next_context(self, request: HttpRequest, campaign: Campaign) -> dict:
        return _serve_next(request, campaign, saved=request.GET.get("saved") == "1")

    def served(
        self, request: HttpRequest, campaign: Campaign, *, saved: Assignment | None
    ) -> dict:
        return _serve_next(request, campaign, saved=saved is not None)

    def saved_query(self, assignment: Assignment) -> str:
        return "1"

    def parse(
        self, post: QueryDict, *, campaign: Campaign
    ) -> tuple[dict[str, Any], dict]:
        label, skill_labels, rationale, values = parse_pair_answer(
            post, campaign=campaign
        )
        answer = {"label": label, "skill_labels": skill_labels, "rationale": rationale}
        return answer, {"values": values, "rationale": rationale}

    def panel_context(
        self,
        request: HttpRequest,
        *,
        campaign: Campaign,
        assignment: Assignment,
        **state,
    ) -> dict:
        return _panel_context(
            request, campaign=campaign, assignment=assignment, **state
        )

    def stored(self, assignment: Assignment) -> dict:
        preference = pairwise_selectors.pairwise_assignment_preference(
            assignment=assignment
        )
        if preference is None:
            raise Http404("This pair has no submitted vote to amend.")
        label, skill_labels = shown_answer(preference)
        values = {"label": label} | {f"skill-{k}": v for k, v in skill_labels.items()}
        return {"values": values, "rationale": preference.rationale}

    def amend_context(
        self,
        assignment: Assignment,
        *,
        problems: list,
        error: str,
        saved: bool,
        values: dict[str, str],
        rationale: str,
    ) -> dict:
        # The vote may change while the campaign is open (paused included); once it
        # is closed the page shows it read-only (the kind's one rule).
        editable = not PAIRWISE.amend_refusal(assignment=assignment)
        return {
            "campaign": assignment.campaign,
            "assignment": assignment,
            "editable": editable,
            "readonly": not editable,
            "error": error,
            "saved": saved,
            **pair_context(
                assignment=assignment,
                values=values,
                rationale=rationale,
                problems=problems,
            ),
        }

    def history_context(self, request: HttpRequest, campaign: Campaign) -> dict:
        page = Paginator(
            pairwise_selectors.pairwise_rater_history(
                user=request.user, campaign=campaign
            ),
            HISTORY_PER_PAGE,
        ).get_page(request.GET.get("page"))
        rows = []
        for assignment in page:
            assignment.campaign = campaign  # one query for the page, not one per row
            row = HistoryRow(
                assignment=assignment,
                amendable=not PAIRWISE.amend_refusal(assignment=assignment),
            )
            preference = next(iter(assignment.preferences.all()), None)
            if preference is not None:
                row.label, skill_labels = shown_answer(preference)
                row.skill_labels = sorted(skill_labels.items())
                row.rationale = preference.rationale
            rows.append(row)
        return {
            "campaign": campaign,
            "page": page,
            "rows": rows,
            "progress": selectors.rater_progress(user=request.user, campaign=campaign),
        }
