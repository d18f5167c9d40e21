"""Campaign items without a foreign-key constraint on their response (see the model),
the reference held by a delete guard instead; the pair index only where a pair is set.
"""

import django.db.models.deletion
from django.db import migrations, models


GUARD_MESSAGE = "a response that a campaign item refers to cannot be deleted"

POSTGRES_GUARD = f"""
CREATE OR REPLACE FUNCTION annotation_response_guard() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (
        SELECT 1 FROM old_t o JOIN annotation_campaignitem ci ON ci.response_id = o.id
    ) THEN
        RAISE EXCEPTION USING ERRCODE = 'foreign_key_violation',
            MESSAGE = '{GUARD_MESSAGE}';
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER annotation_response_guard AFTER DELETE ON annotation_response
REFERENCING OLD TABLE AS old_t FOR EACH STATEMENT
EXECUTE FUNCTION annotation_response_guard();
"""
SQLITE_GUARD = f"""
CREATE TRIGGER annotation_response_guard BEFORE DELETE ON annotation_response
FOR EACH ROW WHEN EXISTS (
    SELECT 1 FROM annotation_campaignitem WHERE response_id = OLD.id
)
BEGIN SELECT RAISE(ABORT, '{GUARD_MESSAGE}'); END;
"""


def create_guard(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(POSTGRES_GUARD)
    elif vendor == "sqlite":
        schema_editor.execute(SQLITE_GUARD)


def drop_guard(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor in ("postgresql", "sqlite"):
        on = " ON annotation_response" if vendor == "postgresql" else ""
        schema_editor.execute(f"DROP TRIGGER IF EXISTS annotation_response_guard{on}")
    if vendor == "postgresql":
        schema_editor.execute("DROP FUNCTION IF EXISTS annotation_response_guard()")


class Migration(migrations.Migration):

    dependencies = [
        ('annotation', '0006_bounds'),
    ]

    operations = [
        migrations.AlterField(
            model_name='campaignitem',
            name='pair',
            field=models.ForeignKey(blank=True, db_index=False, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='annotation.preferencepair'),
        ),
        migrations.AlterField(
            model_name='campaignitem',
            name='response',
            field=models.ForeignKey(db_constraint=False, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='annotation.response'),
        ),
        migrations.AddIndex(
            model_name='campaignitem',
            index=models.Index(condition=models.Q(('pair__isnull', False)), fields=['pair'], name='campaign_item_pair_idx'),
        ),
        migrations.RunPython(create_guard, drop_guard),
    ]
