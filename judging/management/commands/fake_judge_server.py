"""Run the fake OpenAI-compatible judge server in the foreground (a development tool)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from judging.fake_server import FakeServerConfig, run_fake_server
from judging.llm import api_key_from_env


def _rate(value: str) -> float:
    rate = float(value)
    if not 0.0 <= rate <= 1.0:
        raise ValueError(value)
    return rate


class Command(BaseCommand):
    help = (
        "Serve a fake OpenAI-compatible judge (POST /v1/chat/completions) with "
        "configurable latency and error rates. Prints its base URL; Ctrl-C stops it."
    )
    # A standalone dev server: it uses no model, URL or setting, so a half-configured
    # project (or one another command's checks reject) must not stop it from starting.
    requires_system_checks = []

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8089)
        parser.add_argument("--latency-ms", type=float, default=500.0)
        parser.add_argument("--jitter-ms", type=float, default=0.0)
        parser.add_argument(
            "--rate-limit", type=_rate, default=0.0, help="share of 429s"
        )
        parser.add_argument(
            "--server-error", type=_rate, default=0.0, help="share of 500s"
        )
        parser.add_argument(
            "--timeout",
            type=_rate,
            default=0.0,
            help="share of requests held (never answered)",
        )
        parser.add_argument(
            "--malformed", type=_rate, default=0.0, help="share of unparseable replies"
        )
        parser.add_argument(
            "--retry-after",
            type=float,
            default=1.0,
            help="Retry-After of a 429, in seconds",
        )
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument(
            "--api-key-env",
            default="",
            help="require 'Authorization: Bearer $NAME' (the variable's name, not the key)",
        )

    def handle(self, *args, **options):
        rates = [
            options[k] for k in ("rate_limit", "server_error", "timeout", "malformed")
        ]
        if sum(rates) > 1.0:
            raise CommandError("the error rates add up to more than 1")
        api_key = None
        if options["api_key_env"]:
            api_key = api_key_from_env(options["api_key_env"])
            if api_key is None:
                raise CommandError(
                    f"environment variable {options['api_key_env']} is not set or is "
                    "not a declared key variable (JUDGE_KEY_ENV_ALLOWED)"
                )
        config = FakeServerConfig(
            latency_ms=options["latency_ms"],
            latency_jitter_ms=options["jitter_ms"],
            rate_limit=options["rate_limit"],
            server_error=options["server_error"],
            timeout=options["timeout"],
            malformed=options["malformed"],
            retry_after=options["retry_after"],
            seed=options["seed"],
            require_api_key=api_key,
        )

        def ready(base_url: str) -> None:
            self.stdout.write(base_url)
            self.stdout.flush()

        try:
            run_fake_server(config, options["host"], options["port"], on_ready=ready)
        except OSError as exc:
            msg = f"cannot listen on {options['host']}:{options['port']}: {exc}"
            raise CommandError(msg) from exc
