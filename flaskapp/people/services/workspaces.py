"""Workspaces themselves: create, rename, delete (instance admins only).

A workspace is deleted only when empty: nothing but its members, invite links and
audit rows refers to it. The check reads every relation to `Workspace` that Django
knows of, so the models that gain a workspace later (datasets, runs, keys, ...) are
counted without this module naming them; their `PROTECT` foreign keys are the
database's own guard behind it. The default workspace (where the command line's
data goes) is never deleted.
"""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.db.models import ProtectedError
from django.utils.text import slugify

from flaskapp import roles
from flaskapp.errors import DomainError, Problem
from flaskapp.models import Membership, Workspace
from flaskapp.roles import User
from flaskapp.workspaces import DEFAULT_WORKSPACE_SLUG, OWNER, audit_record

NAME_MAX = Workspace._meta.get_field("name").max_length
SLUG_MAX = Workspace._meta.get_field("slug").max_length
DESCRIPTION_MAX = Workspace._meta.get_field("description").max_length
# Relations that belong to the workspace and go with it (CASCADE or SET_NULL).
_OWN_RELATIONS = {"memberships", "invite_links", "audit_events"}


def _snapshot(ws: Workspace) -> dict:
    return {"name": ws.name, "slug": ws.slug, "description": ws.description}


def _name_problems(name: str, *, exclude_id: int | None = None) -> list[Problem]:
    if not name:
        return [Problem("is empty", field="name")]
    if len(name) > NAME_MAX:
        return [Problem(f"is longer than {NAME_MAX} characters", field="name")]
    taken = Workspace.objects.filter(name__iexact=name).exclude(pk=exclude_id)
    if taken.exists():
        return [Problem(f"a workspace named {name!r} exists", field="name")]
    return []


def _slug_problems(slug: str, *, exclude_id: int | None = None) -> list[Problem]:
    if not slug:
        return [
            Problem("is empty: use letters, digits, - or _ (a-z, 0-9)", field="slug")
        ]
    if len(slug) > SLUG_MAX:
        return [Problem(f"is longer than {SLUG_MAX} characters", field="slug")]
    if slug != slugify(slug):
        return [
            Problem(
                "may contain only lower-case letters, digits, - and _", field="slug"
            )
        ]
    if Workspace.objects.filter(slug=slug).exclude(pk=exclude_id).exists():
        return [Problem(f"a workspace with slug {slug!r} exists", field="slug")]
    return []


def workspace_create(
    *,
    actor: User,
    name: str,
    slug: str = "",
    description: str = "",
    owner: User | None = None,
) -> Workspace:
    """Create a workspace (instance admins only: `PermissionDenied`). `slug` empty:
    made from the name. `owner` (optional) becomes its first owner. `DomainError`
    naming ``name``, ``slug`` or ``description`` for an empty, too long or taken
    value; nothing is written then. Audited as ``workspace.created``."""
    roles.require_admin(actor)
    name = (name or "").strip()
    slug = (slug or "").strip() or slugify(name)[:SLUG_MAX]
    description = (description or "").strip()
    problems = _name_problems(name) + _slug_problems(slug)
    if len(description) > DESCRIPTION_MAX:
        problems.append(
            Problem(f"is longer than {DESCRIPTION_MAX} characters", field="description")
        )
    if problems:
        raise DomainError("the workspace was not created", problems)
    try:
        with transaction.atomic():
            ws = Workspace.objects.create(
                name=name, slug=slug, description=description, created_by=actor
            )
            audit_record(
                action="workspace.created",
                actor=actor,
                workspace=ws,
                target=ws,
                after=_snapshot(ws),
            )
            if owner is not None:
                Membership.objects.create(workspace=ws, user=owner, role=OWNER)
                audit_record(
                    action="membership.added",
                    actor=actor,
                    workspace=ws,
                    target=owner,
                    target_label=owner.get_username(),
                    after={"user": owner.get_username(), "role": OWNER},
                )
    except IntegrityError:  # a concurrent create took the name or slug
        raise DomainError(
            "the workspace was not created",
            [Problem("is taken (another workspace was just created)", field="name")],
        ) from None
    return ws


def workspace_rename(
    *, actor: User, workspace: Workspace, name: str, description: str | None = None
) -> Workspace:
    """Rename `workspace` (and change its description when given). Admins only;
    `DomainError` naming ``name`` / ``description``. The slug stays: it names the
    workspace in URLs, exports and command lines. Audited as ``workspace.renamed``
    with the names before and after; a no-change call writes nothing."""
    roles.require_admin(actor)
    name = (name or "").strip()
    problems = _name_problems(name, exclude_id=workspace.pk)
    new_description = (
        workspace.description if description is None else description.strip()
    )
    if len(new_description) > DESCRIPTION_MAX:
        problems.append(
            Problem(f"is longer than {DESCRIPTION_MAX} characters", field="description")
        )
    if problems:
        raise DomainError("the workspace was not renamed", problems)
    before = _snapshot(workspace)
    if (name, new_description) == (workspace.name, workspace.description):
        return workspace
    with transaction.atomic():
        workspace.name = name
        workspace.description = new_description
        workspace.save(update_fields=["name", "description"])
        audit_record(
            action="workspace.renamed",
            actor=actor,
            workspace=workspace,
            target=workspace,
            before=before,
            after=_snapshot(workspace),
        )
    return workspace


def workspace_contents(workspace: Workspace) -> dict[str, int]:
    """What `workspace` still holds, by kind (``{"datasets": 3}``), leaving out its
    members, invite links and audit rows. One count query per relation."""
    held = {}
    for relation in Workspace._meta.related_objects:
        accessor = relation.get_accessor_name()
        if accessor in _OWN_RELATIONS or relation.many_to_many:
            continue
        model = relation.related_model
        count = model._default_manager.filter(
            **{relation.field.name: workspace}
        ).count()
        if count:
            held[str(model._meta.verbose_name_plural)] = count
    return held


def workspace_delete(*, actor: User, workspace: Workspace) -> None:
    """Delete an empty workspace with its memberships and invite links (admins
    only). `DomainError` naming ``workspace`` for the default workspace or one that
    still holds anything (`workspace_contents`). Audited as ``workspace.deleted``
    (the row keeps the name; its workspace becomes empty)."""
    roles.require_admin(actor)
    if workspace.slug == DEFAULT_WORKSPACE_SLUG:
        raise DomainError(
            "the workspace was not deleted",
            [
                Problem(
                    "the default workspace holds what the command line imports; "
                    "it is never deleted",
                    field="workspace",
                )
            ],
        )
    with transaction.atomic():
        locked = Workspace.objects.select_for_update().get(pk=workspace.pk)
        if held := workspace_contents(locked):
            what = ", ".join(f"{n} {kind}" for kind, n in sorted(held.items()))
            raise DomainError(
                "the workspace was not deleted",
                [Problem(f"it still holds {what}", field="workspace")],
            )
        before = {**_snapshot(locked), "members": locked.memberships.count()}
        audit_record(
            action="workspace.deleted",
            actor=actor,
            target=locked,
            before=before,
        )
        try:
            locked.delete()
        except ProtectedError as exc:
            raise DomainError(
                "the workspace was not deleted",
                [Problem(f"it still holds data ({exc})", field="workspace")],
            ) from None
