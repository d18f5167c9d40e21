"""HTML pages of rating campaigns: researchers' campaign pages and the raters' rating UI.

Function views, thin: parse the request, call one service or selector, render. The
permission checks live in the selectors (`campaign_get_for_user` for researchers,
`campaign_get_for_rater` / `assignment_get_for_rater` for raters), so a rater who asks
for another rater's assignment or a campaign they are not in gets a 404, exactly as
for an id that does not exist.

Blind rating: the rating templates only ever receive the rater's own assignment and
scores. Other raters' scores and judge scores are never queried here, and the model
name is put in the context only when the campaign shows it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django import forms
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Count, IntegerField, OuterRef, Subquery, Sum
from django.db.models.functions import Coalesce
from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.cache import patch_vary_headers
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from . import roles, selectors, services
from .errors import DomainError, Problem
from .models import Ability, Assignment, Campaign, CampaignItem, Dataset, Skill

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


def _wants_fragment(request: HttpRequest) -> bool:
    # A history restore (back button after htmx's cache expired) needs the whole page.
    return bool(request.htmx) and not request.htmx.history_restore_request


def _render_page_or_fragment(
    request: HttpRequest, template: str, fragment: str, context: dict, status: int = 200
) -> HttpResponse:
    name = f"{template}#{fragment}" if _wants_fragment(request) else template
    response = render(request, name, context, status=status)
    # The same URL answers with two bodies: caches must keep them apart.
    patch_vary_headers(response, ("HX-Request",))
    return response


def _rater_users():
    """Every user with the rater role, for the campaign forms' rater lists."""
    return (
        get_user_model()
        .objects.filter(groups__name=roles.RATER, is_active=True)
        .order_by("username")
        .distinct()
    )


# --- Researchers: campaigns --------------------------------------------------------------


def _campaign_list_with_counts(*, user):
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

    return selectors.campaign_list_for_user(user=user).annotate(
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
    campaigns = _campaign_list_with_counts(user=request.user)
    return render(request, "rating/campaign_list.html", {"campaigns": campaigns})


class CampaignForm(forms.Form):
    """Parses the new-campaign form. Range checks and the rules are the service's."""

    name = forms.CharField(max_length=200)
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
    overlap = forms.IntegerField(initial=1)
    overlap_percent = forms.IntegerField(initial=100)
    show_reference = forms.BooleanField(required=False, initial=True)
    show_model_names = forms.BooleanField(required=False, initial=False)
    lock_ttl_minutes = forms.IntegerField(initial=30)
    rater_quota = forms.IntegerField(required=False)
    guidelines = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 6})
    )
    raters = forms.ModelMultipleChoiceField(
        queryset=get_user_model().objects.none(),
        required=False,
        widget=forms.CheckboxSelectMultiple,
    )

    # Service problem field -> form field.
    FIELD_OF_PROBLEM = {"skills": "chosen_skills"}

    def __init__(self, *args, user, dataset: Dataset | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["dataset"].queryset = selectors.dataset_list_for_user(user=user)
        self.fields["raters"].queryset = _rater_users()
        self.dataset_stats = None
        self.skills: list[Skill] = []
        if dataset is not None:
            self.dataset_stats = selectors.dataset_stats(dataset=dataset)
            self.fields["models"].choices = [
                (name, f"{name} ({n})") for name, n in self.dataset_stats.models
            ]
            self.skills = list(dataset.rubric.skills.order_by("position"))
            self.fields["chosen_skills"].choices = [
                (s.key, s.name) for s in self.skills
            ]

    def add_problems(self, exc: DomainError) -> None:
        """Put each of the service's problems next to the field it names."""
        if not exc.problems:
            self.add_error(None, exc.message)
        for problem in exc.problems:
            name = self.FIELD_OF_PROBLEM.get(problem.field or "", problem.field)
            self.add_error(name if name in self.fields else None, problem.message)


def _dataset_from_params(request: HttpRequest, params: QueryDict) -> Dataset | None:
    raw = params.get("dataset", "")
    if not raw.isdigit():
        return None
    try:
        return selectors.dataset_get_for_user(user=request.user, dataset_id=int(raw))
    except Http404:  # a stale dataset id simply offers no models and skills
        return None


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
        form = CampaignForm(request.POST, user=request.user, dataset=dataset)
        if form.is_valid():
            data = form.cleaned_data
            try:
                campaign = services.campaign_create(
                    name=data["name"],
                    dataset=data["dataset"],
                    user=request.user,
                    models=data["models"],
                    skill_mode=data["skill_mode"],
                    chosen_skill_keys=data["chosen_skills"],
                    overlap=data["overlap"],
                    overlap_percent=data["overlap_percent"],
                    show_reference=data["show_reference"],
                    show_model_names=data["show_model_names"],
                    lock_ttl_minutes=data["lock_ttl_minutes"],
                    rater_quota=data["rater_quota"],
                    guidelines=data["guidelines"],
                    raters=list(data["raters"]),
                )
            except DomainError as exc:
                form.add_problems(exc)
            else:
                messages.success(
                    request,
                    f"Campaign “{campaign.name}” created with "
                    f"{campaign.items.count()} responses to rate.",
                )
                return redirect("rating:campaign-detail", campaign_id=campaign.pk)
        status = 400
    else:
        dataset = _dataset_from_params(request, request.GET)
        initial = {
            k: v for k, v in request.GET.items() if k in CampaignForm.base_fields
        }
        datasets = selectors.dataset_list_for_user(user=request.user)
        if dataset is None and "dataset" not in request.GET and len(datasets) == 1:
            dataset = datasets[0]
            initial["dataset"] = dataset.pk
        form = CampaignForm(initial=initial, user=request.user, dataset=dataset)
    context = {"form": form, "dataset": dataset}
    return _render_page_or_fragment(
        request, "rating/campaign_new.html", "campaign-options", context, status=status
    )


def _campaign_settings(campaign: Campaign) -> list[tuple[str, str]]:
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
    return [
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
    context = {
        "campaign": campaign,
        "progress": selectors.campaign_progress(campaign=campaign),
        "locks": list(
            selectors.campaign_locked_assignments(campaign=campaign)[:LOCKS_SHOWN]
        ),
        "polling": campaign.status != Campaign.Status.CLOSED,
    }
    fragment = _wants_fragment(request)
    if not fragment:
        context["settings"] = _campaign_settings(campaign)
        context["rater_users"] = list(_rater_users())
        context["member_ids"] = set(campaign.raters.values_list("pk", flat=True))
        context["statuses"] = Campaign.Status
    status = HTMX_STOP_POLLING if fragment and not context["polling"] else 200
    return _render_page_or_fragment(
        request,
        "rating/campaign_detail.html",
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
        services.campaign_set_status(
            campaign=campaign, status=request.POST.get("status", ""), user=request.user
        )
    except DomainError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(
            request, f"The campaign is {campaign.get_status_display().lower()}."
        )
    return redirect("rating:campaign-detail", campaign_id=campaign.pk)


@login_required
@require_POST
def campaign_raters(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """Replace the campaign's raters with the checked ones."""
    campaign = selectors.campaign_get_for_user(
        user=request.user, campaign_id=campaign_id
    )
    ids = [int(v) for v in request.POST.getlist("raters") if v.isdigit()]
    users = list(get_user_model().objects.filter(pk__in=ids))
    try:
        services.campaign_set_raters(campaign=campaign, raters=users, user=request.user)
    except DomainError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(
            request,
            f"{len(users)} rater{'s' if len(users) != 1 else ''} in this campaign.",
        )
    return redirect("rating:campaign-detail", campaign_id=campaign.pk)


# --- Raters: the rating UI ---------------------------------------------------------------


@dataclass
class RaterCampaignRow:
    campaign: Campaign
    submitted: int = 0
    skipped: int = 0
    in_progress: int = 0
    open_slots: int = 0

    @property
    def label(self) -> str:
        if self.campaign.rater_quota:
            return f"{self.submitted} of {self.campaign.rater_quota}"
        return f"{self.submitted} rated"


def _rater_campaign_rows(*, user) -> list[RaterCampaignRow]:
    """The rater's open campaigns with their own counts (3 queries in all)."""
    campaigns = list(
        selectors.campaign_list_for_user(user=user).filter(
            raters=user, status__in=[Campaign.Status.ACTIVE, Campaign.Status.PAUSED]
        )
    )
    rows = {c.pk: RaterCampaignRow(campaign=c) for c in campaigns}
    if not rows:
        return []
    for campaign_id, status, n in (
        Assignment.objects.filter(rater=user, campaign_id__in=rows)
        .values_list("campaign_id", "status")
        .annotate(n=Count("id"))
    ):
        row = rows[campaign_id]
        if status == Assignment.Status.SUBMITTED:
            row.submitted = n
        elif status == Assignment.Status.SKIPPED:
            row.skipped = n
        elif status == Assignment.Status.SERVED:
            row.in_progress = n
    for campaign_id, n in (
        CampaignItem.objects.filter(campaign_id__in=rows, open_slots__gt=0)
        .values_list("campaign_id")
        .annotate(n=Sum("open_slots"))
    ):
        rows[campaign_id].open_slots = n
    return list(rows.values())


@login_required
@require_GET
def rate_home(request: HttpRequest) -> HttpResponse:
    """The rater's campaigns with their own progress."""
    rows = (
        _rater_campaign_rows(user=request.user) if roles.is_rater(request.user) else []
    )
    return render(request, "rating/rate_home.html", {"rows": rows})


@dataclass
class SkillRow:
    """One skill of the rating form: the rubric text, the current value, its errors."""

    skill: Skill
    value: str = ""  # "1".."5", "na" or "" (not chosen yet)
    rationale: str = ""
    errors: list[str] = field(default_factory=list)
    checklist: list[str] = field(default_factory=list)

    @property
    def key(self) -> str:
        return self.skill.key

    @property
    def is_metacognition(self) -> bool:
        return self.skill.key == METACOGNITION

    @property
    def ability_label(self) -> str:
        return (
            Ability(self.skill.ability).label
            if self.skill.ability in Ability.values
            else ""
        )


def _score_value(score: int | None) -> str:
    return "na" if score is None else str(score)


def _skill_rows(
    *,
    skills: list[Skill],
    checklist: list | None,
    values: dict[str, str] | None = None,
    rationales: dict[str, str] | None = None,
    problems: list[Problem] | None = None,
) -> tuple[list[SkillRow], list[str], list[str]]:
    """The form rows, the checklist questions shown above all rows, general errors.

    A checklist question whose skill is not scored here is shown above the rows too,
    with the skill's key, so no question is lost.
    """
    values = values or {}
    rationales = rationales or {}
    rows = {
        s.key: SkillRow(
            skill=s, value=values.get(s.key, ""), rationale=rationales.get(s.key, "")
        )
        for s in skills
    }
    general_questions: list[str] = []
    for entry in checklist or []:
        if not isinstance(entry, dict) or not entry.get("question"):
            continue
        key = entry.get("skill")
        if key in rows:
            rows[key].checklist.append(str(entry["question"]))
        elif key:
            general_questions.append(
                f"{key.replace('_', ' ').capitalize()}: {entry['question']}"
            )
        else:
            general_questions.append(str(entry["question"]))
    general_errors: list[str] = []
    for problem in problems or []:
        kind, _, key = (problem.field or "").partition(".")
        if kind in {"scores", "rationales"} and key in rows:
            row = rows[key]
            what = "rationale" if kind == "rationales" else "score"
            # "Factuality score is missing: ..." / "Factuality score: 7 is not 1-5 ..."
            sep = " " if problem.message.startswith("is ") else ": "
            row.errors.append(f"{row.skill.name} {what}{sep}{problem.message}")
        else:
            general_errors.append(str(problem))
    return list(rows.values()), general_questions, general_errors


def _parse_scores(post: QueryDict) -> tuple[dict, dict, dict[str, str]]:
    """`score-<key>` / `rationale-<key>` fields -> the service's dicts, and raw values.

    "na" becomes None and digits an int; anything else is passed on as text so that
    the service's message names the bad value. An empty field counts as missing.
    """
    scores: dict = {}
    rationales: dict[str, str] = {}
    raw: dict[str, str] = {}
    for name in post:
        if name.startswith("score-"):
            key, value = name[len("score-") :], post.get(name, "").strip()
            if not value:
                continue
            raw[key] = value.lower()
            if value.lower() in {"na", "n/a"}:
                scores[key] = None
            elif value.isdigit():
                scores[key] = int(value)
            else:
                scores[key] = value
        elif name.startswith("rationale-"):
            rationales[name[len("rationale-") :]] = post.get(name, "")
    return scores, rationales, raw


def _parse_active_seconds(raw: str | None) -> float | None:
    try:
        value = float(raw or "")
    except ValueError:
        return None
    # A day of active time on one response is a broken counter, not a rater.
    return value if 0 <= value < 86400 else None


def _panel_context(
    request: HttpRequest,
    *,
    campaign: Campaign,
    assignment: Assignment | None,
    message: str = "",
    locked_by_others: int = 0,
    values: dict[str, str] | None = None,
    rationales: dict[str, str] | None = None,
    problems: list[Problem] | None = None,
    error: str = "",
    skip_error: str = "",
    skip_reason: str = "",
    saved: Assignment | None = None,
) -> dict:
    """Everything `rate_next.html#rating-panel` shows (a fixed number of queries)."""
    context: dict = {
        "campaign": campaign,
        "assignment": assignment,
        "message": message,
        "locked_by_others": locked_by_others,
        "progress": selectors.rater_progress(user=request.user, campaign=campaign),
        "error": error,
        "has_problems": bool(problems),
        "skip_error": skip_error,
        "skip_reason": skip_reason,
        "saved": saved,
        "score_choices": SCORE_CHOICES,
    }
    if assignment is not None:
        instruction = assignment.response.instruction
        rows, questions, general_errors = _skill_rows(
            skills=selectors.assignment_skills(assignment=assignment),
            checklist=instruction.checklist,
            values=values,
            rationales=rationales,
            problems=problems,
        )
        context.update(
            instruction=instruction,
            response_text=assignment.response.text,
            # Blind by default: the model name enters the page only when allowed.
            model_name=assignment.response.model_name
            if campaign.show_model_names
            else "",
            reference=instruction.reference_answer if campaign.show_reference else "",
            rows=rows,
            general_questions=questions,
            general_errors=general_errors,
        )
    return context


def _serve_next(request: HttpRequest, campaign: Campaign, **extra) -> dict:
    result = services.assignment_next(campaign=campaign, rater=request.user)
    assignment = None
    if result.assignment is not None:
        assignment = selectors.assignment_get_for_rater(
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


def _saved_assignment(request: HttpRequest) -> int | None:
    raw = request.GET.get("saved", "")
    return int(raw) if raw.isdigit() else None


@login_required
@require_GET
def rate_next(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """The rater's current response (or the next one), ready to score.

    Full page normally; the `#rating-panel` fragment when htmx asks ("Check again").
    """
    campaign = selectors.campaign_get_for_rater(
        user=request.user, campaign_id=campaign_id
    )
    context = _serve_next(request, campaign)
    context["saved_id"] = _saved_assignment(request)
    return _render_page_or_fragment(
        request, "rating/rate_next.html", "rating-panel", context
    )


def _after_rating(
    request: HttpRequest, assignment: Assignment, *, saved: bool
) -> HttpResponse:
    """The next response's panel for htmx; a redirect to rate-next otherwise."""
    campaign = assignment.campaign
    if not _wants_fragment(request):
        url = reverse("rating:rate-next", args=[campaign.pk])
        return redirect(f"{url}?saved={assignment.pk}" if saved else url)
    context = _serve_next(request, campaign)
    context["saved_id"] = assignment.pk if saved else None
    response = render(request, "rating/rate_next.html#rating-panel", context)
    patch_vary_headers(response, ("HX-Request",))
    return response


def _invalid_panel(request: HttpRequest, context: dict) -> HttpResponse:
    # htmx does not swap 4xx answers by default; rating.js swaps 422 in, so the rater
    # sees the errors in place. A plain form post gets the usual 400.
    status = HTMX_INVALID if _wants_fragment(request) else 400
    return _render_page_or_fragment(
        request, "rating/rate_next.html", "rating-panel", context, status=status
    )


@login_required
@require_POST
def assignment_submit(request: HttpRequest, assignment_id: int) -> HttpResponse:
    """Save the scores of one assignment, then serve the next response.

    Bad input re-renders the form with the posted values and each error next to its
    skill row (400, or 422 for htmx); nothing is saved then.
    """
    assignment = selectors.assignment_get_for_rater(
        user=request.user, assignment_id=assignment_id
    )
    scores, rationales, raw = _parse_scores(request.POST)
    try:
        services.rating_submit(
            assignment_id=assignment.pk,
            rater=request.user,
            scores=scores,
            rationales=rationales,
            active_seconds=_parse_active_seconds(request.POST.get("active_seconds")),
        )
    except DomainError as exc:
        context = _panel_context(
            request,
            campaign=assignment.campaign,
            assignment=assignment,
            values=raw,
            rationales=rationales,
            problems=exc.problems,
            error=exc.message,
        )
        return _invalid_panel(request, context)
    return _after_rating(request, assignment, saved=True)


@login_required
@require_POST
def assignment_skip(request: HttpRequest, assignment_id: int) -> HttpResponse:
    """Skip the response with a reason; the next one is served."""
    assignment = selectors.assignment_get_for_rater(
        user=request.user, assignment_id=assignment_id
    )
    reason = request.POST.get("reason", "")
    try:
        services.assignment_skip(
            assignment_id=assignment.pk, rater=request.user, reason=reason
        )
    except DomainError as exc:
        context = _panel_context(
            request,
            campaign=assignment.campaign,
            assignment=assignment,
            skip_error=exc.message,
            skip_reason=reason,
        )
        return _invalid_panel(request, context)
    return _after_rating(request, assignment, saved=False)


@login_required
@require_GET
def rate_history(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """The rater's own submitted and skipped responses in a campaign."""
    campaign = selectors.campaign_get_for_rater(
        user=request.user, campaign_id=campaign_id
    )
    assignments = selectors.rater_assignments(user=request.user, campaign=campaign)
    page = Paginator(assignments, HISTORY_PER_PAGE).get_page(request.GET.get("page"))
    context = {
        "campaign": campaign,
        "page": page,
        "progress": selectors.rater_progress(user=request.user, campaign=campaign),
    }
    return render(request, "rating/rate_history.html", context)


@login_required
@require_http_methods(["GET", "POST"])
def assignment_review(request: HttpRequest, assignment_id: int) -> HttpResponse:
    """The rater's own submitted scores; editable while the campaign is not closed."""
    assignment = selectors.assignment_get_for_rater(
        user=request.user, assignment_id=assignment_id
    )
    campaign = assignment.campaign
    if assignment.status == Assignment.Status.SERVED:
        # Still being rated: the rating page is where it is scored.
        return redirect("rating:rate-next", campaign_id=campaign.pk)
    editable = (
        assignment.status == Assignment.Status.SUBMITTED
        and campaign.status != Campaign.Status.CLOSED
    )
    existing = list(assignment.scores.all())
    values = {s.skill.key: _score_value(s.score) for s in existing}
    rationales = {s.skill.key: s.rationale for s in existing}
    problems: list[Problem] = []
    error = ""
    status = 200
    if request.method == "POST":
        scores, posted_rationales, raw = _parse_scores(request.POST)
        try:
            services.rating_amend(
                assignment_id=assignment.pk,
                rater=request.user,
                scores=scores,
                rationales=posted_rationales,
            )
        except DomainError as exc:
            values, rationales = raw, posted_rationales
            problems, error, status = exc.problems, exc.message, 400
        else:
            messages.success(request, "Your changes are saved.")
            return redirect("rating:assignment-review", assignment_id=assignment.pk)
    skills = selectors.assignment_skills(assignment=assignment)
    if assignment.status != Assignment.Status.SUBMITTED:
        skills = []
    instruction = assignment.response.instruction
    rows, questions, general_errors = _skill_rows(
        skills=skills,
        checklist=instruction.checklist,
        values=values,
        rationales=rationales,
        problems=problems,
    )
    context = {
        "campaign": campaign,
        "assignment": assignment,
        "instruction": instruction,
        "response_text": assignment.response.text,
        "model_name": assignment.response.model_name
        if campaign.show_model_names
        else "",
        "reference": instruction.reference_answer if campaign.show_reference else "",
        "rows": rows,
        "general_questions": questions,
        "general_errors": general_errors,
        "error": error,
        "editable": editable,
        "readonly": not editable,
        "score_choices": SCORE_CHOICES,
    }
    return render(request, "rating/assignment_review.html", context, status=status)
