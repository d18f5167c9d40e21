"""The workspaces and people API, mounted at /api/ (flaskapp.urls): ``people_api:*``."""

from django.urls import path

from flaskapp.people.api import workspaces as api

app_name = "people_api"

urlpatterns = [
    path("workspaces/", api.WorkspaceListApi.as_view(), name="workspace-list"),
    path(
        "workspaces/<int:workspace_id>/",
        api.WorkspaceDetailApi.as_view(),
        name="workspace-detail",
    ),
    path(
        "workspaces/<int:workspace_id>/members/",
        api.MemberListApi.as_view(),
        name="member-list",
    ),
    path(
        "workspaces/<int:workspace_id>/members/bulk/",
        api.MemberBulkApi.as_view(),
        name="member-bulk",
    ),
    path(
        "workspaces/<int:workspace_id>/members/<int:user_id>/",
        api.MemberDetailApi.as_view(),
        name="member-detail",
    ),
    path(
        "workspaces/<int:workspace_id>/members/<int:user_id>/password/",
        api.MemberPasswordApi.as_view(),
        name="member-password",
    ),
    path(
        "workspaces/<int:workspace_id>/invites/",
        api.InviteListApi.as_view(),
        name="invite-list",
    ),
    path(
        "workspaces/<int:workspace_id>/invites/<int:invite_id>/",
        api.InviteDetailApi.as_view(),
        name="invite-detail",
    ),
]
