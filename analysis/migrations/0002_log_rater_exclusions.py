"""Log a researcher's exclusion decisions (`annotation.RaterExclusion`) as a change of
their campaign's inputs, so that a cached agreement result never outlives one."""

from django.db import migrations

FUNCTION = "analysis_log_annotation_raterexclusion"
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
            f"ON annotation_raterexclusion REFERENCING {side} TABLE AS t "
            f"FOR EACH STATEMENT EXECUTE FUNCTION {FUNCTION}()"
        )


def drop(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for suffix, _, _ in EVENTS:
        schema_editor.execute(
            f"DROP TRIGGER IF EXISTS analysis_log_{suffix} ON annotation_raterexclusion"
        )
    schema_editor.execute(f"DROP FUNCTION IF EXISTS {FUNCTION}()")


class Migration(migrations.Migration):
    dependencies = [
        ("analysis", "0001_inputchange"),
        ("annotation", "0017_rater_reliability"),
    ]

    operations = [migrations.RunPython(create, drop)]
