"""Researchers' pages: the campaign list, the new-campaign form, a campaign's progress,
its status and its raters (researchers and admins only)."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db.models import Count, IntegerField, OuterRef, Subquery, Sum
from django.db.models.functions import Coalesce
from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotation import selectors as selectors
from annotation.builtin_rubric import BUILTIN_RUBRIC_NAME
from annotation.models import Campaign, CampaignItem, Dataset, Skill
from annotation.scales import scale_of
from annotation.selectors import raters as rater_selectors
from annotation.services.campaign_spec import spec_from_fields
from annotation.services.campaigns import (
    campaign_create,
    campaign_set_critique,
    campaign_set_raters,
    campaign_set_status,
    campaign_set_training,
)
from annotation.services.exclusions import rater_decision_end, rater_decision_start
from annotation.services.qualification import qualification_allow_retry
from annotation.views.common import LOCKS_SHOWN, rater_users
from flaskapp import bounds, limits, roles
from flaskapp.bounds import ID
from flaskapp.errors import DomainError
from flaskapp.htmx import HTMX_STOP_POLLING, render_page_or_fragment, wants_fragment
from flaskapp.params import ascii_int, int_list_param
from flaskapp.workspaces import current_workspace


def _campaign_list_with_counts(*, user, workspace=None):
    """`campaign_list_for_user` plus rating totals and the rater count, in one query.

    Subqueries rather than joins: joining items and raters together would multiply
    the sums.
    """
    items = CampaignItem.objects.filter(campaign=OuterRef("pk")).values("campaign")
    rater_links = Campaign.raters.through.objects.filter(
        campaign=OuterRef("pk")
    ).values("campaign")

    def sub(qs, expr):
        return Coalesce(
            Subquery(qs.annotate(v=expr).values("v")[:1]),
            0,
            output_field=IntegerField(),
        )

    return selectors.campaign_list_for_user(user=user, workspace=workspace).annotate(
        response_count=sub(items, Count("id")),
        ratings_needed=sub(items, Sum("target")),
        ratings_submitted=sub(items, Sum("submitted")),
        rater_count=sub(rater_links, Count("id")),
    )


@login_required
@require_GET
def campaign_list(request: HttpRequest) -> HttpResponse:
    """Every campaign with its progress (researchers and admins)."""
    roles.require_researcher(request.user)
    campaigns = _campaign_list_with_counts(
        user=request.user, workspace=current_workspace(request)
    )
    return render(request, "annotation/campaign_list.html", {"campaigns": campaigns})


# The skill modes in the words of a rubric that is not FLASK's (issue 37).
OWN_RUBRIC_SKILL_MODES = [
    (Campaign.SkillMode.INSTRUCTION, "Each instruction's own criteria (from the file)"),
    (Campaign.SkillMode.ALL, "Every criterion of the rubric"),
    (Campaign.SkillMode.CHOSEN, "A chosen list of criteria"),
]


def _is_flask_rubric(rubric) -> bool:
    return rubric.is_builtin and rubric.name == BUILTIN_RUBRIC_NAME


class CampaignForm(forms.Form):
    """Parses the new-campaign form. Range checks and the rules are the service's."""

    # Not required here: the service reports an empty name along with every other
    # problem, so the researcher sees them all at once.
    name = forms.CharField(max_length=200, required=False)
    dataset = forms.ModelChoiceField(
        queryset=Dataset.objects.none(), empty_label="Choose…"
    )
    models = forms.MultipleChoiceField(
        required=False, widget=forms.CheckboxSelectMultiple
    )
    skill_mode = forms.ChoiceField(
        choices=Campaign.SkillMode.choices,
        initial=Campaign.SkillMode.INSTRUCTION,
        widget=forms.RadioSelect,
    )
    chosen_skills = forms.MultipleChoiceField(
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
        widget=forms.Textarea(attrs={"rows": 6}),
    )
    raters = forms.ModelMultipleChoiceField(
        queryset=get_user_model().objects.none(),
        required=False,
        widget=forms.CheckboxSelectMultiple,
    )
    critique = forms.ChoiceField(
        choices=Campaign.Critique.choices,
        initial=Campaign.Critique.OFF,
        widget=forms.RadioSelect,
        required=False,
    )
    critique_min_length = forms.IntegerField(required=False, initial=0)
    gold_rate = forms.IntegerField(
        required=False, initial=0, **bounds.GOLD_RATE.field_kwargs()
    )
    training_phase = forms.BooleanField(required=False, initial=False)
    qualification_size = forms.IntegerField(
        required=False, initial=0, **bounds.QUALIFICATION_SIZE.field_kwargs()
    )
    qualification_pass = forms.FloatField(
        required=False, initial=0.8, **bounds.QUALIFICATION_PASS.field_kwargs()
    )
    qualification_rule = forms.ChoiceField(
        choices=Campaign.QualificationRule.choices,
        initial=Campaign.QualificationRule.EXACT,
        required=False,
    )

    # Service problem field -> form field.
    FIELD_OF_PROBLEM = {"skills": "chosen_skills"}

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
        self.skills: list[Skill] = []
        self.criteria: list = []
        self.gold_count = 0
        self.criteria_word = "skills"
        if dataset is not None:
            self.gold_count = selectors.gold_list(dataset=dataset).count()
            self.dataset_stats = selectors.dataset_stats(dataset=dataset)
            self.fields["models"].choices = [
                (name, f"{name} ({n})") for name, n in self.dataset_stats.models
            ]
            self.skills = list(dataset.rubric.skills.order_by("position"))
            self.criteria = [
                selectors.CampaignCriterion(skill=s, scale=scale_of(s))
                for s in self.skills
            ]
            self.fields["chosen_skills"].choices = [
                (c.skill.key, f"{c.skill.name} ({c.scale_text})") for c in self.criteria
            ]
            if not _is_flask_rubric(dataset.rubric):
                # "skills" and "FLASK default" are FLASK's words, not a custom rubric's.
                self.criteria_word = "criteria"
                self.fields["skill_mode"].choices = OWN_RUBRIC_SKILL_MODES

    def add_problems(self, exc: DomainError) -> None:
        """Put each of the service's problems next to the field it names."""
        if not exc.problems:
            self.add_error(None, exc.message)
        for problem in exc.problems:
            name = self.FIELD_OF_PROBLEM.get(problem.field or "", problem.field)
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
def campaign_new(request: HttpRequest) -> HttpResponse:
    """Create a campaign. The models and skills on offer depend on the dataset.

    With htmx, choosing a dataset asks this URL (GET ?dataset=ID) for the
    `#campaign-options` fragment; without JavaScript a "Load" button reloads the page.
    """
    roles.require_researcher(request.user)
    status = 200
    if request.method == "POST":
        dataset = _dataset_from_params(request, request.POST)
        form = CampaignForm(
            request.POST,
            user=request.user,
            workspace=current_workspace(request),
            dataset=dataset,
        )
        if form.is_valid():
            data = form.cleaned_data
            try:
                # The form's `chosen_skills` are the spec's `skills`.
                spec = spec_from_fields({**data, "skills": data["chosen_skills"]})
                campaign = campaign_create(spec=spec, created_by=request.user)
            except DomainError as exc:
                form.add_problems(exc)
            else:
                n = campaign.items.count()
                messages.success(
                    request,
                    f"Campaign “{campaign.name}” created with {n} "
                    f"response{'s' if n != 1 else ''} to rate.",
                )
                return redirect("annotation:campaign-detail", campaign_id=campaign.pk)
        status = 400
    else:
        dataset = _dataset_from_params(request, request.GET)
        # A dataset change sends the options shown so far (`#campaign-options`):
        # the chosen skill mode, models and skills carry over where they still apply.
        initial = {
            k: request.GET.getlist(k)
            if isinstance(f, forms.MultipleChoiceField)
            else request.GET[k]
            for k, f in CampaignForm.base_fields.items()
            if k in request.GET
        }
        datasets = selectors.dataset_list_for_user(
            user=request.user, workspace=current_workspace(request)
        )
        if dataset is None and "dataset" not in request.GET and len(datasets) == 1:
            dataset = datasets[0]
            initial["dataset"] = dataset.pk
        form = CampaignForm(
            initial=initial,
            user=request.user,
            workspace=current_workspace(request),
            dataset=dataset,
        )
    context = {"form": form, "dataset": dataset}
    return render_page_or_fragment(
        request,
        "annotation/campaign_new.html",
        "campaign-options",
        context,
        status=status,
    )


def _campaign_settings(campaign: Campaign, task: str) -> list[tuple[str, str]]:
    """The campaign's options as (label, value) lines for its page."""
    if campaign.skill_mode == Campaign.SkillMode.CHOSEN:
        skills = ", ".join(s.name for s in campaign.chosen_skills.order_by("position"))
    else:
        skills = campaign.get_skill_mode_display()
    overlap = (
        f"{campaign.overlap} rater{'s' if campaign.overlap != 1 else ''} per response"
    )
    if campaign.overlap > 1 and campaign.overlap_percent < 100:
        overlap += f" on {campaign.overlap_percent}% of responses (1 on the rest)"
    critique = campaign.get_critique_display()
    if campaign.critique != Campaign.Critique.OFF and campaign.critique_min_length:
        critique += f" (at least {campaign.critique_min_length} characters)"
    return [
        ("Task", task),
        ("Dataset", campaign.dataset.name),
        ("Models", ", ".join(campaign.models_included) or "All models"),
        ("Skills", skills),
        ("Overlap", overlap),
        (
            "Reference answer",
            "Shown to raters" if campaign.show_reference else "Hidden",
        ),
        ("Model names", "Shown to raters" if campaign.show_model_names else "Hidden"),
        ("Lock time-to-live", f"{campaign.lock_ttl_minutes} min"),
        (
            "Quota per rater",
            str(campaign.rater_quota) if campaign.rater_quota else "None",
        ),
        ("Critique", critique),
        (
            "Gold items",
            f"1 in every {campaign.gold_rate} items served"
            + (
                " (training phase: feedback after each)"
                if campaign.training_phase
                else " (no feedback)"
            )
            if campaign.gold_rate
            else "None",
        ),  # fmt: skip
        (
            "Qualification",
            f"{campaign.qualification_size} gold items first; pass at "
            f"{campaign.qualification_pass:.0%} right "
            f"({campaign.get_qualification_rule_display().lower()})"
            if campaign.qualification_size
            else "None",
        ),
    ]


@login_required
@require_GET
def campaign_detail(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """A campaign's settings, raters and live progress.

    htmx polls the `#campaign-progress` fragment every 5 s; once the campaign is closed
    the fragment answers 286, which stops the polling.
    """
    campaign = selectors.campaign_get_for_user(
        user=request.user, campaign_id=campaign_id
    )
    if campaign.kind == Campaign.Kind.PAIRWISE:
        # Its progress is in votes and pairs, on its own page.
        return redirect("annotation:pairwise-campaign-detail", campaign_id=campaign.pk)
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
        criteria = selectors.campaign_criteria(campaign=campaign)
        context["criteria"] = criteria
        context["task"] = selectors.campaign_task_label(
            campaign=campaign, scales=[c.scale for c in criteria]
        )
        context["settings"] = _campaign_settings(campaign, context["task"])
        context["critique_choices"] = Campaign.Critique.choices
        context["rater_users"] = list(
            rater_users(user=request.user, workspace_id=campaign.workspace_id)
        )
        context["member_ids"] = set(campaign.raters.values_list("pk", flat=True))
        context["statuses"] = Campaign.Status
        context["gold"] = selectors.campaign_gold_accuracy(campaign=campaign)
        context["qualifications"] = selectors.campaign_qualifications(campaign=campaign)
    status = HTMX_STOP_POLLING if fragment and not context["polling"] else 200
    return render_page_or_fragment(
        request,
        "annotation/campaign_detail.html",
        "campaign-progress",
        context,
        status=status,
    )


@login_required
@require_POST
def campaign_status(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """Pause, resume or close a campaign."""
    campaign = selectors.campaign_get_for_user(
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
    return redirect("annotation:campaign-detail", campaign_id=campaign.pk)


@login_required
@require_POST
def campaign_raters(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """Replace the campaign's raters with the checked ones."""
    campaign = selectors.campaign_get_for_user(
        user=request.user, campaign_id=campaign_id
    )
    ids = int_list_param(request.POST, "raters", max_value=ID.high)
    users = list(get_user_model().objects.filter(pk__in=ids))
    try:
        campaign_set_raters(campaign=campaign, raters=users, user=request.user)
    except DomainError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(
            request,
            f"{len(users)} rater{'s' if len(users) != 1 else ''} in this campaign.",
        )
    return redirect("annotation:campaign-detail", campaign_id=campaign.pk)


@login_required
@require_POST
def campaign_critique(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """Change whether raters write a critique, and its minimum length."""
    campaign = selectors.campaign_get_for_user(
        user=request.user, campaign_id=campaign_id
    )
    raw_min = request.POST.get("critique_min_length", "").strip() or "0"
    min_length = ascii_int(raw_min)
    try:
        campaign_set_critique(
            campaign=campaign,
            critique=request.POST.get("critique", ""),
            critique_min_length=raw_min if min_length is None else min_length,
            user=request.user,
        )
    except DomainError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, "The critique settings are saved.")
    return redirect("annotation:campaign-detail", campaign_id=campaign.pk)


@login_required
@require_POST
def campaign_training(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """Start or end the training phase (feedback after each gold item)."""
    campaign = selectors.campaign_get_for_user(
        user=request.user, campaign_id=campaign_id
    )
    on = request.POST.get("training_phase") == "on"
    try:
        campaign_set_training(campaign=campaign, on=on, user=request.user)
    except DomainError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(
            request,
            "Training phase on: raters see the expected scores after a gold item."
            if on
            else "Training phase off: no feedback after gold items.",
        )
    return redirect("annotation:campaign-detail", campaign_id=campaign.pk)


@login_required
@require_POST
def campaign_qualification_retry(
    request: HttpRequest, campaign_id: int, rater_id: int
) -> HttpResponse:
    """Allow a rater who failed the qualification one more attempt."""
    campaign = selectors.campaign_get_for_user(
        user=request.user, campaign_id=campaign_id
    )
    rater = rater_selectors.rater_get_for_user(user=request.user, rater_id=rater_id)
    try:
        qualification_allow_retry(campaign=campaign, rater=rater, user=request.user)
    except DomainError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(
            request,
            f"{rater.username} may try the qualification once more, on gold items "
            "they have not seen.",
        )
    return redirect("annotation:campaign-detail", campaign_id=campaign.pk)


@login_required
@require_POST
def campaign_rater_decision(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """Exclude / include a rater's scores, or pause / resume a rater (`action` is
    ``start:exclude``, ``end:exclude``, ``start:pause`` or ``end:pause``), with a
    reason; back to `next` (a page of this site) or the campaign page."""
    campaign = selectors.campaign_get_for_user(
        user=request.user, campaign_id=campaign_id
    )
    rater_id = ascii_int(request.POST.get("rater_id"))
    step, _, kind = (request.POST.get("action") or "").partition(":")
    target = request.POST.get("next") or ""
    if not url_has_allowed_host_and_scheme(target, allowed_hosts=None):
        target = ""
    back = (
        redirect(target)
        if target.startswith("/")
        else redirect("annotation:campaign-detail", campaign_id=campaign.pk)
    )
    if rater_id is None or step not in ("start", "end"):
        messages.error(request, "Choose a rater and a decision.")
        return back
    rater = rater_selectors.rater_get_for_user(user=request.user, rater_id=rater_id)
    service = rater_decision_start if step == "start" else rater_decision_end
    try:
        decision = service(
            campaign=campaign,
            rater=rater,
            kind=kind,
            reason=request.POST.get("reason", ""),
            user=request.user,
        )
    except DomainError as exc:
        messages.error(request, str(exc))
    else:
        done = {
            ("start", "exclude"): "scores excluded from the analyses",
            ("end", "exclude"): "scores included in the analyses again",
            ("start", "pause"): "paused",
            ("end", "pause"): "no longer paused",
        }[(step, decision.kind)]
        messages.success(request, f"{rater.username}: {done}")
    return back
