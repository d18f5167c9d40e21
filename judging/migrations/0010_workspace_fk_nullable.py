"""Issue 35, step 1 of 3: the owned root rows get a nullable `workspace` (filled by
0011_workspace_fill, required by 0012_workspace_required; three migrations because PostgreSQL refuses to
alter a table with pending deferred-constraint events in the same transaction)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("judging", "0009_text_limits"),
        ("flaskapp", "0002_default_workspace"),
    ]

    operations = [
        migrations.AddField(
            model_name="criterionnote",
            name="workspace",
            field=models.ForeignKey(
                null=True,
                blank=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="criterion_notes",
                to="flaskapp.workspace",
            ),
        ),
        migrations.AddField(
            model_name="evalsplit",
            name="workspace",
            field=models.ForeignKey(
                null=True,
                blank=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="eval_splits",
                to="flaskapp.workspace",
            ),
        ),
        migrations.AddField(
            model_name="experiment",
            name="workspace",
            field=models.ForeignKey(
                null=True,
                blank=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="experiments",
                to="flaskapp.workspace",
            ),
        ),
        migrations.AddField(
            model_name="judgeconfig",
            name="workspace",
            field=models.ForeignKey(
                null=True,
                blank=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="judge_configs",
                to="flaskapp.workspace",
            ),
        ),
        migrations.AddField(
            model_name="judgerun",
            name="workspace",
            field=models.ForeignKey(
                null=True,
                blank=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="judge_runs",
                to="flaskapp.workspace",
            ),
        ),
        migrations.AddField(
            model_name="prompttemplate",
            name="workspace",
            field=models.ForeignKey(
                null=True,
                blank=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="prompt_templates",
                to="flaskapp.workspace",
            ),
        ),
    ]
