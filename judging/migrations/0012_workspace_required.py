"""Issue 35, step 3 of 3: `workspace` is required on the owned root rows (nullable
only where NULL means built-in and shared), defaulting to the default workspace."""

import django.db.models.deletion
from django.db import migrations, models

import flaskapp.models


class Migration(migrations.Migration):
    dependencies = [("judging", "0011_workspace_fill")]

    operations = [
        migrations.AlterField(
            model_name="criterionnote",
            name="workspace",
            field=models.ForeignKey(
                default=flaskapp.models.default_workspace_pk,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="criterion_notes",
                to="flaskapp.workspace",
            ),
        ),
        migrations.AlterField(
            model_name="evalsplit",
            name="workspace",
            field=models.ForeignKey(
                default=flaskapp.models.default_workspace_pk,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="eval_splits",
                to="flaskapp.workspace",
            ),
        ),
        migrations.AlterField(
            model_name="experiment",
            name="workspace",
            field=models.ForeignKey(
                default=flaskapp.models.default_workspace_pk,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="experiments",
                to="flaskapp.workspace",
            ),
        ),
        migrations.AlterField(
            model_name="judgeconfig",
            name="workspace",
            field=models.ForeignKey(
                default=flaskapp.models.default_workspace_pk,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="judge_configs",
                to="flaskapp.workspace",
            ),
        ),
        migrations.AlterField(
            model_name="judgerun",
            name="workspace",
            field=models.ForeignKey(
                default=flaskapp.models.default_workspace_pk,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="judge_runs",
                to="flaskapp.workspace",
            ),
        ),
        migrations.AlterField(
            model_name="prompttemplate",
            name="workspace",
            field=models.ForeignKey(
                null=True,
                blank=True,
                default=flaskapp.models.default_workspace_pk,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="prompt_templates",
                to="flaskapp.workspace",
            ),
        ),
    ]
