"""What every page's header shows of the workspaces (issue 35): the current one and
the ones the user may switch to, with the role there. No query of its own beyond the
membership read `flaskapp.workspaces` caches on the user for the request."""

from __future__ import annotations

from django.http import HttpRequest

from flaskapp import workspaces


def workspace_context(request: HttpRequest) -> dict:
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    current = workspaces.current_workspace(request)
    return {
        "current_workspace": current,
        "current_workspace_role": workspaces.workspace_role(user, current.pk)
        if current
        else None,
        "user_workspaces": workspaces.user_workspaces(user),
    }
