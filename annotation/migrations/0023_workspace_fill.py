"""Issue 35, step 2 of 3: every row that existed before workspaces belongs to the
default workspace (flaskapp 0002), except built-in rubrics and prompt templates, which
stay shared (workspace NULL: read-only, visible to every workspace)."""

from django.db import migrations


def forwards(apps, schema_editor):
    Workspace = apps.get_model("flaskapp", "Workspace")
    ws, _ = Workspace.objects.get_or_create(slug="default", defaults={"name": "Default"})
    apps.get_model("annotation", "campaign").objects.filter(workspace__isnull=True).update(workspace_id=ws.pk)
    apps.get_model("annotation", "dataset").objects.filter(workspace__isnull=True).update(workspace_id=ws.pk)
    apps.get_model("annotation", "importjob").objects.filter(workspace__isnull=True).update(workspace_id=ws.pk)
    apps.get_model("annotation", "rubric").objects.filter(is_builtin=False).filter(workspace__isnull=True).update(workspace_id=ws.pk)


class Migration(migrations.Migration):
    dependencies = [("annotation", "0022_workspace_fk_nullable")]

    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
