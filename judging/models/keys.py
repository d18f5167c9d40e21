"""Judge API keys stored for a workspace, encrypted at rest (re-exported by
judging.models).

Write-only: the value is entered once (page or API) and kept only as `ciphertext`
(`flaskapp.vault`); no page, API answer, export, log or error shows it again. A key is
sent only to the hosts its owner allowed (`allowed_hosts`), and only by
`judging.llm` at call time.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from flaskapp import limits
from flaskapp.models import Workspace


class StoredKey(models.Model):
    """A named judge API key of one workspace. `allowed_hosts`: the host names (or
    ``*.example.com`` patterns) the key may be sent to; `ciphertext`: the value
    encrypted with the server's newest key at the time of writing. `rotated_at`:
    when the value was last replaced (None: never); `last_used_at`: when a run or a
    connection test last sent it."""

    workspace = models.ForeignKey(
        Workspace, on_delete=models.CASCADE, related_name="stored_keys"
    )
    name = models.CharField(max_length=100)
    allowed_hosts = models.JSONField(default=list)
    ciphertext = models.TextField(max_length=limits.KEY_CIPHERTEXT)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    rotated_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["workspace_id", "name"]
        constraints = [
            models.UniqueConstraint(
                fields=["workspace", "name"], name="stored_key_name_per_workspace"
            ),
            models.CheckConstraint(
                condition=~models.Q(ciphertext=""), name="stored_key_has_ciphertext"
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:  # never the ciphertext
        return f"<StoredKey {self.pk} {self.name!r} of workspace {self.workspace_id}>"
