"""Built-in data every installation has: the FLASK rubric and the three role groups.

Idempotent. Called by migration 0002 (with the historical app registry) and by the test
suite after a transactional test has flushed the database.
"""

from __future__ import annotations

from annotation.builtin_rubric import (
    BUILTIN_RUBRIC_NAME,
    BUILTIN_RUBRIC_VERSION,
    BUILTIN_SKILLS,
)

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
}


def ensure_builtin_data(apps=None) -> None:
    """Create (or complete) the built-in rubric and the role groups."""
    if apps is None:
        from django.apps import apps
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
        Skill.objects.get_or_create(
            rubric=rubric,
            key=key,
            defaults={
                "name": name,
                "ability": ability,
                "criteria": criteria,
                "position": position,
                **{f"anchor_{i + 1}": text for i, text in enumerate(anchors)},
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
