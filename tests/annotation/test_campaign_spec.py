"""The campaign spec: policies with their defaults and checks, one `campaign_create`
for both kinds, and the flat fields of forms and API bodies mapped onto a spec."""

from __future__ import annotations

import dataclasses

import pytest

from annotation.items import REGISTRY
from annotation.models import Campaign, PreferencePair
from annotation.services.campaign_spec import (
    CampaignSpec,
    CritiquePolicy,
    GoldPolicy,
    PairPolicy,
    QualificationPolicy,
    SamplingPolicy,
    ServingPolicy,
    spec_from_fields,
)
from annotation.services.campaigns import campaign_create
from flaskapp.errors import DomainError
from tests.factories import dataset_with_responses

pytestmark = pytest.mark.django_db


def test_a_spec_is_a_frozen_value_with_lists_kept_as_tuples():
    dataset = dataset_with_responses(n_instructions=1)
    spec = CampaignSpec(name="  c  ", dataset=dataset, models=["m-a"], skills=["x"])
    assert spec.name == "c" and spec.models == ("m-a",) and spec.skills == ("x",)
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.name = "other"
    assert spec.kind == Campaign.Kind.POINTWISE
    assert dataclasses.replace(spec, pairs=PairPolicy()).kind == Campaign.Kind.PAIRWISE


@pytest.mark.parametrize(
    "policy, field",
    [
        ({"critique": CritiquePolicy(mode="with_scores")}, "critique"),
        ({"gold": GoldPolicy(rate=3)}, "gold_rate"),
        ({"qualification": QualificationPolicy(size=2)}, "qualification_size"),
        ({"sampling": SamplingPolicy(sample=((1, 0.5),))}, "sample"),
    ],
)
def test_a_pairwise_spec_refuses_the_pointwise_policies_naming_their_field(
    researcher, policy, field
):
    dataset = dataset_with_responses(n_instructions=1)
    spec = CampaignSpec(name="p", dataset=dataset, pairs=PairPolicy(), **policy)
    assert field in {p.field for p in spec.problems()}
    with pytest.raises(DomainError):
        campaign_create(spec=spec, created_by=researcher)
    assert not Campaign.objects.exists() and not PreferencePair.objects.exists()


def test_every_problem_of_every_policy_is_reported_at_once(researcher):
    dataset = dataset_with_responses(n_instructions=1)
    spec = CampaignSpec(
        name=" ",
        dataset=dataset,
        models=["nope"],
        serving=ServingPolicy(overlap=0, lock_ttl_minutes=0),
        critique=CritiquePolicy(mode="loud", min_length=-1),
        gold=GoldPolicy(rate=2),  # the dataset has no gold items
    )
    fields = {p.field for p in spec.problems()}
    assert {
        "name",
        "models",
        "overlap",
        "lock_ttl_minutes",
        "critique",
        "critique_min_length",
        "gold_rate",
    } <= fields


def test_one_campaign_create_makes_either_kind_from_its_spec(researcher):
    dataset = dataset_with_responses(n_instructions=2, models=("m-a", "m-b"))
    pointwise = campaign_create(
        spec=CampaignSpec(name="p", dataset=dataset), created_by=researcher
    )
    pairwise = campaign_create(
        spec=CampaignSpec(name="q", dataset=dataset, pairs=PairPolicy()),
        created_by=researcher,
    )
    assert pointwise.kind == "pointwise" and pointwise.items.count() == 4
    assert pairwise.kind == "pairwise" and pairwise.items.count() == 2
    assert pairwise.skill_mode == Campaign.SkillMode.CHOSEN
    assert not pairwise.items.filter(pair__isnull=True).exists()


def test_the_fields_of_forms_and_api_bodies_map_onto_the_policies():
    dataset = dataset_with_responses(n_instructions=1)
    spec = spec_from_fields(
        {
            "name": "c",
            "dataset": dataset,
            "overlap": 2,
            "rater_quota": None,  # a blank form field: the policy's default
            "critique": "",
            "gold_rate": 3,
            "training_phase": True,
            "qualification_pass": 0.5,
            "show_reference": False,
        }
    )
    assert spec.serving == ServingPolicy(overlap=2)
    assert spec.critique == CritiquePolicy()
    assert spec.gold == GoldPolicy(rate=3, training_phase=True)
    assert spec.qualification == QualificationPolicy(pass_mark=0.5)
    assert spec.display.show_reference is False
    assert spec.pairs is None
    pairs = spec_from_fields(
        {"name": "c", "dataset": dataset, "pair_mode": "sample", "sample": 5},
        pairwise=True,
    )
    assert pairs.pairs == PairPolicy(mode="sample", sample=5)


def test_every_campaign_kind_has_one_item_kind():
    assert set(REGISTRY) == set(Campaign.Kind.values)
    for key, kind in REGISTRY.items():
        assert kind.campaign_kind == key
