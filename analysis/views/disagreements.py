"""Reading a run's disagreements: per criterion, the items where the run and the humans
disagree most, both rationales side by side, the researcher's failure tags on each,
tag counts for the run and its prompt version, and notes on the criterion kept with
the prompt version.

    GET  /runs/{id}/disagreements/?skill=KEY&campaign=ID&campaign=ID&split=dev|all
    POST /runs/{id}/disagreements/tags/          response, skill, tag[, note]
    POST /runs/{id}/disagreements/tags/remove/   response, skill, tag
    POST /runs/{id}/disagreements/notes/         skill_key, text

The items come from the agreement drill-down (`agreement_disagreements`); defaults:
the rubric's first ordinal criterion, every pointwise campaign of the dataset, and
the development split when the dataset has one (the test split is locked: it is
looked at, logged, from the workbench). With htmx the page answers its
`#run-disagreements` fragment and each form its own block (`#item-tags-<response>`,
`#criterion-notes`) with the tag counts swapped out of band. Researchers and admins
only (`judge_run_get_for_user`): raters get a 403, anonymous users the login page.
"""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.cache import patch_vary_headers
from django.views.decorators.http import require_GET, require_POST

from analysis.display import DRILL_LIMIT
from analysis.selectors.agreement import (
    AgreementError,
    agreement_disagreements,
    agreement_sources_for_user,
    run_label,
)
from annotation.models import Skill, SkillKind
from flaskapp.errors import DomainError
from flaskapp.htmx import render_page_or_fragment, wants_fragment
from flaskapp.params import ascii_int
from flaskapp.throttling import heavy_page
from flaskapp.untrusted import printable, text_problem
from judging.models import JudgeRun, JudgeScore
from judging.selectors import tags as tag_selectors
from judging.selectors.runs import judge_run_get_for_user
from judging.selectors.splits import eval_split_of
from judging.services.tags import (
    criterion_note_add,
    failure_tag_apply,
    failure_tag_remove,
)

TEMPLATE = "analysis/run_disagreements.html"
SPLITS = {"dev": "development split", "all": "all items"}
TEST_LOCKED = (
    "`split`: the test split is locked; evaluating on it is logged: use 'Evaluate "
    "on the test split' on the workbench or experiment page"
)


class _Choice:
    """The page's query string, parsed against the run's dataset."""

    def __init__(self, data, criteria: list[Skill], campaigns, split):
        self.problems: list[str] = []
        keys = [s.key for s in criteria]
        self.skill = str(data.get("skill") or (keys[0] if keys else ""))
        if keys and self.skill not in keys:
            self.problems.append(
                f"`skill`: “{printable(self.skill[:64])}” is not a criterion of "
                "the rubric"
            )
            self.skill = ""  # nothing is read for an unknown criterion
        known = [c["id"] for c in campaigns]
        raw = [v for part in data.getlist("campaign") for v in part.split(",") if v]
        self.campaign_ids = [ascii_int(v) for v in raw] if raw else list(known)
        if None in self.campaign_ids:
            self.problems.append("`campaign`: campaign ids are whole numbers")
            self.campaign_ids = [c for c in self.campaign_ids if c is not None]
        self.has_split = split is not None
        self.split = str(data.get("split") or ("dev" if self.has_split else "all"))
        if self.split == "test":
            self.problems.append(TEST_LOCKED)
        elif self.split not in SPLITS:
            self.problems.append(
                f"`split`: use 'dev' or 'all', not “{self.split[:20]}”"
            )
        elif self.split == "dev" and not self.has_split:
            self.problems.append("`split`: the dataset has no development / test split")
        self.explicit = bool(data)


def _criteria(run: JudgeRun) -> list[Skill]:
    """The run's dataset's ordinal criteria (agreement leaves categorical ones out)
    that the run scored (all of them when it scored none yet), so the page opens on a
    criterion with items."""
    criteria = list(
        Skill.objects.filter(rubric_id=run.dataset.rubric_id)
        .exclude(kind=SkillKind.CATEGORICAL)
        .order_by("position", "pk")
    )
    scored = set(
        JudgeScore.objects.filter(run=run)
        .values_list("skill__key", flat=True)
        .distinct()
    )
    return [s for s in criteria if s.key in scored] or criteria


def _sidebar(run: JudgeRun, prompt) -> dict:
    return {
        "run_counts": tag_selectors.failure_tag_counts_of_run(run=run),
        "prompt_counts": tag_selectors.failure_tag_counts_of_prompt(
            prompt=prompt, workspace_id=run.workspace_id
        )
        if prompt
        else None,
        "tag_names": tag_selectors.failure_tag_names(dataset=run.dataset),
    }


def _notes(prompt, skill_key: str, workspace_id: int | None = None) -> dict:
    return {
        "notes": list(
            tag_selectors.criterion_note_list(
                prompt=prompt, skill_key=skill_key, workspace_id=workspace_id
            )
        )
        if prompt and skill_key
        else [],
        "note_skill": skill_key,
    }


def _context(request: HttpRequest, run: JudgeRun, data) -> dict:
    """Everything the page shows for the query string `data`."""
    prompt = tag_selectors.run_prompt(run=run)
    criteria = _criteria(run)
    campaigns = agreement_sources_for_user(user=request.user, dataset=run.dataset)[
        "campaigns"
    ]
    choice = _Choice(data, criteria, campaigns, eval_split_of(dataset=run.dataset))
    items: list[dict] = []
    if not choice.problems and not choice.campaign_ids:
        choice.problems.append(
            "`campaign`: the dataset has no pointwise campaign to compare the run with"
        )
    if not choice.problems:
        try:
            items = agreement_disagreements(
                dataset=run.dataset,
                campaign_ids=choice.campaign_ids,
                run_id=run.pk,
                skill_key=choice.skill,
                slice_dim="split" if choice.split == "dev" else "",
                slice_value="dev" if choice.split == "dev" else "",
                limit=DRILL_LIMIT,
            )
        except (AgreementError, DomainError) as exc:
            choice.problems.append(str(exc))
    tags = (
        tag_selectors.disagreement_tags_by_item(
            run=run,
            response_ids=[i["response_id"] for i in items],
            skill_key=choice.skill,
        )
        if items
        else {}
    )
    items = [
        {**item, "tags": tags.get((item["response_id"], choice.skill), [])}
        for item in items
    ]
    return {
        "run": run,
        "run_label": run_label(run),
        "dataset": run.dataset,
        "prompt": prompt,
        "criteria": criteria,
        "criterion": next((s for s in criteria if s.key == choice.skill), None),
        "campaigns": campaigns,
        "choice": choice,
        "keep": {"campaign_ids": choice.campaign_ids, "split": choice.split},
        "splits": SPLITS,
        "split_label": SPLITS.get(choice.split, ""),
        "skill_key": choice.skill,
        "items": items,
        "limit": DRILL_LIMIT,
        **_sidebar(run, prompt),
        **_notes(prompt, choice.skill, run.workspace_id),
    }


@login_required
@heavy_page
@require_GET
def run_disagreements(request: HttpRequest, run_id: int) -> HttpResponse:
    """The page; with htmx (the criterion, campaign and split form) the
    `#run-disagreements` fragment. A bad choice is a 400 for the page and a 200
    fragment that says why (htmx swaps only 2xx answers)."""
    run = judge_run_get_for_user(user=request.user, run_id=run_id)
    context = _context(request, run, request.GET)
    choice = context["choice"]
    status = 400 if choice.problems and choice.explicit else 200
    if wants_fragment(request):
        status = 200
    return render_page_or_fragment(
        request, TEMPLATE, "run-disagreements", context, status
    )


def _keep(data) -> dict:
    """The page's choice that a form sends back in hidden fields, so the page it
    returns to (or re-renders) shows the same campaigns and split."""
    return {
        "campaign_ids": [
            c for c in (ascii_int(v) for v in data.getlist("campaign")) if c
        ],
        "split": data.get("split", "") if data.get("split") in SPLITS else "",
    }


def _back(request: HttpRequest, run: JudgeRun) -> str:
    """The page this form was sent from (its choice kept in hidden fields)."""
    keep = _keep(request.POST)
    params = {
        "skill": request.POST.get("skill") or request.POST.get("skill_key", ""),
        "campaign": keep["campaign_ids"],
        "split": keep["split"],
    }
    params = {k: v for k, v in params.items() if v}
    url = reverse("analysis:run-disagreements", args=[run.pk])
    return f"{url}?{urlencode(params, doseq=True)}" if params else url


def _answer(request, run, fragment: str, context: dict, error: str) -> HttpResponse:
    """An htmx form's block (200 even with an error, which it shows); without htmx,
    back to the page, or a 400 page naming the problem."""
    if wants_fragment(request):
        response = render(request, f"{TEMPLATE}#{fragment}", context)
        patch_vary_headers(response, ("HX-Request",))
        return response
    if error:
        return HttpResponse(error, status=400, content_type="text/plain; charset=utf-8")
    return redirect(_back(request, run))


def _tag_form(request: HttpRequest, run_id: int, remove: bool) -> HttpResponse:
    run = judge_run_get_for_user(user=request.user, run_id=run_id)
    response_id = ascii_int(request.POST.get("response"))
    skill_key = request.POST.get("skill", "")
    args = {
        "user": request.user,
        "run": run,
        "response": response_id,
        "skill": skill_key,
        "tag_name": request.POST.get("tag", ""),
    }
    error = ""
    try:
        if remove:
            failure_tag_remove(**args)
        else:
            failure_tag_apply(**args, note=request.POST.get("note", ""))
    except DomainError as exc:
        error = str(exc)
    tags = (
        {}
        if text_problem(skill_key)  # refused above; not a value to query with
        else tag_selectors.disagreement_tags_by_item(
            run=run, response_ids=[response_id or 0], skill_key=skill_key
        )
    )
    context = {
        "run": run,
        "item": {
            "response_id": response_id,
            "tags": tags.get((response_id, skill_key)),
        },
        "skill_key": skill_key,
        "keep": _keep(request.POST),
        "tag_error": error,
        "oob": True,
        **_sidebar(run, tag_selectors.run_prompt(run=run)),
    }
    return _answer(request, run, "item-tags", context, error)


@login_required
@require_POST
def run_disagreement_tag_add(request: HttpRequest, run_id: int) -> HttpResponse:
    """Tag an item with a failure mode (`failure_tag_apply`)."""
    return _tag_form(request, run_id, remove=False)


@login_required
@require_POST
def run_disagreement_tag_remove(request: HttpRequest, run_id: int) -> HttpResponse:
    """Take a failure tag off an item (`failure_tag_remove`)."""
    return _tag_form(request, run_id, remove=True)


@login_required
@require_POST
def run_criterion_note_add(request: HttpRequest, run_id: int) -> HttpResponse:
    """Keep a note on a criterion with the run's prompt version
    (`criterion_note_add`)."""
    run = judge_run_get_for_user(user=request.user, run_id=run_id)
    prompt = tag_selectors.run_prompt(run=run)
    skill_key = request.POST.get("skill_key", "")
    error = ""
    if prompt is None:
        error = "`prompt`: this run used no prompt template (an import or a baseline)"
    else:
        try:
            criterion_note_add(
                user=request.user,
                prompt=prompt,
                skill_key=skill_key,
                text=request.POST.get("text", ""),
                dataset=run.dataset,
            )
        except DomainError as exc:
            error = str(exc)
    context = {
        "run": run,
        "prompt": prompt,
        "keep": _keep(request.POST),
        "note_error": error,
        "note_text": request.POST.get("text", "") if error else "",
        **_notes(prompt, skill_key, run.workspace_id),
    }
    return _answer(request, run, "criterion-notes", context, error)
