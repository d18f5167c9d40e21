"""Judge API keys stored per workspace: create, replace, delete, re-encrypt, and the
grant a worker gets to send one (issue 35).

Write-only: a key's value is taken once (page or API), encrypted (`flaskapp.vault`)
and never returned by any function here except `_reveal`, which only
`judging.llm.JudgeClient` calls, at call time, after checking that the endpoint's host
is one the key's owner allowed (`llm.KeyGrant`). Owners and researchers of the
workspace manage its keys; every create, replace, delete and use is in the audit log
(`flaskapp.workspaces.audit_record`) with the key's name and hosts, never its value.

Which workspace a judge config belongs to is core's `JudgeConfig.workspace` (issue
35); until it exists, a config may name any key its editor may use, and
`config_key_workspace_problem` is the one place that compares the two.
"""

from __future__ import annotations

import re

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from flaskapp import vault, workspaces
from flaskapp.errors import DomainError, Problem
from flaskapp.models import AuditEvent, Workspace
from flaskapp.workspaces import RESEARCHER
from judging import endpoints, llm
from judging.models import JudgeConfig, StoredKey

NAME_MAX = 100
VALUE_MAX = 4096
HOSTS_MAX = 20
# A host name (RFC 1123 labels), optionally "*." in front for any subdomain.
HOST_RE = re.compile(
    r"^(\*\.)?(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)"
    r"(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$"
)
# IPv4 literals are host names too, as far as where a key may go is concerned.
IPV4_RE = re.compile(r"^\d{1,3}(\.\d{1,3}){3}$")

ACTION_CREATED = "key.created"
ACTION_REPLACED = "key.replaced"
ACTION_DELETED = "key.deleted"
ACTION_USED = "key.used"


# --- validation ---------------------------------------------------------------------------


def allowed_hosts_parse(raw) -> tuple[list[str], list[Problem]]:
    """The host list of `raw` (a list, or text separated by commas, spaces or lines),
    lower-cased, de-duplicated, in order; with a problem naming ``allowed_hosts`` for
    an empty list, too many hosts, or an entry that is not a host name (a URL, a
    port, a path): a key goes to hosts, whatever the port or path."""
    if isinstance(raw, str):
        items = re.split(r"[\s,]+", raw)
    elif isinstance(raw, list | tuple):
        items = [item if isinstance(item, str) else "" for item in raw]
        if any(not isinstance(item, str) for item in raw):
            return [], [Problem("must be a list of host names", field="allowed_hosts")]
    else:
        return [], [Problem("must be a list of host names", field="allowed_hosts")]
    hosts: list[str] = []
    for item in items:
        host = item.strip().lower().rstrip(".")
        if host and host not in hosts:
            hosts.append(host)
    if not hosts:
        return [], [
            Problem(
                "is empty: name at least one host the key may be sent to "
                "(e.g. api.openai.com)",
                field="allowed_hosts",
            )
        ]
    if len(hosts) > HOSTS_MAX:
        return [], [Problem(f"has more than {HOSTS_MAX} hosts", field="allowed_hosts")]
    bad = [h for h in hosts if not (HOST_RE.match(h) or IPV4_RE.match(h))]
    if bad:
        shown = ", ".join(repr(h[:60]) for h in bad[:3])
        return [], [
            Problem(
                f"{shown} is not a host name: give names like api.openai.com or "
                "*.example.com, without scheme, port or path",
                field="allowed_hosts",
            )
        ]
    return hosts, []


def _value_problems(value) -> list[Problem]:
    # Never echo the value: it is the secret.
    if not isinstance(value, str) or not value.strip():
        return [Problem("is empty", field="value")]
    value = value.strip()
    if len(value) > VALUE_MAX:
        return [Problem(f"is longer than {VALUE_MAX} characters", field="value")]
    if any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127 for ch in value):
        return [
            Problem(
                "holds spaces or control characters: an API key is one word",
                field="value",
            )
        ]
    return []


def _name_problems(workspace_id: int, name, *, exclude_pk=None) -> list[Problem]:
    if not isinstance(name, str) or not name.strip():
        return [Problem("is empty", field="name")]
    name = name.strip()
    if len(name) > NAME_MAX:
        return [Problem(f"is longer than {NAME_MAX} characters", field="name")]
    taken = StoredKey.objects.filter(workspace_id=workspace_id, name=name).exclude(
        pk=exclude_pk
    )
    if taken.exists():
        return [Problem(f"a key named {name!r} exists in this workspace", field="name")]
    return []


def _vault_problems() -> list[Problem]:
    problem = vault.vault_problem()
    return [Problem(problem, field="value")] if problem else []


def _shown(key: StoredKey) -> dict:
    """What the audit log may hold of a key: its name and hosts, never its value."""
    return {"name": key.name, "allowed_hosts": list(key.allowed_hosts)}


# --- writes -------------------------------------------------------------------------------


def stored_key_create(
    *,
    user: User,
    workspace: Workspace | int,
    name: str,
    value: str,
    allowed_hosts,
) -> StoredKey:
    """Store the API key `value` for `workspace` under `name`, to be sent only to
    `allowed_hosts`. Needs the researcher role there (404 for a non-member, 403 for a
    lower role: `workspaces.require_workspace_role`).

    Every problem names its field (`DomainError`) and nothing is written; the
    message never holds the value. Refused when the server has no encryption key
    (`flaskapp.vault`). Writes the key (encrypted) and a ``key.created`` audit row in
    one transaction. Not idempotent: a second call with the same name is refused."""
    workspace_id = workspace.pk if isinstance(workspace, Workspace) else workspace
    # 404 for a workspace that does not exist, also for an instance admin.
    workspaces.workspace_get_for_user(user, workspace_id, RESEARCHER)
    hosts, problems = allowed_hosts_parse(allowed_hosts)
    problems = _name_problems(workspace_id, name) + _value_problems(value) + problems
    problems += _vault_problems()
    if problems:
        raise DomainError("the key was not stored", problems)
    with transaction.atomic():
        key = StoredKey.objects.create(
            workspace_id=workspace_id,
            name=name.strip(),
            allowed_hosts=hosts,
            ciphertext=vault.encrypt(value.strip()),
            created_by=user,
        )
        workspaces.audit_record(
            action=ACTION_CREATED,
            actor=user,
            workspace=workspace_id,
            target=key,
            after=_shown(key),
        )
    return key


def stored_key_replace(
    *, user: User, key: StoredKey, value: str, allowed_hosts=None
) -> StoredKey:
    """Replace the value of `key` (and its hosts, when `allowed_hosts` is given).
    Needs the researcher role in the key's workspace. Locks the key row; writes the
    new ciphertext, `rotated_at` and a ``key.replaced`` audit row (name and hosts
    before and after), or nothing (`DomainError` naming the field). Runs already
    under way send the new value from their next driver on."""
    workspaces.require_workspace_role(user, key.workspace_id, RESEARCHER)
    problems = _value_problems(value)
    hosts = None
    if allowed_hosts is not None:
        hosts, host_problems = allowed_hosts_parse(allowed_hosts)
        problems += host_problems
    problems += _vault_problems()
    if problems:
        raise DomainError("the key was not replaced", problems)
    with transaction.atomic():
        key = StoredKey.objects.select_for_update().get(pk=key.pk)
        before = _shown(key)
        key.ciphertext = vault.encrypt(value.strip())
        if hosts is not None:
            key.allowed_hosts = hosts
        key.rotated_at = timezone.now()
        key.save(update_fields=["ciphertext", "allowed_hosts", "rotated_at"])
        workspaces.audit_record(
            action=ACTION_REPLACED,
            actor=user,
            workspace=key.workspace_id,
            target=key,
            before=before,
            after=_shown(key),
        )
    return key


def stored_key_delete(*, user: User, key: StoredKey) -> None:
    """Delete `key`. Needs the researcher role in its workspace. Refused (naming the
    judge configs) while a config names it: change those configs first. Writes a
    ``key.deleted`` audit row with the key's name and hosts. Idempotent for a key
    already gone (nothing happens)."""
    workspaces.require_workspace_role(user, key.workspace_id, RESEARCHER)
    with transaction.atomic():
        locked = StoredKey.objects.select_for_update().filter(pk=key.pk).first()
        if locked is None:
            return
        users = list(
            JudgeConfig.objects.filter(stored_key=locked).values_list("name", flat=True)
        )
        if users:
            shown = ", ".join(repr(n) for n in users[:5])
            raise DomainError(
                "the key was not deleted",
                [
                    Problem(
                        f"is used by the judge config(s) {shown}: choose another key "
                        "for them first",
                        field="key",
                    )
                ],
            )
        workspaces.audit_record(
            action=ACTION_DELETED,
            actor=user,
            workspace=locked.workspace_id,
            target=locked,
            before=_shown(locked),
        )
        locked.delete()


def stored_keys_rotate() -> tuple[int, int]:
    """Re-encrypt every stored key under the newest server key (the command
    ``rotate_stored_keys``). Each key is locked and rewritten in its own
    transaction. Returns (re-encrypted, already current). Idempotent; raises
    `vault.VaultUnavailable` (naming no key) when a key cannot be read, after
    rewriting the ones before it."""
    rotated = current = 0
    for pk in StoredKey.objects.order_by("pk").values_list("pk", flat=True):
        with transaction.atomic():
            key = StoredKey.objects.select_for_update().filter(pk=pk).first()
            if key is None:
                continue
            if vault.newest_key_reads(key.ciphertext):
                current += 1
                continue
            key.ciphertext = vault.rotate(key.ciphertext)
            key.save(update_fields=["ciphertext"])
            rotated += 1
    return rotated, current


# --- judge configs and calls --------------------------------------------------------------


def stored_key_host_refusal(key: StoredKey, base_url: str) -> str:
    """Why `key` may not be sent to `base_url` ("" when it may): the URL's host must
    match one of the key's allowed hosts. The one rule, applied when a config is
    saved and again by `judging.llm` before any call."""
    return llm.host_refusal_for_key(
        base_url=base_url, key_name=key.name, hosts=list(key.allowed_hosts)
    )


def config_key_workspace_problem(
    *, config_workspace_id: int | None, key: StoredKey
) -> str:
    """Why a judge config of workspace `config_workspace_id` may not name `key` (""
    when it may): a config uses only its own workspace's keys. The editor's own
    role in the key's workspace is checked by `stored_key_for_config`."""
    if config_workspace_id is not None and config_workspace_id != key.workspace_id:
        return "is a key of another workspace: a judge uses its own workspace's keys"
    return ""


def stored_key_for_config(
    *, user: User, key_id: int | None, config_workspace_id: int | None = None
) -> tuple[StoredKey | None, list[Problem]]:
    """The key a judge config being saved by `user` names (`key_id`; None: none),
    with the problems naming ``stored_key``: no such key, or one `user` may not use
    (not researcher in its workspace; said as "no such key" to a non-member), or a key
    of another workspace than the config's (`config_key_workspace_problem`)."""
    if key_id is None:
        return None, []
    key = StoredKey.objects.filter(pk=key_id).first()
    role = workspaces.workspace_role(user, key.workspace_id) if key else None
    if key is None or role is None:
        return None, [Problem(f"no stored key with id {key_id}", field="stored_key")]
    if not workspaces.role_at_least(role, RESEARCHER):
        return None, [
            Problem(
                "needs the researcher role in the key's workspace", field="stored_key"
            )
        ]
    problem = config_key_workspace_problem(
        config_workspace_id=config_workspace_id, key=key
    )
    if problem:
        return None, [Problem(problem, field="stored_key")]
    return key, []


def stored_key_grant(
    *,
    key_id: int,
    base_url: str,
    run_id: int | None = None,
    actor: User | None = None,
) -> llm.KeyGrant:
    """What a worker (or a connection test) hands `judging.llm` to send stored key
    `key_id` to `base_url`: the key's name and hosts and a way to decrypt it, which
    the client calls only after its own host check. Nothing is decrypted here.

    When the host is allowed, records the use: `last_used_at`, and a ``key.used``
    audit row, at most one per run (`run_id`; the key row is locked while looking,
    so two drivers of one run write one row), one per connection test (no run).
    A key that no longer exists gives a grant that refuses every call."""
    with transaction.atomic():
        key = StoredKey.objects.select_for_update().filter(pk=key_id).first()
        if key is None:
            return llm.KeyGrant(
                name=f"#{key_id}",
                hosts=(),
                reveal=_gone,
                refusal="the run's stored key was deleted; nothing was sent",
            )
        grant = llm.KeyGrant(
            name=key.name,
            hosts=tuple(key.allowed_hosts),
            reveal=_reveal(key.ciphertext),
        )
        if stored_key_host_refusal(key, base_url):
            return grant  # the client refuses, naming the host, on every call
        key.last_used_at = timezone.now()
        key.save(update_fields=["last_used_at"])
        seen = run_id is not None and (
            AuditEvent.objects.filter(
                action=ACTION_USED,
                target_type=key._meta.label_lower,
                target_id=str(key.pk),
                after__run=run_id,
            ).exists()
        )
        if not seen:
            workspaces.audit_record(
                action=ACTION_USED,
                actor=actor,
                workspace=key.workspace_id,
                target=key,
                after={
                    "name": key.name,
                    "host": endpoints.url_host(base_url),
                    "run": run_id,
                },
            )
    return grant


def _reveal(ciphertext: str):
    def reveal() -> str:
        try:
            return vault.decrypt(ciphertext)
        except vault.VaultUnavailable as exc:
            raise llm.KeyUnavailable(str(exc)) from None

    return reveal


def _gone() -> str:
    raise llm.KeyUnavailable("the stored key was deleted")
