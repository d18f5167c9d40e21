"""Names and cache per workspace, step 2 of 3: each cached answer goes to every
workspace whose runs already made a call with its key (`JudgeCall.prompt_hash`): they
have seen that answer, so nothing new is shared; an entry no call names goes to the
default workspace (where every pre-workspace row is)."""

from django.db import migrations


def forwards(apps, schema_editor):
    Workspace = apps.get_model("flaskapp", "Workspace")
    ws, _ = Workspace.objects.get_or_create(
        slug="default", defaults={"name": "Default"}
    )
    cache = apps.get_model("judging", "judgecache")._meta.db_table
    call = apps.get_model("judging", "judgecall")._meta.db_table
    run = apps.get_model("judging", "judgerun")._meta.db_table
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {cache} "
            "(workspace_id, key, raw_output, input_tokens, output_tokens, created_at) "
            "SELECT DISTINCT r.workspace_id, c.key, c.raw_output, c.input_tokens, "
            "c.output_tokens, c.created_at "
            f"FROM {cache} c JOIN {call} k ON k.prompt_hash = c.key "
            f"JOIN {run} r ON r.id = k.run_id "
            "WHERE c.workspace_id IS NULL AND r.workspace_id IS NOT NULL"
        )
        cursor.execute(
            f"DELETE FROM {cache} WHERE workspace_id IS NULL AND key IN "
            f"(SELECT key FROM {cache} WHERE workspace_id IS NOT NULL)"
        )
        cursor.execute(
            f"UPDATE {cache} SET workspace_id = %s WHERE workspace_id IS NULL", [ws.pk]
        )


class Migration(migrations.Migration):
    dependencies = [("judging", "0014_judgecache_workspace_nullable")]

    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
