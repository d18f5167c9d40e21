"""`manage.py load_demo`: demo users and the bundled demo dataset, for `make run`.

The passwords below are for a local demo only. They are printed on every run and are
public in this repository: never run this command against a deployment that others can
reach.
"""

from __future__ import annotations

import os
from pathlib import Path

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from annotation import roles
from annotation.errors import DomainError

# Lives in judging (which may import annotation, never the reverse) because the demo
# includes a judge run; the data itself belongs to annotation.
DEMO_DIR = Path(__file__).resolve().parents[3] / "annotation" / "demo_data"
DEMO_CAMPAIGN = "Demo campaign"
DEMO_BASELINE = "Baseline: ROUGE-L vs reference"
DEMO_DATASET = "demo"

# (role, username, password). Local demo only: see the module docstring.
DEMO_USERS = [
    (roles.ADMIN, "admin", "flask-admin"),
    (roles.RESEARCHER, "researcher", "flask-researcher"),
    (roles.RATER, "rater1", "flask-rater1"),
    (roles.RATER, "rater2", "flask-rater2"),
]


class Command(BaseCommand):
    help = (
        "Create the demo users (admin, researcher, rater1, rater2) and import the bundled "
        "demo dataset as 'demo'. Idempotent. Passwords are for local demos only."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--url",
            default=f"http://127.0.0.1:{os.environ.get('PORT') or 8000}/",
            help="The address printed with the logins (default: 127.0.0.1 and $PORT).",
        )

    def handle(self, *args, **options):
        admin, password_kept = self.create_users()
        self.import_dataset(admin)
        self.create_campaign()
        self.create_baseline_run()
        self.print_logins(options["url"], password_kept)

    def create_campaign(self):
        """A demo campaign (overlap 2) that both demo raters take part in, once."""
        from annotation.models import Campaign, Dataset
        from annotation.services import campaign_create

        if Campaign.objects.filter(name=DEMO_CAMPAIGN).exists():
            return
        User = get_user_model()
        researcher = User.objects.get(username="researcher")
        raters = list(User.objects.filter(username__in=["rater1", "rater2"]))
        campaign_create(
            name=DEMO_CAMPAIGN,
            dataset=Dataset.objects.get(name=DEMO_DATASET),
            user=researcher,
            overlap=2,
            raters=raters,
            guidelines="Score each listed skill from 1 to 5 against its anchors. "
            "Use **N/A** only when a skill does not apply to the instruction.",
        )
        self.stdout.write(f"Campaign '{DEMO_CAMPAIGN}' created for rater1 and rater2.")

    def create_baseline_run(self):
        """A baseline (ROUGE-L) judge run, started once: it needs no network, so the
        worker completes it offline and the judge pages have something to show."""
        from annotation.models import Dataset
        from judging.models import JudgeConfig, JudgeRun
        from judging.services import (
            judge_config_create,
            judge_run_create,
            judge_run_start,
        )

        User = get_user_model()
        researcher = User.objects.get(username="researcher")
        config = JudgeConfig.objects.filter(name=DEMO_BASELINE).first()
        if config is None:
            config = judge_config_create(
                user=researcher,
                name=DEMO_BASELINE,
                backend=JudgeConfig.Backend.BASELINE_ROUGE,
            )
        if JudgeRun.objects.filter(config=config).exists():
            return
        run = judge_run_create(
            config=config,
            dataset=Dataset.objects.get(name=DEMO_DATASET),
            user=researcher,
        )
        judge_run_start(run=run, user=researcher)
        self.stdout.write(f"Baseline judge run {run.pk} queued for the worker.")

    def create_users(self):
        """Create missing demo users and put every demo user in its role's group.

        An existing user keeps its password: re-running the command (every `make run`
        does) never undoes a password change. Returns the admin user and, per username,
        whether the demo password still works.
        """
        User = get_user_model()
        groups = {g.name: g for g in Group.objects.filter(name__in=roles.ROLES)}
        missing = set(roles.ROLES) - set(groups)
        if missing:
            raise CommandError(
                f"the role groups {sorted(missing)} do not exist; run "
                "`manage.py migrate` first"
            )
        password_kept: dict[str, bool] = {}
        with transaction.atomic():
            for role, username, password in DEMO_USERS:
                user = User.objects.filter(username=username).first()
                if user is None:
                    user = User(username=username)
                    user.set_password(password)
                    password_kept[username] = True
                else:
                    password_kept[username] = user.check_password(password)
                if role == roles.ADMIN:
                    user.is_staff = True
                    user.is_superuser = True
                user.save()
                user.groups.add(groups[role])
        admin = User.objects.get(username=DEMO_USERS[0][1])
        return admin, password_kept

    def import_dataset(self, admin):
        from annotation.services import dataset_import_files

        eval_set = DEMO_DIR / "demo.jsonl"
        outputs = sorted((DEMO_DIR / "outputs").glob("*.jsonl"))
        steps = [
            ("flask", [(eval_set.name, eval_set.read_bytes())]),
            ("flask_outputs", [(p.name, p.read_bytes()) for p in outputs]),
        ]
        for fmt, files in steps:
            try:
                report = dataset_import_files(
                    dataset_name=DEMO_DATASET, fmt=fmt, files=files, user=admin
                )
            except DomainError as exc:
                raise CommandError(f"demo import ({fmt}) failed: {exc}") from exc
            self.stdout.write(
                f"Dataset '{DEMO_DATASET}' ({fmt}): "
                f"{report.created_instructions} instructions and "
                f"{report.created_responses} responses created, "
                f"{report.unchanged} unchanged."
            )

    def print_logins(self, url: str, password_kept: dict[str, bool]) -> None:
        self.stdout.write("")
        self.stdout.write(self.style.SUCCESS(f"FLASK Eval demo: {url}"))
        self.stdout.write("Demo logins (local demo only):")
        self.stdout.write(f"  {'role':<12}{'username':<12}password")
        for role, username, password in DEMO_USERS:
            shown = password if password_kept[username] else "(changed since created)"
            self.stdout.write(f"  {role:<12}{username:<12}{shown}")
        self.stdout.write("")
