"""Issue 35, step 3 of 3: `workspace` is required on the owned root rows (nullable
only where NULL means built-in and shared), defaulting to the default workspace."""

import django.db.models.deletion
from django.db import migrations, models

import flaskapp.models


class Migration(migrations.Migration):
    dependencies = [("analysis", "0006_workspace_fill")]

    operations = [
        migrations.AlterField(
            model_name="job",
            name="workspace",
            field=models.ForeignKey(
                default=flaskapp.models.default_workspace_pk,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="analysis_jobs",
                to="flaskapp.workspace",
            ),
        ),
    ]
