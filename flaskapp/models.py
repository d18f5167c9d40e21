"""The shared kernel's data: workspaces, who belongs to them in which role, and the
audit log (issue 35).

A workspace (a lab, a team, a project) owns datasets, rubrics, campaigns, judge
configs, runs, experiments, splits, reports and exports; its members hold one role
each there (`Membership`). Instance admins (superusers, or the global ``admin`` group)
manage workspaces and users; everything else happens inside a workspace.
`flaskapp.workspaces` holds the rules (role order, who may do what, the request's
workspace); this module holds only the rows and their database guards.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from flaskapp import limits


class Workspace(models.Model):
    """A lab's own space. `slug` is its stable name in URLs, exports and the API;
    `is_demo` marks the workspace `make run` fills with the bundled demo (its scores
    are labelled synthetic where they are)."""

    name = models.CharField(max_length=100, unique=True)
    slug = models.SlugField(max_length=60, unique=True)
    description = models.CharField(max_length=500, blank=True, default="")
    is_demo = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


# The workspace of every row made with no workspace named.
DEFAULT_WORKSPACE_SLUG = "default"


def default_workspace() -> Workspace:
    """The workspace that holds data created with no workspace named (the command
    line's imports and runs, and every row that existed before workspaces). Created on
    first use."""
    ws, _ = Workspace.objects.get_or_create(
        slug=DEFAULT_WORKSPACE_SLUG, defaults={"name": "Default"}
    )
    return ws


def default_workspace_pk() -> int:
    """The default workspace's id: the field default of every owned root row
    (datasets, campaigns, runs, ...), so a row made with no workspace named lands
    where the command line's imports and the pre-workspace rows are. Services that
    know better (a campaign goes in its dataset's workspace) pass the workspace
    explicitly."""
    return default_workspace().pk


class Membership(models.Model):
    """`user` holds `role` in `workspace`: one role per (workspace, user). The roles,
    from most to least power: owner (a researcher who also manages members, invite
    links, keys and study links), researcher, reviewer, rater."""

    OWNER = "owner"
    RESEARCHER = "researcher"
    REVIEWER = "reviewer"
    RATER = "rater"
    ROLE_CHOICES = [
        (OWNER, "Owner"),
        (RESEARCHER, "Researcher"),
        (REVIEWER, "Reviewer"),
        (RATER, "Rater"),
    ]

    workspace = models.ForeignKey(
        Workspace, on_delete=models.CASCADE, related_name="memberships"
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="workspace_memberships",
    )
    role = models.CharField(max_length=12, choices=ROLE_CHOICES)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["workspace", "user"], name="one_role_per_workspace_member"
            ),
            models.CheckConstraint(
                condition=models.Q(
                    role__in=["owner", "researcher", "reviewer", "rater"]
                ),
                name="membership_role_known",
            ),
        ]
        indexes = [models.Index(fields=["user", "workspace"])]

    def __str__(self) -> str:
        return f"{self.user_id} is {self.role} in {self.workspace_id}"


class AuditEvent(models.Model):
    """One change or look worth answering for later: who (`actor`, kept as a name too
    so the row survives the account), when, what (`action`, a dotted verb such as
    ``membership.role_changed``, ``key.created``, ``export.downloaded``,
    ``test_split.looked``), on which object (`target_type`, `target_id`,
    `target_label`), and the state before and after (JSON; never a secret: callers
    pass what may be shown). Written by `flaskapp.workspaces.audit_record` only; rows
    are never updated or deleted by the app."""

    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    workspace = models.ForeignKey(
        Workspace,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="audit_events",
    )
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    actor_name = models.CharField(max_length=150, blank=True, default="")
    action = models.CharField(max_length=60, db_index=True)
    target_type = models.CharField(max_length=60, blank=True, default="")
    target_id = models.CharField(max_length=64, blank=True, default="")
    target_label = models.CharField(max_length=200, blank=True, default="")
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["workspace", "-created_at"])]

    def __str__(self) -> str:
        return f"{self.actor_name} {self.action} {self.target_type}:{self.target_id}"


class SsoIdentity(models.Model):
    """The local account a person of an OpenID Connect provider signs in as: the
    provider's (`issuer`, `subject`) pair, the ``iss`` and ``sub`` of its ID tokens,
    which the provider never reassigns (an e-mail address can change hands, so
    accounts are never matched by e-mail). Written by `flaskapp.sso.services`."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="sso_identities",
    )
    issuer = models.CharField(max_length=255)
    subject = models.CharField(max_length=255)
    created_at = models.DateTimeField(auto_now_add=True)
    last_login_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["issuer", "subject"], name="one_account_per_sso_subject"
            )
        ]

    def __str__(self) -> str:
        return f"{self.subject} at {self.issuer}"


class InviteLink(models.Model):
    """A link an owner hands out so people join `workspace` in `role` by themselves
    (`flaskapp.people.services.invites`). Only the SHA-256 of its random token is
    stored (`token_hash`): the link is shown once, when it is made; `token_prefix`
    (its first characters) tells links apart on the settings page. It works until
    `expires_at`, for `max_uses` joins, unless revoked."""

    workspace = models.ForeignKey(
        Workspace, on_delete=models.CASCADE, related_name="invite_links"
    )
    role = models.CharField(max_length=12, choices=Membership.ROLE_CHOICES)
    token_hash = models.CharField(max_length=64, unique=True)
    token_prefix = models.CharField(max_length=8)
    max_uses = models.PositiveIntegerField(default=1)
    uses = models.PositiveIntegerField(default=0)
    expires_at = models.DateTimeField()
    revoked_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            # The use counter is the guard of the number of joins: a join is a
            # conditional UPDATE that this check makes fail once all uses are spent.
            models.CheckConstraint(
                condition=models.Q(uses__lte=models.F("max_uses")),
                name="invite_uses_within_max",
            ),
            models.CheckConstraint(
                condition=models.Q(max_uses__gte=1), name="invite_max_uses_positive"
            ),
            models.CheckConstraint(
                condition=models.Q(
                    role__in=["owner", "researcher", "reviewer", "rater"]
                ),
                name="invite_role_known",
            ),
        ]

    def __str__(self) -> str:
        return f"invite {self.token_prefix}… ({self.role})"


class NotificationSettings(models.Model):
    """Where a workspace is told that long work ended (issue 37): a finished judge
    run, a closed campaign. `email_to` holds addresses, one per line (empty: no
    e-mail); `webhook_url` an http(s) URL (empty: no webhook), to which each event is
    POSTed as JSON signed with HMAC-SHA256 under `webhook_secret`, stored encrypted
    (`flaskapp.vault`, the ciphertext here) and never shown again. Written only by
    `flaskapp.notifications.notification_settings_update` (owners)."""

    workspace = models.OneToOneField(
        Workspace, on_delete=models.CASCADE, related_name="notification_settings"
    )
    email_to = models.TextField(max_length=limits.NOTIFY_EMAILS, blank=True, default="")
    webhook_url = models.CharField(max_length=500, blank=True, default="")
    webhook_secret = models.TextField(
        max_length=limits.KEY_CIPHERTEXT, blank=True, default=""
    )
    updated_at = models.DateTimeField(auto_now=True)
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )

    def __str__(self) -> str:
        return f"notifications of {self.workspace_id}"


class NotificationDelivery(models.Model):
    """One attempt to tell a workspace of one event, by e-mail or webhook: what was
    sent (`payload`, never the signing secret), where (`target`), which attempt
    (`attempt`, from 1), and how it went (`status`: ``sent`` or ``failed``;
    `status_code` the receiver's HTTP status, `error` why it failed). A webhook
    attempt that failed for a transient reason is followed by another row, until
    one is sent or `NOTIFY_WEBHOOK_MAX_ATTEMPTS` is reached (`final` marks the last
    attempt). `event_id` groups the attempts of one event. Written only by
    `flaskapp.notifications`; rows are never updated."""

    class Channel(models.TextChoices):
        EMAIL = "email", "E-mail"
        WEBHOOK = "webhook", "Webhook"

    class Status(models.TextChoices):
        SENT = "sent", "Sent"
        FAILED = "failed", "Failed"

    workspace = models.ForeignKey(
        Workspace, on_delete=models.CASCADE, related_name="notification_deliveries"
    )
    event_id = models.CharField(max_length=36, db_index=True)
    event = models.CharField(max_length=40)
    channel = models.CharField(max_length=10, choices=Channel.choices)
    target = models.CharField(max_length=2000)
    payload = models.JSONField()
    attempt = models.PositiveSmallIntegerField(default=1)
    status = models.CharField(max_length=10, choices=Status.choices)
    final = models.BooleanField(default=True)
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    error = models.CharField(max_length=500, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["workspace", "-created_at"])]
        constraints = [
            models.UniqueConstraint(
                fields=["event_id", "channel", "attempt"],
                name="one_row_per_delivery_attempt",
            )
        ]

    def __str__(self) -> str:
        return f"{self.event} by {self.channel} #{self.attempt}: {self.status}"
