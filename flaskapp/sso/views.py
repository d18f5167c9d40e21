"""Single sign-on's pages: the login page with its button, the way out to the provider
and back, the page of a user with no workspace, the page where a single sign-on user
makes an API token, and the logout that also ends the provider's session. Each
``sso/`` URL is a 404 while SSO is off.

Roles follow the provider between sign-ins: `middleware.SsoRefreshMiddleware` sends
a signed-in user's browser back to the provider (``prompt=none``) once
``OIDC_RENEW_ID_TOKEN_EXPIRY_SECONDS`` have passed since it last vouched for them; the
callback then applies the claims again (`services.sso_login`), or, when the provider
no longer signs them in, ends the local session."""

from __future__ import annotations

import time
from functools import wraps
from urllib.parse import urlencode

from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, logout
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.core.exceptions import SuspiciousOperation
from django.http import Http404, HttpResponseRedirect
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods
from mozilla_django_oidc.views import (
    OIDCAuthenticationCallbackView,
    OIDCAuthenticationRequestView,
)

from flaskapp import tokens
from flaskapp.sso.backend import REFUSAL_ATTR
from flaskapp.sso.config import provider_name, sso_enabled
from flaskapp.sso.services import SsoRefused
from flaskapp.workspaces import workspace_ids_for_user

# Set at sign-in for a user whom no claim gives a workspace (middleware reads it).
NO_WORKSPACE_SESSION_KEY = "sso_no_workspace"
ID_TOKEN_SESSION_KEY = "oidc_id_token"  # where mozilla-django-oidc keeps it
# When the provider last vouched for the session's user (a sign-in or a refresh),
# in seconds since the epoch: `sso_token` asks for a recent one.
VERIFIED_AT_SESSION_KEY = "sso_verified_at"
SSO_BACKEND = "flaskapp.sso.backend.OidcBackend"


def is_sso_session(request) -> bool:
    """Whether the request's user signed in through the provider (this session)."""
    return request.session.get(BACKEND_SESSION_KEY) == SSO_BACKEND


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
        if self.request.user.is_authenticated:
            # A refresh the provider or our checks refused (the account deactivated,
            # the person signed out at the provider): the roles it gave are no
            # longer vouched for, so the local session ends too.
            logout(self.request)
        # The library stores the ID token before it knows whether anyone signs in.
        self.request.session.pop(ID_TOKEN_SESSION_KEY, None)
        return render(
            self.request,
            "registration/sso_failed.html",
            {"message": str(refusal), "sso_provider_name": provider_name()},
            status=refusal.status,
        )

    def login_success(self):
        """A sign-in or a refresh (`middleware.SsoRefreshMiddleware`): the claims
        were applied again by the backend; the next refresh is due in
        ``OIDC_RENEW_ID_TOKEN_EXPIRY_SECONDS`` (the library's)."""
        response = super().login_success()
        self.request.session[VERIFIED_AT_SESSION_KEY] = time.time()
        if workspace_ids_for_user(self.user) == []:
            self.request.session[NO_WORKSPACE_SESSION_KEY] = True
            return redirect("sso-no-workspace")
        self.request.session.pop(NO_WORKSPACE_SESSION_KEY, None)
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


def sso_token_window_seconds() -> int:
    """How recent the provider's word must be to make an API token."""
    return settings.SSO_TOKEN_SIGN_IN_MINUTES * 60


@_sso_required
@never_cache
@require_http_methods(["GET", "POST"])
@login_required
def sso_token(request):
    """``GET/POST sso/token/``: a single sign-on user makes an API token (shown once),
    as ``POST /api/auth/token/`` does for a password (they have none here).

    Only when the provider vouched for them within ``SSO_TOKEN_SIGN_IN_MINUTES`` (a
    sign-in or a refresh in this session); otherwise the POST sends them through the
    provider again (``sso/login/?next=`` this page) and they press the button once
    more. A password account is told to use ``POST /api/auth/token/``; a user with no
    workspace gets no token. Writes one token (`flaskapp.tokens.token_create`)."""
    context = {"sso_provider_name": provider_name(), "sso_session": True}
    if not is_sso_session(request):
        context["sso_session"] = False
        return render(
            request,
            "registration/sso_token.html",
            context,
            status=400 if request.method == "POST" else 200,
        )
    verified_at = request.session.get(VERIFIED_AT_SESSION_KEY) or 0
    recent = time.time() - verified_at <= sso_token_window_seconds()
    context["recent"] = recent
    context["window_minutes"] = settings.SSO_TOKEN_SIGN_IN_MINUTES
    if request.method == "POST":
        if request.session.get(NO_WORKSPACE_SESSION_KEY):
            return redirect("sso-no-workspace")
        if not recent:
            query = urlencode({"next": reverse("sso-token")})
            return redirect(f"{reverse('sso-login')}?{query}")
        context["issued"] = tokens.token_create(user=request.user)
    return render(request, "registration/sso_token.html", context)


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
