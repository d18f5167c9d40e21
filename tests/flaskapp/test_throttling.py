"""Per-user throttling (flaskapp/throttling.py, issue 34): the API's rates, the heavy
pages' rate and the heavy requests in flight; a 429 with Retry-After, per user."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.test import override_settings

from flaskapp import throttling
from tests.analysis.agreement_data import make_agreement_setup
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def _rates(**rates):
    return override_settings(
        REST_FRAMEWORK={
            **settings.REST_FRAMEWORK,
            "DEFAULT_THROTTLE_RATES": {
                **settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"],
                **rates,
            },
        }
    )


def test_rates_parse():
    assert throttling.parse_rate("20/min") == (20, 60)
    assert throttling.parse_rate("5/10s") == (5, 10)
    assert throttling.parse_rate("100/h") == (100, 3600)
    assert throttling.parse_rate("") is None
    with pytest.raises(ValueError, match="'ten/min'"):
        throttling.parse_rate("ten/min")


def test_the_default_rates_leave_twenty_raters_at_ten_requests_a_second_alone():
    limit, period = throttling.parse_rate(
        settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]["user"]
    )
    assert limit / period >= 10 * 2  # each rater is a user of their own; 2x headroom


@pytest.fixture
def setup(researcher):
    human = {(i, m, "readability"): [1 + i % 5, 2] for i in range(4)
             for m in ("a", "b")}  # fmt: skip
    judge = {(i, m, "readability"): 1 + i % 5 for i in range(4) for m in ("a", "b")}
    return make_agreement_setup(
        researcher, human=human, judges=[judge], n_instructions=4, models=("a", "b"),
        n_raters=2, name="throttle-set",
    )  # fmt: skip


def test_a_heavy_api_endpoint_answers_429_after_the_limit_per_user(
    setup, researcher, api_client_for
):
    other = UserFactory(username="throttle-other", role="researcher")
    url = f"/api/datasets/{setup.dataset.pk}/agreement/?n_boot=0"
    with _rates(heavy="2/min"):
        api = api_client_for(researcher)
        assert [api.get(url).status_code for _ in range(2)] == [200, 200]
        refused = api.get(url)
        assert refused.status_code == 429
        assert 1 <= int(refused["Retry-After"]) <= 60
        # Another user is not affected, nor are the user's light endpoints.
        assert api_client_for(other).get(url).status_code == 200
        sources = f"/api/datasets/{setup.dataset.pk}/agreement/sources/"
        assert api.get(sources).status_code == 200


def test_a_heavy_page_answers_429_after_the_limit_per_user(
    setup, researcher, client_for
):
    other = UserFactory(username="throttle-page-other", role="researcher")
    url = f"/agreement/{setup.dataset.pk}/?n_boot=0"
    with _rates(heavy="1/min"):
        client = client_for(researcher)
        assert client.get(url).status_code == 200
        refused = client.get(url)
        assert refused.status_code == 429 and int(refused["Retry-After"]) >= 1
        assert "Too many requests" in refused.content.decode()
        assert client_for(other).get(url).status_code == 200


@override_settings(HEAVY_IN_FLIGHT_TOTAL=10)
def test_heavy_requests_in_flight_are_limited_per_user(
    setup, researcher, client_for, api_client_for
):
    # Two of the user's heavy requests are running (the slots they hold); the total
    # is left room (another user's requests are not refused).
    for _ in range(settings.HEAVY_IN_FLIGHT_PER_USER):
        assert throttling.slot_acquire(researcher.pk)
    try:
        page = client_for(researcher).get(f"/agreement/{setup.dataset.pk}/")
        assert page.status_code == 429 and page["Retry-After"] == "2"
        assert "still running" in page.content.decode()
        api = api_client_for(researcher).get(
            f"/api/datasets/{setup.dataset.pk}/agreement/"
        )
        assert api.status_code == 429 and api["Retry-After"] == "2"
        other = UserFactory(username="throttle-flight-other", role="researcher")
        assert (
            client_for(other).get(f"/agreement/{setup.dataset.pk}/").status_code == 200
        )
    finally:
        for _ in range(settings.HEAVY_IN_FLIGHT_PER_USER):
            throttling.slot_release(researcher.pk)
    # Each answered request gave its slot back.
    assert (
        client_for(researcher).get(f"/agreement/{setup.dataset.pk}/").status_code == 200
    )
    assert throttling.slot_acquire(researcher.pk) and throttling.slot_acquire(
        researcher.pk
    )
    assert not throttling.slot_acquire(researcher.pk)
    throttling.slot_release(researcher.pk)
    throttling.slot_release(researcher.pk)


def test_the_rater_api_is_throttled_per_rater_by_the_user_rate(setup, api_client_for):
    first, second = setup.raters
    url = f"/api/rate/campaigns/{setup.campaign.pk}/next/"
    with _rates(user="3/min"):
        api = api_client_for(first)
        assert [api.post(url).status_code for _ in range(3)] == [200, 200, 200]
        refused = api.post(url)
        assert refused.status_code == 429 and int(refused["Retry-After"]) >= 1
        assert api_client_for(second).post(url).status_code == 200


def test_a_counter_counts_and_expires_with_its_window():
    """One counter per window: it counts each request and disappears after its
    period (on Redis one pipelined INCR + EXPIRE NX, which must not push the expiry
    further at every request; elsewhere add + incr)."""
    from django.core.cache import cache

    key = "throttle:test:counter"
    cache.delete(key)
    assert [throttling._counted(key, 30) for _ in range(3)] == [1, 2, 3]
    client = throttling._redis_client(key)
    if client is not None:
        name = cache.make_and_validate_key(key)
        ttl = client.ttl(name)
        assert 0 < ttl <= 30
        client.expire(name, 5)  # nearly over: another request keeps the window's end
        throttling._counted(key, 30)
        assert 0 < client.ttl(name) <= 5
    cache.delete(key)
