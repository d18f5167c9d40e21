"""Single sign-on's pages: the login page with its button, the way out to the provider
and back, the page of a user with no workspace, and the logout that also ends the
provider's session. Each ``sso/`` URL is a 404 while SSO is off."""

from __future__ import annotations

from functools import wraps
from urllib.parse import urlencode

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.core.exceptions import SuspiciousOperation
from django.http import Http404, HttpResponseRedirect
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET
from mozilla_django_oidc.views import (
    OIDCAuthenticationCallbackView,
    OIDCAuthenticationRequestView,
)

from flaskapp.sso.backend import REFUSAL_ATTR
from flaskapp.sso.config import provider_name, sso_enabled
from flaskapp.sso.services import SsoRefused
from flaskapp.workspaces import workspace_ids_for_user

# Set at sign-in for a user whom no claim gives a workspace (middleware reads it).
NO_WORKSPACE_SESSION_KEY = "sso_no_workspace"
ID_TOKEN_SESSION_KEY = "oidc_id_token"  # where mozilla-django-oidc keeps it


class LoginView(auth_views.LoginView):
    """Django's login page, with "Sign in with <provider>" when SSO is on."""

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        if sso_enabled():
            context["sso_provider_name"] = provider_name()
        return context


class SsoLoginView(OIDCAuthenticationRequestView):
    """``GET sso/login/[?next=]``: to the provider's authorization endpoint, with a
    new state, nonce and PKCE challenge kept in the session."""

    def dispatch(self, request, *args, **kwargs):
        if not sso_enabled():
            raise Http404("Single sign-on is not configured.")
        return super().dispatch(request, *args, **kwargs)


class SsoCallbackView(OIDCAuthenticationCallbackView):
    """``GET sso/callback/?code=&state=``: back from the provider. Success: signed in
    and sent to ``next`` (or home), or to the no-workspace page. Any refusal: a page
    saying why, status 400/403/502, and nobody signed in."""

    def dispatch(self, request, *args, **kwargs):
        if not sso_enabled():
            raise Http404("Single sign-on is not configured.")
        return super().dispatch(request, *args, **kwargs)

    def get(self, request):
        try:
            return super().get(request)
        except SuspiciousOperation:  # a state this session never issued
            refusal = SsoRefused(
                "this sign-in was not started in this browser, or was already used: "
                "start again from the login page"
            )
            refusal.status = 400
            return self._refused(refusal)

    def login_failure(self):
        refusal = getattr(self.request, REFUSAL_ATTR, None)
        if refusal is None:
            error = self.request.GET.get("error", "")[:100]
            if error:
                refusal = SsoRefused(f"{provider_name()} did not sign you in ({error})")
            elif getattr(self, "user", None) is not None:
                refusal = SsoRefused("this account is deactivated here")
            else:
                refusal = SsoRefused(
                    "this sign-in was not started in this browser, or it expired: "
                    "start again from the login page"
                )
                refusal.status = 400
        return self._refused(refusal)

    def _refused(self, refusal: SsoRefused):
        # The library stores the ID token before it knows whether anyone signs in.
        self.request.session.pop(ID_TOKEN_SESSION_KEY, None)
        return render(
            self.request,
            "registration/sso_failed.html",
            {"message": str(refusal), "sso_provider_name": provider_name()},
            status=refusal.status,
        )

    def login_success(self):
        response = super().login_success()
        if workspace_ids_for_user(self.user) == []:
            self.request.session[NO_WORKSPACE_SESSION_KEY] = True
            return redirect("sso-no-workspace")
        return response


def _sso_required(view):
    """404 while single sign-on is off (before anything else: no login redirect)."""

    @wraps(view)
    def wrapped(request, *args, **kwargs):
        if not sso_enabled():
            raise Http404("Single sign-on is not configured.")
        return view(request, *args, **kwargs)

    return wrapped


@_sso_required
@require_GET
@login_required
def sso_no_workspace(request):
    """``GET sso/no-workspace/``: the only page of a signed-in user with no workspace
    (`middleware.NoWorkspaceMiddleware`); once an owner adds them, it lets them in."""
    if workspace_ids_for_user(request.user) != []:
        request.session.pop(NO_WORKSPACE_SESSION_KEY, None)
        return redirect("home")
    return render(request, "registration/sso_no_workspace.html")


class LogoutView(auth_views.LogoutView):
    """``POST logout/``: ends the local session; after a single sign-on, and when the
    provider has an end-session endpoint (``OIDC_OP_END_SESSION_ENDPOINT``), goes on
    to it (OpenID Connect RP-initiated logout) to end the provider's session too,
    coming back to the login page."""

    def post(self, request, *args, **kwargs):
        id_token = request.session.get(ID_TOKEN_SESSION_KEY)
        response = super().post(request, *args, **kwargs)
        endpoint = settings.OIDC_OP_END_SESSION_ENDPOINT
        if not (id_token and sso_enabled() and endpoint):
            return response
        query = urlencode(
            {
                "id_token_hint": id_token,
                "client_id": settings.OIDC_RP_CLIENT_ID,
                "post_logout_redirect_uri": request.build_absolute_uri(
                    reverse("login")
                ),
            }
        )
        separator = "&" if "?" in endpoint else "?"
        return HttpResponseRedirect(f"{endpoint}{separator}{query}")
