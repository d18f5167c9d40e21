"""Names unique per workspace, step 3 of 3: an evaluated model's name and a rubric's
(name, version) are unique within a workspace (the built-in rubrics, workspace NULL,
once among themselves), so two labs may use one name and a taken name in another
workspace reveals nothing. The rows kept: the old constraints were stricter."""

import django.db.models.deletion
from django.db import migrations, models

import flaskapp.models


class Migration(migrations.Migration):
    dependencies = [("annotation", "0027_evaluatedmodel_workspace_fill")]

    operations = [
        migrations.AlterField(
            model_name="evaluatedmodel",
            name="workspace",
            field=models.ForeignKey(
                default=flaskapp.models.default_workspace_pk,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="evaluated_models",
                to="flaskapp.workspace",
            ),
        ),
        migrations.AddConstraint(
            model_name="evaluatedmodel",
            constraint=models.UniqueConstraint(
                fields=("workspace", "name"),
                name="evaluated_model_name_unique_in_workspace",
            ),
        ),
        migrations.RemoveConstraint(
            model_name="rubric",
            name="rubric_name_version_unique",
        ),
        migrations.AddConstraint(
            model_name="rubric",
            constraint=models.UniqueConstraint(
                condition=models.Q(("workspace__isnull", False)),
                fields=("workspace", "name", "version"),
                name="rubric_name_version_unique_in_workspace",
            ),
        ),
        migrations.AddConstraint(
            model_name="rubric",
            constraint=models.UniqueConstraint(
                condition=models.Q(("workspace__isnull", True)),
                fields=("name", "version"),
                name="rubric_builtin_name_version_unique",
            ),
        ),
    ]
