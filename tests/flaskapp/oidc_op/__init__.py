"""A real OpenID Connect provider for the single sign-on tests: django-oidc-provider in
a tiny Django project of its own (settings, urls, claims), run by `serve.py` as a
subprocess with its own SQLite database. `running_provider` starts one and stops it."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
CLIENT_ID = "flask-eval"
CLIENT_SECRET = "op-client-secret-4b1d"  # must never appear on a page or in a log
PASSWORD = "provider-password-77"
PEOPLE = {
    "alice": {"groups": ["lab-a", "lab-a-admins"], "email": "alice@lab-a.example"},
    "bob": {"groups": ["lab-a"], "email": "bob@lab-a.example"},
    "carol": {"groups": ["other-team"], "email": "carol@elsewhere.example"},
    "dave": {"groups": ["lab-a"], "email": "dave@lab-a.example"},
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def running_provider(workdir: Path, *, app_urls: list[str]):
    """The provider's base URL while it runs (its issuer is ``<base>/openid``), with
    the client `CLIENT_ID` registered for each app URL in `app_urls` (callback
    ``<app>/sso/callback/``, post-logout ``<app>/login/``) and the users `PEOPLE`."""
    port = free_port()
    spec = {
        "db": str(workdir / "op.sqlite3"),
        "port": port,
        "client_id": CLIENT_ID,
        "client_secret": CLIENT_SECRET,
        "redirect_uris": [f"{url}/sso/callback/" for url in app_urls],
        "post_logout_redirect_uris": [f"{url}/login/" for url in app_urls],
        "users": [
            {"username": name, "password": PASSWORD, **person}
            for name, person in PEOPLE.items()
        ],
    }
    # the provider is a Django project of its own: not our settings
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.flaskapp.oidc_op.serve"],
        cwd=ROOT,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        process.stdin.write(json.dumps(spec) + "\n")
        process.stdin.flush()
        if process.stdout.readline().strip() != "READY":
            process.kill()
            raise RuntimeError(
                f"the test provider did not start: {process.stderr.read()[-2000:]}"
            )
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=10)


def sso_settings(settings, provider: str, *, role_map: str, name: str) -> None:
    """Turn single sign-on on in pytest-django's `settings` against `provider`."""
    op = f"{provider}/openid"
    settings.SSO_ENABLED = True
    settings.OIDC_RP_CLIENT_ID = CLIENT_ID
    settings.OIDC_RP_CLIENT_SECRET = CLIENT_SECRET
    settings.OIDC_OP_ISSUER = op
    settings.OIDC_OP_AUTHORIZATION_ENDPOINT = f"{op}/authorize"
    settings.OIDC_OP_TOKEN_ENDPOINT = f"{op}/token"
    settings.OIDC_OP_USER_ENDPOINT = f"{op}/userinfo"
    settings.OIDC_OP_JWKS_ENDPOINT = f"{op}/jwks"
    settings.OIDC_OP_END_SESSION_ENDPOINT = f"{op}/end-session"
    settings.OIDC_RP_SCOPES = "openid email profile groups"
    settings.OIDC_PROVIDER_NAME = name
    settings.OIDC_ROLE_MAP = role_map
