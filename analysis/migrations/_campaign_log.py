"""The triggers that log a change of a campaign-scoped table (one with a
`campaign_id`) as a change of that campaign's agreement inputs, on PostgreSQL; used
by the migrations that add them (the loader skips modules starting with "_")."""

EVENTS = [("ins", "INSERT", "NEW"), ("upd", "UPDATE", "NEW"), ("del", "DELETE", "OLD")]


def creator(table: str):
    """A RunPython forward function creating the log triggers of `table`."""
    function = f"analysis_log_{table}"

    def create(apps, schema_editor):
        if schema_editor.connection.vendor != "postgresql":
            return
        schema_editor.execute(
            f"""
            CREATE OR REPLACE FUNCTION {function}() RETURNS trigger
            LANGUAGE plpgsql AS $$
            BEGIN
                INSERT INTO analysis_inputchange (scope, key)
                SELECT DISTINCT 'c', t.campaign_id FROM t
                WHERE t.campaign_id IS NOT NULL;
                RETURN NULL;
            END $$;
            """
        )
        for suffix, event, side in EVENTS:
            schema_editor.execute(
                f"CREATE TRIGGER analysis_log_{suffix} AFTER {event} "
                f"ON {table} REFERENCING {side} TABLE AS t "
                f"FOR EACH STATEMENT EXECUTE FUNCTION {function}()"
            )

    return create


def dropper(table: str):
    """The RunPython backward function of `creator(table)`."""

    def drop(apps, schema_editor):
        if schema_editor.connection.vendor != "postgresql":
            return
        for suffix, _, _ in EVENTS:
            schema_editor.execute(
                f"DROP TRIGGER IF EXISTS analysis_log_{suffix} ON {table}"
            )
        schema_editor.execute(f"DROP FUNCTION IF EXISTS analysis_log_{table}()")

    return drop
