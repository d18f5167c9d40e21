"""Re-encrypt every stored judge key with the newest FLASK_KEY_ENCRYPTION_KEYS key."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from flaskapp.vault import VaultUnavailable
from judging.services.keys import stored_keys_rotate


class Command(BaseCommand):
    help = (
        "Re-encrypt every judge API key stored for a workspace with the newest key of "
        "FLASK_KEY_ENCRYPTION_KEYS (the first). Rotate by putting a new key first, "
        "running this, then removing the old key. Idempotent; prints counts only."
    )

    def handle(self, *args, **options):
        try:
            rotated, current = stored_keys_rotate()
        except VaultUnavailable as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(
            f"{rotated} stored key(s) re-encrypted with the newest key; "
            f"{current} already were."
        )
