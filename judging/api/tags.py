"""Failure tags on a run's items and notes on a prompt version's criteria.

    GET    /api/runs/{id}/failure-tags/[?skill=KEY]   the run's tags and tag counts
    POST   /api/runs/{id}/failure-tags/               {response, skill, tag[, note]}
    DELETE /api/runs/{id}/failure-tags/               {response, skill, tag}
    GET    /api/prompts/{id}/criterion-notes/[?skill_key=KEY]
    POST   /api/prompts/{id}/criterion-notes/         {skill_key, text[, dataset]}

Thin: parse, one service or selector call (`judging.services.tags`,
`judging.selectors.tags`). Researchers and admins only (raters 403, anonymous 401);
bad input is a 400 whose problems name the field.
"""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation import selectors as annotation_selectors
from annotation.api.permissions import IsResearcher
from annotation.api.serializers.datasets import ProblemOutputSerializer
from flaskapp.api import validated
from flaskapp.bounds import ID
from judging.api.views import get_or_400
from judging.models import CriterionNote, DisagreementTag
from judging.selectors import tags as selectors
from judging.selectors.runs import judge_run_get_for_user
from judging.services.tags import (
    criterion_note_add,
    failure_tag_apply,
    failure_tag_remove,
)

REFUSED = OpenApiResponse(
    ProblemOutputSerializer, description="Bad input: each problem names its field."
)


class DisagreementTagOutputSerializer(serializers.ModelSerializer):
    tag = serializers.CharField(source="tag.name")
    skill = serializers.CharField(source="skill.key")
    created_by = serializers.CharField(
        source="created_by.username", default=None, allow_null=True
    )

    class Meta:
        model = DisagreementTag
        fields = ["id", "response", "skill", "tag", "note", "created_by", "created_at"]


class FailureTagInputSerializer(serializers.Serializer):
    # Names and texts are checked by the service, which names the field.
    response = serializers.IntegerField(**ID.field_kwargs())
    skill = serializers.CharField(max_length=64)
    tag = serializers.CharField(allow_blank=True, trim_whitespace=False)
    note = serializers.CharField(
        required=False, default="", allow_blank=True, trim_whitespace=False
    )


class CriterionNoteOutputSerializer(serializers.ModelSerializer):
    created_by = serializers.CharField(
        source="created_by.username", default=None, allow_null=True
    )

    class Meta:
        model = CriterionNote
        fields = ["id", "prompt", "skill_key", "text", "created_by", "created_at"]


class CriterionNoteInputSerializer(serializers.Serializer):
    skill_key = serializers.CharField(allow_blank=True, max_length=100)
    text = serializers.CharField(allow_blank=True, trim_whitespace=False)
    dataset = serializers.IntegerField(required=False, **ID.field_kwargs())


class FailureTagListApi(APIView):
    """A run's failure tags; tag one of its items, or take a tag off."""

    permission_classes = [IsResearcher]

    @extend_schema(tags=["workbench"], responses={200: OpenApiTypes.OBJECT})
    def get(self, request, run_id: int):
        run = judge_run_get_for_user(user=request.user, run_id=run_id)
        prompt = selectors.run_prompt(run=run)
        rows = selectors.disagreement_tag_list(
            run=run, skill_key=request.query_params.get("skill") or None
        )
        return Response(
            {
                "run_id": run.pk,
                "prompt_id": prompt.pk if prompt else None,
                "tags": DisagreementTagOutputSerializer(rows, many=True).data,
                "counts": {
                    "run": selectors.failure_tag_counts_of_run(run=run),
                    "prompt": selectors.failure_tag_counts_of_prompt(
                        prompt=prompt, workspace_id=run.workspace_id
                    )
                    if prompt
                    else None,
                },
            }
        )

    @extend_schema(
        tags=["workbench"],
        request=FailureTagInputSerializer,
        responses={201: DisagreementTagOutputSerializer, 400: REFUSED},
    )
    def post(self, request, run_id: int):
        run = judge_run_get_for_user(user=request.user, run_id=run_id)
        data = validated(FailureTagInputSerializer, request.data, detail="Bad input")
        row = failure_tag_apply(
            user=request.user,
            run=run,
            response=data["response"],
            skill=data["skill"],
            tag_name=data["tag"],
            note=data["note"],
        )
        row = selectors.disagreement_tag_list(run=run).get(pk=row.pk)
        return Response(
            DisagreementTagOutputSerializer(row).data, status=status.HTTP_201_CREATED
        )

    @extend_schema(
        tags=["workbench"],
        request=FailureTagInputSerializer,
        responses={200: OpenApiTypes.OBJECT, 400: REFUSED},
    )
    def delete(self, request, run_id: int):
        run = judge_run_get_for_user(user=request.user, run_id=run_id)
        data = validated(FailureTagInputSerializer, request.data, detail="Bad input")
        removed = failure_tag_remove(
            user=request.user,
            run=run,
            response=data["response"],
            skill=data["skill"],
            tag_name=data["tag"],
        )
        return Response({"removed": removed})


class CriterionNoteListApi(APIView):
    """The notes on a prompt version's criteria, oldest first; add one."""

    permission_classes = [IsResearcher]

    @extend_schema(
        tags=["workbench"], responses=CriterionNoteOutputSerializer(many=True)
    )
    def get(self, request, prompt_id: int):
        prompt = selectors.prompt_get_for_user(user=request.user, prompt_id=prompt_id)
        notes = selectors.criterion_note_list(
            prompt=prompt,
            skill_key=request.query_params.get("skill_key") or None,
            user=request.user,
        )
        return Response(CriterionNoteOutputSerializer(notes, many=True).data)

    @extend_schema(
        tags=["workbench"],
        request=CriterionNoteInputSerializer,
        responses={201: CriterionNoteOutputSerializer, 400: REFUSED},
    )
    def post(self, request, prompt_id: int):
        prompt = selectors.prompt_get_for_user(user=request.user, prompt_id=prompt_id)
        data = validated(CriterionNoteInputSerializer, request.data, detail="Bad input")
        dataset = None
        if data.get("dataset"):
            # A body id: another workspace's dataset is refused like a missing one.
            dataset = get_or_400(
                lambda: annotation_selectors.dataset_get_for_user(
                    user=request.user, dataset_id=data["dataset"]
                ),
                "dataset",
                f"no dataset with id {data['dataset']}",
            )
        note = criterion_note_add(
            user=request.user,
            prompt=prompt,
            skill_key=data["skill_key"],
            text=data["text"],
            dataset=dataset,
        )
        return Response(
            CriterionNoteOutputSerializer(note).data, status=status.HTTP_201_CREATED
        )
