"""The kernel's own page action: switching the workspace the pages work in (issue 35).

The request's workspace is `flaskapp.workspaces.current_workspace`: ``?workspace=<id>``
on any page, or this switch (the header's form), remembered in the session.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from flaskapp import workspaces
from flaskapp.params import ascii_int


@login_required
@require_POST
def workspace_switch(request: HttpRequest) -> HttpResponse:
    """Work in the workspace the form names (``workspace``, an id), then go back to
    ``next`` (a local URL; else the home page). Not a member: 404, nothing changes."""
    workspace_id = ascii_int(request.POST.get("workspace"))
    if workspace_id is None:
        raise Http404("No such workspace.")
    workspace = workspaces.workspace_switch(request, workspace_id)
    messages.info(request, f"Now working in {workspace.name}.")
    target = request.POST.get("next") or ""
    if not url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        target = ""
    # Pages of the old workspace's objects would 404 in the new one: lists only.
    return redirect(target.split("?")[0] if target else "home")
