"""The audit log's page and API (issue 35): a workspace's owners (and instance admins)
read its `AuditEvent` rows, who, when, what, on which object, before and after,
newest first, filtered by action and paginated. Others: 404 for a non-member, 403
naming the role for a member below owner (`flaskapp.workspaces`). Rows hold no secret
(`audit_record`'s callers pass only what may be shown), so they are shown as stored.
"""

from __future__ import annotations

import json

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Q, QuerySet
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.permissions import IsAuthenticated
from rest_framework.views import APIView

from flaskapp import bounds, workspaces
from flaskapp.api import Pagination, validated
from flaskapp.htmx import render_page_or_fragment
from flaskapp.models import AuditEvent
from flaskapp.workspaces import OWNER

EVENTS_PER_PAGE = 50
ACTION_MAX = 60


def audit_event_list_for_user(
    *, user, workspace_id: int, action: str = ""
) -> QuerySet[AuditEvent]:
    """The workspace's audit events, newest first; `action` keeps one action
    (``key.created``) or a family (``key``: every ``key.*``). Owners only (404 for a
    non-member, 403 naming the role for a lower one); instance admins count as
    owners."""
    workspaces.require_workspace_role(user, workspace_id, OWNER)
    qs = AuditEvent.objects.filter(workspace_id=workspace_id)
    action = action.strip()
    if action:
        qs = qs.filter(Q(action=action) | Q(action__startswith=f"{action}."))
    return qs.order_by("-created_at", "-id")


def audit_actions(*, workspace_id: int) -> list[str]:
    """The actions recorded in the workspace (the page's filter choices)."""
    return list(
        AuditEvent.objects.filter(workspace_id=workspace_id)
        .order_by("action")
        .values_list("action", flat=True)
        .distinct()
    )


# --- the page -----------------------------------------------------------------------------


@login_required
@require_GET
def workspace_audit(request: HttpRequest, workspace_id: int) -> HttpResponse:
    """The audit log of a workspace, 50 events a page, `?action=` filtering; with
    htmx the `#audit-table` fragment."""
    workspace = workspaces.workspace_get_for_user(request.user, workspace_id, OWNER)
    action = request.GET.get("action", "")[:ACTION_MAX]
    events = audit_event_list_for_user(
        user=request.user, workspace_id=workspace.pk, action=action
    )
    page = Paginator(events, EVENTS_PER_PAGE).get_page(request.GET.get("page"))
    for event in page:
        event.before_text = _shown(event.before)
        event.after_text = _shown(event.after)
    context = {
        "workspace": workspace,
        "page": page,
        "action": action,
        "actions": audit_actions(workspace_id=workspace.pk),
    }
    return render_page_or_fragment(
        request, "flaskapp/audit_list.html", "audit-table", context
    )


def _shown(value) -> str:
    if value is None:
        return ""
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


# --- the API ------------------------------------------------------------------------------


class AuditFilterInputSerializer(serializers.Serializer):
    workspace = serializers.IntegerField(
        help_text="The workspace whose audit log to read.", **bounds.ID.field_kwargs()
    )
    action = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=ACTION_MAX,
        help_text="One action (key.created) or a family (key: every key.*).",
    )


class AuditEventOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    workspace = serializers.IntegerField(source="workspace_id", allow_null=True)
    actor = serializers.CharField(source="actor_name")
    action = serializers.CharField()
    target_type = serializers.CharField()
    target_id = serializers.CharField()
    target_label = serializers.CharField()
    before = serializers.JSONField(allow_null=True)
    after = serializers.JSONField(allow_null=True)


class AuditEventListApi(APIView):
    """GET: a workspace's audit events, newest first (owners and instance admins)."""

    permission_classes = [IsAuthenticated]
    pagination_class = Pagination

    @extend_schema(
        tags=["audit"],
        parameters=[AuditFilterInputSerializer],
        responses=AuditEventOutputSerializer(many=True),
    )
    def get(self, request):
        query = validated(AuditFilterInputSerializer, request.query_params)
        events = audit_event_list_for_user(
            user=request.user,
            workspace_id=query["workspace"],
            action=query.get("action", ""),
        )
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(events, request, view=self)
        data = AuditEventOutputSerializer(page, many=True).data
        return paginator.get_paginated_response(data)
