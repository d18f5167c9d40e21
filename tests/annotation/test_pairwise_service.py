"""Pairwise campaign services: pairs from a dataset, campaign creation, next (order,
locks, expiry, breadth-first), submit (mapping back to the original numbering,
validation, idempotency), skip, and the overlap invariant under concurrency."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest
from django.core.exceptions import PermissionDenied
from django.db import connection
from django.db.models import Count
from django.http import Http404
from django.utils import timezone

from annotation.items.pairwise import (
    map_shown_label,
    shown_order_for,
    unmap_shown_label,
)
from annotation.models import (
    Assignment,
    Campaign,
    CampaignItem,
    HumanPreference,
    PreferencePair,
)
from annotation.services.campaign_spec import (
    CampaignSpec,
    DisplayPolicy,
    PairPolicy,
    ServingPolicy,
)
from annotation.services.campaigns import campaign_create, campaign_set_status
from annotation.services.exclusions import rater_decision_end, rater_decision_start
from annotation.services.pairs import pairs_create_from_dataset
from annotation.services.pairwise import (
    pairwise_amend,
    pairwise_next,
    pairwise_skip,
    pairwise_submit,
)
from annotation.services.rating import assignment_next, assignments_expire
from flaskapp import limits
from flaskapp.errors import DomainError
from tests.factories import (
    DatasetFactory,
    InstructionFactory,
    ResponseFactory,
    UserFactory,
    campaign_from_fields,
)


def pytest_generate_tests(metafunc):
    """On PostgreSQL every test here serves through both implementations: the raw-SQL
    hot path (`services.serving_sql`, the same statement as pointwise serving) and
    the ORM path (the only one on SQLite, and the fallback for the rare cases)."""
    if "serving_path" in metafunc.fixturenames:
        paths = ["sql", "orm"] if connection.vendor == "postgresql" else ["orm"]
        metafunc.parametrize("serving_path", paths, indirect=True)


@pytest.fixture(autouse=True)
def serving_path(request, settings):
    settings.RATING_FAST_SQL = request.param == "sql"
    return request.param


def make_dataset(n_instructions=3, models=("m-a", "m-b", "m-c")):
    dataset = DatasetFactory()
    for _ in range(n_instructions):
        instruction = InstructionFactory(dataset=dataset)
        for model in models:
            ResponseFactory(instruction=instruction, model_name=model)
    return dataset


@pytest.fixture
def raters(db):
    return [UserFactory(username=f"pr{i}", role="rater") for i in range(3)]


@pytest.fixture
def campaign(db, researcher, raters):
    return campaign_create(
        spec=CampaignSpec(
            name="pc",
            dataset=make_dataset(models=("m-a", "m-b")),
            raters=raters,
            pairs=PairPolicy(),
        ),
        created_by=researcher,
    )


def serve(campaign, rater):
    return pairwise_next(campaign=campaign, rater=rater).assignment


# --- Pairs -------------------------------------------------------------------------------


def test_all_pairs_makes_every_model_pair_per_instruction(db):
    dataset = make_dataset(n_instructions=2)
    result = pairs_create_from_dataset(dataset=dataset)
    assert result.created == 6 and result.reused == 0
    names = {
        (p.response_1.model_name, p.response_2.model_name)
        for p in PreferencePair.objects.filter(dataset=dataset)
    }
    assert names == {("m-a", "m-b"), ("m-a", "m-c"), ("m-b", "m-c")}
    for pair in result.pairs:
        assert pair.response_1.instruction_id == pair.instruction_id
        assert pair.response_2.instruction_id == pair.instruction_id


def test_pairs_creation_is_idempotent_and_reuses_reversed_pairs(db):
    dataset = make_dataset(n_instructions=1, models=("m-a", "m-b"))
    r_a, r_b = dataset.instructions.get().responses.order_by("model_name")
    imported = PreferencePair.objects.create(
        dataset=dataset,
        instruction=r_a.instruction,
        response_1=r_b,
        response_2=r_a,
        source="arena",
    )
    result = pairs_create_from_dataset(dataset=dataset)
    assert result.created == 0 and result.pairs == [imported]
    again = pairs_create_from_dataset(dataset=dataset)
    assert again.created == 0
    assert PreferencePair.objects.filter(dataset=dataset).count() == 1


def test_baseline_mode_pairs_the_baseline_with_each_other_model(db):
    dataset = make_dataset(n_instructions=2)
    lone = InstructionFactory(dataset=dataset)
    ResponseFactory(instruction=lone, model_name="m-b")
    ResponseFactory(instruction=lone, model_name="m-c")
    result = pairs_create_from_dataset(
        dataset=dataset, mode="baseline", baseline_model="m-b"
    )
    assert result.created == 5  # 2 per full instruction, 1 for `lone`
    assert result.instructions_without_baseline == 0
    assert {p.response_1.model_name for p in result.pairs} == {"m-b"}
    assert {p.response_2.model_name for p in result.pairs} == {"m-a", "m-c"}
    only_a = pairs_create_from_dataset(
        dataset=dataset, mode="baseline", baseline_model="m-a", models=["m-c"]
    )
    assert only_a.instructions_without_baseline == 1  # `lone` has no m-a response
    assert [
        (p.response_1.model_name, p.response_2.model_name) for p in only_a.pairs
    ] == [("m-a", "m-c")] * 2


def test_sample_mode_is_seeded(db):
    dataset = make_dataset(n_instructions=10)
    first = pairs_create_from_dataset(dataset=dataset, mode="sample", sample=7, seed=3)
    again = pairs_create_from_dataset(dataset=dataset, mode="sample", sample=7, seed=3)
    assert len(first.pairs) == 7 and first.created == 7
    assert [p.pk for p in again.pairs] == [p.pk for p in first.pairs]
    assert again.created == 0
    other = pairs_create_from_dataset(dataset=dataset, mode="sample", sample=7, seed=4)
    assert {p.pk for p in other.pairs} != {p.pk for p in first.pairs}


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"mode": "triples"}, "mode"),
        ({"mode": "baseline"}, "baseline_model"),
        ({"mode": "baseline", "baseline_model": "nope"}, "baseline_model"),
        ({"baseline_model": "m-a"}, "baseline_model"),
        ({"models": ["nope"]}, "models"),
        ({"mode": "sample"}, "sample"),
        ({"mode": "sample", "sample": 0}, "sample"),
        ({"mode": "sample", "sample": 1000}, "sample"),
        ({"sample": 3}, "sample"),
        ({"seed": "x"}, "seed"),
    ],
)
def test_pairs_creation_rejects_bad_input_naming_the_parameter(db, kwargs, field):
    dataset = make_dataset(n_instructions=1)
    with pytest.raises(DomainError) as exc:
        pairs_create_from_dataset(dataset=dataset, **kwargs)
    assert field in {p.field for p in exc.value.problems}
    assert not PreferencePair.objects.exists()


# --- Campaign creation -------------------------------------------------------------------


def test_campaign_create_makes_one_item_per_pair(researcher, raters):
    dataset = make_dataset(n_instructions=4)
    campaign = campaign_create(
        spec=CampaignSpec(
            name="c",
            dataset=dataset,
            skills=["factuality", "readability"],
            raters=raters,
            serving=ServingPolicy(overlap=2),
            display=DisplayPolicy(guidelines="Compare them."),
            pairs=PairPolicy(),
        ),
        created_by=researcher,
    )
    assert campaign.kind == Campaign.Kind.PAIRWISE
    assert not campaign.show_model_names  # blind by default
    items = list(campaign.items.select_related("pair"))
    assert len(items) == 12
    assert {i.target for i in items} == {2}
    assert all(i.response_id == i.pair.response_1_id for i in items)
    assert [s.key for s in campaign.chosen_skills.order_by("position")] == [
        "factuality",
        "readability",
    ]


def test_campaign_from_existing_pairs_by_category(researcher, raters):
    dataset = make_dataset(n_instructions=2, models=("m-a", "m-b"))
    for i, instruction in enumerate(dataset.instructions.all()):
        r1, r2 = instruction.responses.all()
        PreferencePair.objects.create(
            dataset=dataset,
            instruction=instruction,
            response_1=r1,
            response_2=r2,
            category="chat" if i == 0 else "safety",
        )
    campaign = campaign_create(
        spec=CampaignSpec(
            name="c",
            dataset=dataset,
            raters=raters,
            pairs=PairPolicy(mode="existing", categories=["safety"]),
        ),
        created_by=researcher,
    )
    assert [i.pair.category for i in campaign.items.select_related("pair")] == [
        "safety"
    ]


def test_campaign_overlap_percent_samples_pairs(researcher):
    dataset = make_dataset(n_instructions=40)
    campaign = campaign_create(
        spec=CampaignSpec(
            name="c",
            dataset=dataset,
            serving=ServingPolicy(overlap=3, overlap_percent=30),
            pairs=PairPolicy(),
        ),
        created_by=researcher,
    )
    targets = list(campaign.items.values_list("target", flat=True))
    assert set(targets) == {1, 3}
    assert 0.15 < targets.count(3) / len(targets) < 0.45


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"name": " "}, "name"),
        ({"overlap": 0}, "overlap"),
        ({"overlap_percent": 101}, "overlap_percent"),
        ({"lock_ttl_minutes": 0}, "lock_ttl_minutes"),
        ({"rater_quota": 0}, "rater_quota"),
        ({"pair_mode": "nope"}, "pair_mode"),
        ({"skills": ["nope"]}, "skills"),
        ({"pair_mode": "existing", "categories": ["nope"]}, "categories"),
        ({"categories": ["chat"]}, "categories"),
        ({"pair_mode": "existing"}, "pair_mode"),  # the dataset has no pairs yet
        ({"pair_mode": "baseline"}, "baseline_model"),
        ({"pair_mode": "sample", "sample": 999}, "sample"),
    ],
)
def test_campaign_create_rejects_bad_input_naming_the_field(researcher, kwargs, field):
    dataset = make_dataset(n_instructions=1)
    options = {"name": "c", **kwargs}
    with pytest.raises(DomainError) as exc:
        campaign_from_fields(
            dataset=dataset, created_by=researcher, pairwise=True, **options
        )
    assert field in {p.field for p in exc.value.problems}
    assert not Campaign.objects.exists()
    assert not PreferencePair.objects.exists()


def test_campaign_create_refuses_raters_and_non_rater_members(rater, researcher):
    dataset = make_dataset(n_instructions=1)
    with pytest.raises(PermissionDenied):
        campaign_create(
            spec=CampaignSpec(name="c", dataset=dataset, pairs=PairPolicy()),
            created_by=rater,
        )
    with pytest.raises(DomainError) as exc:
        campaign_create(
            spec=CampaignSpec(
                name="c", dataset=dataset, raters=[researcher], pairs=PairPolicy()
            ),
            created_by=researcher,
        )
    assert exc.value.problems[0].field == "raters"


# --- Next ---------------------------------------------------------------------------------


def test_next_records_a_stable_shown_order_and_a_reason(campaign, raters):
    a = serve(campaign, raters[0])
    assert a.pair_id is not None and a.shown_order in ("12", "21")
    assert a.shown_order == shown_order_for(
        campaign_id=campaign.pk, pair_id=a.pair_id, rater_id=raters[0].pk
    )
    assert a.reason == "new pair"
    assert serve(campaign, raters[0]).pk == a.pk  # a reload resumes it


def test_shown_orders_are_mixed_across_raters_and_pairs(db):
    orders = {
        shown_order_for(campaign_id=1, pair_id=p, rater_id=r)
        for p in range(20)
        for r in range(5)
    }
    assert orders == {"12", "21"}


def test_next_finishes_partly_compared_pairs_first(researcher, raters):
    campaign = campaign_create(
        spec=CampaignSpec(
            name="c",
            dataset=make_dataset(),
            raters=raters,
            serving=ServingPolicy(overlap=2),
            pairs=PairPolicy(),
        ),
        created_by=researcher,
    )
    first = serve(campaign, raters[0])
    pairwise_submit(assignment_id=first.pk, rater=raters[0], label="A")
    second = serve(campaign, raters[1])
    assert second.pair_id == first.pair_id
    assert second.reason.startswith("finishing a partly compared pair")


def test_next_never_serves_a_pair_twice_to_one_rater(researcher, raters):
    campaign = campaign_create(
        spec=CampaignSpec(
            name="c",
            dataset=make_dataset(n_instructions=2),
            raters=raters,
            serving=ServingPolicy(overlap=3),
            pairs=PairPolicy(),
        ),
        created_by=researcher,
    )
    seen = []
    while (a := serve(campaign, raters[0])) is not None:
        seen.append(a.pair_id)
        pairwise_submit(assignment_id=a.pk, rater=raters[0], label="tie")
    assert len(seen) == 6 and len(set(seen)) == 6


def test_next_says_when_the_rest_is_locked_by_others(researcher, raters):
    campaign = campaign_create(
        spec=CampaignSpec(
            name="c",
            dataset=make_dataset(n_instructions=1, models=("m-a", "m-b")),
            raters=raters,
            pairs=PairPolicy(),
        ),
        created_by=researcher,
    )
    assert serve(campaign, raters[0]) is not None
    result = pairwise_next(campaign=campaign, rater=raters[1])
    assert result.assignment is None and result.locked_by_others == 1
    assert "being compared by others" in result.message


def test_expired_lock_returns_the_pair_to_the_pool(researcher, raters):
    campaign = campaign_create(
        spec=CampaignSpec(
            name="c",
            dataset=make_dataset(n_instructions=1, models=("m-a", "m-b")),
            raters=raters,
            serving=ServingPolicy(lock_ttl_minutes=5),
            pairs=PairPolicy(),
        ),
        created_by=researcher,
    )
    held = serve(campaign, raters[0])
    later = timezone.now() + timedelta(minutes=6)
    taken = pairwise_next(campaign=campaign, rater=raters[1], now=later).assignment
    assert taken is not None and taken.pair_id == held.pair_id
    held.refresh_from_db()
    assert held.status == Assignment.Status.EXPIRED
    # The late submit finds no free slot: refused and noted, nothing stored.
    with pytest.raises(DomainError, match="expired"):
        pairwise_submit(assignment_id=held.pk, rater=raters[0], label="A")
    held.refresh_from_db()
    assert "refused" in held.note
    assert not HumanPreference.objects.filter(assignment=held).exists()


def test_next_refuses_a_pointwise_campaign(researcher, raters):
    pointwise = campaign_create(
        spec=CampaignSpec(name="p", dataset=make_dataset(), raters=raters),
        created_by=researcher,
    )
    with pytest.raises(DomainError):
        pairwise_next(campaign=pointwise, rater=raters[0])


def test_paused_campaign_serves_nothing_and_refuses_submit(
    campaign, raters, researcher
):
    a = serve(campaign, raters[0])
    campaign_set_status(campaign=campaign, status="paused", user=researcher)
    result = pairwise_next(campaign=campaign, rater=raters[1])
    assert result.assignment is None and "paused" in result.message
    with pytest.raises(DomainError, match="paused"):
        pairwise_submit(assignment_id=a.pk, rater=raters[0], label="A")


def test_quota_limits_a_raters_work(researcher, raters):
    campaign = campaign_create(
        spec=CampaignSpec(
            name="c",
            dataset=make_dataset(),
            raters=raters,
            serving=ServingPolicy(rater_quota=2),
            pairs=PairPolicy(),
        ),
        created_by=researcher,
    )
    for _ in range(2):
        a = serve(campaign, raters[0])
        pairwise_submit(assignment_id=a.pk, rater=raters[0], label="B")
    result = pairwise_next(campaign=campaign, rater=raters[0])
    assert result.assignment is None and "quota" in result.message


# --- Submit -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "order, shown, stored",
    [
        ("12", "A", "1"),
        ("12", "B", "2"),
        ("21", "A", "2"),
        ("21", "B", "1"),
        ("21", "tie", "tie"),
        ("12", "tie", "tie"),
    ],
)
def test_submit_maps_the_shown_label_back_to_the_original_numbering(
    researcher, raters, order, shown, stored
):
    campaign = campaign_create(
        spec=CampaignSpec(
            name="c",
            dataset=make_dataset(n_instructions=1, models=("m-a", "m-b")),
            skills=["factuality"],
            raters=raters,
            pairs=PairPolicy(),
        ),
        created_by=researcher,
    )
    a = serve(campaign, raters[0])
    Assignment.objects.filter(pk=a.pk).update(shown_order=order)
    pairwise_submit(
        assignment_id=a.pk,
        rater=raters[0],
        label=shown,
        skill_labels={"factuality": shown},
        rationale="  because  ",
        active_seconds=12.5,
    )
    pref = HumanPreference.objects.get(assignment=a)
    assert pref.label == stored
    assert pref.skill_labels == {"factuality": stored}
    assert pref.shown_order == order and pref.rater == raters[0]
    assert pref.origin == HumanPreference.Origin.CAMPAIGN
    assert pref.rationale == "because"
    a.refresh_from_db()
    assert a.status == Assignment.Status.SUBMITTED and a.active_seconds == 12.5
    item = CampaignItem.objects.get(pk=a.item_id)
    assert (item.submitted, item.reserved, item.open_slots) == (1, 0, 0)
    campaign.dataset.rubric.refresh_from_db()
    assert campaign.dataset.rubric.is_frozen  # a skill label used the rubric


def test_map_shown_label_matches_the_shared_rule():
    assert map_shown_label("A", "21") == "2"
    assert map_shown_label("B", "21") == "1"
    assert map_shown_label("A", "12") == "1"


def test_submit_is_idempotent(campaign, raters):
    a = serve(campaign, raters[0])
    pairwise_submit(assignment_id=a.pk, rater=raters[0], label="A")
    again = pairwise_submit(assignment_id=a.pk, rater=raters[0], label="B")
    assert again.status == Assignment.Status.SUBMITTED
    assert HumanPreference.objects.filter(assignment=a).count() == 1
    assert CampaignItem.objects.get(pk=a.item_id).submitted == 1


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"label": "C"}, "label"),
        ({"label": ""}, "label"),
        ({"label": "1"}, "label"),
        ({"label": None}, "label"),
        (
            {"label": "A", "skill_labels": {"factuality": "A"}},
            "skill_labels.readability",
        ),
        (
            {"label": "A", "skill_labels": {"factuality": "X", "readability": "B"}},
            "skill_labels.factuality",
        ),
        (
            {
                "label": "A",
                "skill_labels": {"factuality": "A", "readability": "B", "nope": "A"},
            },
            "skill_labels.nope",
        ),
        ({"label": "A", "skill_labels": ["A"]}, "skill_labels"),
        (
            {
                "label": "A",
                "skill_labels": {"factuality": "A", "readability": "B"},
                "rationale": "x" * (limits.RATIONALE + 1),
            },
            "rationale",
        ),
    ],
)
def test_submit_rejects_bad_input_naming_the_field(researcher, raters, kwargs, field):
    campaign = campaign_create(
        spec=CampaignSpec(
            name="c",
            dataset=make_dataset(n_instructions=1),
            skills=["factuality", "readability"],
            raters=raters,
            pairs=PairPolicy(),
        ),
        created_by=researcher,
    )
    a = serve(campaign, raters[0])
    with pytest.raises(DomainError) as exc:
        pairwise_submit(assignment_id=a.pk, rater=raters[0], **kwargs)
    assert field in {p.field for p in exc.value.problems}
    assert not HumanPreference.objects.exists()
    a.refresh_from_db()
    assert a.status == Assignment.Status.SERVED


def test_rater_cannot_submit_or_skip_another_raters_assignment(campaign, raters):
    a = serve(campaign, raters[0])
    with pytest.raises(Http404):
        pairwise_submit(assignment_id=a.pk, rater=raters[1], label="A")
    with pytest.raises(Http404):
        pairwise_skip(assignment_id=a.pk, rater=raters[1], reason="x")
    assert not HumanPreference.objects.exists()


def test_pointwise_assignments_are_not_reachable_here(researcher, raters):
    pointwise = campaign_create(
        spec=CampaignSpec(name="p", dataset=make_dataset(), raters=raters),
        created_by=researcher,
    )
    a = assignment_next(campaign=pointwise, rater=raters[0]).assignment
    with pytest.raises(Http404):
        pairwise_submit(assignment_id=a.pk, rater=raters[0], label="A")


# --- Skip ----------------------------------------------------------------------------------


def test_skip_needs_a_reason_and_frees_the_slot(campaign, raters):
    a = serve(campaign, raters[0])
    with pytest.raises(DomainError) as exc:
        pairwise_skip(assignment_id=a.pk, rater=raters[0], reason="  ")
    assert exc.value.problems[0].field == "reason"
    pairwise_skip(assignment_id=a.pk, rater=raters[0], reason="Cannot judge code")
    a.refresh_from_db()
    assert a.status == Assignment.Status.SKIPPED
    assert a.skip_reason == "Cannot judge code"
    item = CampaignItem.objects.get(pk=a.item_id)
    assert item.reserved == 0 and item.open_slots == 1
    # Idempotent, and the rater never gets the pair again; someone else does.
    pairwise_skip(assignment_id=a.pk, rater=raters[0], reason="again")
    assert serve(campaign, raters[0]).pair_id != a.pair_id
    assert serve(campaign, raters[1]).pair_id == a.pair_id
    with pytest.raises(DomainError):
        pairwise_submit(assignment_id=a.pk, rater=raters[0], label="A")


# --- Concurrency (PostgreSQL: real row locks) --------------------------------------------


def _rater_loop(campaign_id, rater_id, errors, served):
    from django.contrib.auth.models import User

    try:
        rater = User.objects.get(pk=rater_id)
        campaign = Campaign.objects.get(pk=campaign_id)
        n = 0
        while True:
            result = pairwise_next(campaign=campaign, rater=rater)
            if result.assignment is None:
                if result.locked_by_others:
                    time.sleep(0.01)
                    continue
                break
            a = result.assignment
            served.append((rater_id, a.pair_id))
            n += 1
            if n % 7 == 0:
                pairwise_skip(assignment_id=a.pk, rater=rater, reason="test skip")
                continue
            label = ("A", "B", "tie")[n % 3]
            pairwise_submit(assignment_id=a.pk, rater=rater, label=label)
            # A retried request must change nothing.
            pairwise_submit(assignment_id=a.pk, rater=rater, label=label)
    except Exception as exc:  # collected and asserted in the main thread
        errors.append(repr(exc))
    finally:
        connection.close()


@pytest.mark.postgres
@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="concurrency proof runs on PostgreSQL"
)
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("overlap", [1, 3])
def test_overlap_invariant_holds_under_concurrent_raters(overlap):
    researcher = UserFactory(username="pres", role="researcher")
    raters = [UserFactory(username=f"pcr{i}", role="rater") for i in range(8)]
    dataset = make_dataset(n_instructions=10)  # 3 models: 30 pairs
    campaign = campaign_create(
        spec=CampaignSpec(
            name="load",
            dataset=dataset,
            raters=raters,
            serving=ServingPolicy(overlap=overlap),
            pairs=PairPolicy(),
        ),
        created_by=researcher,
    )
    errors: list[str] = []
    served: list[tuple[int, int]] = []
    threads = [
        threading.Thread(target=_rater_loop, args=(campaign.pk, r.pk, errors, served))
        for r in raters
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    assert len(served) == len(set(served)), "a rater was served the same pair twice"
    per_pair = dict(
        HumanPreference.objects.filter(assignment__campaign=campaign)
        .values_list("pair_id")
        .annotate(n=Count("id"))
    )
    assert len(per_pair) == 30 and set(per_pair.values()) == {overlap}
    once = (
        HumanPreference.objects.filter(assignment__campaign=campaign)
        .values("pair_id", "rater_id")
        .annotate(n=Count("id"))
    )
    assert {row["n"] for row in once} == {1}
    for item in CampaignItem.objects.filter(campaign=campaign):
        assert item.submitted == per_pair[item.pair_id] == item.target
        assert item.reserved == 0 and item.open_slots == 0
    assert not Assignment.objects.filter(
        campaign=campaign, status=Assignment.Status.SERVED
    ).exists()


@pytest.mark.postgres
@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="concurrency proof runs on PostgreSQL"
)
@pytest.mark.django_db(transaction=True)
def test_concurrent_next_calls_of_one_rater_hold_one_lock():
    researcher = UserFactory(username="pres2", role="researcher")
    rater = UserFactory(username="p-double-click", role="rater")
    campaign = campaign_create(
        spec=CampaignSpec(
            name="dc", dataset=make_dataset(n_instructions=5), pairs=PairPolicy()
        ),
        created_by=researcher,
    )
    got: list[int] = []
    errors: list[str] = []

    def ask():
        try:
            got.append(pairwise_next(campaign=campaign, rater=rater).assignment.pk)
        except Exception as exc:
            errors.append(repr(exc))
        finally:
            connection.close()

    threads = [threading.Thread(target=ask) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors, errors
    assert len(got) == 6 and len(set(got)) == 1
    assert CampaignItem.objects.filter(campaign=campaign, reserved=1).count() == 1


def test_a_revived_lock_shows_the_same_order(researcher, raters):
    campaign = campaign_create(
        spec=CampaignSpec(
            name="c",
            dataset=make_dataset(n_instructions=1, models=("m-a", "m-b")),
            raters=raters,
            serving=ServingPolicy(lock_ttl_minutes=1),
            pairs=PairPolicy(),
        ),
        created_by=researcher,
    )
    held = serve(campaign, raters[0])
    later = timezone.now() + timedelta(minutes=2)
    again = pairwise_next(campaign=campaign, rater=raters[0], now=later).assignment
    assert again.pk == held.pk
    assert again.shown_order == held.shown_order
    assert again.reason == "served again after your earlier lock expired"
    item = CampaignItem.objects.get(pk=held.item_id)
    assert (item.reserved, item.open_slots) == (1, 0)


def test_campaign_create_refuses_an_overlap_above_the_chosen_raters(researcher, raters):
    with pytest.raises(DomainError) as exc:
        campaign_create(
            spec=CampaignSpec(
                name="c",
                dataset=make_dataset(),
                raters=raters,
                serving=ServingPolicy(overlap=len(raters) + 1),
                pairs=PairPolicy(),
            ),
            created_by=researcher,
        )
    assert [p.field for p in exc.value.problems] == ["overlap"]
    assert "choose at least" in exc.value.problems[0].message
    assert not Campaign.objects.exists()


def test_amend_changes_own_preference_until_the_campaign_is_closed(
    campaign, raters, researcher
):
    rater, other = raters[0], raters[1]
    assignment = serve(campaign, rater)
    pairwise_submit(assignment_id=assignment.pk, rater=rater, label="A")
    order = assignment.shown_order

    pairwise_amend(
        assignment_id=assignment.pk, rater=rater, label="tie", rationale="On reflection"
    )
    pref = HumanPreference.objects.get(assignment=assignment)
    assert (pref.label, pref.rationale) == ("tie", "On reflection")
    pairwise_amend(assignment_id=assignment.pk, rater=rater, label="B")
    pref.refresh_from_db()
    # Stored in the original numbering, whatever order the rater saw.
    assert pref.label == map_shown_label("B", order)
    assignment.refresh_from_db()
    assert assignment.updated_at is not None
    assert HumanPreference.objects.filter(assignment=assignment).count() == 1
    item = CampaignItem.objects.get(pk=assignment.item_id)
    assert item.submitted == 1  # the vote is counted once

    with pytest.raises(DomainError) as exc:
        pairwise_amend(assignment_id=assignment.pk, rater=rater, label="maybe")
    assert [p.field for p in exc.value.problems] == ["label"]
    with pytest.raises(Http404):
        pairwise_amend(assignment_id=assignment.pk, rater=other, label="A")

    campaign_set_status(campaign=campaign, status="closed", user=researcher)
    with pytest.raises(DomainError) as exc:
        pairwise_amend(assignment_id=assignment.pk, rater=rater, label="A")
    assert str(exc.value).startswith("this campaign is closed")
    pref.refresh_from_db()
    assert pref.label == map_shown_label("B", order)


def test_a_paused_rater_is_served_no_pair_until_resumed(campaign, raters, researcher):
    """A pause stops serving in a pairwise campaign too (one rule in serving)."""
    from annotation.services.exclusions import PAUSED_MESSAGE

    rater_decision_start(
        campaign=campaign,
        rater=raters[0],
        kind="pause",
        reason="check",
        user=researcher,
    )
    result = pairwise_next(campaign=campaign, rater=raters[0])
    assert result.assignment is None and result.message == PAUSED_MESSAGE
    assert serve(campaign, raters[1]) is not None  # the others go on
    rater_decision_end(
        campaign=campaign, rater=raters[0], kind="pause", user=researcher
    )
    assert serve(campaign, raters[0]) is not None


def _pairwise_scenario(*, dataset, researcher, raters):
    """Serve, resume, skip, submit, expire and revive in a fresh campaign over
    `dataset`'s existing pairs; what each step served, by item position (the ids
    differ between campaigns, the order rules do not)."""
    campaign = campaign_create(
        spec=CampaignSpec(
            name="paths",
            dataset=dataset,
            raters=raters,
            serving=ServingPolicy(overlap=2),
            pairs=PairPolicy(mode="existing"),
        ),
        created_by=researcher,
    )
    position = dict(campaign.items.values_list("pk", "position"))
    log = []
    now = timezone.now()

    def step(name, rater, at):
        result = pairwise_next(campaign=campaign, rater=rater, now=at)
        a = result.assignment
        if a is None:
            log.append((name, None, result.message, result.locked_by_others))
            return None
        a.refresh_from_db()
        expected = shown_order_for(
            campaign_id=campaign.pk, pair_id=a.pair_id, rater_id=rater.pk
        )
        log.append(
            (name, position[a.item_id], a.reason, a.status, a.shown_order == expected,
             a.expires_at - at, a.pair_id == a.item.pair_id)
        )  # fmt: skip
        return a

    first = step("r0", raters[0], now)
    step("r0 resumes", raters[0], now + timedelta(minutes=5))
    pairwise_submit(
        assignment_id=first.pk, rater=raters[0], label="A", skill_labels={},
        rationale=" because ", active_seconds=12.5,
    )  # fmt: skip
    step("r0 done", raters[0], now + timedelta(minutes=6))
    held = step("r1", raters[1], now + timedelta(minutes=7))
    step("r2 locked", raters[2], now + timedelta(minutes=8))
    # r1's lock expires; serving r1 again revives the same row.
    late = now + timedelta(minutes=7 + campaign.lock_ttl_minutes + 1)
    assignments_expire(campaign_id=campaign.pk, now=late)
    again = step("r1 again", raters[1], late)
    pairwise_skip(assignment_id=again.pk, rater=raters[1], reason="unclear")
    late_one = step("r2", raters[2], late)
    pairwise_submit(assignment_id=late_one.pk, rater=raters[2], label="tie")
    items = sorted(
        campaign.items.values_list("position", "submitted", "reserved", "open_slots")
    )
    votes = sorted(
        (position[v.assignment.item_id], v.rater_id,
         unmap_shown_label(v.label, v.shown_order), v.skill_labels, v.rationale,
         v.origin, v.shown_order == v.assignment.shown_order,
         v.assignment.status, v.assignment.active_seconds)
        for v in HumanPreference.objects.filter(assignment__campaign=campaign)
        .select_related("assignment")
    )  # fmt: skip
    return {
        "log": log,
        "items": items,
        "votes": votes,
        "revived_same_row": held.pk == again.pk,
    }


@pytest.mark.postgres
@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="the raw-SQL path runs on PostgreSQL"
)
def test_sql_path_serves_pairs_exactly_as_the_orm_path_does(
    researcher, raters, settings, serving_path
):
    if serving_path == "orm":
        pytest.skip("compares both paths itself")
    dataset = make_dataset(n_instructions=1, models=("m-a", "m-b"))
    pairs_create_from_dataset(dataset=dataset)
    results = {}
    for fast in (True, False):
        settings.RATING_FAST_SQL = fast
        results[fast] = _pairwise_scenario(
            dataset=dataset, researcher=researcher, raters=raters
        )
    assert results[True] == results[False]
    log = {entry[0]: entry for entry in results[True]["log"]}
    assert all(entry[4] and entry[6] for entry in log.values() if entry[1] is not None)
    assert log["r0 resumes"][5] == timedelta(minutes=30)
    assert log["r2 locked"][1] is None and log["r2 locked"][3] == 1
    assert log["r1 again"][2] == "served again after your earlier lock expired"
    assert log["r2"][2] == "finishing a partly compared pair (1 of 2)"
    assert results[True]["revived_same_row"]
    assert [v[4] for v in results[True]["votes"]] == ["because", ""]
    assert results[True]["items"] == [(0, 2, 0, 0)]
