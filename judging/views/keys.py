"""The Keys page of a workspace: its stored judge API keys (names, hosts, dates; never a
value), a form to store one, and per key a form to replace its value and a delete
button. Researchers and owners of the workspace; others 404 / 403
(`flaskapp.workspaces`)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.debug import sensitive_post_parameters
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from flaskapp import vault, workspaces
from flaskapp.errors import DomainError
from flaskapp.htmx import render_page_or_fragment
from flaskapp.workspaces import RESEARCHER
from judging.forms import StoredKeyForm
from judging.selectors import keys as selectors
from judging.services.keys import (
    stored_key_create,
    stored_key_delete,
    stored_key_replace,
)

TEMPLATE = "judging/key_list.html"


@login_required
@require_GET
def key_home(request: HttpRequest) -> HttpResponse:
    """The workspaces whose keys `request.user` manages; straight to the one when
    there is only one."""
    spaces = selectors.stored_key_workspaces_for_user(user=request.user)
    if len(spaces) == 1:
        return redirect("judging:key-list", workspace_id=spaces[0].pk)
    return render(request, "judging/key_home.html", {"workspaces": spaces})


# What was typed into `value` is the secret: never in an error report.
@sensitive_post_parameters("value")
@login_required
@require_http_methods(["GET", "POST"])
def key_list(request: HttpRequest, workspace_id: int) -> HttpResponse:
    """GET: the workspace's keys and the form to store one. POST: store a key
    (`stored_key_create`), then back to the list; with htmx, the `#key-section`
    fragment. A refused key re-renders the form (400) with every problem and without
    the value typed."""
    workspace = workspaces.workspace_get_for_user(
        request.user, workspace_id, RESEARCHER
    )
    form = StoredKeyForm()
    status = 200
    if request.method == "POST":
        form = StoredKeyForm(request.POST)
        if form.is_valid():
            try:
                key = stored_key_create(
                    user=request.user, workspace=workspace, **form.service_fields()
                )
            except DomainError as exc:
                form.add_problems(exc)
            else:
                messages.success(
                    request, f"Key “{key.name}” stored. Its value is not shown again."
                )
                if not request.htmx:
                    return redirect("judging:key-list", workspace_id=workspace.pk)
                form = StoredKeyForm()
        if form.errors:
            status = 400
    return _render(request, workspace, form, status=status)


@sensitive_post_parameters("value")
@login_required
@require_POST
def key_replace(request: HttpRequest, key_id: int) -> HttpResponse:
    """Replace a key's value (and hosts when given): `stored_key_replace`."""
    key = selectors.stored_key_get_for_user(user=request.user, key_id=key_id)
    form = StoredKeyForm(request.POST, replace=True)
    if form.is_valid():
        try:
            stored_key_replace(user=request.user, key=key, **form.service_fields())
        except DomainError as exc:
            form.add_problems(exc)
        else:
            messages.success(request, f"Key “{key.name}” replaced.")
            if not request.htmx:
                return redirect("judging:key-list", workspace_id=key.workspace_id)
            return _render(request, key.workspace, StoredKeyForm())
    return _render(
        request, key.workspace, StoredKeyForm(), status=400, replace=(key.pk, form)
    )


@login_required
@require_POST
def key_delete(request: HttpRequest, key_id: int) -> HttpResponse:
    """Delete a key (`stored_key_delete`; refused while a judge config names it)."""
    key = selectors.stored_key_get_for_user(user=request.user, key_id=key_id)
    status = 200
    try:
        stored_key_delete(user=request.user, key=key)
    except DomainError as exc:
        messages.error(
            request, f"Key “{key.name}” was not deleted: {exc.problems[0].message}"
        )
        status = 400
    else:
        messages.success(request, f"Key “{key.name}” deleted.")
        if not request.htmx:
            return redirect("judging:key-list", workspace_id=key.workspace_id)
    return _render(request, key.workspace, StoredKeyForm(), status=status)


def _render(request, workspace, form, *, status: int = 200, replace=None):
    keys = selectors.stored_key_list_for_user(
        user=request.user, workspace_id=workspace.pk
    )
    context = {
        "workspace": workspace,
        "keys": keys,
        "form": form,
        "replace_key_id": replace[0] if replace else None,
        "replace_form": replace[1] if replace else None,
        "vault_problem": vault.vault_problem(),
        "is_owner": workspaces.role_at_least(
            workspaces.workspace_role(request.user, workspace.pk), workspaces.OWNER
        ),
    }
    return render_page_or_fragment(request, TEMPLATE, "key-section", context, status)
