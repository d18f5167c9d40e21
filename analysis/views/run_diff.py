"""The item-level diff of two judge runs (researchers and admins):

    /runs/<run_id>/diff/<other_id>/   the items where the two runs' scores differ,
                                      both scores and rationales (?criterion=, ?page=)

Thin: parse the query, call `analysis.selectors.run_diff`, render. Bad parameters
are shown on the page (status 400) with the parameter named.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from analysis.selectors.run_diff import run_diff_for_user
from flaskapp.bounds import ID
from flaskapp.errors import DomainError
from flaskapp.params import int_param
from judging.selectors.runs import judge_run_get_for_user


@login_required
@require_GET
def run_diff(request: HttpRequest, run_id: int, other_id: int) -> HttpResponse:
    criterion = request.GET.get("criterion", "")[:64]
    error, diff = None, None
    try:
        page = int_param(request.GET, "page", 1, min_value=1, max_value=ID.high)
        diff = run_diff_for_user(
            user=request.user,
            run_id=run_id,
            other_id=other_id,
            criterion=criterion,
            page=page,
        )
    except DomainError as exc:
        error = exc
    context = {
        "diff": diff,
        "error": error,
        # the runs for the heading even when the query is refused (404 / 403 first)
        "a": diff["a"]
        if diff
        else judge_run_get_for_user(user=request.user, run_id=run_id),
        "b": diff["b"]
        if diff
        else judge_run_get_for_user(user=request.user, run_id=other_id),
        "criterion": criterion,
    }
    return render(
        request, "analysis/run_diff.html", context, status=400 if error else 200
    )
