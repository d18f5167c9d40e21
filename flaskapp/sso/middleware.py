"""Single sign-on's two middlewares: the no-workspace fence, and the Content Security
Policy's allowance for the provider's logout."""

from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings
from django.http import JsonResponse
from django.shortcuts import redirect
from django.urls import reverse
from django_htmx.http import HttpResponseClientRedirect

from flaskapp.middleware import is_api
from flaskapp.sso.config import sso_enabled
from flaskapp.sso.views import NO_WORKSPACE_SESSION_KEY

NO_WORKSPACE_MESSAGE = (
    "Your account has no workspace yet: ask an owner of your workspace to add you."
)


class NoWorkspaceMiddleware:
    """A single sign-on user whom no claim gives a workspace is signed in, but every
    page sends them to ``sso/no-workspace/`` and the API answers 403 saying so, until
    an owner adds them (that page then lets them in). Reads only the session, which
    the authentication middleware has loaded already: no query of its own."""

    OPEN_PREFIXES = ("/static/", "/login/", "/logout/", "/sso/")

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        session = getattr(request, "session", None)
        if (
            session is None
            or not session.get(NO_WORKSPACE_SESSION_KEY)
            or request.path.startswith(self.OPEN_PREFIXES)
        ):
            return self.get_response(request)
        if is_api(request):
            return JsonResponse(
                {"detail": NO_WORKSPACE_MESSAGE, "problems": []}, status=403
            )
        if getattr(request, "htmx", False):  # the whole page, not into a fragment
            return HttpResponseClientRedirect(reverse("sso-no-workspace"))
        return redirect("sso-no-workspace")


class ProviderLogoutCspMiddleware:
    """Every page holds the logout form, and after a single sign-on its POST is
    redirected to the provider's end-session endpoint: browsers check a form's
    redirects against the page's ``form-action`` too, so that origin joins ``'self'``
    there (only it, and only while SSO is on with an end-session endpoint). Must sit
    inside django-csp's middleware, which reads `_csp_update` on the way out."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        endpoint = settings.OIDC_OP_END_SESSION_ENDPOINT
        if endpoint and sso_enabled():
            parts = urlsplit(endpoint)
            update = dict(getattr(response, "_csp_update", None) or {})
            update["form-action"] = [
                *update.get("form-action", []),
                f"{parts.scheme}://{parts.netloc}",
            ]
            response._csp_update = update
        return response
