"""Prompt template pages: versions and the editor (researchers)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from flaskapp import roles
from flaskapp.bounds import ID
from flaskapp.errors import DomainError
from flaskapp.params import int_param
from flaskapp.workspaces import current_workspace
from judging.models import (
    PromptTemplate,
)
from judging.selectors import runs as selectors

RUNS_PER_PAGE = 50
CALLS_PER_PAGE = 25
SUGGESTIONS_PER_PAGE = 50


@login_required
@require_http_methods(["GET", "POST"])
def prompt_list(request: HttpRequest) -> HttpResponse:
    """Every prompt template version; a form saves an edited copy as the next version.

    `?from=<id>` prefills the form with that version's text (and name), so editing a
    template never changes the text that earlier runs used.
    """
    from judging.services.prompts import prompt_template_create

    roles.require_researcher(request.user)
    templates = selectors.prompt_template_list(
        user=request.user, workspace=current_workspace(request)
    )
    base = None
    base_id = int_param(request.GET, "from", None, min_value=1, max_value=ID.high)
    if base_id is not None:
        base = templates.filter(pk=base_id).first()
    if base is None and request.method == "GET":
        from judging.services.prompts import prompt_get_builtin

        base = prompt_get_builtin(PromptTemplate.Kind.POINTWISE)
    form = {
        "name": base.name if base else "",
        "kind": base.kind if base else PromptTemplate.Kind.POINTWISE,
        "system_text": base.system_text if base else "",
        "user_text": base.user_text if base else "",
    }
    problems = []
    status = 200
    if request.method == "POST":
        form = {k: request.POST.get(k, "") for k in form}
        name = form["name"].strip()
        if name.startswith("builtin-"):
            name = "custom-" + name.removeprefix("builtin-")
        try:
            created = prompt_template_create(
                user=request.user,
                name=name,
                kind=form["kind"],
                system_text=form["system_text"],
                user_text=form["user_text"],
                workspace=current_workspace(request),
            )
        except DomainError as exc:
            problems = exc.problems or []
            status = 400
        else:
            messages.success(request, f"Saved {created}.")
            return redirect("judging:prompt-list")
    return render(
        request,
        "judging/prompt_list.html",
        {
            "templates": templates,
            "form": form,
            "problems": problems,
            "kinds": PromptTemplate.Kind.choices,
            "base": base,
        },
        status=status,
    )


@login_required
@require_http_methods(["GET"])
def prompt_preview(request: HttpRequest, prompt_id: int) -> HttpResponse:
    """A template version rendered for one response (`?response=<id>`), with its
    size and estimated input tokens, before any call is paid for."""

    from judging.selectors.prompts import prompt_preview_for_user
    from judging.selectors.tags import prompt_get_for_user

    template = prompt_get_for_user(user=request.user, prompt_id=prompt_id)
    response_id = int_param(
        request.GET, "response", None, min_value=1, max_value=ID.high
    )
    preview = (
        prompt_preview_for_user(
            user=request.user, template=template, response_id=response_id
        )
        if response_id
        else None
    )
    if preview and "chars" in preview:  # the estimate's one rule for tokens
        from judging.services.estimates import CHARS_PER_TOKEN

        preview["tokens"] = preview["chars"] // CHARS_PER_TOKEN
    status = 400 if preview and "error" in preview else 200
    return render(
        request,
        "judging/prompt_preview.html",
        {"template": template, "preview": preview, "response_id": response_id or ""},
        status=status,
    )


@login_required
@require_http_methods(["GET"])
def prompt_diff_page(request: HttpRequest) -> HttpResponse:
    """The line-by-line difference between two template versions (`?a=&b=`)."""
    from judging.selectors.prompts import prompt_diff

    roles.require_researcher(request.user)
    templates = selectors.prompt_template_list(
        user=request.user, workspace=current_workspace(request)
    )
    ids = [
        int_param(request.GET, k, None, min_value=1, max_value=ID.high) for k in "ab"
    ]
    chosen = [templates.filter(pk=i).first() if i else None for i in ids]
    diff = prompt_diff(*chosen) if all(chosen) else None
    missing = [k for k, i, t in zip("ab", ids, chosen, strict=True) if i and not t]
    return render(
        request,
        "judging/prompt_diff.html",
        {
            "templates": templates,
            "a": chosen[0],
            "b": chosen[1],
            "diff": diff,
            "missing": missing,
        },
        status=400 if missing else 200,
    )
