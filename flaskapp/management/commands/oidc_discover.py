"""`manage.py oidc_discover ISSUER`: the single sign-on endpoint variables of a
provider, read from its discovery document, printed as ``NAME=value`` lines for the
environment or a ``.env`` file (README "Single sign-on")."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from flaskapp.sso.discovery import DiscoveryError, provider_discover


class Command(BaseCommand):
    help = (
        "Print the OIDC_OP_* variables of the OpenID Connect provider ISSUER, read "
        "from ISSUER/.well-known/openid-configuration."
    )

    def add_arguments(self, parser):
        parser.add_argument("issuer", help="The provider's issuer URL.")
        parser.add_argument(
            "--timeout", type=float, default=10, help="Seconds to wait (10)."
        )

    def handle(self, *args, **options):
        try:
            found = provider_discover(options["issuer"], timeout=options["timeout"])
        except DiscoveryError as exc:
            raise CommandError(str(exc)) from None
        for name, value in found.items():
            self.stdout.write(f"{name}={value}")
        if "OIDC_OP_END_SESSION_ENDPOINT" not in found:
            self.stderr.write(
                "The provider has no end-session endpoint: logging out here will not "
                "end its session."
            )
