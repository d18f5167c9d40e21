"""A workspace's members on its settings page (owners): add one, change a role or
remove one in place (htmx answers the member table; a full reload works too), reset
a password, bulk accounts from a CSV.

A generated password is shown once, in the answer to the POST that made it (never in
the session or a message; the answer is marked not to be cached)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from flaskapp.errors import DomainError, Problem
from flaskapp.htmx import render_page_or_fragment
from flaskapp.people import selectors
from flaskapp.people.services import bulk, members
from flaskapp.people.views.workspaces import TEMPLATE, settings_context, settings_page


def _members(request, ws, *, status: int = 200, **extra) -> HttpResponse:
    """The settings page, or for htmx its member table."""
    return render_page_or_fragment(
        request, TEMPLATE, "member-table", settings_context(request, ws, **extra),
        status=status,
    )  # fmt: skip


@login_required
@require_POST
def member_add(request: HttpRequest, workspace_id: int) -> HttpResponse:
    """Add an account (by username or e-mail) in a role."""
    ws = selectors.workspace_get_for_owner(user=request.user, workspace_id=workspace_id)
    typed = {"user": request.POST.get("user", ""), "role": request.POST.get("role", "")}
    try:
        user = members.account_find(typed["user"])
        members.member_add(actor=request.user, workspace=ws, user=user,
                           role=typed["role"])  # fmt: skip
    except DomainError as exc:
        return settings_page(request, ws, status=400, add_problems=exc.problems,
                             typed=typed)  # fmt: skip
    messages.success(request, f"{user.username} added as {typed['role']}.")
    return redirect("people:workspace-settings", ws.pk)


@login_required
@require_POST
def member_role(request: HttpRequest, workspace_id: int, user_id: int) -> HttpResponse:
    """Change a member's role; the member table again (htmx) or the page."""
    ws = selectors.workspace_get_for_owner(user=request.user, workspace_id=workspace_id)
    try:
        m = members.member_role_change(actor=request.user, workspace=ws,
                                       user_id=user_id, role=request.POST.get("role", ""))  # fmt: skip
    except DomainError as exc:
        return _members(request, ws, status=400, member_problems=exc.problems)
    note = f"{m.user.username} is now {m.role}."
    if request.htmx:
        return _members(request, ws, member_note=note)
    messages.success(request, note)
    return redirect("people:workspace-settings", ws.pk)


@login_required
@require_POST
def member_remove(
    request: HttpRequest, workspace_id: int, user_id: int
) -> HttpResponse:
    """Remove a member (the account stays); the member table again or the page."""
    ws = selectors.workspace_get_for_owner(user=request.user, workspace_id=workspace_id)
    membership = selectors.member_get(workspace=ws, user_id=user_id)
    try:
        members.member_remove(actor=request.user, workspace=ws, user_id=user_id)
    except DomainError as exc:
        return _members(request, ws, status=400, member_problems=exc.problems)
    note = f"{membership.user.username} was removed from this workspace."
    if request.htmx:
        return _members(request, ws, member_note=note)
    messages.success(request, note)
    return redirect("people:workspace-settings", ws.pk)


@never_cache
@login_required
@require_POST
def member_password(
    request: HttpRequest, workspace_id: int, user_id: int
) -> HttpResponse:
    """A new temporary password for a plain member account, shown once (the member
    table for htmx, else the page)."""
    ws = selectors.workspace_get_for_owner(user=request.user, workspace_id=workspace_id)
    try:
        member, password = members.member_password_reset(
            actor=request.user, workspace=ws, user_id=user_id
        )
    except DomainError as exc:
        return _members(request, ws, status=400, member_problems=exc.problems)
    return _members(request, ws, reset=member, shown_password=password)


def _bulk_page(request, ws, *, status: int = 200, **extra) -> HttpResponse:
    context = {"workspace": ws, "max_lines": bulk.MAX_LINES,
               "max_kb": bulk.MAX_BYTES // 1024, **extra}  # fmt: skip
    return render(request, "flaskapp/member_bulk.html", context, status=status)


@login_required
@require_GET
def member_bulk(request: HttpRequest, workspace_id: int) -> HttpResponse:
    """The bulk accounts form: a CSV file or pasted lines."""
    ws = selectors.workspace_get_for_owner(user=request.user, workspace_id=workspace_id)
    return _bulk_page(request, ws)


@never_cache
@login_required
@require_POST
def member_bulk_create(request: HttpRequest, workspace_id: int) -> HttpResponse:
    """Create the accounts and memberships of the CSV: the result with the new
    passwords shown once, or every problem by line (400, nothing changed)."""
    ws = selectors.workspace_get_for_owner(user=request.user, workspace_id=workspace_id)
    upload = request.FILES.get("file")
    pasted = request.POST.get("lines", "")
    data = upload.read(bulk.MAX_BYTES + 1) if upload else pasted
    try:
        if not data.strip():
            raise DomainError("nothing was changed",
                              [Problem("choose a CSV file or paste its lines",
                                       field="file")])  # fmt: skip
        lines = bulk.accounts_bulk_create(actor=request.user, workspace=ws, data=data)
    except DomainError as exc:
        return _bulk_page(request, ws, status=400, problems=exc.problems,
                          pasted=pasted)  # fmt: skip
    return _bulk_page(request, ws, lines=lines)
