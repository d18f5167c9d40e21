"""Issue 35, step 3 of 3: `workspace` is required on the owned root rows (nullable
only where NULL means built-in and shared), defaulting to the default workspace."""

import django.db.models.deletion
from django.db import migrations, models

import flaskapp.models


class Migration(migrations.Migration):
    dependencies = [("annotation", "0023_workspace_fill")]

    operations = [
        migrations.AlterField(
            model_name="campaign",
            name="workspace",
            field=models.ForeignKey(
                default=flaskapp.models.default_workspace_pk,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="campaigns",
                to="flaskapp.workspace",
            ),
        ),
        migrations.AlterField(
            model_name="dataset",
            name="workspace",
            field=models.ForeignKey(
                default=flaskapp.models.default_workspace_pk,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="datasets",
                to="flaskapp.workspace",
            ),
        ),
        migrations.AlterField(
            model_name="importjob",
            name="workspace",
            field=models.ForeignKey(
                default=flaskapp.models.default_workspace_pk,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="import_jobs",
                to="flaskapp.workspace",
            ),
        ),
        migrations.AlterField(
            model_name="rubric",
            name="workspace",
            field=models.ForeignKey(
                null=True,
                blank=True,
                default=flaskapp.models.default_workspace_pk,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="rubrics",
                to="flaskapp.workspace",
            ),
        ),
        migrations.AlterField(
            model_name="dataset",
            name="name",
            field=models.CharField(max_length=200),
        ),
        migrations.AddConstraint(
            model_name="dataset",
            constraint=models.UniqueConstraint(
                fields=("workspace", "name"), name="dataset_name_unique_in_workspace"
            ),
        ),
    ]
