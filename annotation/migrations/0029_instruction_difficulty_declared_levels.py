"""A dataset declares its own difficulty levels (1-99), FLASK's stay 1-5.

On SQLite, changing the field and its check rebuilds `annotation_instruction`, which
drops the triggers that keep the FTS5 index of 0008 in step: they are made again and
the index rebuilt (as in 0013). Nothing else happens on PostgreSQL.
"""

import importlib

from django.db import migrations, models

fts = importlib.import_module("annotation.migrations.0008_instruction_fts_sqlite")
REMAKE_FTS = fts._run(fts.SQLITE_BACKWARD + fts.SQLITE_FORWARD)


class Migration(migrations.Migration):

    dependencies = [
        ('annotation', '0028_names_unique_per_workspace'),
    ]

    operations = [
        migrations.RunPython(migrations.RunPython.noop, REMAKE_FTS),
        migrations.RemoveConstraint(
            model_name='instruction',
            name='instruction_difficulty_1_5_or_null',
        ),
        migrations.AlterField(
            model_name='instruction',
            name='difficulty',
            field=models.PositiveSmallIntegerField(blank=True, null=True),
        ),
        migrations.AddConstraint(
            model_name='instruction',
            constraint=models.CheckConstraint(condition=models.Q(('difficulty__isnull', True), models.Q(('difficulty__gte', 1), ('difficulty__lte', 99)), _connector='OR'), name='instruction_difficulty_level_or_null'),
        ),
        migrations.RunPython(REMAKE_FTS, migrations.RunPython.noop),
    ]
