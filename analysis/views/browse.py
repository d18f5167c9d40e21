"""The researcher's view of the data: an instruction's responses with every human and
judge score side by side, and a dataset's responses filtered by their scores.

They live in analysis because they read both apps' scores (annotation never imports
judging). Function views, thin: parse the query string (`analysis.selectors.browse`
checks it and names a bad parameter), call the selectors, render. Researchers and
admins only: the selectors check the role, so raters get a 403.

Both pages read the same query string: the dataset browser's instruction filters
(`annotation.selectors.instruction_filters_parse`) and the response filter
(`browse.FILTER_PARAMS`). Links between them keep it, so the instruction page's
previous / next links step through what the researcher filtered.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.http import urlencode
from django.views.decorators.http import require_GET

from analysis.selectors import browse
from annotation import selectors as annotation_selectors
from annotation.importers.taxonomy import FACET_PREFIX
from annotation.models import Response
from annotation.scales import scale_of
from flaskapp.htmx import render_page_or_fragment, wants_fragment
from flaskapp.params import BadParameter

RESPONSES_PER_PAGE = 50
BROWSER_PARAMS = ("domain", "difficulty", "skill", "task", "hard", "q")


def _kept_query(request: HttpRequest) -> str:
    """The filter parameters of the request as a query string ("" or "?..."), for
    links that keep the active filters."""
    keep = [*BROWSER_PARAMS, *browse.FILTER_PARAMS]
    keep += [k for k in request.GET if k.startswith(FACET_PREFIX)]  # facet.NAME
    pairs = [(k, request.GET[k]) for k in keep if request.GET.get(k, "").strip()]
    return f"?{urlencode(pairs)}" if pairs else ""


@login_required
@require_GET
def instruction_detail(request: HttpRequest, instruction_id: int) -> HttpResponse:
    """An instruction, its reference answer and metadata, and every response with its
    human scores (pseudonymous raters) and judge runs' values per criterion on its
    own scale (labels for a categorical one), side by side, disagreements
    highlighted, and the raters' and judges' critiques side by side; previous / next
    instruction of the dataset under the filters in the query string. A fixed number
    of queries."""
    instruction = annotation_selectors.instruction_get_for_user(
        user=request.user, instruction_id=instruction_id
    )
    dataset = instruction.dataset
    responses = list(instruction.responses.all())
    scored = browse.instruction_scores(
        user=request.user, instruction=instruction, responses=responses
    )
    instruction_filters = annotation_selectors.instruction_filters_parse(
        request.GET, dataset
    )
    flt = browse.response_filter_parse(dataset=dataset, params=request.GET)
    previous, following, position, count = browse.instruction_neighbours(
        dataset=dataset,
        instruction_id=instruction.pk,
        instruction_filters=instruction_filters,
        flt=flt,
    )
    skill_links = list(instruction.skill_links.all())
    skill_names = {link.skill.key: link.skill.name for link in skill_links}
    checklist = [
        {
            "skill": skill_names.get(item.get("skill"), item.get("skill") or ""),
            "question": item.get("question", ""),
        }
        for item in instruction.checklist or []
    ]
    context = {
        "instruction": instruction,
        "dataset": dataset,
        "skill_links": skill_links,
        "checklist": checklist,
        "responses": scored,
        "disagreement": browse.DISAGREEMENT,
        "previous_id": previous,
        "next_id": following,
        "position": position,
        "count": count,
        "is_filtered": bool(instruction_filters) or flt.active,
        "kept_query": _kept_query(request),
        "has_response_filter": flt.active,
    }
    return render(request, "analysis/instruction_detail.html", context)


@login_required
@require_GET
def dataset_responses(request: HttpRequest, dataset_id: int) -> HttpResponse:
    """A dataset's responses filtered by model, by judge-human disagreement on a skill
    and by score ranges (`browse.response_filter_parse`), paginated, each linked to
    its instruction page with the filters kept. A bad parameter: the form again with
    the message naming it (status 400). With htmx: the `#response-results` fragment.
    """
    dataset = annotation_selectors.dataset_get_for_user(
        user=request.user, dataset_id=dataset_id
    )
    skills = [
        {"key": s.key, "name": s.name, "scale": scale_of(s)}
        for s in dataset.rubric.skills.order_by("position")
    ]
    bounds = browse.filter_bounds(
        {s["key"]: s["scale"] for s in skills}, request.GET.get("skill", "").strip()
    )
    context = {
        "dataset": dataset,
        "params": request.GET,
        "models": list(
            Response.objects.filter(instruction__dataset=dataset)
            .order_by("model_name")
            .values_list("model_name", flat=True)
            .distinct()
        ),
        "runs": browse.scored_run_choices(dataset=dataset),
        "skills": skills,
        "disagreement": browse.DISAGREEMENT,
        "kept_query": _kept_query(request),
        # The number inputs' bounds: the chosen skill's scale, or the rubric's span.
        "bounds": dict(zip(("low", "high", "spread"), bounds, strict=True)),
    }
    status = 200
    try:
        flt = browse.response_filter_parse(dataset=dataset, params=request.GET)
    except BadParameter as exc:
        context["problem"] = exc.problems[0]
        status = 400
    else:
        matches = browse.response_matches(dataset=dataset, flt=flt)
        page = Paginator(matches, RESPONSES_PER_PAGE).get_page(request.GET.get("page"))
        details = {
            r.pk: r
            for r in Response.objects.filter(
                pk__in=[m.response_id for m in page.object_list]
            ).select_related("instruction")
        }
        context.update(
            flt=flt,
            page=page,
            rows=[(m, details[m.response_id]) for m in page.object_list],
        )
    if wants_fragment(request) and status == 400:
        # htmx swaps only 2xx answers: the message goes into the results panel.
        status = 200
    return render_page_or_fragment(
        request,
        "analysis/dataset_responses.html",
        "response-results",
        context,
        status=status,
    )
