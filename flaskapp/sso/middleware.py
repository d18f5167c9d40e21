"""Single sign-on's middlewares: the refresh that keeps roles in step with the
provider, the no-workspace fence, and the Content Security Policy's allowance for the
provider's logout."""

from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings
from django.http import JsonResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.deprecation import MiddlewareMixin
from django.utils.http import url_has_allowed_host_and_scheme
from django_htmx.http import HttpResponseClientRedirect
from mozilla_django_oidc.middleware import SessionRefresh

from flaskapp.middleware import is_api
from flaskapp.sso.config import sso_enabled
from flaskapp.sso.views import NO_WORKSPACE_SESSION_KEY, is_sso_session

# The library's name for the page to come back to after the provider.
LOGIN_NEXT_SESSION_KEY = "oidc_login_next"


class SsoRefreshMiddleware(SessionRefresh):
    """mozilla-django-oidc's `SessionRefresh`, so that a role changed at the provider
    takes effect without a new login: once ``OIDC_RENEW_ID_TOKEN_EXPIRY_SECONDS`` have
    passed since the provider last vouched for a single sign-on user (the callback
    sets the deadline), their next page GET goes to the provider with
    ``prompt=none``. A provider session still open answers at once with a code; the
    callback verifies the new ID token and applies its claims again
    (`services.sso_login`: memberships follow the groups) and returns to the page.
    A provider that no longer signs them in answers ``login_required``: the
    callback ends the local session. So roles lag the provider by at most that
    many seconds of a browser session.

    Only page GETs of single sign-on sessions: password sessions, API calls (a
    token or a session: a redirect would break a client; tokens carry the roles of
    the database, which the user's next page refresh updates), the ``sso/`` pages,
    the login and logout, and static files are left alone. An htmx request is
    answered with ``HX-Redirect`` (a fetch cannot follow the provider's pages), and
    comes back to the page it was made from. Inert while single sign-on is off.
    Settings are read per request (the library reads them once)."""

    EXEMPT_PREFIXES = ("/sso/", "/login/", "/logout/", "/static/")

    def __init__(self, get_response):
        # Not SessionRefresh.__init__: it reads the settings once, and fails when
        # single sign-on is off (no endpoints).
        MiddlewareMixin.__init__(self, get_response)

    @staticmethod
    def get_settings(attr, *args):
        return getattr(settings, attr, *args) if args else getattr(settings, attr)

    def __getattr__(self, name):
        # The library's per-instance settings (OIDC_RP_CLIENT_ID, ...), read now.
        if name.startswith("OIDC_"):
            defaults = {
                "OIDC_STATE_SIZE": 32,
                "OIDC_NONCE_SIZE": 32,
                "OIDC_USE_NONCE": True,
                "OIDC_EXEMPT_URLS": [],
            }
            return getattr(settings, name, defaults.get(name))
        raise AttributeError(name)

    @property
    def exempt_urls(self):
        return set()  # EXEMPT_PREFIXES, in is_refreshable_url

    @property
    def exempt_url_patterns(self):
        return set()

    def is_refreshable_url(self, request) -> bool:
        return (
            sso_enabled()
            and request.method == "GET"
            and request.user.is_authenticated
            and is_sso_session(request)
            and not is_api(request)
            and not request.path.startswith(self.EXEMPT_PREFIXES)
        )

    def process_request(self, request):
        response = super().process_request(request)
        if response is None or not getattr(request, "htmx", False):
            return response
        # A fragment's URL is no page to come back to: the page it was asked from.
        current = request.headers.get("HX-Current-URL", "")
        if url_has_allowed_host_and_scheme(
            current,
            allowed_hosts={request.get_host()},
            require_https=request.is_secure(),
        ):
            parts = urlsplit(current)
            page = parts.path + (f"?{parts.query}" if parts.query else "")
            request.session[LOGIN_NEXT_SESSION_KEY] = page or "/"
        else:
            request.session[LOGIN_NEXT_SESSION_KEY] = "/"
        return HttpResponseClientRedirect(response["Location"])


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
