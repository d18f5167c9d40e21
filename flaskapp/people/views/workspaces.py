"""Pages of workspaces: the list (everyone: their workspaces and roles; instance
admins: every workspace with its member count, and the form to create one), a
workspace's settings page (its owners: members, invite links, bulk accounts, the
recent changes), and the instance admin's rename, delete and users pages."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from flaskapp import roles
from flaskapp.errors import DomainError
from flaskapp.people import selectors
from flaskapp.people.services import invites, members, workspaces
from flaskapp.workspaces import WORKSPACE_ROLES

TEMPLATE = "flaskapp/workspace_settings.html"
USERS_PER_PAGE = 100


def _list_page(request: HttpRequest, *, status: int = 200, **extra) -> HttpResponse:
    context = {
        "rows": selectors.workspace_list_for_user(user=request.user),
        "is_admin": roles.is_admin(request.user),
        **extra,
    }
    return render(request, "flaskapp/workspace_list.html", context, status=status)


@login_required
@require_GET
def workspace_list(request: HttpRequest) -> HttpResponse:
    """Your workspaces with your role (admins: all, with member counts)."""
    return _list_page(request)


@login_required
@require_POST
def workspace_new(request: HttpRequest) -> HttpResponse:
    """Create a workspace (instance admins), optionally with its first owner; its
    settings page next, or the list again with the problems (400)."""
    roles.require_admin(request.user)
    typed = {k: request.POST.get(k, "") for k in ("name", "slug", "owner")}
    try:
        owner = (
            members.account_find(typed["owner"], field="owner")
            if typed["owner"].strip()
            else None
        )
        ws = workspaces.workspace_create(
            actor=request.user, name=typed["name"], slug=typed["slug"], owner=owner
        )
    except DomainError as exc:
        return _list_page(
            request, status=400, create_problems=exc.problems, typed=typed
        )
    messages.success(request, f"Workspace “{ws.name}” created.")
    return redirect("people:workspace-settings", ws.pk)


def settings_context(request: HttpRequest, ws, **extra) -> dict:
    """What the settings page shows (the member and invite views render it too)."""
    return {
        "workspace": ws,
        "members": selectors.member_list(workspace=ws),
        "owner_count": selectors.owner_count(workspace=ws),
        "invites": selectors.invite_list(workspace=ws),
        "audit": selectors.audit_list(workspace=ws),
        "role_choices": WORKSPACE_ROLES,
        "units": list(invites.UNIT_HOURS),
        "is_admin": roles.is_admin(request.user),
        "max_uses": invites.MAX_USES,
        **extra,
    }


def settings_page(request: HttpRequest, ws, *, status: int = 200, **extra):
    return render(
        request, TEMPLATE, settings_context(request, ws, **extra), status=status
    )


@login_required
@require_GET
def workspace_settings(request: HttpRequest, workspace_id: int) -> HttpResponse:
    """A workspace's members (roles changed and members removed in place), the form
    to add one, its invite links, bulk accounts and recent changes (owners)."""
    ws = selectors.workspace_get_for_owner(user=request.user, workspace_id=workspace_id)
    return settings_page(request, ws)


@login_required
@require_POST
def workspace_rename(request: HttpRequest, workspace_id: int) -> HttpResponse:
    """Rename the workspace (instance admins)."""
    ws = selectors.workspace_get_for_owner(user=request.user, workspace_id=workspace_id)
    roles.require_admin(request.user)
    try:
        workspaces.workspace_rename(
            actor=request.user,
            workspace=ws,
            name=request.POST.get("name", ""),
            description=request.POST.get("description", ""),
        )
    except DomainError as exc:
        return settings_page(request, ws, status=400, workspace_problems=exc.problems)
    messages.success(request, f"Workspace renamed to “{ws.name}”.")
    return redirect("people:workspace-settings", ws.pk)


@login_required
@require_POST
def workspace_delete(request: HttpRequest, workspace_id: int) -> HttpResponse:
    """Delete an empty workspace (instance admins); the list next."""
    ws = selectors.workspace_get_for_owner(user=request.user, workspace_id=workspace_id)
    roles.require_admin(request.user)
    name = ws.name
    try:
        workspaces.workspace_delete(actor=request.user, workspace=ws)
    except DomainError as exc:
        return settings_page(request, ws, status=400, workspace_problems=exc.problems)
    messages.success(request, f"Workspace “{name}” deleted.")
    return redirect("people:workspace-list")


@login_required
@require_GET
def user_list(request: HttpRequest) -> HttpResponse:
    """Every account with its workspaces and roles (instance admins)."""
    users = selectors.user_list_for_admin(user=request.user)
    page = Paginator(users, USERS_PER_PAGE).get_page(request.GET.get("page"))
    return render(request, "flaskapp/user_list.html", {"page": page})
