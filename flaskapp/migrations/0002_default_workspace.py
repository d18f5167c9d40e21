"""Every row that existed before workspaces belongs to the default workspace, whose
members are today's users with today's roles (issue 35): the global groups admin,
researcher, reviewer and rater become owner, researcher, reviewer and rater there (a
user in several groups gets the highest). Superusers need no membership (an instance
admin counts as an owner everywhere). The global groups stay; they no longer grant
anything inside a workspace."""

from django.db import migrations

GROUP_TO_ROLE = {"admin": "owner", "researcher": "researcher",
                 "reviewer": "reviewer", "rater": "rater"}
RANK = {"rater": 1, "reviewer": 2, "researcher": 3, "owner": 4}


def forwards(apps, schema_editor):
    Workspace = apps.get_model("flaskapp", "Workspace")
    Membership = apps.get_model("flaskapp", "Membership")
    User = apps.get_model("auth", "User")
    ws, _ = Workspace.objects.get_or_create(slug="default", defaults={"name": "Default"})
    best: dict[int, str] = {}
    for user_id, group in User.groups.through.objects.values_list(
        "user_id", "group__name"
    ):
        role = GROUP_TO_ROLE.get(group)
        if role and RANK[role] > RANK.get(best.get(user_id, ""), 0):
            best[user_id] = role
    Membership.objects.bulk_create(
        [Membership(workspace=ws, user_id=u, role=r) for u, r in best.items()],
        ignore_conflicts=True,
    )


class Migration(migrations.Migration):
    dependencies = [
        ("flaskapp", "0001_workspaces"),
        ("auth", "0012_alter_user_first_name_max_length"),
    ]
    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
