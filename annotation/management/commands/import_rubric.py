"""`manage.py import_rubric FILE [--name NAME]`: a rubric file as a new rubric version.

FILE is our rubric file (JSON or YAML: any scale or label set, see the README) or
FLASK's `skillset_description.json`, recognised by content.
"""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import CommandError

from annotation.management.commands._cli import add_workspace_option, command_workspace
from annotation.management.commands._import_cli import refused
from annotation.services.rubrics import rubric_import
from flaskapp.commands import DataCommand
from flaskapp.errors import DomainError


class Command(DataCommand):
    help = (
        "Import a rubric file (ours, JSON or YAML, or FLASK's skillset_description.json) "
        "as a new version of the rubric it names. A bad file changes nothing; every "
        "problem is printed with its line and field."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", help="The rubric file (.yaml, .yml or .json).")
        parser.add_argument(
            "--name",
            help="The rubric's name (default: the file's `name`; FLASK's file: "
            "'FLASK official'). An existing name gets its next version.",
        )
        add_workspace_option(parser, creates=True)

    def handle(self, *args, **options):
        path = Path(options["file"])
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise CommandError(
                f"{path}: cannot read the file ({exc.strerror})"
            ) from exc
        try:
            rubric = rubric_import(
                name=options["name"],
                data=data,
                file=path.name,
                workspace=command_workspace(options),
            )
        except DomainError as exc:
            raise refused(exc, self.stderr) from exc
        skills = list(rubric.skills.all())
        self.stdout.write(
            f"Rubric '{rubric.name}' version {rubric.version}: {len(skills)} criteria "
            f"in {len(rubric.groups)} group(s)"
        )
        for skill in skills:
            scale = skill.scale_label or ", ".join(
                label["key"] for label in skill.labels
            )
            self.stdout.write(f"  {skill.key}: {skill.kind} {scale}")
        self.stdout.write(f"  id: {rubric.pk}")
