"""`manage.py token USERNAME [--revoke-all] [--list]`: the operator's way to make,
list or revoke a user's API tokens (`flaskapp.tokens`); users get theirs from
``POST /api/auth/token/``."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from flaskapp import tokens


class Command(BaseCommand):
    help = (
        "Make an API token for USERNAME and print it (shown once; it expires after "
        "API_TOKEN_TTL_DAYS days). --list shows the user's tokens, --revoke-all revokes "
        "them."
    )

    def add_arguments(self, parser):
        parser.add_argument("username")
        group = parser.add_mutually_exclusive_group()
        group.add_argument("--list", action="store_true", help="List the tokens.")
        group.add_argument(
            "--revoke-all", action="store_true", help="Revoke every token of the user."
        )

    def handle(self, *args, **options):
        user = (
            get_user_model()
            .objects.filter(username=options["username"], is_active=True)
            .first()
        )
        if user is None:
            raise CommandError(f"no active user named {options['username']!r}")
        if options["revoke_all"]:
            n = tokens.token_revoke_all(user=user)
            self.stdout.write(f"Revoked {n} token(s) of {user.username}.")
            return
        if options["list"]:
            for t in tokens.token_list(user=user):
                self.stdout.write(
                    f"{t.token_key}…  created {t.created:%Y-%m-%d %H:%M}  "
                    f"expires {t.expiry:%Y-%m-%d %H:%M}"
                )
            return
        issued = tokens.token_create(user=user)
        self.stdout.write(issued.token)
        self.stderr.write(
            f"Token for {user.username}, expires {issued.expiry:%Y-%m-%d %H:%M} UTC. "
            "Send it as 'Authorization: Token <token>'; it is not shown again."
        )
