"""The gold page of a dataset: its known-answer items, marked one by one or by file."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from annotation import selectors
from annotation.models import GoldItem
from annotation.scales import scale_of
from annotation.services.gold import gold_delete, gold_import_file, gold_set
from flaskapp.errors import DomainError
from flaskapp.optional import PARQUET
from flaskapp.params import ascii_int

GOLD_SHOWN = 200


class GoldImportForm(forms.Form):
    file = forms.FileField()


def _criteria(dataset, posted=None):
    """(skill, scale, [(value, text)], chosen) per criterion of the dataset's rubric,
    for the single-item form (the values a rater could give; `chosen` the posted one,
    kept when a mark is refused)."""
    posted = posted or {}
    out = []
    for skill in dataset.rubric.skills.order_by("position"):
        scale = scale_of(skill)
        options = [(scale.label_of(v), scale.name_of(v)) for v in scale.values]
        if scale.allow_na:
            options.append(("N/A", "N/A"))
        out.append((skill, scale, options, posted.get(f"score_{skill.key}", "")))
    return out


@login_required
@require_http_methods(["GET", "POST"])
def dataset_gold(request: HttpRequest, dataset_id: int) -> HttpResponse:
    """List the dataset's gold items; POST marks one response (`action=mark`) or
    imports a file (`action=import`). A refused mark or file changes nothing and
    lists each problem."""
    dataset = selectors.dataset_get_for_user(user=request.user, dataset_id=dataset_id)
    problems: list = []
    status = 200
    criteria = _criteria(dataset, request.POST if request.method == "POST" else None)
    if request.method == "POST":
        try:
            if request.POST.get("action") == "import":
                form = GoldImportForm(request.POST, request.FILES)
                if not form.is_valid():
                    raise DomainError("choose a file to import")
                upload = form.cleaned_data["file"]
                result = gold_import_file(
                    dataset=dataset,
                    data=upload.read(),
                    file=upload.name,
                    user=request.user,
                )
                done = (
                    f"{result['created']} gold item(s) created, "
                    f"{result['updated']} updated."
                )
            else:
                raw_id = request.POST.get("response_id", "").strip()
                response_id = ascii_int(raw_id)
                scores = {
                    skill.key: request.POST[f"score_{skill.key}"]
                    for skill, _, _, _ in criteria
                    if request.POST.get(f"score_{skill.key}")
                }
                gold_set(
                    dataset=dataset,
                    response_id=raw_id if response_id is None else response_id,
                    scores=scores,
                    tolerance=request.POST.get("tolerance", "").strip() or None,
                    explanation=request.POST.get("explanation", ""),
                    kind=request.POST.get("kind") or GoldItem.Kind.GOLD,
                    user=request.user,
                )
                done = f"Response {response_id} is a gold item."
        except DomainError as exc:
            problems = exc.problems or [exc.message]
            status = 400
        else:
            messages.success(request, done)
            return redirect("annotation:dataset-gold", dataset_id=dataset.pk)
    golds = list(selectors.gold_list(dataset=dataset)[:GOLD_SHOWN])
    context = {
        "dataset": dataset,
        "golds": [(g, selectors.gold_expected(g)) for g in golds],
        "total": selectors.gold_list(dataset=dataset).count(),
        "shown": GOLD_SHOWN,
        "criteria": criteria,
        "kinds": GoldItem.Kind.choices,
        "problems": problems,
        "posted": request.POST if request.method == "POST" else {},
        "parquet": PARQUET.available(),
    }
    return render(request, "annotation/dataset_gold.html", context, status=status)


@login_required
@require_POST
def dataset_gold_delete(
    request: HttpRequest, dataset_id: int, response_id: int
) -> HttpResponse:
    """Unmark one gold item (scores already given to it stay)."""
    dataset = selectors.dataset_get_for_user(user=request.user, dataset_id=dataset_id)
    gold = selectors.gold_get(dataset=dataset, response_id=response_id)
    if gold is None:
        messages.error(request, f"Response {response_id} is not a gold item.")
    else:
        gold_delete(gold=gold, user=request.user)
        messages.success(request, f"Response {response_id} is no longer a gold item.")
    return redirect("annotation:dataset-gold", dataset_id=dataset.pk)
