"""Data: the built-in FLASK rubric, the three role groups and their permissions.

Schema guard (PostgreSQL only): a constraint trigger that refuses an instruction's
relevant skill from a rubric other than the dataset's. On SQLite (the embedded demo
database) the import service is the only writer and checks the same rule.
"""

from django.db import migrations

GUARD_SQL = """
CREATE OR REPLACE FUNCTION annotation_instructionskill_same_rubric() RETURNS trigger AS $$
DECLARE
    skill_rubric bigint;
    dataset_rubric bigint;
BEGIN
    SELECT s.rubric_id INTO skill_rubric FROM annotation_skill s WHERE s.id = NEW.skill_id;
    SELECT d.rubric_id INTO dataset_rubric
      FROM annotation_instruction i JOIN annotation_dataset d ON d.id = i.dataset_id
     WHERE i.id = NEW.instruction_id;
    IF skill_rubric IS DISTINCT FROM dataset_rubric THEN
        RAISE EXCEPTION 'skill % belongs to rubric %, but the dataset uses rubric %',
            NEW.skill_id, skill_rubric, dataset_rubric
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;
CREATE CONSTRAINT TRIGGER annotation_instructionskill_same_rubric
    AFTER INSERT OR UPDATE ON annotation_instructionskill
    DEFERRABLE INITIALLY IMMEDIATE
    FOR EACH ROW EXECUTE FUNCTION annotation_instructionskill_same_rubric();
"""
UNGUARD_SQL = """
DROP TRIGGER IF EXISTS annotation_instructionskill_same_rubric ON annotation_instructionskill;
DROP FUNCTION IF EXISTS annotation_instructionskill_same_rubric();
"""

# Full-text search on instruction text (PostgreSQL); SQLite falls back to icontains.
FTS_SQL = """
CREATE INDEX IF NOT EXISTS annotation_instruction_text_fts
    ON annotation_instruction USING gin (to_tsvector('english', text));
"""
UNFTS_SQL = "DROP INDEX IF EXISTS annotation_instruction_text_fts;"

def forwards(apps, schema_editor):
    # Permissions are created by a post_migrate signal, after this migration on a
    # fresh database; create them now so the groups can be given them.
    from django.contrib.auth.management import create_permissions

    for app_config in apps.get_app_configs():
        app_config.models_module = True
        create_permissions(app_config, apps=apps, verbosity=0)
        app_config.models_module = None

    from annotation.bootstrap import ensure_builtin_data

    ensure_builtin_data(apps)


def backwards(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    Group.objects.filter(name__in=["admin", "researcher", "rater"]).delete()


def guard_forwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(GUARD_SQL, params=None)
        schema_editor.execute(FTS_SQL, params=None)


def guard_backwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(UNGUARD_SQL, params=None)
        schema_editor.execute(UNFTS_SQL, params=None)


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0001_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [
        migrations.RunPython(forwards, backwards),
        migrations.RunPython(guard_forwards, guard_backwards),
    ]
