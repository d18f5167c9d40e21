"""Every free text has a length limit (issue 34, `flaskapp.limits`).

``max_length`` on a ``TextField`` is checked by forms, serializers and services, not by
the database: the column stays ``text``. The change is recorded in the migration
state only, so SQLite does not rebuild every table for nothing.
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("judging", "0008_workbench"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="criterionnote",
                    name="text",
                    field=models.TextField(max_length=5000),
                ),
                migrations.AlterField(
                    model_name="disagreementtag",
                    name="note",
                    field=models.TextField(blank=True, max_length=5000),
                ),
                migrations.AlterField(
                    model_name="experiment",
                    name="description",
                    field=models.TextField(blank=True, max_length=10000),
                ),
                migrations.AlterField(
                    model_name="judgecache",
                    name="raw_output",
                    field=models.TextField(max_length=1000000),
                ),
                migrations.AlterField(
                    model_name="judgecall",
                    name="error",
                    field=models.TextField(blank=True, max_length=5000),
                ),
                migrations.AlterField(
                    model_name="judgecall",
                    name="raw_output",
                    field=models.TextField(blank=True, max_length=1000000),
                ),
                migrations.AlterField(
                    model_name="judgecritique",
                    name="text",
                    field=models.TextField(max_length=1000000),
                ),
                migrations.AlterField(
                    model_name="judgerun",
                    name="source_note",
                    field=models.TextField(
                        blank=True,
                        help_text="For imported runs: where from.",
                        max_length=10000,
                    ),
                ),
                migrations.AlterField(
                    model_name="judgescore",
                    name="rationale",
                    field=models.TextField(blank=True, max_length=1000000),
                ),
                migrations.AlterField(
                    model_name="pairwiseverdict",
                    name="rationale",
                    field=models.TextField(blank=True, max_length=1000000),
                ),
                migrations.AlterField(
                    model_name="prompttemplate",
                    name="system_text",
                    field=models.TextField(blank=True, max_length=100000),
                ),
                migrations.AlterField(
                    model_name="prompttemplate",
                    name="user_text",
                    field=models.TextField(
                        help_text="Template with {placeholders}; see judging.prompts",
                        max_length=100000,
                    ),
                ),
                migrations.AlterField(
                    model_name="testsplitlook",
                    name="reason",
                    field=models.TextField(blank=True, max_length=5000),
                ),
            ],
            database_operations=[],
        ),
    ]
