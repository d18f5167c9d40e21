"""Every free text has a length limit (issue 34, `flaskapp.limits`).

``max_length`` on a ``TextField`` is checked by forms, serializers and services, not by
the database: the column stays ``text``. The change is recorded in the migration
state only, so SQLite does not rebuild every table for nothing.
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0019_active_sampling"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="adjudication",
                    name="note",
                    field=models.TextField(max_length=5000),
                ),
                migrations.AlterField(
                    model_name="assignment",
                    name="critique",
                    field=models.TextField(blank=True, max_length=20000),
                ),
                migrations.AlterField(
                    model_name="assignment",
                    name="note",
                    field=models.TextField(
                        blank=True,
                        help_text="What happened, e.g. a refused late submit.",
                        max_length=5000,
                    ),
                ),
                migrations.AlterField(
                    model_name="campaign",
                    name="guidelines",
                    field=models.TextField(
                        blank=True,
                        help_text="Markdown shown to raters.",
                        max_length=100000,
                    ),
                ),
                migrations.AlterField(
                    model_name="dataset",
                    name="description",
                    field=models.TextField(blank=True, max_length=10000),
                ),
                migrations.AlterField(
                    model_name="golditem",
                    name="explanation",
                    field=models.TextField(blank=True, max_length=10000),
                ),
                migrations.AlterField(
                    model_name="historicaladjudication",
                    name="note",
                    field=models.TextField(max_length=5000),
                ),
                migrations.AlterField(
                    model_name="historicalhumanscore",
                    name="rationale",
                    field=models.TextField(blank=True, max_length=20000),
                ),
                migrations.AlterField(
                    model_name="historicalraterexclusion",
                    name="end_reason",
                    field=models.TextField(blank=True, max_length=5000),
                ),
                migrations.AlterField(
                    model_name="historicalraterexclusion",
                    name="reason",
                    field=models.TextField(max_length=5000),
                ),
                migrations.AlterField(
                    model_name="humanpreference",
                    name="rationale",
                    field=models.TextField(blank=True, max_length=20000),
                ),
                migrations.AlterField(
                    model_name="humanscore",
                    name="rationale",
                    field=models.TextField(blank=True, max_length=20000),
                ),
                migrations.AlterField(
                    model_name="instruction",
                    name="reference_answer",
                    field=models.TextField(blank=True, max_length=200000),
                ),
                migrations.AlterField(
                    model_name="instruction",
                    name="text",
                    field=models.TextField(max_length=200000),
                ),
                migrations.AlterField(
                    model_name="raterexclusion",
                    name="end_reason",
                    field=models.TextField(blank=True, max_length=5000),
                ),
                migrations.AlterField(
                    model_name="raterexclusion",
                    name="reason",
                    field=models.TextField(max_length=5000),
                ),
                migrations.AlterField(
                    model_name="response",
                    name="text",
                    field=models.TextField(max_length=200000),
                ),
                migrations.AlterField(
                    model_name="rubric",
                    name="description",
                    field=models.TextField(blank=True, max_length=10000),
                ),
                migrations.AlterField(
                    model_name="skill",
                    name="anchor_1",
                    field=models.TextField(max_length=5000),
                ),
                migrations.AlterField(
                    model_name="skill",
                    name="anchor_2",
                    field=models.TextField(max_length=5000),
                ),
                migrations.AlterField(
                    model_name="skill",
                    name="anchor_3",
                    field=models.TextField(max_length=5000),
                ),
                migrations.AlterField(
                    model_name="skill",
                    name="anchor_4",
                    field=models.TextField(max_length=5000),
                ),
                migrations.AlterField(
                    model_name="skill",
                    name="anchor_5",
                    field=models.TextField(max_length=5000),
                ),
                migrations.AlterField(
                    model_name="skill",
                    name="criteria",
                    field=models.TextField(max_length=5000),
                ),
            ],
            database_operations=[],
        ),
    ]
