"""Names and cache per workspace, step 1 of 3: a cached judge answer belongs to the
workspace that paid for it (added nullable here, filled in 0015, required in 0016)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("judging", "0013_stored_keys"),
        ("flaskapp", "0002_default_workspace"),
    ]

    operations = [
        migrations.AlterField(
            model_name="judgecache",
            name="key",
            field=models.CharField(max_length=64),
        ),
        migrations.AddField(
            model_name="judgecache",
            name="workspace",
            field=models.ForeignKey(
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="+",
                to="flaskapp.workspace",
            ),
        ),
        migrations.AlterField(
            model_name="judgeconfig",
            name="name",
            field=models.CharField(max_length=100),
        ),
    ]
