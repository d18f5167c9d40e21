"""manage.py sampling_campaign --dataset NAME --run ID --budget N
[--strategy uncertainty|uniform] [--seed S] [--skill KEY] [--name NAME] [--user U]

Draws a sample of the dataset's responses from the judge run's scores and creates
its campaign (`judging.services.sampling.sampling_campaign_start`); prints the
campaign id, how many responses were drawn and the page of its report. A bad
option is an error naming it; nothing is written. `--user` (default: the first
admin, as for every command: `command_user`) is recorded as its creator."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from annotation.management.commands._cli import (
    add_workspace_option,
    command_user,
    command_workspace,
)
from annotation.models import Dataset
from flaskapp.errors import DomainError
from judging.designs import STRATEGIES
from judging.services.sampling import sampling_campaign_start


class Command(BaseCommand):
    help = "Create a campaign over a sample drawn by the judge's uncertainty."

    def add_arguments(self, parser):
        parser.add_argument("--dataset", required=True)
        add_workspace_option(parser, creates=True)
        parser.add_argument("--run", required=True)
        parser.add_argument("--budget", required=True, type=int)
        parser.add_argument("--strategy", default="uncertainty", choices=STRATEGIES)
        parser.add_argument("--seed", default=0, type=int)
        parser.add_argument("--skill", default="")
        parser.add_argument("--name", default="")
        parser.add_argument("--user", default="")

    def handle(self, *args, **options):
        dataset = Dataset.objects.filter(
            name=options["dataset"], workspace=command_workspace(options)
        ).first()
        if dataset is None:
            raise CommandError(f"--dataset: no dataset named {options['dataset']!r}")
        user = command_user(options["user"] or None)
        try:
            campaign = sampling_campaign_start(
                user=user,
                name=options["name"] or f"sampling of {dataset.name}",
                dataset=dataset,
                run_id=options["run"],
                budget=options["budget"],
                strategy=options["strategy"],
                seed=options["seed"],
                skill=options["skill"],
            )
        except DomainError as exc:
            raise CommandError(
                "; ".join(f"--{p.field}: {p.message}" for p in exc.problems)
                or exc.message
            ) from exc
        plan = campaign.sampling
        self.stdout.write(
            f"campaign {campaign.pk}: {plan['sampled']} of {plan['population']} "
            f"responses drawn ({plan['why']}, expected {plan['budget']}); report at "
            f"/campaigns/{campaign.pk}/sampling/"
        )
