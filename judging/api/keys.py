"""REST API of the judge API keys stored per workspace (issue 35): list, create,
replace the value, delete. Write-only: no answer holds a key's value or ciphertext.
Researchers and owners of the key's workspace; another workspace's key is a 404."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.api.datasets import ListApi
from annotation.api.serializers.datasets import ProblemOutputSerializer
from flaskapp.api import validated
from judging.api.serializers import (
    StoredKeyCreateInputSerializer,
    StoredKeyListFilterInputSerializer,
    StoredKeyOutputSerializer,
    StoredKeyReplaceInputSerializer,
)
from judging.selectors import keys as selectors
from judging.services.keys import (
    stored_key_create,
    stored_key_delete,
    stored_key_replace,
)

REFUSED = OpenApiResponse(
    ProblemOutputSerializer, description="Bad input: each problem names its field."
)


class StoredKeyListApi(ListApi):
    """GET: a workspace's stored keys (names, hosts, dates; never a value).
    POST: store a key (its value is never shown again)."""

    permission_classes = [IsAuthenticated]
    output_serializer_class = StoredKeyOutputSerializer

    @extend_schema(
        tags=["keys"],
        parameters=[StoredKeyListFilterInputSerializer],
        responses=StoredKeyOutputSerializer(many=True),
    )
    def get(self, request):
        query = validated(StoredKeyListFilterInputSerializer, request.query_params)
        return self.paginated_response(
            selectors.stored_key_list_for_user(
                user=request.user, workspace_id=query["workspace"]
            )
        )

    @extend_schema(
        tags=["keys"],
        request=StoredKeyCreateInputSerializer,
        responses={201: StoredKeyOutputSerializer, 400: REFUSED},
    )
    def post(self, request):
        data = validated(
            StoredKeyCreateInputSerializer,
            request.data,
            detail="the key was not stored",
        )
        key = stored_key_create(
            user=request.user,
            workspace=data["workspace"],
            name=data["name"],
            value=data["value"],
            allowed_hosts=data["allowed_hosts"],
        )
        key = selectors.stored_key_get_for_user(user=request.user, key_id=key.pk)
        return Response(
            StoredKeyOutputSerializer(key).data, status=status.HTTP_201_CREATED
        )


class StoredKeyDetailApi(APIView):
    """GET: one stored key (never its value). PUT: replace its value (and hosts).
    DELETE: delete it (refused while a judge config names it)."""

    permission_classes = [IsAuthenticated]

    @extend_schema(tags=["keys"], responses=StoredKeyOutputSerializer)
    def get(self, request, key_id: int):
        key = selectors.stored_key_get_for_user(user=request.user, key_id=key_id)
        return Response(StoredKeyOutputSerializer(key).data)

    @extend_schema(
        tags=["keys"],
        request=StoredKeyReplaceInputSerializer,
        responses={200: StoredKeyOutputSerializer, 400: REFUSED},
    )
    def put(self, request, key_id: int):
        key = selectors.stored_key_get_for_user(user=request.user, key_id=key_id)
        data = validated(
            StoredKeyReplaceInputSerializer,
            request.data,
            detail="the key was not replaced",
        )
        stored_key_replace(
            user=request.user,
            key=key,
            value=data["value"],
            allowed_hosts=data.get("allowed_hosts"),
        )
        key = selectors.stored_key_get_for_user(user=request.user, key_id=key_id)
        return Response(StoredKeyOutputSerializer(key).data)

    @extend_schema(tags=["keys"], responses={204: None, 400: REFUSED})
    def delete(self, request, key_id: int):
        key = selectors.stored_key_get_for_user(user=request.user, key_id=key_id)
        stored_key_delete(user=request.user, key=key)
        return Response(status=status.HTTP_204_NO_CONTENT)
