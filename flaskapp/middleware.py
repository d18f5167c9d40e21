"""Bad input and outages answer as such, never as a 500.

`BadInputMiddleware` (pages and API): a path or query parameter holding a NUL is a 400
before any view runs (no view can pass it to the database). A `DomainError` a view
lets escape (e.g. `flaskapp.params.BadParameter` for ``?saved=²``) is a 400 page
listing its problems, each naming its parameter or field (a `ConflictError`: 409). A
`DataError` no check caught (a value out of range for its column) is a 400 too, and
logged as the error it is. The API answers the same errors itself, as JSON
(`flaskapp.api.exception_handler`).

`DatabaseOutageMiddleware`: while the database is unreachable (PostgreSQL restarting,
the network gone) Django raises `OperationalError` / `InterfaceError`. For ``/api/``
paths the answer is a 503 with a JSON body and ``Retry-After``; for pages a plain 503
page with ``Retry-After``, rendered without templates or the database. `server_error`
is the ``handler500`` fallback for the same errors raised outside a view (in another
middleware), where ``process_exception`` does not see them.
"""

from __future__ import annotations

import logging
import sys
from urllib.parse import urlencode

from django.db import DataError, InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.defaults import server_error as django_server_error

from flaskapp.errors import ConflictError, DomainError, Problem

log = logging.getLogger(__name__)

DATABASE_DOWN = (OperationalError, InterfaceError)
RETRY_AFTER_SECONDS = 15
OUTAGE_MESSAGE = "The database is unavailable for a moment; try again shortly."
_OUTAGE_PAGE = (
    "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
    "<title>Unavailable · FLASK Eval</title></head><body>"
    "<h1>FLASK Eval is unavailable for a moment</h1>"
    f"<p>{OUTAGE_MESSAGE} Reload this page in a few seconds.</p>"
    "</body></html>"
)
# The last line of defence: a value the database refused (out of range, too long)
# that no check caught is still the request's fault. Logged as an error, since the
# check that should name the field is missing.
DATABASE_REFUSED_MESSAGE = "a value is out of range or too long for the database"


def database_refused(request: HttpRequest, exception: Exception) -> DomainError:
    """The 400's error for a `DataError` no check caught; logs it with its traceback."""
    log.error(
        "unchecked input reached the database on %s", request.path, exc_info=exception
    )
    return DomainError("Bad input", [Problem(DATABASE_REFUSED_MESSAGE)])


def is_api(request: HttpRequest) -> bool:
    return request.path.startswith("/api/")


def outage_response(request: HttpRequest) -> HttpResponse:
    """The 503 for a database outage: JSON under /api/, a plain page elsewhere."""
    if is_api(request):
        response: HttpResponse = JsonResponse(
            {"detail": OUTAGE_MESSAGE, "problems": []}, status=503
        )
    else:
        response = HttpResponse(_OUTAGE_PAGE, status=503)
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    response["Cache-Control"] = "no-store"
    return response


class DatabaseOutageMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if isinstance(exception, DATABASE_DOWN):
            log.warning("database unavailable on %s: %s", request.path, exception)
            return outage_response(request)
        return None


def bad_input_response(request: HttpRequest, error: DomainError) -> HttpResponse:
    """A 400 (a `ConflictError`: 409) naming every problem: JSON under /api/, the 400
    page elsewhere."""
    status = 409 if isinstance(error, ConflictError) else 400
    if is_api(request):
        return JsonResponse(error.as_dict(), status=status)
    problems = error.problems or [Problem(error.message)]
    return render(
        request,
        "400.html",
        {"message": error.message, "problems": problems},
        status=status,
    )


class BadInputMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if "\x00" in request.path:
            return bad_input_response(
                request,
                DomainError(
                    "bad path",
                    [Problem("contains a NUL character (\\u0000)", field="path")],
                ),
            )
        for name, values in request.GET.lists():
            if any("\x00" in v for v in [name, *values]):
                return bad_input_response(
                    request,
                    DomainError(
                        "bad query string",
                        [
                            Problem(
                                "contains a NUL character (\\u0000)",
                                field=name.replace("\x00", "\\u0000"),
                            )
                        ],
                    ),
                )
        return self.get_response(request)

    def process_exception(self, request, exception):
        if isinstance(exception, DomainError):
            return bad_input_response(request, exception)
        if isinstance(exception, DataError):
            return bad_input_response(request, database_refused(request, exception))
        return None


# The session key the login sets when the account holds a temporary password
# (flaskapp.accounts), read here so that the check costs no query per request.
TEMPORARY_PASSWORD_SESSION_KEY = "temporary_password"


class TemporaryPasswordMiddleware:
    """A user logged in with a password someone else set (a new or reset rater) must
    choose their own first: every page redirects to the password page (with ``next``),
    an API call made with the session answers 403 saying so. The login and logout,
    the password page itself and static files stay open."""

    OPEN_PREFIXES = ("/static/", "/login/", "/logout/")

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        session = getattr(request, "session", None)
        try:  # reading the session may be the request's first database query
            held = (
                session is not None
                and session.get(TEMPORARY_PASSWORD_SESSION_KEY)
                and request.user.is_authenticated
            )
        except DATABASE_DOWN as exc:
            log.warning("database unavailable on %s: %s", request.path, exc)
            return outage_response(request)
        if not held:
            return self.get_response(request)
        change = reverse("password-change")
        if request.path == change or request.path.startswith(self.OPEN_PREFIXES):
            return self.get_response(request)
        message = "Your password was set for you: choose your own first."
        if is_api(request):
            return JsonResponse(
                {"detail": message, "problems": [{"field": "password",
                                                   "message": message}]},
                status=403,
            )  # fmt: skip
        return redirect(f"{change}?{urlencode({'next': request.get_full_path()})}")


def server_error(request: HttpRequest, *args, **kwargs) -> HttpResponse:
    """``handler500``: a 503 for a database outage raised anywhere, else Django's 500."""
    exception = sys.exc_info()[1]
    if isinstance(exception, DATABASE_DOWN):
        return outage_response(request)
    return django_server_error(request, *args, **kwargs)
