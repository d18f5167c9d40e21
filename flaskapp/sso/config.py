"""The single sign-on configuration a request sees, and `OIDC_ROLE_MAP`'s one parser.

Imports nothing of the app's models: the settings module calls `role_map_parse` at
start-up, so a map with a typo stops the server with a message naming the entry.
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

# flaskapp.models.Membership.ROLE_CHOICES (tests/flaskapp/test_sso.py checks they agree;
# the models cannot be imported while the settings load).
ROLES = ("owner", "researcher", "reviewer", "rater")

RoleMap = dict[str, list[tuple[str, str]]]


def role_map_parse(text: str, *, name: str = "OIDC_ROLE_MAP") -> RoleMap:
    """``"lab-a-admins=lab-a:owner, lab-a=lab-a:researcher"`` -> ``{"lab-a-admins":
    [("lab-a", "owner")], "lab-a": [("lab-a", "researcher")]}``. Entries are separated
    by commas; a claim value may appear in several entries (several workspaces). The
    value is everything before the last ``=``, so a group path such as ``/lab-a`` is
    fine. `ImproperlyConfigured` naming the entry when one is malformed or names an
    unknown role."""
    mapping: RoleMap = {}
    for raw in text.split(","):
        entry = raw.strip()
        if not entry:
            continue
        value, eq, target = entry.rpartition("=")
        slug, colon, role = target.partition(":")
        value, slug, role = value.strip(), slug.strip(), role.strip()
        if not (eq and colon and value and slug and role):
            raise ImproperlyConfigured(
                f"{name}: entry {entry!r} must look like "
                "'claim-value=workspace-slug:role'"
            )
        if role not in ROLES:
            raise ImproperlyConfigured(
                f"{name}: entry {entry!r} names the role {role!r}; the roles are "
                + ", ".join(ROLES)
            )
        mapping.setdefault(value, []).append((slug, role))
    return mapping


def sso_enabled() -> bool:
    """Whether single sign-on is on (``OIDC_RP_CLIENT_ID`` is set)."""
    return bool(getattr(settings, "SSO_ENABLED", False))


def provider_name() -> str:
    return settings.OIDC_PROVIDER_NAME


def role_map() -> RoleMap:
    """The parsed ``OIDC_ROLE_MAP`` of the current settings."""
    return role_map_parse(settings.OIDC_ROLE_MAP)


def groups_from_claims(claims: dict) -> list[str]:
    """The values of the groups claim (``OIDC_GROUPS_CLAIM``): a list of strings, or
    one string; anything else counts as no group."""
    value = claims.get(settings.OIDC_GROUPS_CLAIM)
    if isinstance(value, str):
        return [value]
    if isinstance(value, list | tuple):
        return [v for v in value if isinstance(v, str)]
    return []
