"""Built-in data every installation has: the FLASK rubric and the role groups.

Idempotent. Called by migration 0002 (with the historical app registry) and by the test
suite after a transactional test has flushed the database.
"""

from __future__ import annotations

from annotation.builtin_rubric import (
    BUILTIN_RUBRIC_NAME,
    BUILTIN_RUBRIC_VERSION,
    BUILTIN_SKILLS,
)

# FLASK's four abilities as `Rubric.groups` holds them (the model's `FLASK_GROUPS`;
# plain data here, as the migrations need it without the models).
FLASK_GROUPS = [
    {"key": "logical_thinking", "name": "Logical Thinking"},
    {"key": "background_knowledge", "name": "Background Knowledge"},
    {"key": "problem_handling", "name": "Problem Handling"},
    {"key": "user_alignment", "name": "User Alignment"},
]

# None: every permission of the annotation and judging apps.
ROLE_PERMISSIONS: dict[str, list[str] | None] = {
    "admin": None,
    "researcher": [
        "view_rubric",
        "view_skill",
        "view_dataset",
        "view_instruction",
        "view_response",
        "view_importjob",
    ],
    "rater": [],
    "reviewer": [],
}


def ensure_builtin_data(apps=None) -> None:
    """Create (or complete) the built-in rubric and the role groups."""
    if apps is None:
        from django.apps import apps
    Rubric = apps.get_model("annotation", "Rubric")
    Skill = apps.get_model("annotation", "Skill")
    # Migration 0002 runs this before migration 0011 adds the groups and scales (which
    # 0011 then fills); with today's models they are set here.
    fields = {f.name for f in Rubric._meta.get_fields()}
    scales = "groups" in fields
    workspaces = "workspace" in fields
    rubric, _ = Rubric.objects.get_or_create(
        name=BUILTIN_RUBRIC_NAME,
        version=BUILTIN_RUBRIC_VERSION,
        # Shared by every workspace, read-only (issue 35): a workspace's own rubric
        # of that name is another row.
        **({"workspace": None} if workspaces else {}),
        defaults={
            "is_builtin": True,
            "description": "The 12 FLASK skills in 4 abilities, in FLASK Eval's own words.",
            **({"groups": FLASK_GROUPS} if scales else {}),
        },
    )
    for position, (key, name, ability, criteria, anchors) in enumerate(BUILTIN_SKILLS):
        texts = {f"anchor_{i + 1}": text for i, text in enumerate(anchors)}
        Skill.objects.get_or_create(
            rubric=rubric,
            key=key,
            defaults={
                "name": name,
                "ability": ability,
                "criteria": criteria,
                "position": position,
                **texts,
                **(
                    {
                        "group": ability,
                        "scale_anchors": {
                            str(i + 1): text for i, text in enumerate(anchors)
                        },
                    }
                    if scales
                    else {}
                ),
            },
        )
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for role, codenames in ROLE_PERMISSIONS.items():
        group, _ = Group.objects.get_or_create(name=role)
        perms = Permission.objects.filter(
            content_type__app_label__in=["annotation", "judging"]
        )
        if codenames is not None:
            perms = perms.filter(
                content_type__app_label="annotation", codename__in=codenames
            )
        group.permissions.set(perms)
