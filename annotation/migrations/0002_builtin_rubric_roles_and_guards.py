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

ROLE_PERMISSIONS = {
    "admin": None,  # every permission of both apps
    "researcher": [
        "view_rubric", "view_skill", "view_dataset", "view_instruction", "view_response",
        "view_importjob",
    ],
    "rater": [],
}


def forwards(apps, schema_editor):
    from annotation.builtin_rubric import (
        BUILTIN_RUBRIC_NAME,
        BUILTIN_RUBRIC_VERSION,
        BUILTIN_SKILLS,
    )

    Rubric = apps.get_model("annotation", "Rubric")
    Skill = apps.get_model("annotation", "Skill")
    rubric, _ = Rubric.objects.get_or_create(
        name=BUILTIN_RUBRIC_NAME,
        version=BUILTIN_RUBRIC_VERSION,
        defaults={
            "is_builtin": True,
            "description": "The 12 FLASK skills in 4 abilities, in FLASK Eval's own words.",
        },
    )
    for position, (key, name, ability, criteria, anchors) in enumerate(BUILTIN_SKILLS):
        Skill.objects.update_or_create(
            rubric=rubric,
            key=key,
            defaults={
                "name": name, "ability": ability, "criteria": criteria, "position": position,
                **{f"anchor_{i + 1}": text for i, text in enumerate(anchors)},
            },
        )

    # Permissions are created by a post_migrate signal, after this migration on a
    # fresh database; create them now so the groups can be given them.
    from django.contrib.auth.management import create_permissions

    for app_config in apps.get_app_configs():
        app_config.models_module = True
        create_permissions(app_config, apps=apps, verbosity=0)
        app_config.models_module = None

    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for role, codenames in ROLE_PERMISSIONS.items():
        group, _ = Group.objects.get_or_create(name=role)
        if codenames is None:
            perms = Permission.objects.filter(content_type__app_label__in=["annotation", "judging"])
        else:
            perms = Permission.objects.filter(
                content_type__app_label="annotation", codename__in=codenames
            )
        group.permissions.set(perms)


def backwards(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    Group.objects.filter(name__in=list(ROLE_PERMISSIONS)).delete()


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
