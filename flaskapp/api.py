"""Project-wide API plumbing: the one exception handler, the JSON parser, the paginator.

- `exception_handler` turns domain errors (`flaskapp.errors.DomainError`, and so
  `flaskapp.params.BadParameter`) into 400s with every problem (`ConflictError`: 409),
  and a database that is down (`flaskapp.middleware.DATABASE_DOWN`) into a 503 with
  ``Retry-After``.
- `JSONParser` refuses, with a 400 naming the field, a body nested too deeply for
  Python's parser or holding text PostgreSQL cannot store (`flaskapp.untrusted`).
- `validated`, `query_data` and `refusal`: the one way views read a query or body
  through a serializer and turn a selector's refusal into a 400 naming the field.
- `Pagination` bounds ``offset`` (PostgreSQL takes a bigint) and ``limit``.
- `WorkspaceScopedPrimaryKeyRelatedField`: an id in a request body that names an
  object of the workspaces where the user may act; any other (another workspace's
  included) is refused like a missing one, naming the field.
- `WORKSPACE_CREATE_PARAMETER`, `WORKSPACE_FILTER_PARAMETER`: the ``workspace``
  query parameter as the schema documents it (`flaskapp.workspaces.
  workspace_for_create`, `filter_by_workspace_param`).
"""

from __future__ import annotations

import codecs
import json

from django.conf import settings
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.db import DataError
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter
from rest_framework import exceptions, parsers, serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.response import Response
from rest_framework.settings import api_settings

from flaskapp.bounds import ID
from flaskapp.errors import ConflictError, DomainError, Problem, TooManyRequests
from flaskapp.middleware import (
    DATABASE_DOWN,
    OUTAGE_MESSAGE,
    RETRY_AFTER_SECONDS,
    database_refused,
)
from flaskapp.params import int_param
from flaskapp.untrusted import JSONInputError, json_loads, json_syntax_error
from flaskapp.workspaces import RESEARCHER, scope_for_role


def exception_handler(exc, context):
    """Every 400 has one shape, ``{"detail", "problems": [{field, message, ...}]}``
    (`ProblemOutputSerializer`); a serializer's refusal also keeps DRF's
    ``{field: [messages]}`` keys beside them, for older clients. A `ConflictError`
    (a request contradicting what is stored) is a 409 of the same shape."""
    if isinstance(exc, ConflictError):
        return Response(exc.as_dict(), status=status.HTTP_409_CONFLICT)
    if isinstance(exc, TooManyRequests):
        return Response(
            {"detail": str(exc), "problems": []},
            status=status.HTTP_429_TOO_MANY_REQUESTS,
            headers={"Retry-After": str(exc.retry_after)},
        )
    if isinstance(exc, DomainError):
        return Response(exc.as_dict(), status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, DataError):
        exc = database_refused(context["request"], exc)
        return Response(exc.as_dict(), status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, DATABASE_DOWN):
        return Response(
            {"detail": OUTAGE_MESSAGE, "problems": []},
            status=status.HTTP_503_SERVICE_UNAVAILABLE,
            headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
        )
    code = None
    if isinstance(exc, DjangoPermissionDenied) and str(exc):
        # Keep our message ("... needs the admin role"); DRF would drop it. A removed
        # rater's refusal (`flaskapp.errors.RatingRefused`) also names its code.
        code = getattr(exc, "code", None)
        exc = exceptions.PermissionDenied(str(exc))
    # Imported here, not at the top: `rest_framework.views` reads DEFAULT_PARSER_CLASSES
    # (this module's `JSONParser`) when it is first imported, so importing it while this
    # module loads is circular whenever this module is loaded first (DRF's pagination
    # check does that in a Celery worker).
    from rest_framework.views import exception_handler as drf_exception_handler

    response = drf_exception_handler(exc, context)
    if response is not None and code:
        response.data["code"] = code
    if response is not None and isinstance(exc, ValidationError):
        problems = list(_problems(exc.detail))
        body = DomainError("Bad input", problems).as_dict()
        if isinstance(response.data, dict):
            body = {**response.data, **body}
        response.data = body
    return response


def validated(serializer_class, data, *, detail: str = "Bad parameters") -> dict:
    """`data` as `serializer_class` validates it; otherwise a `DomainError` with one
    problem per refused top-level field (``run``, not ``run.0``, for a bad item of a
    list), its messages joined: a 400 naming each."""
    ser = serializer_class(data=data)
    if not ser.is_valid():
        problems = []
        for field, errors in ser.errors.items():
            messages = "; ".join(p.message for p in _problems(errors))
            problems.append(Problem(messages, field=str(field)))
        raise DomainError(detail, problems)
    return dict(ser.validated_data)


def query_data(request, lists: tuple[str, ...] = ()) -> dict:
    """The query string as a dict; each name in `lists` is repeatable and may hold
    comma-separated values (``?run=4&run=5`` or ``?run=4,5``), read as a list."""
    params = request.query_params
    data = {k: v for k, v in params.items()}
    for name in lists:
        values = params.getlist(name)
        data[name] = [v for part in values for v in part.split(",") if v.strip()]
    return data


def refusal(exc: Exception, detail: str = "Refused") -> DomainError:
    """A selector's refusal written ``"field name: message"`` (`AgreementError`,
    `LeaderboardError`, ...) as a `DomainError` naming the field (spaces as _)."""
    field, _, message = str(exc).partition(": ")
    return DomainError(
        detail, [Problem(message or str(exc), field=field.replace(" ", "_"))]
    )


def _problems(detail, field: str | None = None):
    """DRF's nested error detail as `Problem`s whose field is the dotted path."""
    if isinstance(detail, dict):
        for key, value in detail.items():
            key = str(key)
            if key in ("non_field_errors", api_settings.NON_FIELD_ERRORS_KEY):
                yield from _problems(value, field)
            else:
                yield from _problems(value, f"{field}.{key}" if field else key)
    elif isinstance(detail, list):
        for index, value in enumerate(detail):
            if isinstance(value, dict | list):
                yield from _problems(value, f"{field}.{index}" if field else str(index))
            else:
                yield Problem(str(value), field=field)
    else:
        yield Problem(str(detail), field=field)


class JSONParser(parsers.JSONParser):
    """DRF's JSON parser with `flaskapp.untrusted.json_loads`: a too-deep body or one
    with NUL / lone surrogates is a 400 naming its top-level field (`body` when the
    body itself is the problem), never a `RecursionError` or a failed save."""

    def parse(self, stream, media_type=None, parser_context=None):
        parser_context = parser_context or {}
        encoding = parser_context.get("encoding", settings.DEFAULT_CHARSET)
        try:
            text = codecs.getreader(encoding)(stream).read()
        except UnicodeDecodeError as exc:
            raise _body_error(f"is not valid {encoding} text") from exc
        try:
            return json_loads(text)
        except JSONInputError as exc:
            raise _body_error(exc.message, exc.field) from exc
        except json.JSONDecodeError as exc:
            raise _body_error(
                f"is not valid JSON ({json_syntax_error(exc, with_line=True)})"
            ) from exc


def _body_error(message: str, field: str | None = None) -> DomainError:
    return DomainError(
        "the request body was refused", [Problem(message, field=field or "body")]
    )


class Pagination(LimitOffsetPagination):
    """LimitOffset pages of at most 1000. ``limit`` is lenient as in DRF (garbage: the
    default; too large: the maximum); a bad ``offset`` is a 400 naming it, not a
    database error."""

    default_limit = 50
    max_limit = 1000

    def get_offset(self, request):
        return int_param(
            request.query_params,
            self.offset_query_param,
            0,
            min_value=0,
            max_value=ID.high,
        )


# --- The body of a refusal -------------------------------------------------------------


class ImportProblemOutputSerializer(serializers.Serializer):
    """One `Problem` of a refusal (`exception_handler`)."""

    file = serializers.CharField(allow_null=True)
    line = serializers.IntegerField(allow_null=True)
    field = serializers.CharField(allow_null=True)
    message = serializers.CharField()
    text = serializers.CharField(help_text="The problem as one sentence for people.")


class ProblemOutputSerializer(serializers.Serializer):
    """The body of a refused operation (a `DomainError`, see `exception_handler`)."""

    detail = serializers.CharField()
    problems = ImportProblemOutputSerializer(many=True)


# --- The workspace of a request ------------------------------------------------------

WORKSPACE_CREATE_PARAMETER = OpenApiParameter(
    "workspace",
    OpenApiTypes.INT,
    OpenApiParameter.QUERY,
    required=False,
    description="The id of the workspace to create in (you must be a researcher "
    "there: 404 when you are not a member, 403 when your role is lower). Absent: "
    "the first workspace, by name, where you are a researcher.",
)
WORKSPACE_FILTER_PARAMETER = OpenApiParameter(
    "workspace",
    OpenApiTypes.INT,
    OpenApiParameter.QUERY,
    required=False,
    description="Only this workspace's rows (404 when you are not a member). "
    "Absent: every workspace you may read.",
)


class WorkspaceScopedPrimaryKeyRelatedField(serializers.PrimaryKeyRelatedField):
    """The id of an object of a workspace where the request's user holds `needed`
    (default: researcher). An id of another workspace gets the same answer as an id
    that names nothing (DRF's ``does_not_exist``, under the field's name), so the
    answer does not tell that the object exists. Needs ``context={"request": ...}``;
    without it nothing is accepted. `workspace_field`: the path to the row's
    workspace (as `flaskapp.workspaces.scope_for_role`)."""

    def __init__(
        self, *, needed: str = RESEARCHER, workspace_field: str = "workspace", **kw
    ):
        self.needed = needed
        self.workspace_field = workspace_field
        super().__init__(**kw)

    def get_queryset(self):
        queryset = super().get_queryset()
        request = self.context.get("request")
        if request is None:
            return queryset.none()
        return scope_for_role(
            queryset, request.user, self.needed, field=self.workspace_field
        )
