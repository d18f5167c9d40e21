"""Names and cache per workspace, step 3 of 3: a judge config's name and a prompt
template's (name, version) are unique within a workspace (the built-in templates,
workspace NULL, once among themselves), and a cached answer within the workspace that
paid for it. The rows kept: the old constraints were stricter."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("judging", "0015_judgecache_workspace_fill")]

    operations = [
        migrations.AlterField(
            model_name="judgecache",
            name="workspace",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE,
                related_name="+",
                to="flaskapp.workspace",
            ),
        ),
        migrations.AddConstraint(
            model_name="judgecache",
            constraint=models.UniqueConstraint(
                fields=("workspace", "key"), name="judge_cache_key_unique_in_workspace"
            ),
        ),
        migrations.AddConstraint(
            model_name="judgeconfig",
            constraint=models.UniqueConstraint(
                fields=("workspace", "name"),
                name="judge_config_name_unique_in_workspace",
            ),
        ),
        migrations.RemoveConstraint(
            model_name="prompttemplate",
            name="prompt_name_version_unique",
        ),
        migrations.AddConstraint(
            model_name="prompttemplate",
            constraint=models.UniqueConstraint(
                condition=models.Q(("workspace__isnull", False)),
                fields=("workspace", "name", "version"),
                name="prompt_name_version_unique_in_workspace",
            ),
        ),
        migrations.AddConstraint(
            model_name="prompttemplate",
            constraint=models.UniqueConstraint(
                condition=models.Q(("workspace__isnull", True)),
                fields=("name", "version"),
                name="prompt_builtin_name_version_unique",
            ),
        ),
    ]
