"""The authentication backend of the OpenID Connect callback.

mozilla-django-oidc's backend exchanges the code (with the PKCE verifier) at the token
endpoint and checks the ID token's signature against the provider's published keys
(JWKS), its algorithm, expiry and nonce. It leaves out the issuer and the audience,
and it matches accounts by e-mail: here the ID token must also come from
``OIDC_OP_ISSUER`` for ``OIDC_RP_CLIENT_ID``, the userinfo answer must be about the
same ``sub``, and the account is the one linked to (issuer, sub)
(`services.sso_user_sync`).

Every refusal (a bad signature, an expired token, an unreachable provider, ...) is an
`SsoRefused` left on the request for `views.SsoCallbackView` to show, with a message
that holds no token and no secret; `authenticate` then answers None and nobody is
signed in.
"""

from __future__ import annotations

import logging

import jwt
import requests
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import SuspiciousOperation
from mozilla_django_oidc.auth import OIDCAuthenticationBackend

from flaskapp.sso.config import provider_name, role_map, sso_enabled
from flaskapp.sso.services import SsoRefused, sso_login

log = logging.getLogger(__name__)
REFUSAL_ATTR = "sso_refusal"


def _audience_ok(payload: dict) -> bool:
    audience = payload.get("aud")
    client_id = settings.OIDC_RP_CLIENT_ID
    if isinstance(audience, str):
        return audience == client_id
    if isinstance(audience, list) and client_id in audience:
        # several audiences: the token must have been issued to us (OIDC Core 3.1.3.7)
        return len(audience) == 1 or payload.get("azp") == client_id
    return False


class OidcBackend(OIDCAuthenticationBackend):
    """Signs in the person of a verified ID token; inert while SSO is off."""

    def __init__(self, *args, **kwargs):
        if sso_enabled():
            super().__init__(*args, **kwargs)
        else:  # the library's settings are not there to read
            self.UserModel = get_user_model()

    def authenticate(self, request, **kwargs):
        # Django offers every backend every login's credentials: only the callback's
        # (a nonce, no password) are ours.
        if (
            not sso_enabled()
            or request is None
            or "nonce" not in kwargs
            or "password" in kwargs
        ):
            return None
        try:
            return super().authenticate(request, **kwargs)
        except SsoRefused as exc:
            refusal = exc
        except SuspiciousOperation as exc:
            # the library's own messages: a constant text, or the algorithm's name
            refusal = SsoRefused(
                f"the ID token from {provider_name()} failed verification "
                f"({str(exc).rstrip('.')}); "
                "nobody was signed in"
            )
        except jwt.ExpiredSignatureError:
            refusal = SsoRefused(
                f"the ID token from {provider_name()} has expired: sign in again"
            )
        except jwt.PyJWTError as exc:
            refusal = SsoRefused(
                f"the ID token from {provider_name()} is not a valid token "
                f"({type(exc).__name__}); nobody was signed in"
            )
        except requests.RequestException as exc:
            # The library's HTTPError quotes the provider's answer: not shown, not
            # logged. The status code is enough to act on.
            status = getattr(exc.response, "status_code", None)
            refusal = SsoRefused(
                f"{provider_name()} could not be reached or refused the sign-in"
                + (f" (HTTP {status})" if status else f" ({type(exc).__name__})")
            )
            refusal.status = 502
        log.warning("single sign-on refused: %s", refusal)
        setattr(request, REFUSAL_ATTR, refusal)
        return None

    def get_or_create_user(self, access_token, id_token, payload):
        """After the signature, expiry and nonce checks: the issuer, the audience
        and the userinfo's subject, then the account and its memberships."""
        if payload.get("iss") != settings.OIDC_OP_ISSUER:
            raise SsoRefused(
                "the ID token was issued by another provider than OIDC_OP_ISSUER; "
                "nobody was signed in"
            )
        if not _audience_ok(payload):
            raise SsoRefused(
                "the ID token was issued for another application; nobody was signed in"
            )
        if "exp" not in payload:
            raise SsoRefused("the ID token has no expiry; nobody was signed in")
        userinfo = self.get_userinfo(access_token, id_token, payload)
        if not isinstance(userinfo, dict) or userinfo.get("sub") != payload.get("sub"):
            raise SsoRefused(
                "the provider's user information is about another user than its ID "
                "token; nobody was signed in"
            )
        claims = {**payload, **userinfo}
        return sso_login(
            issuer=payload["iss"],
            claims=claims,
            role_map=role_map(),
            username_claim=settings.OIDC_USERNAME_CLAIM,
        )
