"""The workspaces and people API (issue 35), under ``/api/workspaces/``:

- ``GET /api/workspaces/``: the workspaces you belong to, with your role (instance
  admins: every workspace). ``POST`` (admins): create one ``{name, slug?,
  description?, owner?}``.
- ``GET /api/workspaces/<id>/`` (members); ``PATCH`` ``{name, description?}``
  (admins: rename); ``DELETE`` (admins; only an empty workspace).
- ``GET /api/workspaces/<id>/members/`` (owners); ``POST`` ``{user, role}``: add an
  account by username or e-mail.
- ``PATCH /api/workspaces/<id>/members/<user_id>/`` ``{role}``; ``DELETE``: remove.
- ``POST /api/workspaces/<id>/members/<user_id>/password/``: a new temporary
  password, in this answer only.
- ``POST /api/workspaces/<id>/members/bulk/`` (multipart ``file``): accounts from a
  CSV, all or nothing; new accounts' passwords in this answer only.
- ``GET``/``POST /api/workspaces/<id>/invites/``; ``DELETE
  /api/workspaces/<id>/invites/<invite_id>/``: revoke.

A workspace you are not a member of is a 404; a role too low a 403 naming the role
needed; bad input a 400 naming the field (the last owner cannot be demoted or
removed). Thin views: a selector or a service, then the serializer.
"""

from __future__ import annotations

from django.http import Http404
from django.urls import reverse
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from flaskapp import roles
from flaskapp.api import Pagination, ProblemOutputSerializer, validated
from flaskapp.models import Membership
from flaskapp.people import selectors
from flaskapp.people.services import bulk, invites, members, workspaces
from flaskapp.workspaces import RATER, WORKSPACE_ROLES, workspace_get_for_user

ROLE_CHOICES = list(WORKSPACE_ROLES)
ERRORS = {
    400: ProblemOutputSerializer,
    403: OpenApiResponse(description="Your role there is too low (the role needed "
                         "is named in `detail`)."),
    404: OpenApiResponse(description="No such workspace, or you are not a member "
                         "(the same answer)."),
}  # fmt: skip


class WorkspaceOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField(source="workspace.pk")
    name = serializers.CharField(source="workspace.name")
    slug = serializers.CharField(source="workspace.slug")
    description = serializers.CharField(source="workspace.description")
    is_demo = serializers.BooleanField(source="workspace.is_demo")
    created_at = serializers.DateTimeField(source="workspace.created_at")
    role = serializers.CharField(
        allow_null=True,
        help_text="Your role there; null for an instance admin who is not a member "
        "(admins act as owners everywhere).",
    )
    member_count = serializers.IntegerField()


class WorkspaceCreateInputSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=100)
    slug = serializers.CharField(max_length=60, required=False, allow_blank=True)
    description = serializers.CharField(
        max_length=500, required=False, allow_blank=True
    )
    owner = serializers.CharField(
        max_length=254,
        required=False,
        allow_blank=True,
        help_text="Username or e-mail of the first owner (optional).",
    )


class WorkspaceRenameInputSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=100)
    description = serializers.CharField(
        max_length=500, required=False, allow_blank=True
    )


class MemberOutputSerializer(serializers.Serializer):
    user_id = serializers.IntegerField()
    username = serializers.CharField(source="user.username")
    email = serializers.CharField(source="user.email")
    role = serializers.ChoiceField(choices=ROLE_CHOICES)
    created_at = serializers.DateTimeField()


class MemberAddInputSerializer(serializers.Serializer):
    user = serializers.CharField(max_length=254, help_text="Username or e-mail.")
    role = serializers.ChoiceField(choices=ROLE_CHOICES)


class MemberRoleInputSerializer(serializers.Serializer):
    role = serializers.ChoiceField(choices=ROLE_CHOICES)


class PasswordOutputSerializer(serializers.Serializer):
    username = serializers.CharField()
    password = serializers.CharField(
        help_text="Temporary: shown only in this answer; they choose their own at "
        "their next login."
    )


class BulkInputSerializer(serializers.Serializer):
    file = serializers.FileField(help_text="CSV with the header username,email,role")


class BulkLineOutputSerializer(serializers.Serializer):
    line = serializers.IntegerField()
    username = serializers.CharField()
    email = serializers.CharField()
    role = serializers.CharField()
    outcome = serializers.CharField()
    password = serializers.CharField(
        help_text="A new account's temporary password (only in this answer); empty "
        "for an existing account."
    )


class InviteInputSerializer(serializers.Serializer):
    role = serializers.ChoiceField(choices=ROLE_CHOICES)
    expires_in = serializers.IntegerField(min_value=1, max_value=invites.MAX_HOURS)
    unit = serializers.ChoiceField(choices=list(invites.UNIT_HOURS), default="days")
    max_uses = serializers.IntegerField(
        min_value=1, max_value=invites.MAX_USES, default=1
    )


class InviteOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField(source="invite.pk")
    prefix = serializers.CharField(source="invite.token_prefix")
    role = serializers.CharField(source="invite.role")
    max_uses = serializers.IntegerField(source="invite.max_uses")
    uses = serializers.IntegerField(source="invite.uses")
    expires_at = serializers.DateTimeField(source="invite.expires_at")
    state = serializers.CharField()


class InviteCreatedOutputSerializer(InviteOutputSerializer):
    url = serializers.CharField(help_text="The link: shown only in this answer.")


def _paginated(view, request, rows, serializer_class) -> Response:
    paginator = Pagination()
    page = paginator.paginate_queryset(rows, request, view=view)
    return paginator.get_paginated_response(serializer_class(page, many=True).data)


def _row(ws, user):
    return selectors.WorkspaceRow(
        ws, selectors.role_of(user=user, workspace=ws), ws.memberships.count()
    )


class WorkspaceListApi(APIView):
    pagination_class = Pagination

    @extend_schema(tags=["workspaces"], responses=WorkspaceOutputSerializer(many=True))
    def get(self, request):
        rows = selectors.workspace_list_for_user(user=request.user)
        return _paginated(self, request, rows, WorkspaceOutputSerializer)

    @extend_schema(
        tags=["workspaces"],
        request=WorkspaceCreateInputSerializer,
        responses={201: WorkspaceOutputSerializer, **ERRORS},
    )
    def post(self, request):
        roles.require_admin(request.user)
        data = validated(WorkspaceCreateInputSerializer, request.data)
        owner = None
        if data.get("owner"):
            owner = members.account_find(data["owner"], field="owner")
        ws = workspaces.workspace_create(
            actor=request.user,
            name=data["name"],
            slug=data.get("slug", ""),
            description=data.get("description", ""),
            owner=owner,
        )
        return Response(
            WorkspaceOutputSerializer(_row(ws, request.user)).data,
            status=status.HTTP_201_CREATED,
        )


class WorkspaceDetailApi(APIView):
    @extend_schema(tags=["workspaces"], responses={200: WorkspaceOutputSerializer,
                                                   **ERRORS})  # fmt: skip
    def get(self, request, workspace_id: int):
        ws = workspace_get_for_user(request.user, workspace_id, RATER)
        return Response(WorkspaceOutputSerializer(_row(ws, request.user)).data)

    @extend_schema(
        tags=["workspaces"],
        request=WorkspaceRenameInputSerializer,
        responses={200: WorkspaceOutputSerializer, **ERRORS},
    )
    def patch(self, request, workspace_id: int):
        ws = workspace_get_for_user(request.user, workspace_id, RATER)
        roles.require_admin(request.user)
        data = validated(WorkspaceRenameInputSerializer, request.data)
        ws = workspaces.workspace_rename(
            actor=request.user,
            workspace=ws,
            name=data["name"],
            description=data.get("description"),
        )
        return Response(WorkspaceOutputSerializer(_row(ws, request.user)).data)

    @extend_schema(tags=["workspaces"], responses={204: None, **ERRORS})
    def delete(self, request, workspace_id: int):
        ws = workspace_get_for_user(request.user, workspace_id, RATER)
        workspaces.workspace_delete(actor=request.user, workspace=ws)
        return Response(status=status.HTTP_204_NO_CONTENT)


class MemberListApi(APIView):
    pagination_class = Pagination

    @extend_schema(tags=["workspaces"], responses=MemberOutputSerializer(many=True))
    def get(self, request, workspace_id: int):
        ws = selectors.workspace_get_for_owner(
            user=request.user, workspace_id=workspace_id
        )
        rows = selectors.member_list(workspace=ws)
        return _paginated(self, request, rows, MemberOutputSerializer)

    @extend_schema(
        tags=["workspaces"],
        request=MemberAddInputSerializer,
        responses={201: MemberOutputSerializer, **ERRORS},
    )
    def post(self, request, workspace_id: int):
        ws = selectors.workspace_get_for_owner(
            user=request.user, workspace_id=workspace_id
        )
        data = validated(MemberAddInputSerializer, request.data)
        user = members.account_find(data["user"])
        membership = members.member_add(
            actor=request.user, workspace=ws, user=user, role=data["role"]
        )
        return Response(
            MemberOutputSerializer(membership).data, status=status.HTTP_201_CREATED
        )


def _membership_or_404(ws, user_id: int) -> Membership:
    membership = selectors.member_get(workspace=ws, user_id=user_id)
    if membership is None:
        raise Http404("No such member.")
    return membership


class MemberDetailApi(APIView):
    @extend_schema(
        tags=["workspaces"],
        request=MemberRoleInputSerializer,
        responses={200: MemberOutputSerializer, **ERRORS},
    )
    def patch(self, request, workspace_id: int, user_id: int):
        ws = selectors.workspace_get_for_owner(
            user=request.user, workspace_id=workspace_id
        )
        _membership_or_404(ws, user_id)
        data = validated(MemberRoleInputSerializer, request.data)
        membership = members.member_role_change(
            actor=request.user, workspace=ws, user_id=user_id, role=data["role"]
        )
        return Response(MemberOutputSerializer(membership).data)

    @extend_schema(tags=["workspaces"], responses={204: None, **ERRORS})
    def delete(self, request, workspace_id: int, user_id: int):
        ws = selectors.workspace_get_for_owner(
            user=request.user, workspace_id=workspace_id
        )
        _membership_or_404(ws, user_id)
        members.member_remove(actor=request.user, workspace=ws, user_id=user_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


class MemberPasswordApi(APIView):
    @extend_schema(
        tags=["workspaces"],
        request=None,
        responses={200: PasswordOutputSerializer, **ERRORS},
    )
    def post(self, request, workspace_id: int, user_id: int):
        ws = selectors.workspace_get_for_owner(
            user=request.user, workspace_id=workspace_id
        )
        _membership_or_404(ws, user_id)
        member, password = members.member_password_reset(
            actor=request.user, workspace=ws, user_id=user_id
        )
        response = Response(
            PasswordOutputSerializer(
                {"username": member.username, "password": password}
            ).data
        )
        response["Cache-Control"] = "no-store"
        return response


class MemberBulkApi(APIView):
    parser_classes = [MultiPartParser]

    @extend_schema(
        tags=["workspaces"],
        request=BulkInputSerializer,
        responses={201: BulkLineOutputSerializer(many=True), **ERRORS},
    )
    def post(self, request, workspace_id: int):
        ws = selectors.workspace_get_for_owner(
            user=request.user, workspace_id=workspace_id
        )
        data = validated(BulkInputSerializer, request.data)
        # One byte more than allowed is enough for the service to refuse it.
        content = data["file"].read(bulk.MAX_BYTES + 1)
        lines = bulk.accounts_bulk_create(
            actor=request.user, workspace=ws, data=content
        )
        response = Response(
            BulkLineOutputSerializer(lines, many=True).data,
            status=status.HTTP_201_CREATED,
        )
        response["Cache-Control"] = "no-store"
        return response


class InviteListApi(APIView):
    pagination_class = Pagination

    @extend_schema(tags=["workspaces"], responses=InviteOutputSerializer(many=True))
    def get(self, request, workspace_id: int):
        ws = selectors.workspace_get_for_owner(
            user=request.user, workspace_id=workspace_id
        )
        rows = selectors.invite_list(workspace=ws, limit=1000)
        return _paginated(self, request, rows, InviteOutputSerializer)

    @extend_schema(
        tags=["workspaces"],
        request=InviteInputSerializer,
        responses={201: InviteCreatedOutputSerializer, **ERRORS},
    )
    def post(self, request, workspace_id: int):
        ws = selectors.workspace_get_for_owner(
            user=request.user, workspace_id=workspace_id
        )
        data = validated(InviteInputSerializer, request.data)
        made = invites.invite_create(actor=request.user, workspace=ws, **data)
        url = request.build_absolute_uri(reverse("people:invite", args=[made.token]))
        body = {"invite": made.invite, "state": invites.VALID, "url": url}
        response = Response(
            InviteCreatedOutputSerializer(body).data, status=status.HTTP_201_CREATED
        )
        response["Cache-Control"] = "no-store"
        return response


class InviteDetailApi(APIView):
    @extend_schema(tags=["workspaces"], responses={204: None, **ERRORS})
    def delete(self, request, workspace_id: int, invite_id: int):
        ws = selectors.workspace_get_for_owner(
            user=request.user, workspace_id=workspace_id
        )
        if not ws.invite_links.filter(pk=invite_id).exists():
            raise Http404("No such invite link.")
        invites.invite_revoke(actor=request.user, workspace=ws, invite_id=invite_id)
        return Response(status=status.HTTP_204_NO_CONTENT)
