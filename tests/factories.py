"""factory_boy factories. Rubrics come from the built-in migration, not from factories."""

from __future__ import annotations

import factory
from django.contrib.auth.models import Group, Permission, User
from django.contrib.contenttypes.models import ContentType

from annotation.models import Dataset, Instruction, InstructionSkill, Response, Skill
from annotation.services.campaign_spec import spec_from_fields
from annotation.services.campaigns import campaign_create
from annotation.services.rubrics import rubric_get_default
from flaskapp.models import Membership
from flaskapp.workspaces import default_workspace

# The global groups' roles in a workspace (as in migration flaskapp 0002).
GROUP_TO_WORKSPACE_ROLE = {
    "admin": "owner",
    "researcher": "researcher",
    "reviewer": "reviewer",
    "rater": "rater",
}


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = User
        django_get_or_create = ("username",)
        skip_postgeneration_save = True  # the hooks write their own rows

    username = factory.Sequence(lambda n: f"user{n}")
    password = factory.django.Password("pw-123456")

    @factory.post_generation
    def role(self, create, extracted, **kwargs):
        """`role="researcher"`: the global group, and the same role in the default
        workspace (as migration flaskapp 0002 gave today's users), so tests written
        before workspaces keep their meaning. `workspace=` names another workspace."""
        if create and extracted:
            self.groups.add(Group.objects.get(name=extracted))
            if extracted in GROUP_TO_WORKSPACE_ROLE:
                Membership.objects.update_or_create(
                    workspace=kwargs.get("workspace") or default_workspace(),
                    user=self,
                    defaults={"role": GROUP_TO_WORKSPACE_ROLE[extracted]},
                )


def grant_endpoint_rights(user: User) -> User:
    """Give `user` the `judging.manage_endpoints` permission (what an admin grants in
    the Django admin), so they may create and change judge endpoints."""
    from judging.models import JudgeConfig

    permission, _ = Permission.objects.get_or_create(
        codename="manage_endpoints",
        content_type=ContentType.objects.get_for_model(JudgeConfig),
        defaults={"name": "Can create and change judge endpoints"},
    )
    user.user_permissions.add(permission)
    for cache in ("_perm_cache", "_user_perm_cache", "_group_perm_cache"):
        user.__dict__.pop(cache, None)
    return user


class DatasetFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Dataset

    name = factory.Sequence(lambda n: f"dataset-{n}")
    rubric = factory.LazyFunction(rubric_get_default)


class InstructionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Instruction
        skip_postgeneration_save = True  # the hooks write their own rows

    dataset = factory.SubFactory(DatasetFactory)
    external_id = factory.Sequence(lambda n: str(n + 1))
    text = factory.Sequence(lambda n: f"Instruction number {n}: explain something.")
    reference_answer = "A reference answer."
    source_task = "unit_test"
    domain_1 = "math"
    difficulty = 3
    position = factory.Sequence(lambda n: n)

    @factory.post_generation
    def skill_keys(self, create, extracted, **kwargs):
        """`skill_keys=["factuality", ...]` links relevant skills in that order."""
        if not create:
            return
        keys = (
            extracted
            if extracted is not None
            else ["comprehension", "factuality", "readability"]
        )
        skills = {
            s.key: s for s in Skill.objects.filter(rubric_id=self.dataset.rubric_id)
        }
        InstructionSkill.objects.bulk_create(
            InstructionSkill(instruction=self, skill=skills[k], rank=i)
            for i, k in enumerate(keys)
        )


class ResponseFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Response

    instruction = factory.SubFactory(InstructionFactory)
    model_name = factory.Sequence(lambda n: f"model-{n}")
    text = factory.Sequence(lambda n: f"Response text {n}.")


def dataset_with_responses(n_instructions=3, models=("m-a", "m-b")):
    """A dataset of `n_instructions` instructions, one response per model each."""
    dataset = DatasetFactory()
    for _ in range(n_instructions):
        instruction = InstructionFactory(dataset=dataset)
        for model in models:
            ResponseFactory(instruction=instruction, model_name=model)
    return dataset


def api_token(user) -> str:
    """An API token key for `user`, for ``Authorization: Token <key>`` headers.

    Tests authenticate through this helper only, so the token library can change
    without touching them.
    """
    from flaskapp.tokens import token_create

    return token_create(user=user).token


def campaign_from_fields(*, created_by, pairwise: bool = False, **fields):
    """A campaign made by `campaign_create` from the flat fields of the campaign
    forms and API bodies (`campaign_spec.spec_from_fields`: `skills`, `overlap`,
    `gold_rate`, `pair_mode`, ...); for helpers whose callers vary a few options."""
    spec = spec_from_fields(fields, pairwise=pairwise)
    return campaign_create(spec=spec, created_by=created_by)
