"""Issue 35, step 1 of 3: the owned root rows get a nullable `workspace` (filled by
0006_workspace_fill, required by 0007_workspace_required; three migrations because PostgreSQL refuses to
alter a table with pending deferred-constraint events in the same transaction)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("analysis", "0004_background_jobs"),
        ("flaskapp", "0002_default_workspace"),
    ]

    operations = [
        migrations.AddField(
            model_name="job",
            name="workspace",
            field=models.ForeignKey(
                null=True,
                blank=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="analysis_jobs",
                to="flaskapp.workspace",
            ),
        ),
    ]
