"""System checks for a deployment (`manage.py check --deploy`).

Django's own `security.W009` only warns about a weak SECRET_KEY; here a key that is
known or guessable is an error, because it keys the HMAC rater pseudonyms of the
exports as well as sessions and CSRF tokens (`flaskapp.secret_key`):

- `flaskapp.E001`: the local development key (`FLASK_DEV=1`, `var/dev-secret-key`),
  or a key that has been published (the one this project used to fall back to).
- `flaskapp.E002`: a key shorter than 50 characters or with fewer than 5 distinct
  characters (Django's own thresholds), or one made by `startproject`.
"""

from __future__ import annotations

from django.conf import settings
from django.core.checks import Error, Tags, register

from flaskapp.secret_key import FROM_DEV_FILE

MIN_LENGTH = 50
MIN_UNIQUE_CHARACTERS = 5
PUBLISHED_KEYS = frozenset(
    {"insecure-local-development-key-set-DJANGO_SECRET_KEY-in-production"}
)
_HINT = (
    "Set DJANGO_SECRET_KEY to a long random value, e.g. the output of python3 -c "
    "'import secrets; print(secrets.token_urlsafe(50))', and unset FLASK_DEV."
)


@register(Tags.security, deploy=True)
def secret_key_check(app_configs=None, **kwargs) -> list[Error]:
    key = str(getattr(settings, "SECRET_KEY", ""))
    if (
        getattr(settings, "SECRET_KEY_SOURCE", "") == FROM_DEV_FILE
        or key in PUBLISHED_KEYS
    ):
        return [
            Error(
                "SECRET_KEY is a development key (FLASK_DEV=1 or a published key): "
                "sessions could be forged and the exports' rater pseudonyms undone.",
                hint=_HINT,
                id="flaskapp.E001",
            )
        ]
    if (
        len(key) < MIN_LENGTH
        or len(set(key)) < MIN_UNIQUE_CHARACTERS
        or key.startswith("django-insecure-")
    ):
        return [
            Error(
                f"SECRET_KEY is too weak: {len(key)} characters, {len(set(key))} "
                f"distinct (at least {MIN_LENGTH} and {MIN_UNIQUE_CHARACTERS} needed, "
                "and not one made by startproject).",
                hint=_HINT,
                id="flaskapp.E002",
            )
        ]
    return []
