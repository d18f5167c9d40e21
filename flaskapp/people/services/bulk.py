"""Accounts in bulk from a CSV: one line per person, ``username,email,role``.

All or nothing: every line is checked before anything is written, and a file with
any problem changes nothing and names each problem's line and field. A line's
username that already names an account adds that account as a member (its e-mail,
when given, must be the account's); a new username makes a new account with a
generated temporary password, returned once to be shown once (only its hash is
stored; at their first login the person chooses their own). Problems: a missing
header, an empty or malformed username, a duplicate username or e-mail in the file,
a bad e-mail, an unknown role, an e-mail that belongs to another account.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import IntegrityError, transaction
from django.db.models.functions import Lower

from flaskapp.credentials import (
    password_generate,
    password_mark_temporary,
    username_problems,
)
from flaskapp.errors import DomainError, Problem
from flaskapp.models import Membership, Workspace
from flaskapp.people.services.members import member_enrol, role_problems
from flaskapp.workspaces import OWNER, RATER, audit_record, require_workspace_role

MAX_LINES = 500
MAX_BYTES = 256 * 1024
COLUMNS = ("username", "email", "role")
# Header spellings accepted for each column.
ALIASES = {"e-mail": "email", "mail": "email", "user": "username"}

CREATED = "created"
ADDED = "added"
ALREADY = "already a member"


@dataclass
class BulkLine:
    line: int
    username: str
    email: str
    role: str
    outcome: str = ""
    password: str = ""  # a new account's generated password, shown once
    user: User | None = None


def _decode(data: bytes | str) -> str:
    if isinstance(data, str):
        return data
    if len(data) > MAX_BYTES:
        raise DomainError(
            "nothing was changed",
            [Problem(f"is larger than {MAX_BYTES // 1024} KB", field="file")],
        )
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise DomainError(
            "nothing was changed",
            [Problem("is not UTF-8 text (save the CSV as UTF-8)", field="file")],
        ) from None


def bulk_parse(data: bytes | str) -> list[BulkLine]:
    """The lines of a bulk CSV, not yet checked against the database. The header
    names the columns (``username``, ``email``, ``role``; any order; ``role`` may be
    left out, meaning rater). `DomainError` for a file that is not a CSV of those
    columns (naming ``file`` and line 1), or longer than `MAX_LINES`."""
    text = _decode(data)
    if "\x00" in text:
        raise DomainError(
            "nothing was changed", [Problem("holds a NUL character", field="file")]
        )
    rows = list(csv.reader(io.StringIO(text)))
    header = (
        [ALIASES.get(c.strip().lower(), c.strip().lower()) for c in rows[0]]
        if rows
        else []
    )
    if "username" not in header:
        raise DomainError(
            "nothing was changed",
            [Problem("the first line must name the columns: username,email,role",
                     line=1, field="file")],
        )  # fmt: skip
    unknown = [c for c in header if c not in COLUMNS and c]
    if unknown:
        raise DomainError(
            "nothing was changed",
            [Problem(f"unknown column {unknown[0]!r}: use username, email, role",
                     line=1, field="file")],
        )  # fmt: skip
    body = [
        (n, r) for n, r in enumerate(rows[1:], start=2) if any(c.strip() for c in r)
    ]
    if not body:
        raise DomainError(
            "nothing was changed",
            [Problem("has no line after the header", field="file")],
        )
    if len(body) > MAX_LINES:
        raise DomainError(
            "nothing was changed",
            [Problem(f"has {len(body)} lines; at most {MAX_LINES} at a time",
                     field="file")],
        )  # fmt: skip
    lines = []
    for number, row in body:
        cells = dict(zip(header, (c.strip() for c in row), strict=False))
        lines.append(
            BulkLine(
                line=number,
                username=cells.get("username", ""),
                email=cells.get("email", ""),
                role=cells.get("role", "").lower() or RATER,
            )
        )
    return lines


def _check(lines: list[BulkLine], workspace: Workspace) -> list[Problem]:
    """Every line's problems, with `outcome` and `user` filled for the good lines."""
    problems: list[Problem] = []
    names = {ln.username.lower() for ln in lines if ln.username}
    mails = {ln.email.lower() for ln in lines if ln.email}
    # Case-insensitive lookups, one query each whatever the number of lines.
    by_name = {
        u.username.lower(): u
        for u in User.objects.annotate(key=Lower("username")).filter(key__in=names)
    }
    mail_owner: dict[str, list[User]] = {}
    for u in User.objects.annotate(key=Lower("email")).filter(key__in=mails):
        mail_owner.setdefault(u.email.lower(), []).append(u)
    members = dict(
        Membership.objects.filter(workspace=workspace).values_list("user_id", "role")
    )
    seen_names: dict[str, int] = {}
    seen_mails: dict[str, int] = {}
    for ln in lines:
        here = []
        key = ln.username.lower()
        if key and key in seen_names:
            here.append(Problem(f"{ln.username!r} is already on line "
                                f"{seen_names[key]}", line=ln.line, field="username"))  # fmt: skip
        elif key:
            seen_names[key] = ln.line
        if ln.email:
            try:
                validate_email(ln.email)
            except ValidationError:
                here.append(Problem(f"{ln.email!r} is not an e-mail address",
                                    line=ln.line, field="email"))  # fmt: skip
            else:
                mkey = ln.email.lower()
                if mkey in seen_mails:
                    here.append(Problem(f"{ln.email!r} is already on line "
                                        f"{seen_mails[mkey]}", line=ln.line,
                                        field="email"))  # fmt: skip
                else:
                    seen_mails[mkey] = ln.line
        here += [Problem(p.message, line=ln.line, field="role")
                 for p in role_problems(ln.role)]  # fmt: skip
        existing = by_name.get(key)
        if existing is not None:
            if (
                ln.email
                and existing.email
                and existing.email.lower() != ln.email.lower()
            ):
                here.append(Problem(f"the account {existing.username} has another "
                                    "e-mail; leave the e-mail empty to add it",
                                    line=ln.line, field="email"))  # fmt: skip
            elif not existing.is_active:
                here.append(Problem(f"{existing.username} is deactivated",
                                    line=ln.line, field="username"))  # fmt: skip
            ln.user = existing
            ln.outcome = ALREADY if existing.pk in members else ADDED
        else:
            here += [Problem(p.message, line=ln.line, field="username")
                     for p in username_problems(ln.username)]  # fmt: skip
            owners = mail_owner.get(ln.email.lower(), []) if ln.email else []
            if owners:
                here.append(Problem(f"{ln.email!r} is the e-mail of the account "
                                    f"{owners[0].username}: write that username to "
                                    "add it", line=ln.line, field="email"))  # fmt: skip
            ln.outcome = CREATED
        problems += here
    return problems


def accounts_bulk_create(
    *, actor: User, workspace: Workspace, data: bytes | str
) -> list[BulkLine]:
    """Create the accounts and memberships a bulk CSV lists (module docstring). Needs
    the owner role in `workspace`. Returns every line with its outcome (``created``,
    ``added``, ``already a member``: left as it is) and, for a new account, the
    password to show once. `DomainError` with every problem by line and field;
    nothing is written then. Audited: ``account.created`` and ``membership.added``
    (via ``bulk``) per line."""
    require_workspace_role(actor, workspace.pk, OWNER)
    lines = bulk_parse(data)
    if problems := _check(lines, workspace):
        raise DomainError("nothing was changed", problems)
    try:
        with transaction.atomic():
            for ln in lines:
                if ln.outcome == CREATED:
                    ln.password = password_generate()
                    ln.user = User(username=ln.username, email=ln.email, is_active=True)
                    ln.user.set_password(ln.password)
                    ln.user.save()
                    password_mark_temporary(user=ln.user, by=actor)
                    audit_record(
                        action="account.created",
                        actor=actor,
                        workspace=workspace,
                        target=ln.user,
                        target_label=ln.username,
                        after={"user": ln.username, "email": ln.email, "via": "bulk"},
                    )
                if ln.outcome != ALREADY:
                    member_enrol(actor=actor, workspace=workspace, user=ln.user,
                                 role=ln.role, via="bulk")  # fmt: skip
    except IntegrityError:  # an account was made meanwhile under one of the names
        raise DomainError(
            "nothing was changed",
            [Problem("an account with one of these usernames was just created; "
                     "send the file again", field="file")],
        ) from None  # fmt: skip
    return lines
