"""Django's debug page (DEBUG=1) and error reports never show a secret in full: not the
secret settings and environment variables, not the password inside a database,
Redis or broker URL, not a frame variable holding a key (`flaskapp.security`)."""

from __future__ import annotations

import sys

import pytest
from django.test import RequestFactory
from django.views.debug import (
    get_default_exception_reporter_filter,
    technical_500_response,
)

from flaskapp.security import RedactingExceptionReporterFilter, redact_text

STARS = RedactingExceptionReporterFilter.cleansed_substitute
SECRETS = {
    "db": "db-Pa55word",
    "redis": "redis-Pa55word",
    "broker": "broker-Pa55word",
    "judge": "sk-judge-0123456789",
    "django": "django-key-0123456789-abcdefghij",
    "token": "tok-0123456789",
    "frame_key": "sk-frame-0123456789",
    "frame_url": "frame-Pa55word",
    "login": "login-Pa55word",
}
ENVIRONMENT = {
    # What runserver and gunicorn put in request.META: the process environment.
    "DATABASE_URL": f"postgres://flask:{SECRETS['db']}@db.internal:5432/flaskeval",
    "REDIS_URL": f"redis://:{SECRETS['redis']}@redis.internal:6379/0",
    "CELERY_BROKER_URL": f"redis://worker:{SECRETS['broker']}@redis.internal:6379/1",
    "JUDGE_KEY_OPENAI": SECRETS["judge"],
    "DJANGO_SECRET_KEY": SECRETS["django"],
    "HF_TOKEN": SECRETS["token"],
}


def failing_view(request):
    api_key = SECRETS["frame_key"]  # noqa: F841 (a local the debug page lists)
    replica = f"postgres://ro:{SECRETS['frame_url']}@replica.internal/db"  # noqa: F841
    raise RuntimeError("the view failed")


def debug_page(rf: RequestFactory, **post) -> str:
    request = (
        rf.post("/boom/", post, **ENVIRONMENT) if post else rf.get("/", **ENVIRONMENT)
    )
    try:
        failing_view(request)
    except RuntimeError:
        response = technical_500_response(request, *sys.exc_info())
    assert response.status_code == 500
    return response.content.decode()


@pytest.fixture
def secret_settings(settings):
    settings.DEBUG = True
    settings.CELERY_BROKER_URL = ENVIRONMENT["CELERY_BROKER_URL"]
    settings.REDIS_URL = ENVIRONMENT["REDIS_URL"]
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": ENVIRONMENT["REDIS_URL"],
        }
    }
    # A URL inside DATABASES (and a password under its own key).
    settings.REPORTING_DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.postgresql",
            "PASSWORD": SECRETS["db"],
            "OPTIONS": {"service_url": ENVIRONMENT["DATABASE_URL"]},
        }
    }
    settings.JUDGE_KEY_OPENAI = SECRETS["judge"]
    return settings


def test_the_project_uses_the_redacting_filter():
    assert isinstance(
        get_default_exception_reporter_filter(), RedactingExceptionReporterFilter
    )


def test_debug_page_shows_no_secret(secret_settings, rf):
    html = debug_page(rf)
    assert "the view failed" in html  # it is the debug page
    for name, secret in SECRETS.items():
        if name != "login":
            assert secret not in html, name
    # What a developer needs stays: user, host and database of each URL.
    assert "postgres://flask:" in html and "@db.internal:5432/flaskeval" in html
    assert f"redis://:{STARS}@redis.internal:6379/0" in html
    assert f"redis://worker:{STARS}@redis.internal:6379/1" in html
    assert "replica.internal" in html


def test_debug_page_hides_the_login_password(secret_settings, rf):
    """sensitive_post_parameters holds under DEBUG too (Django skips it there)."""
    from django.views.decorators.debug import sensitive_post_parameters

    @sensitive_post_parameters("password")
    def login_view(request):
        request.POST  # noqa: B018 (read the form, as a login view does)
        raise RuntimeError("the view failed")

    request = rf.post("/login/", {"username": "ann", "password": SECRETS["login"]})
    try:
        login_view(request)
    except RuntimeError:
        html = technical_500_response(request, *sys.exc_info()).content.decode()
    assert "ann" in html
    assert SECRETS["login"] not in html


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("postgres://u:pw@h:5432/db", f"postgres://u:{STARS}@h:5432/db"),
        ("redis://:pw@h:6379/0", f"redis://:{STARS}@h:6379/0"),
        ("postgres://u@h/db", "postgres://u@h/db"),
        ("https://h/x?token=abc&page=2", f"https://h/x?token={STARS}&page=2"),
        ("https://h/x?api_key=abc", f"https://h/x?api_key={STARS}"),
        ("no url here", "no url here"),
        (
            "two: amqp://a:p1@h1// and sqs://k:p2@",
            f"two: amqp://a:{STARS}@h1// and sqs://k:{STARS}@",
        ),
    ],
)
def test_redact_text(text, expected):
    assert redact_text(text, STARS) == expected
