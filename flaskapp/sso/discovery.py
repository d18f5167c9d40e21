"""Reading a provider's OpenID Connect discovery document, for the operator
(`manage.py oidc_discover ISSUER`): the single sign-on settings are environment
variables, and this turns one issuer URL into the endpoint variables to set. The app
itself never fetches it at run time (it starts with no network to the provider)."""

from __future__ import annotations

import requests

# Our variable -> the discovery document's field (OpenID Connect Discovery 1.0, 3).
FIELDS = {
    "OIDC_OP_ISSUER": "issuer",
    "OIDC_OP_AUTHORIZATION_ENDPOINT": "authorization_endpoint",
    "OIDC_OP_TOKEN_ENDPOINT": "token_endpoint",
    "OIDC_OP_USER_ENDPOINT": "userinfo_endpoint",
    "OIDC_OP_JWKS_ENDPOINT": "jwks_uri",
    "OIDC_OP_END_SESSION_ENDPOINT": "end_session_endpoint",
}
OPTIONAL = {"OIDC_OP_END_SESSION_ENDPOINT"}


class DiscoveryError(Exception):
    """The document could not be read or is not the issuer's; the message says why."""


def provider_discover(issuer: str, *, timeout: float = 10) -> dict[str, str]:
    """{variable: value} from ``<issuer>/.well-known/openid-configuration``. The
    document's ``issuer`` must equal `issuer` exactly (Discovery 1.0, 4.3), and every
    endpoint but end-session must be there. Raises `DiscoveryError`."""
    issuer = issuer.strip()
    if not issuer.startswith(("https://", "http://")):
        raise DiscoveryError(f"the issuer must be an http(s) URL, not {issuer!r}")
    url = issuer.rstrip("/") + "/.well-known/openid-configuration"
    try:
        answer = requests.get(url, timeout=timeout)
        answer.raise_for_status()
        document = answer.json()
    except requests.RequestException as exc:
        status = getattr(exc.response, "status_code", None)
        raise DiscoveryError(
            f"could not read {url}"
            + (f" (HTTP {status})" if status else f" ({type(exc).__name__})")
        ) from None
    if not isinstance(document, dict):
        raise DiscoveryError(f"{url} is not a discovery document (not a JSON object)")
    if document.get("issuer") != issuer:
        raise DiscoveryError(
            f"{url} names the issuer {document.get('issuer')!r}, not {issuer!r}: "
            "use the provider's exact issuer"
        )
    found = {
        name: document[field]
        for name, field in FIELDS.items()
        if isinstance(document.get(field), str) and document[field]
    }
    missing = [n for n in FIELDS if n not in found and n not in OPTIONAL]
    if missing:
        raise DiscoveryError(f"{url} lacks {', '.join(FIELDS[n] for n in missing)}")
    return found
