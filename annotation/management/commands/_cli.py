"""Shared by the commands of every app: the user a command acts as (Django skips
command modules starting with `_`)."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import CommandError

from flaskapp import roles

# The operator's stand-in when no admin account exists yet (a fresh database): an admin
# that cannot log in (no usable password), the owner of what commands create then.
SYSTEM_USERNAME = "flaskeval-cli"


def command_user(username: str | None):
    """The user a command acts as: `--user` (a researcher or admin), else the first
    active superuser or admin, else the system user `SYSTEM_USERNAME` (created on
    first use: the operator runs management commands, so none is refused for want of
    an account). The services check the role again."""
    User = get_user_model()
    if username:
        user = User.objects.filter(username=username, is_active=True).first()
        if user is None:
            raise CommandError(f"no active user named {username!r}")
        if not roles.is_researcher(user):
            raise CommandError(f"{username} is neither a researcher nor an admin")
        return user
    user = (
        User.objects.filter(is_active=True, is_superuser=True).order_by("pk").first()
        or User.objects.filter(is_active=True, groups__name=roles.ADMIN)
        .order_by("pk")
        .first()
    )
    if user is not None:
        return user
    user, created = User.objects.get_or_create(username=SYSTEM_USERNAME)
    if created:
        user.set_unusable_password()
        user.save(update_fields=["password"])
    user.groups.add(Group.objects.get(name=roles.ADMIN))
    return user


def add_workspace_option(parser, *, creates: bool = False) -> None:
    """--workspace SLUG: the workspace a command works in (issue 35): where it
    creates what it makes, and where it finds the dataset it names (dataset names are
    unique per workspace). Default: the default workspace."""
    what = (
        "The workspace the data goes into"
        if creates
        else "The workspace whose dataset --dataset names"
    )
    parser.add_argument(
        "--workspace",
        metavar="SLUG",
        default="",
        help=f"{what} (its slug; default: the default workspace).",
    )


def command_workspace(options: dict):
    """The workspace `--workspace` names (the default workspace when absent);
    `CommandError` naming the known slugs when there is none."""
    from flaskapp.models import Workspace
    from flaskapp.workspaces import workspace_by_slug

    slug = (options.get("workspace") or "").strip()
    try:
        return workspace_by_slug(slug)
    except Workspace.DoesNotExist:
        known = ", ".join(
            Workspace.objects.order_by("slug").values_list("slug", flat=True)
        )
        raise CommandError(
            f"no workspace {slug!r}; the workspaces are: {known}"
        ) from None


def not_in_workspace(option: str, what: str, name: str, workspace) -> CommandError:
    """The error of a command whose `option` (e.g. "--dataset") names an object
    (`what`: "dataset", "judge config", ...) that `workspace` does not hold: names
    are unique per workspace, and another workspace's object of that name is not
    found here (nor said to exist). The message starts with the option."""
    return CommandError(
        f"{option}: no {what} named {name!r} in workspace {workspace.slug!r} "
        "(--workspace SLUG names another)"
    )


def command_dataset(options: dict):
    """The dataset `--dataset NAME` names in the `--workspace` of `options`;
    `CommandError` naming the workspace when it holds none of that name."""
    from annotation.models import Dataset

    workspace = command_workspace(options)
    dataset = Dataset.objects.filter(
        name=options["dataset"], workspace=workspace
    ).first()
    if dataset is None:
        raise not_in_workspace("--dataset", "dataset", options["dataset"], workspace)
    return dataset
