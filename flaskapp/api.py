"""Project-wide API plumbing: the one exception handler that turns domain errors into 400s."""

from __future__ import annotations

from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from annotation.errors import ConflictError, DomainError


def exception_handler(exc, context):
    if isinstance(exc, ConflictError):
        return Response(exc.as_dict(), status=status.HTTP_409_CONFLICT)
    if isinstance(exc, DomainError):
        return Response(exc.as_dict(), status=status.HTTP_400_BAD_REQUEST)
    return drf_exception_handler(exc, context)
