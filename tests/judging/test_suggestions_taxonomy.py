"""Accepting a metadata suggestion checks its domains and level against the
dataset's own taxonomy (issue 35's follow-up): a FLASK domain on a dataset that
declares its own is refused naming the field, a declared level beyond 5 is taken."""

from __future__ import annotations

import pytest

from annotation.models import Instruction
from annotation.services.taxonomy import dataset_taxonomy_update
from flaskapp.errors import DomainError
from judging.models import JudgeRun, MetadataSuggestion
from judging.services.suggestions import suggestion_accept
from tests.judging.data import make_config, make_dataset, make_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(admin_user, researcher):
    dataset = make_dataset(instructions=2, models=("alpha",))
    Instruction.objects.filter(dataset=dataset).update(
        domain_1="", domain_2="", difficulty=None
    )
    dataset_taxonomy_update(
        user=admin_user,
        dataset_id=dataset.pk,
        taxonomy={"domains": ["billing", "shipping"],
                  "difficulty": {"1": "routine", "7": "deep"}},
    )  # fmt: skip
    return make_run(
        dataset=dataset,
        config=make_config(researcher),
        kind=JudgeRun.Kind.METADATA,
        status=JudgeRun.Status.COMPLETED,
    )


def _suggest(run, external_id: str, **fields) -> MetadataSuggestion:
    instruction = Instruction.objects.get(dataset=run.dataset, external_id=external_id)
    return MetadataSuggestion.objects.create(run=run, instruction=instruction, **fields)


def test_accept_takes_the_dataset_own_domain_and_level(run, admin_user):
    suggestion = _suggest(run, "1", domains=["Billing"], difficulty=7)

    suggestion_accept(suggestion=suggestion, user=admin_user)

    instruction = Instruction.objects.get(pk=suggestion.instruction_id)
    assert instruction.domains == ["billing"] and instruction.difficulty == 7


@pytest.mark.parametrize(
    "fields, field, words",
    [
        ({"domains": ["math"]}, "domains", "this dataset's domains are: billing"),
        ({"difficulty": 5}, "difficulty", "difficulty 5 is not a level of this"),
    ],
)
def test_accept_refuses_a_value_the_taxonomy_does_not_declare(
    run, admin_user, fields, field, words
):
    suggestion = _suggest(run, "2", **fields)

    with pytest.raises(DomainError) as caught:
        suggestion_accept(suggestion=suggestion, user=admin_user)

    assert caught.value.problems[0].field == field
    assert words in str(caught.value)
    instruction = Instruction.objects.get(pk=suggestion.instruction_id)
    assert instruction.domains == [] and instruction.difficulty is None
