"""Where SECRET_KEY comes from: `DJANGO_SECRET_KEY`, or (local development and tests
only, with `FLASK_DEV=1`) a random key generated once and kept in
`<FLASK_VAR_DIR>/dev-secret-key`.

The key signs sessions, CSRF tokens and password-reset links, and keys the HMAC rater
pseudonyms of the training and preference exports (`analysis.exports.training`):
whoever knows it can forge a login and, given the user ids, undo the pseudonyms. So a
process that has neither refuses to start (`ImproperlyConfigured`, naming both
variables) instead of running on a key that anyone could read in the source. The
development key is random per clone, never committed (`var/` is ignored) and flagged
by `manage.py check --deploy` (`flaskapp.checks`).

Used by `flaskapp.settings` and by the launcher (`make run`), which asks for the key
before starting the web server and the worker, so the two never race to create it.
Reads only the environment mapping and the file system it is given.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

DEV_KEY_FILE = "dev-secret-key"
# Where a key came from, kept in settings as SECRET_KEY_SOURCE for the deploy check.
FROM_ENVIRONMENT = "environment"
FROM_DEV_FILE = "dev-file"

MISSING_KEY_MESSAGE = (
    "DJANGO_SECRET_KEY is not set. Set it to a long random value, e.g. "
    "DJANGO_SECRET_KEY=\"$(python3 -c 'import secrets; "
    "print(secrets.token_urlsafe(50))')\", in every deployment (docker-compose.yml "
    "refuses to start without it). For local development only, set FLASK_DEV=1 "
    "instead (`make run` and `make test` do): a random key is then generated once "
    "and kept in {path}."
)


def env_flag(environ: Mapping[str, str], name: str) -> bool:
    """True for 1/true/yes/on (any case); False when unset or empty."""
    return environ.get(name, "").strip().lower() in {"1", "true", "yes", "on"}


def secret_key_load(*, environ: Mapping[str, str], var_dir: Path) -> tuple[str, str]:
    """(key, source): DJANGO_SECRET_KEY when set (it wins over FLASK_DEV), else with
    FLASK_DEV=1 the development key of `var_dir` (created if missing), else
    `ImproperlyConfigured` with `MISSING_KEY_MESSAGE`."""
    key = environ.get("DJANGO_SECRET_KEY", "")
    if key.strip():
        return key, FROM_ENVIRONMENT
    path = var_dir / DEV_KEY_FILE
    if env_flag(environ, "FLASK_DEV"):
        return dev_secret_key(path), FROM_DEV_FILE
    raise ImproperlyConfigured(MISSING_KEY_MESSAGE.format(path=path))


def dev_secret_key(path: Path) -> str:
    """The key kept in `path`, created (random, mode 600) when missing or empty.

    Safe when several processes start at once: the new key is written to a private
    temporary file first and linked into place, so a reader never sees a half-written
    key and every process ends up with the same one. An existing file readable by
    others is set back to mode 600."""
    key = _read(path)
    if not key:
        path.parent.mkdir(parents=True, exist_ok=True)
        new = secrets.token_urlsafe(50)
        temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w") as out:
            out.write(new + "\n")
        try:
            os.link(temporary, path)
            key = new
        except FileExistsError:
            key = _read(path)
            if not key:  # an empty or blank file left behind: replace it
                os.replace(temporary, path)
                key = new
        finally:
            temporary.unlink(missing_ok=True)
    if path.stat().st_mode & 0o077:
        path.chmod(0o600)
    return key


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return ""
