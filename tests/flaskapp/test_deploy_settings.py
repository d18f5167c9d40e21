"""Production settings: no start without a real key, HTTPS settings from documented
variables, `check --deploy` catching development and weak keys.

Each case runs `manage.py` in a fresh process with an environment of its own (the
settings are read once per process), on an empty SQLite directory."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from flaskapp.secret_key import DEV_KEY_FILE, secret_key_load

ROOT = Path(__file__).resolve().parent.parent.parent
STRONG_KEY = "k3y-" + "a1B2c3D4e5F6g7H8i9J0" * 3  # 64 characters, 20+ distinct
SHOW = (
    "import json; from django.conf import settings as s; print(json.dumps({k: "
    "getattr(s, k) for k in ('SECURE_SSL_REDIRECT', 'SESSION_COOKIE_SECURE', "
    "'CSRF_COOKIE_SECURE', 'SECURE_HSTS_SECONDS', 'SECURE_PROXY_SSL_HEADER', "
    "'SECRET_KEY')}))"
)


def manage(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DJANGO_", "FLASK_DEV", "DATABASE_URL", "REDIS_URL"))
        and k != "CELERY_BROKER_URL"
    }
    clean.update({"FLASK_VAR_DIR": str(tmp_path), **env})
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=clean,
        capture_output=True,
        text=True,
        timeout=120,
    )


def settings_of(tmp_path: Path, **env: str) -> dict:
    done = manage(tmp_path, "shell", "-c", SHOW, **env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_without_a_key_nothing_starts_and_the_message_says_what_to_set(tmp_path):
    done = manage(tmp_path, "check")
    assert done.returncode == 2
    assert "DJANGO_SECRET_KEY is not set" in done.stderr
    assert "FLASK_DEV=1" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / DEV_KEY_FILE).exists()


def test_the_launcher_refuses_too(tmp_path):
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DJANGO_", "FLASK_DEV"))
    }
    done = subprocess.run(
        [sys.executable, "-m", "flaskapp.launcher", "--port", "1"],
        cwd=ROOT,
        env={**clean, "FLASK_VAR_DIR": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "DJANGO_SECRET_KEY is not set" in done.stderr


def test_dev_mode_makes_one_private_random_key_and_deploy_check_rejects_it(tmp_path):
    first = settings_of(tmp_path, FLASK_DEV="1")["SECRET_KEY"]
    again = settings_of(tmp_path, FLASK_DEV="1")["SECRET_KEY"]
    other = settings_of(tmp_path / "other", FLASK_DEV="1")["SECRET_KEY"]
    assert first == again != other and len(first) >= 50
    mode = stat.S_IMODE((tmp_path / DEV_KEY_FILE).stat().st_mode)
    assert mode == 0o600
    deploy = manage(tmp_path, "check", "--deploy", FLASK_DEV="1")
    assert "flaskapp.E001" in deploy.stderr
    assert deploy.returncode != 0


def test_a_given_key_wins_over_dev_mode(tmp_path):
    got = settings_of(tmp_path, FLASK_DEV="1", DJANGO_SECRET_KEY=STRONG_KEY)
    assert got["SECRET_KEY"] == STRONG_KEY
    assert not (tmp_path / DEV_KEY_FILE).exists()


@pytest.mark.parametrize(
    ("key", "code"),
    [
        ("short-but-set", "flaskapp.E002"),
        ("x" * 60, "flaskapp.E002"),  # long, one distinct character
        ("insecure-local-development-key-set-DJANGO_SECRET_KEY-in-production", "E001"),
    ],
)
def test_deploy_check_rejects_weak_or_published_keys(tmp_path, key, code):
    deploy = manage(tmp_path, "check", "--deploy", DJANGO_SECRET_KEY=key)
    assert code in deploy.stderr
    assert deploy.returncode != 0


def test_https_turns_on_redirect_secure_cookies_and_hsts(tmp_path):
    local = settings_of(tmp_path, DJANGO_SECRET_KEY=STRONG_KEY)
    assert local["SECURE_SSL_REDIRECT"] is False
    assert local["SESSION_COOKIE_SECURE"] is False and local["SECURE_HSTS_SECONDS"] == 0
    https = settings_of(
        tmp_path,
        DJANGO_SECRET_KEY=STRONG_KEY,
        DJANGO_HTTPS="1",
        DJANGO_SECURE_PROXY_SSL_HEADER="X-Forwarded-Proto: https",
    )
    assert https["SECURE_SSL_REDIRECT"] is True
    assert https["SESSION_COOKIE_SECURE"] is True
    assert https["CSRF_COOKIE_SECURE"] is True
    assert https["SECURE_HSTS_SECONDS"] == 365 * 24 * 3600
    assert https["SECURE_PROXY_SSL_HEADER"] == ["HTTP_X_FORWARDED_PROTO", "https"]
    # And the deploy check has nothing left to say about them or the key.
    deploy = manage(
        tmp_path, "check", "--deploy", DJANGO_SECRET_KEY=STRONG_KEY, DJANGO_HTTPS="1"
    )
    for warning in ("W004", "W008", "W012", "W016", "flaskapp.E"):
        assert warning not in deploy.stderr, deploy.stderr
    # Each can be set alone.
    no_hsts = settings_of(
        tmp_path,
        DJANGO_SECRET_KEY=STRONG_KEY,
        DJANGO_HTTPS="1",
        DJANGO_SECURE_HSTS_SECONDS="0",
    )
    assert no_hsts["SECURE_HSTS_SECONDS"] == 0 and no_hsts["SECURE_SSL_REDIRECT"]


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("DJANGO_HTTPS", "maybe"),
        ("DJANGO_SECURE_HSTS_SECONDS", "a year"),
        ("DJANGO_SECURE_HSTS_SECONDS", "-5"),
        ("DJANGO_SECURE_PROXY_SSL_HEADER", "https"),
    ],
)
def test_a_value_a_variable_cannot_take_stops_the_start_naming_it(
    tmp_path, name, value
):
    done = manage(tmp_path, "check", DJANGO_SECRET_KEY=STRONG_KEY, **{name: value})
    assert done.returncode == 2
    assert name in done.stderr and "Traceback" not in done.stderr


def test_secret_key_load_reads_only_what_it_is_given(tmp_path):
    key, source = secret_key_load(environ={"FLASK_DEV": "1"}, var_dir=tmp_path)
    assert source == "dev-file" and (tmp_path / DEV_KEY_FILE).read_text().strip() == key
    (tmp_path / DEV_KEY_FILE).chmod(0o644)  # a copy readable by others is made private
    assert secret_key_load(environ={"FLASK_DEV": "yes"}, var_dir=tmp_path)[0] == key
    assert stat.S_IMODE((tmp_path / DEV_KEY_FILE).stat().st_mode) == 0o600
