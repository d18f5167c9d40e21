"""The agreement inputs' change log and, on PostgreSQL, the triggers that write it.

Statement-level triggers with transition tables: one trigger run per statement (a COPY
of a million judge scores included), one log row per campaign, run or dataset touched.
"""

from django.db import migrations, models

# (table, scope, SQL selecting the touched keys from the transition table `t`)
SOURCES = [
    (
        "annotation_humanscore",
        "c",
        "SELECT DISTINCT a.campaign_id FROM t JOIN annotation_assignment a "
        "ON a.id = t.assignment_id",
    ),
    ("judging_judgescore", "r", "SELECT DISTINCT t.run_id FROM t"),
    (
        "annotation_response",
        "d",
        "SELECT DISTINCT i.dataset_id FROM t JOIN annotation_instruction i "
        "ON i.id = t.instruction_id",
    ),
    ("annotation_instruction", "d", "SELECT DISTINCT t.dataset_id FROM t"),
    (
        "judging_metadatasuggestion",
        "d",
        "SELECT DISTINCT i.dataset_id FROM t JOIN annotation_instruction i "
        "ON i.id = t.instruction_id",
    ),
]
EVENTS = [("ins", "INSERT", "NEW"), ("upd", "UPDATE", "NEW"), ("del", "DELETE", "OLD")]


def _create_sql() -> list[str]:
    sql = []
    for table, scope, select in SOURCES:
        function = f"analysis_log_{table}"
        sql.append(
            f"""
            CREATE OR REPLACE FUNCTION {function}() RETURNS trigger
            LANGUAGE plpgsql AS $$
            BEGIN
                INSERT INTO analysis_inputchange (scope, key)
                SELECT '{scope}', k FROM ({select}) AS touched(k)
                WHERE k IS NOT NULL;
                RETURN NULL;
            END $$;
            """
        )
        for suffix, event, side in EVENTS:
            sql.append(
                f"CREATE TRIGGER analysis_log_{suffix} AFTER {event} ON {table} "
                f"REFERENCING {side} TABLE AS t FOR EACH STATEMENT "
                f"EXECUTE FUNCTION {function}()"
            )
    # An assignment counts when it becomes submitted or stops being submitted.
    sql.append(
        """
        CREATE OR REPLACE FUNCTION analysis_log_annotation_assignment() RETURNS trigger
        LANGUAGE plpgsql AS $$
        BEGIN
            INSERT INTO analysis_inputchange (scope, key)
            SELECT DISTINCT 'c', n.campaign_id FROM new_t n JOIN old_t o ON o.id = n.id
            WHERE (o.status = 'submitted') IS DISTINCT FROM (n.status = 'submitted')
               OR o.campaign_id IS DISTINCT FROM n.campaign_id;
            RETURN NULL;
        END $$;
        """
    )
    sql.append(
        "CREATE TRIGGER analysis_log_upd AFTER UPDATE ON annotation_assignment "
        "REFERENCING NEW TABLE AS new_t OLD TABLE AS old_t FOR EACH STATEMENT "
        "EXECUTE FUNCTION analysis_log_annotation_assignment()"
    )
    return sql


def _drop_sql() -> list[str]:
    sql = []
    for table, _, _ in SOURCES:
        for suffix, _, _ in EVENTS:
            sql.append(f"DROP TRIGGER IF EXISTS analysis_log_{suffix} ON {table}")
        sql.append(f"DROP FUNCTION IF EXISTS analysis_log_{table}()")
    sql.append("DROP TRIGGER IF EXISTS analysis_log_upd ON annotation_assignment")
    sql.append("DROP FUNCTION IF EXISTS analysis_log_annotation_assignment()")
    return sql


def create_triggers(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for statement in _create_sql():
        schema_editor.execute(statement)


def drop_triggers(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for statement in _drop_sql():
        schema_editor.execute(statement)


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("annotation", "0006_bounds"),
        ("judging", "0005_endpoint_rights"),
    ]

    operations = [
        migrations.CreateModel(
            name="InputChange",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True,
                        primary_key=True,
                        serialize=False,
                        verbose_name="ID",
                    ),
                ),
                ("scope", models.CharField(max_length=1)),
                ("key", models.BigIntegerField()),
            ],
            options={
                "indexes": [
                    models.Index(
                        fields=["scope", "key", "id"], name="inputchange_scope_key_id"
                    )
                ],
            },
        ),
        migrations.RunPython(create_triggers, drop_triggers),
    ]
