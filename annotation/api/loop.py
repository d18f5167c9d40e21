"""The rater loop's API, one set of views for both item kinds: next, progress, submit,
skip and amend.

The route fixes the item kind (``as_view(kind=...)`` in `annotation.api.urls`: the
``rate/...`` paths serve responses to score, the ``pairwise/rate/...`` paths pairs to
compare); the kind's `ItemApi` (`APIS`, one per `annotation.items.REGISTRY` entry)
says what differs: its input and output serializers, which fields are the answer, how
a served item and a saved answer are rendered, and the schema's words. The services
are the kind's loop in `services.rating`.

Raters work only in campaigns of the route's kind they are members of and only on
their own assignments of that kind. Anything else (another campaign, another rater's
assignment, an id of the other kind) is a 404 exactly like a missing id, for every
role; a rater removed from the campaign gets a 403 saying so. Refused writes are
`DomainError`s, rendered as 400 ``{"detail", "problems": [{"field", ...}]}`` (409 for
a resubmit with another answer) by flaskapp.api.exception_handler; wrong types are
refused by the kind's input serializers with DRF's ``{"<field>": [...]}``.
"""

from __future__ import annotations

from typing import ClassVar

from drf_spectacular.openapi import AutoSchema
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation import selectors as selectors
from annotation.api.authentication import HotAuthenticationMixin
from annotation.api.common import NOT_FOUND, ItemApi
from annotation.api.pairwise import PairwiseApi
from annotation.api.rating import PointwiseApi
from annotation.api.serializers.rating import RATER_REMOVED, rater_progress_data
from annotation.services import rating as loop_services

# One API per item kind (`annotation.items.REGISTRY`), by `Campaign.kind`.
APIS: dict[str, ItemApi] = {
    api.kind.campaign_kind: api for api in (PointwiseApi(), PairwiseApi())
}


class LoopSchema(AutoSchema):
    """A loop view's operation in its route's kind: the kind's tag and words, and its
    serializers of the view's `step` (`ItemApi.<step>_input`, `<step>_output`), with
    the step's `refusals`."""

    def get_tags(self) -> list[str]:
        return [self.view.item.tag]

    def get_description(self) -> str:
        return self.view.item.doc(self.view.step)

    def get_request_serializer(self):
        return getattr(self.view.item, f"{self.view.step}_input", None)

    def get_response_serializers(self) -> dict:
        item = self.view.item
        answers = {
            400: item.refused,
            403: RATER_REMOVED,
            404: NOT_FOUND,
            409: item.refused,
        }
        return {200: getattr(item, f"{self.view.step}_output")} | {
            code: answers[code] for code in self.view.refusals
        }


class LoopApi(APIView):
    """A step of the rater loop for the item kind its route names (`kind`)."""

    kind: str = ""  # a `Campaign.Kind` value, set by the route
    step: ClassVar[str]  # its serializers and words: `ItemApi.<step>_input`, ...
    refusals: ClassVar[tuple[int, ...]] = (400, 403, 404)  # its answers but 200
    schema = LoopSchema()

    @property
    def item(self) -> ItemApi:
        return APIS[self.kind]


class LoopNextApi(HotAuthenticationMixin, LoopApi):
    """Serve the next item (or the one the rater already holds). Always 200 with the
    same envelope: `assignment` is null when nothing can be served, and `message`
    says why (`NextResult`)."""

    step = "next"
    refusals = (403, 404)

    def post(self, request, campaign_id: int):
        user, item = request.user, self.item
        campaign = selectors.campaign_get_for_rater(
            user=user,
            campaign_id=campaign_id,
            with_dataset=False,
            kind=item.kind.campaign_kind,
        )
        result = loop_services.item_next(campaign=campaign, rater=user)
        served = None
        if result.assignment is not None:
            served = item.served_data(user=user, result=result)
        # Without `available`: it scans the campaign's items, and this is the hot
        # path. Rendered by hand (the same JSON as the kind's `next_output`).
        progress = selectors.rater_progress(
            user=user, campaign=campaign, counts=result.counts
        )
        return Response(
            {
                "assignment": served,
                "message": result.message,
                "locked_by_others": result.locked_by_others,
                "progress": rater_progress_data(progress),
                **item.next_extra(user=user, campaign=campaign),
            }
        )


class LoopProgressApi(LoopApi):
    """The rater's own progress in one campaign of the route's kind."""

    step = "progress"
    refusals = (403, 404)

    def get(self, request, campaign_id: int):
        campaign = selectors.campaign_get_for_rater(
            user=request.user,
            campaign_id=campaign_id,
            kind=self.item.kind.campaign_kind,
        )
        progress = selectors.rater_progress(
            user=request.user, campaign=campaign, with_available=True
        )
        return Response(self.item.progress_output(progress).data)


class LoopSubmitApi(HotAuthenticationMixin, LoopApi):
    """Submit the answer to a served item. Idempotent: a repeat with the same answer
    returns the saved one unchanged and writes nothing; a repeat with another answer
    is a 409 naming the amend endpoint, and changes nothing (`item_submit`)."""

    step = "submit"
    refusals = (400, 403, 404, 409)

    def post(self, request, assignment_id: int):
        item = self.item
        serializer = item.submit_input(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        assignment = loop_services.item_submit(
            kind=item.kind,
            assignment_id=assignment_id,
            rater=request.user,
            answer=item.answer(data),
            active_seconds=data.get("active_seconds"),
            conflict_if_changed=True,
        )
        return Response(item.submitted_data(user=request.user, assignment=assignment))


class LoopSkipApi(LoopApi):
    """Skip a served item with a reason; it goes back to the pool for others."""

    step = "skip"

    def post(self, request, assignment_id: int):
        item = self.item
        serializer = item.skip_input(data=request.data)
        serializer.is_valid(raise_exception=True)
        assignment = loop_services.item_skip(
            kind=item.kind,
            assignment_id=assignment_id,
            rater=request.user,
            reason=serializer.validated_data["reason"],
        )
        return Response(item.skip_output(assignment).data)


class LoopAmendApi(LoopApi):
    """Replace the rater's own submitted answer while the kind allows it
    (`ItemKind.amend_refusal`); a refusal is a 400 saying why."""

    step = "amend"

    def put(self, request, assignment_id: int):
        item = self.item
        serializer = item.amend_input(data=request.data)
        serializer.is_valid(raise_exception=True)
        assignment = loop_services.item_amend(
            kind=item.kind,
            assignment_id=assignment_id,
            rater=request.user,
            answer=item.answer(serializer.validated_data),
        )
        return Response(item.amended_data(user=request.user, assignment=assignment))
