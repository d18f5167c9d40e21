"""Pages of workspaces and people (``people:*``), mounted at the root (flaskapp.urls)."""

from django.urls import path

from flaskapp.people.views import invites, members, notifications, workspaces

app_name = "people"

W = "workspaces/<int:workspace_id>/"
M = W + "members/<int:user_id>/"

urlpatterns = [
    path("workspaces/", workspaces.workspace_list, name="workspace-list"),
    path("workspaces/new/", workspaces.workspace_new, name="workspace-new"),
    path(W + "settings/", workspaces.workspace_settings, name="workspace-settings"),
    path(
        W + "notifications/",
        notifications.workspace_notifications,
        name="workspace-notifications",
    ),
    path(W + "rename/", workspaces.workspace_rename, name="workspace-rename"),
    path(W + "delete/", workspaces.workspace_delete, name="workspace-delete"),
    path(W + "members/add/", members.member_add, name="member-add"),
    path(W + "members/bulk/", members.member_bulk, name="member-bulk"),
    path(
        W + "members/bulk/create/",
        members.member_bulk_create,
        name="member-bulk-create",
    ),
    path(M + "role/", members.member_role, name="member-role"),
    path(M + "remove/", members.member_remove, name="member-remove"),
    path(M + "password/", members.member_password, name="member-password"),
    path(W + "invites/new/", invites.invite_new, name="invite-new"),
    path(
        W + "invites/<int:invite_id>/revoke/",
        invites.invite_revoke,
        name="invite-revoke",
    ),
    path("invite/<str:token>/", invites.invite, name="invite"),
    path("invite/<str:token>/accept/", invites.invite_accept, name="invite-accept"),
    path("users/", workspaces.user_list, name="user-list"),
]
