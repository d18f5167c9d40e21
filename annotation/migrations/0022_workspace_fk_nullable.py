"""Issue 35, step 1 of 3: the owned root rows get a nullable `workspace` (filled by
0023_workspace_fill, required by 0024_workspace_required; three migrations because PostgreSQL refuses to
alter a table with pending deferred-constraint events in the same transaction)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0021_gold_answers_shown"),
        ("flaskapp", "0002_default_workspace"),
    ]

    operations = [
        migrations.AddField(
            model_name="campaign",
            name="workspace",
            field=models.ForeignKey(
                null=True,
                blank=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="campaigns",
                to="flaskapp.workspace",
            ),
        ),
        migrations.AddField(
            model_name="dataset",
            name="workspace",
            field=models.ForeignKey(
                null=True,
                blank=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="datasets",
                to="flaskapp.workspace",
            ),
        ),
        migrations.AddField(
            model_name="importjob",
            name="workspace",
            field=models.ForeignKey(
                null=True,
                blank=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="import_jobs",
                to="flaskapp.workspace",
            ),
        ),
        migrations.AddField(
            model_name="rubric",
            name="workspace",
            field=models.ForeignKey(
                null=True,
                blank=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="rubrics",
                to="flaskapp.workspace",
            ),
        ),
    ]
