"""Invite links: the owners' create and revoke (on the settings page), and the
link's own page, open to anyone holding it: a new person creates an account there
(username, password by the project's rules); a logged-in person joins with theirs.
An expired, used-up or revoked link says so (410); an unknown one is a 404 page.

The made link is shown once, in the answer to the POST that made it; only its hash
is stored."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.debug import sensitive_post_parameters
from django.views.decorators.http import require_GET, require_POST

from flaskapp.errors import DomainError
from flaskapp.params import ascii_int
from flaskapp.people import selectors
from flaskapp.people.services import invites
from flaskapp.people.views.workspaces import settings_page
from flaskapp.workspaces import workspace_role

LOGIN_BACKEND = "django.contrib.auth.backends.ModelBackend"


@never_cache
@login_required
@require_POST
def invite_new(request: HttpRequest, workspace_id: int) -> HttpResponse:
    """Make an invite link; the settings page with the link shown once."""
    ws = selectors.workspace_get_for_owner(user=request.user, workspace_id=workspace_id)
    typed = {
        k: request.POST.get(k, "") for k in ("role", "expires_in", "unit", "max_uses")
    }
    if request.POST.get("uses") == "one":
        typed["max_uses"] = "1"
    try:
        made = invites.invite_create(actor=request.user, workspace=ws, **typed)
    except DomainError as exc:
        return settings_page(request, ws, status=400, invite_problems=exc.problems,
                             typed_invite=typed)  # fmt: skip
    url = request.build_absolute_uri(reverse("people:invite", args=[made.token]))
    return settings_page(request, ws, new_invite=made.invite, new_invite_url=url)


@login_required
@require_POST
def invite_revoke(
    request: HttpRequest, workspace_id: int, invite_id: int
) -> HttpResponse:
    """Revoke an invite link; back to the settings page."""
    ws = selectors.workspace_get_for_owner(user=request.user, workspace_id=workspace_id)
    try:
        invite = invites.invite_revoke(actor=request.user, workspace=ws,
                                       invite_id=ascii_int(invite_id) or 0)  # fmt: skip
    except DomainError as exc:
        return settings_page(request, ws, status=400, invite_problems=exc.problems)
    messages.success(request, f"Invite link {invite.token_prefix}… revoked.")
    return redirect("people:workspace-settings", ws.pk)


def _invite_page(request, token: str, invite, *, status: int = 200, **extra):
    state = invites.invite_state(invite) if invite else None
    context = {
        "token": token,
        "invite": invite,
        "state": state,
        "state_message": invites.STATE_MESSAGES.get(state or "", ""),
        "current_role": workspace_role(request.user, invite.workspace_id)
        if invite and request.user.is_authenticated
        else None,
        **extra,
    }
    if invite is None:
        status = 404
    elif state != invites.VALID and status == 200:
        status = 410
    response = render(request, "flaskapp/invite.html", context, status=status)
    # The token is in the URL: keep it out of other sites' Referer headers
    # ("no-referrer" would also make the browser send "Origin: null" with the form,
    # which Django's CSRF check refuses).
    response["Referrer-Policy"] = "same-origin"
    return response


@never_cache
@require_GET
def invite(request: HttpRequest, token: str) -> HttpResponse:
    """The link's page: which workspace and role, then the sign-up form (anonymous)
    or the join button (logged in); or why the link no longer works."""
    return _invite_page(request, token, invites.invite_find(token))


@sensitive_post_parameters("password", "password2")
@never_cache
@require_POST
def invite_accept(request: HttpRequest, token: str) -> HttpResponse:
    """Join with the logged-in account, or create one (then logged in): the
    workspace list next; the page again with the problems (400) otherwise."""
    found = invites.invite_find(token)
    if found is None:
        return _invite_page(request, token, None)
    typed = {"username": request.POST.get("username", ""),
             "email": request.POST.get("email", "")}  # fmt: skip
    try:
        if request.user.is_authenticated:
            outcome = invites.invite_join(invite=found, user=request.user)
        else:
            user = invites.invite_sign_up(
                invite=found,
                password=request.POST.get("password", ""),
                password2=request.POST.get("password2", ""),
                **typed,
            )
            login(request, user, backend=LOGIN_BACKEND)
            outcome = "signed_up"
    except DomainError as exc:
        found.refresh_from_db()
        return _invite_page(request, token, found, status=400, problems=exc.problems,
                            typed=typed)  # fmt: skip
    name = found.workspace.name
    text = {
        "signed_up": f"Welcome! Your account was created and you joined “{name}” as {found.role}.",  # noqa: E501
        "joined": f"You joined “{name}” as {found.role}.",
        "promoted": f"You are now {found.role} in “{name}”.",
        "already": f"You already belong to “{name}” with this role or a higher one; nothing changed.",  # noqa: E501
    }[outcome]
    messages.success(request, text)
    return redirect("people:workspace-list")
