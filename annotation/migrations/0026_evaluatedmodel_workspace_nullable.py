"""Names unique per workspace, step 1 of 3: an evaluated model's family belongs to a
workspace (added nullable here, filled in 0027, required in 0028)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0025_dataset_taxonomy"),
        ("flaskapp", "0002_default_workspace"),
    ]

    operations = [
        migrations.AddField(
            model_name="evaluatedmodel",
            name="workspace",
            field=models.ForeignKey(
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="evaluated_models",
                to="flaskapp.workspace",
            ),
        ),
        migrations.AlterField(
            model_name="evaluatedmodel",
            name="name",
            field=models.CharField(max_length=200),
        ),
    ]
