"""Word search on SQLite (`make run`): an FTS5 index of instruction texts.

PostgreSQL searches with its English full-text search and the GIN index of 0002;
nothing changes there. On SQLite an external-content FTS5 table (rowid = instruction
id, Porter stemming) is kept in step with `annotation_instruction` by triggers, and
filled once from the rows already there. `annotation.selectors.instruction_text_search`
reads it.
"""

from django.db import migrations

TABLE = "annotation_instruction_fts"

SQLITE_FORWARD = [
    f"CREATE VIRTUAL TABLE {TABLE} USING fts5(text, content='annotation_instruction', "
    "content_rowid='id', tokenize='porter unicode61')",
    f"CREATE TRIGGER {TABLE}_insert AFTER INSERT ON annotation_instruction BEGIN "
    f"INSERT INTO {TABLE}(rowid, text) VALUES (new.id, new.text); END",
    f"CREATE TRIGGER {TABLE}_delete AFTER DELETE ON annotation_instruction BEGIN "
    f"INSERT INTO {TABLE}({TABLE}, rowid, text) VALUES ('delete', old.id, old.text); "
    "END",
    f"CREATE TRIGGER {TABLE}_update AFTER UPDATE OF text ON annotation_instruction "
    f"BEGIN INSERT INTO {TABLE}({TABLE}, rowid, text) VALUES "
    "('delete', old.id, old.text); "
    f"INSERT INTO {TABLE}(rowid, text) VALUES (new.id, new.text); END",
    f"INSERT INTO {TABLE}({TABLE}) VALUES ('rebuild')",
]
SQLITE_BACKWARD = [
    f"DROP TRIGGER IF EXISTS {TABLE}_insert",
    f"DROP TRIGGER IF EXISTS {TABLE}_delete",
    f"DROP TRIGGER IF EXISTS {TABLE}_update",
    f"DROP TABLE IF EXISTS {TABLE}",
]


def _run(statements):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor != "sqlite":
            return
        for sql in statements:
            schema_editor.execute(sql)

    return run


class Migration(migrations.Migration):
    dependencies = [("annotation", "0007_campaign_item_bulk")]

    operations = [
        migrations.RunPython(_run(SQLITE_FORWARD), _run(SQLITE_BACKWARD)),
    ]
