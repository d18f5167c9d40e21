"""The report page (researchers): `/report/<dataset_id>/` shows what the report holds
and its parameters; `?download=1` answers the zip (`analysis.exports.report`)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from analysis.exports.report import report_files, report_zip
from annotation import selectors as annotation_selectors
from flaskapp.bounds import N_BOOT, SEED
from flaskapp.params import ascii_int


def _slug(text: str) -> str:
    return (
        "".join(c if c.isalnum() or c in "-_" else "-" for c in text)[:80] or "report"
    )


@login_required
@require_GET
def dataset_report(request: HttpRequest, dataset_id: int) -> HttpResponse:
    dataset = annotation_selectors.dataset_get_for_user(
        user=request.user, dataset_id=dataset_id
    )
    problems = []
    n_boot = ascii_int(request.GET.get("n_boot", "1000"))
    seed = ascii_int(request.GET.get("seed", "0"))
    if n_boot is None or not N_BOOT.contains(n_boot):
        problems.append(f"`n_boot`: {N_BOOT.message()}")
    if seed is None or not SEED.contains(seed):
        problems.append(f"`seed`: {SEED.message()}")
    if request.GET.get("download") and not problems:
        files = report_files(dataset=dataset, n_boot=n_boot, seed=seed)
        name = f"report-{_slug(dataset.name)}-seed{seed}"
        response = HttpResponse(
            report_zip(files, folder=name), content_type="application/zip"
        )
        response["Content-Disposition"] = f'attachment; filename="{name}.zip"'
        return response
    return render(
        request,
        "analysis/dataset_report.html",
        {
            "dataset": dataset,
            "n_boot": n_boot if n_boot is not None else 1000,
            "seed": seed if seed is not None else 0,
            "problems": problems,
        },
        status=400 if problems else 200,
    )
