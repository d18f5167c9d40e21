"""An instruction's own score rubric (Prometheus / BiGGen-Bench), `{}` when it has none.

On SQLite, adding (or removing) the column rebuilds `annotation_instruction`, which
drops the triggers that keep the FTS5 index of 0008 in step: they are made again and
the index rebuilt. Nothing else happens on PostgreSQL.
"""

import importlib

from django.db import migrations, models

fts = importlib.import_module("annotation.migrations.0008_instruction_fts_sqlite")
REMAKE_FTS = fts._run(fts.SQLITE_BACKWARD + fts.SQLITE_FORWARD)


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0012_temporary_password"),
    ]

    operations = [
        migrations.RunPython(migrations.RunPython.noop, REMAKE_FTS),
        migrations.AddField(
            model_name="instruction",
            name="instance_rubric",
            field=models.JSONField(blank=True, default=dict),
        ),
        migrations.RunPython(REMAKE_FTS, migrations.RunPython.noop),
    ]
