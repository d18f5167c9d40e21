"""Logins and API tokens: the token endpoints, and what a locked-out login answers.

Brute-force protection is django-axes (settings "Logins"): after `LOGIN_FAILURE_LIMIT`
wrong passwords for one username from one address, that pair is locked out for
`LOGIN_LOCKOUT_MINUTES`, on every way in: the login page, the Django admin's login and
``POST /api/auth/token/``. `lockout_response` is axes' lockout callable: a 429 with
``Retry-After``, as the JSON error shape under ``/api/`` and as a page elsewhere. An
admin unlocks with ``manage.py axes_reset_username USERNAME`` or in the Django admin
(Axes, "Access attempts").

Token endpoints (`flaskapp.tokens` does the writes):

- ``POST /api/auth/token/`` ``{"username", "password"}`` -> 201 ``{"token", "token_prefix",
  "created", "expiry"}``: a new token (shown once). Wrong credentials: 400 naming
  ``password``; locked out: 429.
- ``DELETE /api/auth/token/``: revoke the token the request is made with (204).
- ``GET /api/auth/tokens/``: your valid tokens (prefix, created, expiry, whether it is
  the one in use); never a token's secret.
- ``DELETE /api/auth/tokens/``: revoke all your tokens (200 ``{"revoked": n}``).
"""

from __future__ import annotations

import math

from axes.helpers import get_cool_off
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import authenticate
from django.contrib.auth import views as auth_views
from django.http import JsonResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from drf_spectacular.utils import extend_schema, inline_serializer
from knox.auth import TokenAuthentication
from knox.models import AuthToken
from rest_framework import serializers, status
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.api.serializers.datasets import ProblemOutputSerializer
from annotation.models import TemporaryPassword
from flaskapp import tokens
from flaskapp.errors import DomainError, Problem
from flaskapp.middleware import TEMPORARY_PASSWORD_SESSION_KEY
from flaskapp.sso.config import provider_name, sso_enabled

LOCKED_OUT = (
    "Too many failed logins for this username: try again in {minutes} minutes, or ask "
    "an admin to unlock the account."
)


def client_address(request) -> str:
    """AXES_CLIENT_IP_CALLABLE: the address a login comes from. REMOTE_ADDR, or behind
    `LOGIN_PROXY_COUNT` trusted proxies the address the outermost of them saw (the
    N-th entry from the right of X-Forwarded-For; a client cannot forge that one)."""
    from django.conf import settings

    proxies = settings.LOGIN_PROXY_COUNT
    remote = request.META.get("REMOTE_ADDR", "")
    if proxies <= 0:
        return remote
    chain = [
        part.strip()
        for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")
        if part.strip()
    ]
    return chain[-proxies] if len(chain) >= proxies else remote


def _retry_after(request) -> int:
    cool_off = get_cool_off(request)
    return max(1, math.ceil(cool_off.total_seconds())) if cool_off else 3600


def lockout_response(request, original_response=None, credentials=None):
    """AXES_LOCKOUT_CALLABLE: 429 with Retry-After; JSON under /api/, a page elsewhere."""
    seconds = _retry_after(request)
    message = LOCKED_OUT.format(minutes=math.ceil(seconds / 60))
    if request.path.startswith("/api/"):
        response = JsonResponse({"detail": message, "problems": []}, status=429)
    else:
        response = render(
            request,
            "registration/locked_out.html",
            {"message": message},
            status=429,
        )
    response["Retry-After"] = str(seconds)
    return response


class TokenInputSerializer(serializers.Serializer):
    username = serializers.CharField(max_length=150)
    password = serializers.CharField(max_length=4096, trim_whitespace=False)


class TokenOutputSerializer(serializers.Serializer):
    token = serializers.CharField(help_text="The secret: shown only in this answer.")
    token_prefix = serializers.CharField()
    created = serializers.DateTimeField()
    expiry = serializers.DateTimeField(allow_null=True)


class TokenListItemSerializer(serializers.Serializer):
    token_prefix = serializers.CharField(source="token_key")
    created = serializers.DateTimeField()
    expiry = serializers.DateTimeField(allow_null=True)
    current = serializers.BooleanField()


class TokenApi(APIView):
    """POST: a new token for a username and password. DELETE: revoke the token used."""

    def _is_login(self) -> bool:
        request = getattr(self, "request", None)  # None in the schema generator
        return request is not None and request.method == "POST"

    def get_authenticators(self):
        # POST is the way in, with a password: no session (so no CSRF) and no token.
        return [] if self._is_login() else [TokenAuthentication()]

    def get_permissions(self):
        return [AllowAny()] if self._is_login() else [IsAuthenticated()]

    @extend_schema(
        tags=["auth"],
        request=TokenInputSerializer,
        responses={
            201: TokenOutputSerializer,
            400: ProblemOutputSerializer,
            429: ProblemOutputSerializer,
        },
        auth=[],
    )
    def post(self, request):
        data = TokenInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        http_request = request._request
        user = authenticate(
            request=http_request,
            username=data.validated_data["username"],
            password=data.validated_data["password"],
        )
        if getattr(http_request, "axes_locked_out", False):
            return lockout_response(http_request)
        if user is None or not user.is_active:
            message = "wrong username or password"
            if sso_enabled():
                # Said to everyone (it tells nothing about the account): a single
                # sign-on account has no password here and makes tokens on a page.
                message += (
                    "; an account that signs in with "
                    f"{provider_name()} makes its tokens on /sso/token/"
                )
            raise DomainError("no token was made", [Problem(message, field="password")])
        if has_temporary_password(user):
            raise DomainError(
                "no token was made",
                [
                    Problem(
                        "this password was set for you and is temporary: log in in "
                        "the browser and choose your own first",
                        field="password",
                    )
                ],
            )
        issued = tokens.token_create(user=user)
        return Response(
            TokenOutputSerializer(issued).data, status=status.HTTP_201_CREATED
        )

    @extend_schema(tags=["auth"], request=None, responses={204: None})
    def delete(self, request):
        tokens.token_revoke(token=request.auth)
        return Response(status=status.HTTP_204_NO_CONTENT)


class TokenListApi(APIView):
    """GET: your valid tokens. DELETE: revoke all of them."""

    permission_classes = [IsAuthenticated]

    @extend_schema(tags=["auth"], responses=TokenListItemSerializer(many=True))
    def get(self, request):
        current = request.auth.digest if isinstance(request.auth, AuthToken) else None
        rows = [
            {
                "token_key": t.token_key,
                "created": t.created,
                "expiry": t.expiry,
                "current": t.digest == current,
            }
            for t in tokens.token_list(user=request.user)
        ]
        return Response(TokenListItemSerializer(rows, many=True).data)

    @extend_schema(
        tags=["auth"],
        request=None,
        responses=inline_serializer(
            "TokensRevokedOutput", {"revoked": serializers.IntegerField()}
        ),
    )
    def delete(self, request):
        return Response({"revoked": tokens.token_revoke_all(user=request.user)})


# --- Temporary passwords ------------------------------------------------------------------
# A password an admin or researcher set (annotation.services.raters) must be replaced by
# its owner before anything else. The login records it in the session, so that the
# middleware costs no query per request (the session is read anyway); an admin's later
# reset changes the password hash, which ends the rater's sessions.


def has_temporary_password(user) -> bool:
    return TemporaryPassword.objects.filter(user_id=user.pk).exists()


def note_temporary_password(sender, request, user, **kwargs) -> None:
    """`user_logged_in` receiver: remember in the session whether the password is
    temporary (`TemporaryPasswordMiddleware` reads it)."""
    if request is not None and hasattr(request, "session"):
        if has_temporary_password(user):
            request.session[TEMPORARY_PASSWORD_SESSION_KEY] = True
        else:
            request.session.pop(TEMPORARY_PASSWORD_SESSION_KEY, None)


class PasswordChangeView(auth_views.PasswordChangeView):
    """Choose a new password (any user; required after a temporary one): the current
    password, then the new one twice, checked by the project's validators. Ends the
    temporary state and keeps the session; goes on to ``next`` when it is safe."""

    template_name = "registration/password_change.html"

    def form_valid(self, form):
        from annotation.services.raters import password_changed_by_owner

        response = super().form_valid(form)
        password_changed_by_owner(user=self.request.user)
        self.request.session.pop(TEMPORARY_PASSWORD_SESSION_KEY, None)
        messages.success(self.request, "Your password was changed.")
        return response

    def get_success_url(self) -> str:
        target = self.request.POST.get("next") or self.request.GET.get("next") or ""
        if target and url_has_allowed_host_and_scheme(
            target,
            allowed_hosts={self.request.get_host()},
            require_https=self.request.is_secure(),
        ):
            return target
        return reverse("home")

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context["temporary"] = bool(
            self.request.session.get(TEMPORARY_PASSWORD_SESSION_KEY)
        )
        context["next"] = self.request.GET.get("next", "")
        # A single sign-on account has no password here (flaskapp.sso.services).
        context["no_password"] = not self.request.user.has_usable_password()
        context["sso_provider_name"] = (
            settings.OIDC_PROVIDER_NAME if settings.SSO_ENABLED else ""
        )
        return context
