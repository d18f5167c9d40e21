"""The dashboard's slice values: exact counts, a fixed number of queries whatever the
dataset's size, and a cache that follows new responses."""

from __future__ import annotations

from collections import Counter

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from analysis.selectors.agreement import agreement_slice_values
from analysis.selectors.agreement.slices import slice_values_count
from annotation.models import Response
from tests.analysis.agreement_data import make_dataset
from tests.factories import ResponseFactory

pytestmark = pytest.mark.django_db


def mixed(name: str, n: int, models: tuple[str, ...]):
    """`n` instructions of varied metadata (some without a difficulty or a second
    domain, some FLASK-Hard), one response per model each."""
    dataset, _ = make_dataset(
        name,
        n,
        models,
        domain_1=[("math", "coding", "humanities")[i % 3] for i in range(n)],
        domain_2=[("", "math", "health")[i % 3] for i in range(n)],
        difficulty=[(None, 1, 2, 5)[i % 4] for i in range(n)],
        source_task=[f"task-{i % 2}" for i in range(n)],
        is_hard=[i % 5 == 0 for i in range(n)],
    )
    return dataset


def expected(dataset) -> dict[str, dict[str, int]]:
    """The counts, straight from the responses."""
    out: dict[str, Counter] = {
        k: Counter() for k in ("domain", "difficulty", "task", "hard", "model")
    }
    for r in Response.objects.filter(instruction__dataset=dataset).select_related(
        "instruction"
    ):
        i = r.instruction
        for d in {i.domain_1, i.domain_2} - {""}:
            out["domain"][d] += 1
        out["difficulty"][str(i.difficulty) if i.difficulty else "unknown"] += 1
        out["task"][i.source_task] += 1
        out["hard"]["hard" if i.is_hard else "rest"] += 1
        out["model"][r.model_name] += 1
    return {k: dict(v) for k, v in out.items()}


def as_counts(values) -> dict[str, dict[str, int]]:
    return {
        dim: {v["value"]: v["n_responses"] for v in items}
        for dim, items in values.items()
    }


def test_slice_values_count_every_response_of_each_value(researcher):
    dataset = mixed("slices-mixed", 12, ("beta", "alpha", "Gamma"))
    values = agreement_slice_values(dataset=dataset)
    assert as_counts(values) == expected(dataset)
    assert [v["value"] for v in values["model"]] == ["Gamma", "alpha", "beta"]
    assert [v["value"] for v in values["difficulty"]] == ["1", "2", "5", "unknown"]
    assert values["domain"][0]["label"]  # a readable label, not only the key


def test_slice_values_take_the_same_queries_whatever_the_dataset_size(researcher):
    small = mixed("slices-small", 2, ("alpha",))
    big = mixed("slices-big", 40, ("alpha", "beta", "gamma", "delta"))
    counts = []
    for dataset in (small, big):
        # The cache outlives a test's transaction: an earlier test's dataset may
        # have had this id and fingerprint.
        cache.clear()
        with CaptureQueriesContext(connection) as fresh:
            slice_values_count(dataset)
        with CaptureQueriesContext(connection) as cold:
            agreement_slice_values(dataset=dataset)
        with CaptureQueriesContext(connection) as cached:
            agreement_slice_values(dataset=dataset)
        counts.append((len(fresh), len(cold), len(cached)))
    assert counts[0] == counts[1], counts
    fresh_n, cold_n, cached_n = counts[0]
    assert fresh_n == 2
    assert cached_n == cold_n - fresh_n  # the fingerprint only: no count again


def test_a_new_response_shows_in_the_slice_values_at_once(researcher):
    dataset = mixed("slices-new", 4, ("alpha",))
    before = as_counts(agreement_slice_values(dataset=dataset))
    instruction = dataset.instructions.order_by("position").first()
    ResponseFactory(instruction=instruction, model_name="newcomer")
    after = as_counts(agreement_slice_values(dataset=dataset))
    assert "newcomer" not in before["model"]
    assert after["model"]["newcomer"] == 1
    assert after == expected(dataset)


def test_dashboard_runs_the_same_queries_whatever_the_dataset_size(
    client_for, researcher, django_assert_max_num_queries
):
    client = client_for(researcher)
    client.get("/")  # the session and the roles, read once per client
    small = mixed("slices-page-small", 2, ("alpha",))
    big = mixed("slices-page-big", 60, ("alpha", "beta", "gamma", "delta", "eps"))
    seen = []
    for dataset in (small, big):
        url = reverse("analysis:agreement", args=[dataset.pk])
        with CaptureQueriesContext(connection) as ctx:
            assert client.get(url).status_code == 200
        seen.append(len(ctx))
    assert seen[0] == seen[1], seen
    url = reverse("analysis:agreement", args=[big.pk])
    with django_assert_max_num_queries(seen[0]):
        assert client.get(url).status_code == 200
