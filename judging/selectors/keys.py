"""Reads of the judge API keys stored for a workspace: what may be shown of them (name,
hosts, who and when), never the value or the ciphertext (`.defer`: not even read)."""

from __future__ import annotations

from django.db.models import Q, QuerySet
from django.http import Http404

from flaskapp import workspaces
from flaskapp.models import Workspace
from flaskapp.workspaces import RESEARCHER
from judging.models import StoredKey

# Every column a page or an API answer may use: the ciphertext is not one of them.
SHOWN_FIELDS = (
    "id",
    "workspace_id",
    "name",
    "allowed_hosts",
    "created_by_id",
    "created_at",
    "rotated_at",
    "last_used_at",
)


def stored_key_list_for_user(*, user, workspace_id: int) -> QuerySet[StoredKey]:
    """The keys of workspace `workspace_id`, by name, with who created each. Needs the
    researcher role there (404 for a non-member, 403 naming the role when lower)."""
    workspaces.require_workspace_role(user, workspace_id, RESEARCHER)
    return (
        StoredKey.objects.filter(workspace_id=workspace_id)
        .select_related("created_by")
        .only(*SHOWN_FIELDS, "created_by__username")
        .order_by("name", "pk")
    )


def stored_key_get_for_user(*, user, key_id: int) -> StoredKey:
    """One key (its shown fields; the ciphertext is loaded only if a service asks).
    404 when there is none or `user` is not a member of its workspace; 403 naming the
    role for a member below researcher."""
    key = (
        StoredKey.objects.select_related("created_by", "workspace")
        .defer("ciphertext")
        .filter(pk=key_id)
        .first()
    )
    if key is None:
        raise Http404("No such key.")
    workspaces.require_workspace_role(user, key.workspace_id, RESEARCHER)
    return key


def stored_key_workspaces_for_user(*, user) -> list[Workspace]:
    """The workspaces whose keys `user` may manage (researcher or owner there)."""
    ids = workspaces.workspace_ids_for_user(user)
    qs = (
        Workspace.objects.all() if ids is None else Workspace.objects.filter(pk__in=ids)
    )
    return [
        ws
        for ws in qs.order_by("name")
        if workspaces.role_at_least(workspaces.workspace_role(user, ws.pk), RESEARCHER)
    ]


def stored_key_choices_for_user(
    *, user, include_id: int | None = None, workspace_id: int | None = None
) -> QuerySet[StoredKey]:
    """The keys a judge config saved by `user` may name: those of the workspaces
    where `user` is a researcher or owner, only the config's workspace's when
    `workspace_id` is given (a config uses its own workspace's keys), and
    `include_id` (the config's own key, kept as a choice)."""
    ids = [ws.pk for ws in stored_key_workspaces_for_user(user=user)]
    if workspace_id is not None:
        ids = [pk for pk in ids if pk == workspace_id]
    return (
        StoredKey.objects.filter(Q(workspace_id__in=ids) | Q(pk=include_id))
        .select_related("workspace")
        .only(*SHOWN_FIELDS, "workspace__name")
        .order_by("workspace__name", "name")
    )


def stored_key_name(key_id: int | None) -> str:
    """The name of stored key `key_id` for a run's page ("" for none; "(deleted)" for
    a key deleted since the run froze it)."""
    if not key_id:
        return ""
    name = StoredKey.objects.filter(pk=key_id).values_list("name", flat=True).first()
    return name if name is not None else "(deleted)"
