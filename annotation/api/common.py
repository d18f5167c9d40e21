"""What the rater loop's API (`annotation.api.loop`) needs from one item kind: an
`ItemApi` subclass per kind, next to that kind's other endpoints (`api.rating`:
responses to score, `api.pairwise`: pairs to compare).

The loop's views parse with the kind's input serializers, call the kind-generic
services of `services.rating`, and render with the kind's hooks below; the schema
(`loop.LoopSchema`) documents each route with its kind's tag, serializers and words.
"""

from __future__ import annotations

from inspect import cleandoc
from typing import Any, ClassVar

from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers

from annotation.api.serializers.rating import (
    AssignmentSkipInputSerializer,
    AssignmentSkipOutputSerializer,
    RaterProgressOutputSerializer,
    RatingErrorOutputSerializer,
)
from annotation.items import ItemKind
from annotation.models import Assignment, Campaign
from annotation.services.serving import NextResult

NOT_FOUND = OpenApiResponse(
    description="No such campaign or assignment, or not yours (the same answer)."
)


def refused(example: str) -> OpenApiResponse:
    """The schema's answer to a refused write, with an `example` of a named field."""
    return OpenApiResponse(
        RatingErrorOutputSerializer,
        description=f"Refused: `problems` name each field (e.g. `{example}`).",
    )


class ItemApi:
    """The rater loop's API of one item kind (see the module)."""

    kind: ClassVar[ItemKind]
    tag: ClassVar[str]  # the schema's tag of the kind's loop operations
    refused: ClassVar[OpenApiResponse]  # a refused write (400, 409), its example field
    # The serializers of each step (`<step>_input`, `<step>_output`, read by the
    # schema too). `next` and `submit` may render by hand (the hot path): the same
    # JSON.
    next_output: ClassVar[type[serializers.Serializer]]
    progress_output: ClassVar[type[serializers.Serializer]] = (
        RaterProgressOutputSerializer
    )
    submit_input: ClassVar[type[serializers.Serializer]]
    submit_output: ClassVar[type[serializers.Serializer]]
    amend_input: ClassVar[type[serializers.Serializer]]
    amend_output: ClassVar[type[serializers.Serializer]]
    skip_input: ClassVar[type[serializers.Serializer]] = AssignmentSkipInputSerializer
    skip_output: ClassVar[type[serializers.Serializer]] = AssignmentSkipOutputSerializer
    # The fields of a submit's and an amend's input that are the answer the kind's
    # service takes (`ItemKind.clean`).
    answer_fields: ClassVar[tuple[str, ...]]
    # Each step's description in the schema ("next", "progress", "submit", "skip",
    # "amend"), in this kind's words.
    docs: ClassVar[dict[str, str]]

    def doc(self, step: str) -> str:
        """The schema's description of `step` (as drf-spectacular cleans docstrings)."""
        return "\n".join(
            line.rstrip() for line in cleandoc(self.docs[step]).split("\n")
        )

    def answer(self, data: dict[str, Any]) -> dict[str, Any]:
        """A submit's or an amend's validated input as the kind's service takes it."""
        return {field: data[field] for field in self.answer_fields}

    def served_data(self, *, user, result: NextResult) -> dict:
        """The JSON of the assignment `next` served (`result.assignment`)."""
        raise NotImplementedError

    def next_extra(self, *, user, campaign: Campaign) -> dict:
        """What the kind's `next` envelope adds after ``progress``."""
        return {}

    def submitted_data(self, *, user, assignment: Assignment) -> dict:
        """The JSON of a submit's saved answer (`submit_output`)."""
        raise NotImplementedError

    def amended_data(self, *, user, assignment: Assignment) -> dict:
        """The JSON of an amend's saved answer (`amend_output`)."""
        raise NotImplementedError
