"""Names unique per workspace, step 2 of 3: every evaluated model made before belongs
to the default workspace (where every pre-workspace row is)."""

from django.db import migrations


def forwards(apps, schema_editor):
    Workspace = apps.get_model("flaskapp", "Workspace")
    ws, _ = Workspace.objects.get_or_create(
        slug="default", defaults={"name": "Default"}
    )
    apps.get_model("annotation", "evaluatedmodel").objects.filter(
        workspace__isnull=True
    ).update(workspace_id=ws.pk)


class Migration(migrations.Migration):
    dependencies = [("annotation", "0026_evaluatedmodel_workspace_nullable")]

    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
