"""Per-user throttling of the API and of the heavy pages: one limiter, two faces.

Issue 34: sixteen requests for heavy statistics held every web thread for minutes.
Two rules, both per signed-in user, both counted in Django's default cache (Redis
when ``REDIS_URL`` is set, so every gunicorn worker shares the counts; the file cache
of ``make run`` otherwise, one machine):

- a **rate**: at most N requests per period in a fixed window (``"20/min"``), the
  rates named in ``settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]``: ``user`` for
  every API request (generous: a rater at 10 requests/s is far below it), ``heavy``
  for the endpoints and pages that compute statistics, fit models or start jobs;
- **in flight**: at most ``HEAVY_IN_FLIGHT_PER_USER`` heavy requests of one user, and
  ``HEAVY_IN_FLIGHT_TOTAL`` of everyone, at the same time, so no burst can occupy
  every web thread (or every core) while raters work.

Either refusal is a 429 with ``Retry-After`` (seconds). The API's throttles are DRF
throttle classes (`UserRateThrottle`, `HeavyRateThrottle`) and `HeavyApiMixin` (the
in-flight slot); pages use the `heavy_page` decorator. A fixed window costs one
counter increment per request (no timestamp list as in DRF's own throttles).
On Redis the count is one round trip (`_counted`).
"""

from __future__ import annotations

import functools
import math
import time

from django.conf import settings
from django.core.cache import cache
from django.http import HttpResponse
from rest_framework.exceptions import Throttled
from rest_framework.throttling import BaseThrottle

PERIODS = {"s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "hour": 3600}
# An in-flight slot left by a killed process frees itself after this long.
SLOT_TTL_SECONDS = 600
IN_FLIGHT_RETRY_AFTER = 2


def parse_rate(rate: str | None) -> tuple[int, int] | None:
    """``"20/min"`` -> (20, 60); also ``s``, ``m``, ``h`` and ``"5/10s"``; None or
    ``""`` -> None (no limit). A malformed rate is a ValueError naming it."""
    if not rate:
        return None
    count, _, period = str(rate).partition("/")
    digits = "".join(c for c in period if c.isdigit())
    unit = period[len(digits) :].strip().lower()
    if not count.strip().isdigit() or unit not in PERIODS:
        raise ValueError(f"throttle rate {rate!r} is not like '20/min' or '5/10s'")
    return int(count), (int(digits) if digits else 1) * PERIODS[unit]


def rate_of(scope: str) -> tuple[int, int] | None:
    return parse_rate(settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"].get(scope))


def _counted(key: str, timeout: int) -> int:
    """The count at `key` after adding one (created at 0 with `timeout` first).

    On Redis one round trip: INCR and EXPIRE ... NX in a pipeline (Django's `add` and
    `incr` are three: SET NX, EXISTS, INCR), through the backend's client for the
    key (Django's RedisCache's `_cache.get_client`, stable since Django 4.0). Every
    other cache: `add` then `incr`."""
    client = _redis_client(key)
    if client is not None:
        name = cache.make_and_validate_key(key)
        pipe = client.pipeline(transaction=False)
        pipe.incr(name)
        pipe.expire(name, timeout, nx=True)
        return int(pipe.execute()[0])
    cache.add(key, 0, timeout)
    try:
        return cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.add(key, 1, timeout)
        return 1


def _redis_client(key: str):
    """The redis-py client Django's Redis cache uses for `key`, or None for another
    cache backend."""
    from django.core.cache import caches
    from django.core.cache.backends.redis import RedisCache

    backend = caches["default"]
    if not isinstance(backend, RedisCache):
        return None
    return backend._cache.get_client(key, write=True)


def rate_check(scope: str, user_id: int) -> float | None:
    """Count one request of `user_id` in `scope`: None when allowed, else the
    seconds until the window ends (the Retry-After)."""
    rate = rate_of(scope)
    if rate is None:
        return None
    limit, period = rate
    now = time.time()
    window = int(now // period)
    if _counted(f"throttle:{scope}:{user_id}:{window}", period + 1) <= limit:
        return None
    return max(1.0, (window + 1) * period - now)


def _slot_keys() -> list[tuple[str, int]]:
    return [("inflight:{user}", settings.HEAVY_IN_FLIGHT_PER_USER),
            ("inflight:all", settings.HEAVY_IN_FLIGHT_TOTAL)]  # fmt: skip


def slot_acquire(user_id: int) -> bool:
    """Take one in-flight heavy slot of the user's and one of everyone's; False (and
    nothing taken) when either is full."""
    taken = []
    for pattern, limit in _slot_keys():
        if not limit:
            continue
        key = pattern.format(user=user_id)
        taken.append(key)
        if _counted(key, SLOT_TTL_SECONDS) > limit:
            for done in taken:
                _decrement(done)
            return False
    return True


def slot_release(user_id: int) -> None:
    for pattern, limit in _slot_keys():
        if limit:
            _decrement(pattern.format(user=user_id))


def _decrement(key: str) -> None:
    try:
        cache.decr(key)
    except ValueError:  # the slot expired meanwhile
        pass


def too_many_response(wait: float, what: str) -> HttpResponse:
    """The 429 page: plain text saying what to do, with Retry-After."""
    seconds = math.ceil(wait)
    response = HttpResponse(
        f"Too many requests: {what}. Try again in {seconds} s.",
        status=429,
        content_type="text/plain; charset=utf-8",
    )
    response["Retry-After"] = str(seconds)
    return response


IN_FLIGHT = "other heavy requests (yours, or too many in all) are still running"
RATE = "you asked for many statistics in a short time"


def heavy_page(view=None, *, unless=None):
    """Decorator of a page that computes (statistics, model fits, jobs): the heavy
    rate and the in-flight limit per user (module doc); a 429 with Retry-After.
    ``unless(request)`` true exempts a request that does no heavy work (a job's
    progress poll). Put it inside ``login_required``: anonymous visitors go to the
    login first."""
    if view is None:
        return functools.partial(heavy_page, unless=unless)

    @functools.wraps(view)
    def wrapped(request, *args, **kwargs):
        if unless is not None and unless(request):
            return view(request, *args, **kwargs)
        user_id = request.user.pk
        wait = rate_check("heavy", user_id)
        if wait is not None:
            return too_many_response(wait, RATE)
        if not slot_acquire(user_id):
            return too_many_response(IN_FLIGHT_RETRY_AFTER, IN_FLIGHT)
        try:
            return view(request, *args, **kwargs)
        finally:
            slot_release(user_id)

    return wrapped


class _ScopedThrottle(BaseThrottle):
    scope = ""

    def allow_request(self, request, view) -> bool:
        user = request.user
        if not (user and user.is_authenticated):
            return True  # the permission check answers 401/403 first
        self._wait = rate_check(self.scope, user.pk)
        return self._wait is None

    def wait(self) -> float | None:
        return getattr(self, "_wait", None)


class UserRateThrottle(_ScopedThrottle):
    """Every API request of a signed-in user (``DEFAULT_THROTTLE_RATES["user"]``)."""

    scope = "user"


class HeavyRateThrottle(_ScopedThrottle):
    """The API's heavy endpoints (``DEFAULT_THROTTLE_RATES["heavy"]``)."""

    scope = "heavy"


class HeavyApiMixin:
    """For an APIView that computes: the default throttles plus the heavy rate, and
    one in-flight slot held from after the checks to the response (module doc)."""

    throttle_classes = [UserRateThrottle, HeavyRateThrottle]

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        if not slot_acquire(request.user.pk):
            raise Throttled(wait=IN_FLIGHT_RETRY_AFTER, detail=IN_FLIGHT)
        self._heavy_slot = request.user.pk

    def finalize_response(self, request, response, *args, **kwargs):
        if getattr(self, "_heavy_slot", None) is not None:
            slot_release(self._heavy_slot)
            self._heavy_slot = None
        return super().finalize_response(request, response, *args, **kwargs)
