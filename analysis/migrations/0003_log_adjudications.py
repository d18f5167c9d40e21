"""Log adjudications (`annotation.Adjudication`) as a change of their campaign's
inputs, as migration 0002 does for exclusion decisions, so that a cached agreement
result with the adjudicated human reference never outlives one."""

from django.db import migrations

TABLE = "annotation_adjudication"
FUNCTION = f"analysis_log_{TABLE}"
EVENTS = [("ins", "INSERT", "NEW"), ("upd", "UPDATE", "NEW"), ("del", "DELETE", "OLD")]


def create(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute(
        f"""
        CREATE OR REPLACE FUNCTION {FUNCTION}() RETURNS trigger
        LANGUAGE plpgsql AS $$
        BEGIN
            INSERT INTO analysis_inputchange (scope, key)
            SELECT DISTINCT 'c', t.campaign_id FROM t WHERE t.campaign_id IS NOT NULL;
            RETURN NULL;
        END $$;
        """
    )
    for suffix, event, side in EVENTS:
        schema_editor.execute(
            f"CREATE TRIGGER analysis_log_{suffix} AFTER {event} "
            f"ON {TABLE} REFERENCING {side} TABLE AS t "
            f"FOR EACH STATEMENT EXECUTE FUNCTION {FUNCTION}()"
        )


def drop(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for suffix, _, _ in EVENTS:
        schema_editor.execute(f"DROP TRIGGER IF EXISTS analysis_log_{suffix} ON {TABLE}")
    schema_editor.execute(f"DROP FUNCTION IF EXISTS {FUNCTION}()")


class Migration(migrations.Migration):
    dependencies = [
        ("analysis", "0002_log_rater_exclusions"),
        ("annotation", "0018_adjudication_history"),
    ]

    operations = [migrations.RunPython(create, drop)]
